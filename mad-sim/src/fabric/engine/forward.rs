//! Forwarding: a packet leaves its port, crosses the link, enters the
//! far port and is routed through switches (LID or directed route), with
//! the port checks, partition enforcement and counters on the way.

use super::*;

/// Most extra copies one multicast packet makes in all (a bound on a
/// misprogrammed MFT with loops, which a hop limit alone would let grow
/// exponentially); past it a copy is dropped as [`DropReason::HopLimit`].
const MAX_MCAST_COPIES: usize = 1024;

/// The copies of one multicast packet still to run, and how many more
/// may be made.
struct Fanout {
    copies: Vec<(Hop, Packet)>,
    budget: usize,
}

/// What the port a packet leaves through decided ([`Core::transmit`]).
enum Leave {
    /// Onto the link, to this far end (counted).
    Go((u32, u8)),
    /// Onto the link if partition enforcement lets it (not counted yet).
    Enforce((u32, u8)),
    NoPort,
    Down,
    Inactive,
}

/// What the port a packet enters decided ([`Core::enter`]).
enum Arrival {
    Lost,
    NotActive,
    NotMine,
    /// For the CA / router port.
    Take,
    /// At a switch of this many ports.
    Switch(u8),
}

impl Core {
    /// Runs a packet from `hop` to its end; a multicast packet's copies
    /// (one per port of a switch's MFT mask but the arrival port) run
    /// after it, each with its own hop limit.
    pub(super) fn run(&mut self, hop: Hop, pkt: &mut Packet) {
        let mut f = Fanout {
            copies: Vec::new(),
            budget: MAX_MCAST_COPIES,
        };
        self.run_one(hop, pkt, &mut f);
        while let Some((hop, mut copy)) = f.copies.pop() {
            self.run_one(hop, &mut copy, &mut f);
            self.recycle(copy);
        }
    }

    fn run_one(&mut self, mut hop: Hop, pkt: &mut Packet, f: &mut Fanout) {
        for _ in 0..MAX_HOPS {
            let next = match hop {
                Hop::Transmit { node, port } => self.transmit(node, port, pkt),
                Hop::SwitchRoute { node, in_port } if pkt.multicast() => {
                    self.mcast_route(node, in_port, pkt, f)
                }
                Hop::SwitchRoute { node, in_port } => self.switch_route(node, in_port, pkt),
                Hop::Local { node, port } => self.local(node, port, pkt),
            };
            match next {
                Some(h) => hop = h,
                None => return,
            }
        }
        let (n, p) = hop_at(hop);
        self.drop_pkt(DropReason::HopLimit, n, p);
    }

    /// A switch forwards a multicast packet that came in on `in_port` (0:
    /// the switch sent it) out of every port of its MFT mask for the MLID
    /// but `in_port`, to itself when port 0 is in the mask. Dropped
    /// ([`DropReason::Multicast`]) when that leaves no port, or the MLID
    /// is above a MulticastFDBTop that is set.
    fn mcast_route(&mut self, node: u32, in_port: u8, pkt: &Packet, f: &mut Fanout) -> Option<Hop> {
        let n = self.node(node)?;
        let sw = n.sw.as_ref()?;
        let nports = n.num_ports();
        let positions = usize::from(nports) / 16 + 1;
        let idx = usize::from(pkt.dlid - MCAST_LID_BASE);
        let top = sw.info.multicast_fdb_top;
        // The MLID's mask, position by position (at most 16: 255 ports).
        let mut masks = [0u16; 16];
        if top == 0 || pkt.dlid <= top {
            if let Some(m) = sw.mft.get(idx * positions..(idx + 1) * positions) {
                masks[..positions].copy_from_slice(m);
            }
        }
        let mut first = None;
        for port in 0..=nports {
            if port == in_port || masks[usize::from(port / 16)] & (1 << (port % 16)) == 0 {
                continue;
            }
            let hop = if port == 0 {
                Hop::Local {
                    node,
                    port: in_port,
                }
            } else {
                Hop::Transmit { node, port }
            };
            if first.is_none() {
                first = Some(hop);
            } else if f.budget == 0 {
                self.drop_pkt(DropReason::HopLimit, node, in_port);
            } else {
                f.budget -= 1;
                f.copies.push((hop, pkt.clone()));
            }
        }
        if first.is_none() {
            self.drop_pkt(DropReason::Multicast, node, in_port);
        }
        first
    }

    /// The agent at `node`/`port` sends `pkt` (the kernel's send path:
    /// directed-route send rules, local loopback, or out of the port).
    pub(super) fn leave_local(&mut self, node: u32, port: u8, pkt: &mut Packet) -> Option<Hop> {
        let is_switch = self.node(node)?.is_switch();
        if pkt.is_dr() {
            let mut smp = Smp::new_unchecked(&mut pkt.mad[..]);
            if smp.dr_slid() != PERMISSIVE_LID || smp.dr_dlid() != PERMISSIVE_LID {
                self.drop_pkt(DropReason::DrLidRouted, node, port);
                return None;
            }
            let cand = dr_send_port(&smp, is_switch, port);
            if dr_handle_send(&mut smp, is_switch, cand) == DrVerdict::Discard {
                self.drop_pkt(DropReason::DrPath, node, port);
                return None;
            }
            if is_local_smp(&smp) {
                self.smp_for_node(node, port, pkt);
                return None;
            }
            if is_local_returning_smp(&smp) {
                self.deliver(node, port, Qp::Qp0, 0, pkt);
                return None;
            }
            return Some(Hop::Transmit { node, port: cand });
        }
        if is_switch {
            return Some(Hop::SwitchRoute { node, in_port: 0 });
        }
        let own = self.node(node)?.port(port)?;
        if lid_match(&own.info, pkt.dlid) {
            // HCA loopback: to its own LID, never on the wire.
            return Some(Hop::Local { node, port });
        }
        Some(Hop::Transmit { node, port })
    }

    /// `pkt` leaves `node` out of `port`: the port checks, partition
    /// enforcement, the count, the link filter and faults, then the far
    /// port ([`Self::enter`]). The node and port are looked up once: a
    /// packet crosses about nine links per SMP.
    pub(super) fn transmit(&mut self, node: u32, port: u8, pkt: &mut Packet) -> Option<Hop> {
        let out = {
            let n = self.nodes.get_mut(node as usize)?;
            let is_switch = n.is_switch();
            match n.port_mut(port) {
                None => Leave::NoPort,
                Some(p) => {
                    let up = p.info.port_phys_state == PhysPortState::LINK_UP;
                    let state_ok = if pkt.vl15 {
                        p.info.port_state != PortState::DOWN
                    } else {
                        p.info.port_state == PortState::ACTIVE
                    };
                    match p.remote.filter(|_| up) {
                        None => Leave::Down,
                        Some(_) if !state_ok => Leave::Inactive,
                        // Partition enforcement may refuse it before it
                        // is counted (never on VL15 or port 0).
                        Some(r) if is_switch && port != 0 && !pkt.vl15 => Leave::Enforce(r),
                        Some(r) => {
                            count_packet(p, Direction::Outbound, pkt);
                            Leave::Go(r)
                        }
                    }
                }
            }
        };
        let (rn, rp) = match out {
            Leave::Go(r) => r,
            Leave::NoPort => {
                self.drop_pkt(DropReason::NoSuchPort, node, port);
                return None;
            }
            Leave::Down => {
                self.count_xmit_discard(node, port);
                self.drop_pkt(DropReason::LinkDown, node, port);
                return None;
            }
            Leave::Inactive => {
                self.count_xmit_discard(node, port);
                self.drop_pkt(DropReason::PortNotActive, node, port);
                return None;
            }
            Leave::Enforce(r) => {
                if self.partition_refuses(node, port, pkt, Direction::Outbound) {
                    return None;
                }
                if let Some(p) = self.port_mut(node, port) {
                    count_packet(p, Direction::Outbound, pkt);
                }
                r
            }
        };
        if let Some(f) = self.link_filter.as_mut() {
            let c = LinkCrossing {
                from: PortAddr {
                    node: node as usize,
                    port,
                },
                to: PortAddr {
                    node: rn as usize,
                    port: rp,
                },
                mad: &pkt.mad[..],
                vl15: pkt.vl15,
                now: self.now,
            };
            if f(&c) == LinkVerdict::Drop {
                self.drop_pkt(DropReason::LinkFilter, node, port);
                return None;
            }
        }
        if let super::faults::Verdict::Gone = self.link_fault(node, port, rn, rp, pkt) {
            return None;
        }
        self.enter(rn, rp, pkt)
    }

    /// A packet comes off the wire into `rn`/`rp`: lost if that port is
    /// not physically up, else counted as received there, then taken by
    /// the node: a switch routes it (a directed-route SMP goes straight
    /// to the arrival rules), a CA port takes what is addressed to it.
    /// The node and port are looked up once.
    pub(super) fn enter(&mut self, rn: u32, rp: u8, pkt: &mut Packet) -> Option<Hop> {
        let arrival = {
            let n = self.nodes.get_mut(rn as usize)?;
            let is_switch = n.is_switch();
            let nports = n.num_ports();
            let p = n.port_mut(rp)?;
            if p.info.port_phys_state != PhysPortState::LINK_UP {
                count_rcv_error(p, super::super::pma_ext::Discard::LocalPhysical);
                Arrival::Lost
            } else {
                count_packet(p, Direction::Inbound, pkt);
                if !pkt.vl15 && p.info.port_state.0 < PortState::ARMED.0 {
                    Arrival::NotActive
                } else if is_switch {
                    Arrival::Switch(nports)
                } else {
                    let accept = if pkt.dlid == PERMISSIVE_LID {
                        pkt.vl15
                    } else if pkt.multicast() {
                        // The switches' MFTs chose the members: a CA port
                        // takes it.
                        !pkt.vl15
                    } else {
                        lid_match(&p.info, pkt.dlid)
                    };
                    if accept {
                        Arrival::Take
                    } else {
                        count_rcv_error(p, super::super::pma_ext::Discard::DlidMapping);
                        Arrival::NotMine
                    }
                }
            }
        };
        match arrival {
            Arrival::Lost => {
                self.drop_pkt(DropReason::LinkDown, rn, rp);
                None
            }
            Arrival::NotActive => {
                self.drop_pkt(DropReason::PortNotActive, rn, rp);
                None
            }
            Arrival::NotMine => {
                self.drop_pkt(DropReason::NotForThisPort, rn, rp);
                None
            }
            Arrival::Take => Some(Hop::Local { node: rn, port: rp }),
            Arrival::Switch(nports) => {
                if self.partition_refuses(rn, rp, pkt, Direction::Inbound) {
                    return None;
                }
                if pkt.dlid != PERMISSIVE_LID {
                    return Some(Hop::SwitchRoute {
                        node: rn,
                        in_port: rp,
                    });
                }
                // What switch routing would decide (the permissive LID is
                // the switch's own), without the extra step; a
                // directed-route SMP on QP0 goes to the arrival rules
                // without looking the switch up again.
                if pkt.vl15 && pkt.dqpn == 0 && pkt.head().base_version() == 1 && pkt.is_dr() {
                    return self.dr_arrived_at(rn, rp, true, nports, pkt);
                }
                self.local(rn, rp, pkt)
            }
        }
    }

    /// A switch routes a LID-addressed packet: to itself (its LID or the
    /// permissive LID), or out of the port its LFT names.
    pub(super) fn switch_route(&mut self, node: u32, in_port: u8, pkt: &Packet) -> Option<Hop> {
        let n = self.node(node)?;
        let p0 = n.port(0)?;
        if pkt.dlid == PERMISSIVE_LID || lid_match(&p0.info, pkt.dlid) {
            return Some(Hop::Local {
                node,
                port: in_port,
            });
        }
        let reason = if pkt.dlid == 0 {
            DropReason::InvalidLid
        } else {
            let sw = n.sw.as_ref()?;
            let out = if pkt.dlid > sw.info.linear_fdb_top {
                0xFF
            } else {
                let lid = usize::from(pkt.dlid);
                sw.lft
                    .get(lid / mad_sm::lft::BLOCK)
                    .map_or(0xFF, |b| b[lid % mad_sm::lft::BLOCK])
            };
            if out != 0 && out != 0xFF && out <= n.num_ports() {
                return Some(Hop::Transmit { node, port: out });
            }
            DropReason::NoRoute
        };
        if in_port != 0 && reason == DropReason::NoRoute {
            if let Some(p) = self.port_mut(node, in_port) {
                p.counters.port_rcv_switch_relay_errors =
                    p.counters.port_rcv_switch_relay_errors.saturating_add(1);
                p.counters_ext.port_rcv_switch_relay_errors += 1;
            }
        }
        self.drop_pkt(reason, node, in_port);
        None
    }

    /// Partition enforcement on switch port `port` for a packet crossing
    /// it in direction `dir`: when the port enforces partitions that way
    /// and its P_Key table lacks the packet's P_Key, the packet counts a
    /// constraint error and is dropped (`true`). Port 0 and VL15 are exempt.
    #[inline]
    pub(super) fn partition_refuses(
        &mut self,
        node: u32,
        port: u8,
        pkt: &Packet,
        dir: Direction,
    ) -> bool {
        // Decided here, inlined at every hop, before the port is looked
        // up: SMPs (VL15) cross every switch port, so the per-hop cost of
        // an SMP is two compares.
        if port == 0 || pkt.vl15 {
            return false;
        }
        self.pkey_refuses(node, port, pkt, dir)
    }

    /// [`Self::partition_refuses`] for a packet not on VL15 crossing an
    /// external switch port.
    fn pkey_refuses(&mut self, node: u32, port: u8, pkt: &Packet, dir: Direction) -> bool {
        let Some(p) = self.node(node).and_then(|n| n.port(port)) else {
            return false;
        };
        let enforced = match dir {
            Direction::Inbound => p.info.partition_enforcement_inbound,
            Direction::Outbound => p.info.partition_enforcement_outbound,
        };
        // A switch compares the low 15 bits only (IBA 10.9.4): its
        // table mirrors the end port's, limited keys included, and a
        // limited member's packets must pass its own switch port.
        let base = pkt.pkey & 0x7FFF;
        if !enforced || (base != 0 && p.pkeys.iter().any(|&e| e & 0x7FFF == base)) {
            return false;
        }
        if let Some(p) = self.port_mut(node, port) {
            let (c, e) = match dir {
                Direction::Inbound => (
                    &mut p.counters.port_rcv_constraint_errors,
                    &mut p.counters_ext.port_rcv_constraint_errors,
                ),
                Direction::Outbound => (
                    &mut p.counters.port_xmit_constraint_errors,
                    &mut p.counters_ext.port_xmit_constraint_errors,
                ),
            };
            *c = c.saturating_add(1);
            *e = e.saturating_add(1);
        }
        self.drop_pkt(DropReason::PKeyEnforcement, node, port);
        true
    }

    pub(super) fn count_xmit_discard(&mut self, node: u32, port: u8) {
        if let Some(p) = self.port_mut(node, port) {
            p.counters.port_xmit_discards = p.counters.port_xmit_discards.saturating_add(1);
            p.counters_ext.port_xmit_discards += 1;
            p.perf.discard(super::super::pma_ext::Discard::Inactive);
        }
    }
}

/// Where a hop is.
fn hop_at(hop: Hop) -> (u32, u8) {
    match hop {
        Hop::Transmit { node, port }
        | Hop::Local { node, port }
        | Hop::SwitchRoute {
            node,
            in_port: port,
        } => (node, port),
    }
}
