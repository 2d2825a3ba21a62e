//! Fabric-level faults: seeded per-link drop, duplication, reordering and
//! delay; cables pulled and plugged back (with the PortInfo changes and
//! the Trap 128 a real switch sends).
//!
//! # Repeatability
//! Every direction of every link draws from its own xorshift64* stream,
//! seeded from the fabric's fault seed ([`crate::fabric::Fabric::set_fault_seed`])
//! and the port the packets leave. The draws for one packet are made in a
//! fixed order (drop, duplicate, delay, reorder), and only for the
//! probabilities strictly between 0 and 1. So the same seed and the same
//! traffic on a link give the same faults on it, whatever happens on other
//! links.
//!
//! # What each fault does to a packet crossing a link
//! - **drop**: lost on the wire: counted as sent by the port it leaves,
//!   not as received, and in [`crate::fabric::DropReason::LinkFault`].
//! - **duplicate**: arrives twice; the copy enters the far port right
//!   after the original has finished its journey.
//! - **delay**: held on the wire until virtual time has moved on by
//!   [`LinkFaults::delay`] ([`crate::fabric::Fabric::advance`]); packets behind
//!   it overtake it.
//! - **reorder**: held on the wire until the next packet crosses the link
//!   in the same direction, and then arrives right after that one (or
//!   when virtual time moves on, if no packet follows).
//!
//! A held packet that finds its link down when it arrives is lost
//! (counted in PortRcvErrors of the far port).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use mad_core::wire::attr::{trap, Notice, PhysPortState, PortState};
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass, Repr, MAD_LEN};

use super::{Core, Packet};

/// Faults of one link direction ([`crate::fabric::Fabric::set_link_faults`]).
/// Probabilities are per packet, 0.0 ..= 1.0. `Default` injects nothing.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkFaults {
    /// Probability that a packet is lost.
    pub drop: f64,
    /// Probability that a packet arrives twice.
    pub duplicate: f64,
    /// Probability that a packet is held until the next one on the link
    /// has crossed.
    pub reorder: f64,
    /// Probability that a packet is delayed by [`LinkFaults::delay`].
    pub delay_probability: f64,
    /// Virtual time a delayed packet spends on the wire.
    pub delay: Duration,
}

impl LinkFaults {
    /// Only drops, with probability `p`.
    #[must_use]
    pub fn drop_rate(p: f64) -> Self {
        Self {
            drop: p,
            ..Self::default()
        }
    }

    /// True when no fault can fire.
    #[must_use]
    pub fn is_none(&self) -> bool {
        self.drop <= 0.0
            && self.duplicate <= 0.0
            && self.reorder <= 0.0
            && (self.delay_probability <= 0.0 || self.delay.is_zero())
    }
}

/// What the faults of one link direction did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkFaultStats {
    /// Packets that met the faults (crossed the link while they were set).
    pub packets: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Packets duplicated.
    pub duplicated: u64,
    /// Packets delayed.
    pub delayed: u64,
    /// Packets held for reordering.
    pub reordered: u64,
}

pub(crate) use mad_core::transport::fault::Rng;

/// The RNG seed of the link direction leaving `node`/`port`.
fn dir_seed(seed: u64, node: u32, port: u8) -> u64 {
    seed ^ (u64::from(node) << 8 | u64::from(port)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// One link direction's faults and state.
#[derive(Debug)]
pub(crate) struct DirFaults {
    pub faults: LinkFaults,
    pub rng: Rng,
    /// A packet held for reordering: where it enters, and the packet.
    pub held: Option<(u32, u8, Packet)>,
    pub stats: LinkFaultStats,
}

/// A fault of a node's SMA ([`crate::fabric::Fabric::set_sma_fault`]):
/// what it does with the SMP requests (Get, Set) that reach it. Directed
/// routes through the node are still relayed, and its PMA, traps and
/// SM are not touched: a management processor that hangs or refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmaFault {
    /// Takes every request and never answers.
    Mute,
    /// Answers every request with this MAD status (15 bits for
    /// directed route) and zero data, changing nothing.
    Status(u16),
}

/// Fault state of the whole fabric.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    /// SMA faults by node.
    pub sma: BTreeMap<u32, SmaFault>,
    pub seed: u64,
    /// By the port packets leave (node, port); ordered so that releases
    /// happen in a fixed order.
    pub dirs: BTreeMap<(u32, u8), DirFaults>,
    /// Delayed packets by (due time, sequence): where they enter, and the
    /// packet.
    pub delayed: BTreeMap<(Duration, u64), (u32, u8, Packet)>,
    pub seq: u64,
    /// TID counter of traps the switches send.
    pub trap_tid: u32,
    /// Traps sent.
    pub traps: u64,
}

/// What happens to a packet about to enter the far port.
pub(crate) enum Verdict {
    /// It goes on.
    Pass,
    /// It is gone (dropped or held).
    Gone,
}

/// Why a cable operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CableError {
    NoSuchPort,
    NoCable,
}

impl Core {
    /// Sets the faults of the link direction leaving `node`/`port`
    /// (`None` or a fault-free value removes them).
    pub(crate) fn set_dir_faults(&mut self, node: u32, port: u8, f: Option<LinkFaults>) {
        match f.filter(|f| !f.is_none()) {
            Some(faults) => {
                let seed = self.faults.seed;
                let d = self
                    .faults
                    .dirs
                    .entry((node, port))
                    .or_insert_with(|| DirFaults {
                        faults,
                        rng: Rng::new(dir_seed(seed, node, port)),
                        held: None,
                        stats: LinkFaultStats::default(),
                    });
                d.faults = faults;
            }
            None => {
                if let Some(d) = self.faults.dirs.remove(&(node, port)) {
                    if let Some((n, p, pkt)) = d.held {
                        self.resume.push_back((n, p, pkt));
                    }
                }
            }
        }
    }

    /// Re-seeds every link direction's RNG.
    pub(crate) fn reseed(&mut self, seed: u64) {
        self.faults.seed = seed;
        for (&(n, p), d) in &mut self.faults.dirs {
            d.rng = Rng::new(dir_seed(seed, n, p));
        }
    }

    /// The faults of the link direction leaving `node`/`port` act on `pkt`
    /// about to enter `rn`/`rp`.
    pub(crate) fn link_fault(
        &mut self,
        node: u32,
        port: u8,
        rn: u32,
        rp: u8,
        pkt: &Packet,
    ) -> Verdict {
        let now = self.now;
        let Some(d) = self.faults.dirs.get_mut(&(node, port)) else {
            return Verdict::Pass;
        };
        let f = d.faults;
        d.stats.packets += 1;
        if d.rng.chance(f.drop) {
            d.stats.dropped += 1;
            self.drop_pkt(crate::fabric::DropReason::LinkFault, node, port);
            return Verdict::Gone;
        }
        let dup = d.rng.chance(f.duplicate);
        let delay = !f.delay.is_zero() && d.rng.chance(f.delay_probability);
        let reorder = !delay && d.rng.chance(f.reorder);
        if dup {
            d.stats.duplicated += 1;
        }
        if delay {
            d.stats.delayed += 1;
        }
        if reorder {
            d.stats.reordered += 1;
        }
        // A packet held for reordering crosses behind this one.
        let release = if reorder { None } else { d.held.take() };
        let mut verdict = Verdict::Pass;
        if delay {
            let key = (now.saturating_add(f.delay), self.faults.seq);
            self.faults.seq += 1;
            self.faults.delayed.insert(key, (rn, rp, pkt.clone()));
            verdict = Verdict::Gone;
        } else if reorder {
            let prev = d.held.replace((rn, rp, pkt.clone()));
            if let Some(p) = prev {
                self.resume.push_back(p);
            }
            verdict = Verdict::Gone;
        }
        if dup {
            self.resume.push_back((rn, rp, pkt.clone()));
        }
        if let Some(p) = release {
            self.resume.push_back(p);
        }
        verdict
    }

    /// Virtual time moved on: delayed packets that are due, and every
    /// packet held for reordering, go back on the wire.
    pub(crate) fn release_held(&mut self) {
        let now = self.now;
        while let Some(entry) = self.faults.delayed.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let (n, p, pkt) = entry.remove();
            self.resume.push_back((n, p, pkt));
        }
        let held: Vec<_> = self
            .faults
            .dirs
            .values_mut()
            .filter_map(|d| d.held.take())
            .collect();
        self.resume.extend(held);
    }

    /// Packets held on links (delayed or waiting to be overtaken).
    pub(crate) fn held_count(&self) -> usize {
        self.faults.delayed.len()
            + self
                .faults
                .dirs
                .values()
                .filter(|d| d.held.is_some())
                .count()
    }

    /// Pulls (`plugged` false) or plugs back the cable at `node`/`port`.
    ///
    /// Pulled: both ends go PortState Down, PortPhysicalState Polling (a
    /// Disabled or Sleeping end stays so), LinkDownedCounter counts on an
    /// end whose link was up, endpoints see PortError, and each switch end
    /// sets PortStateChange and sends Trap 128 to its SM. Plugged back:
    /// the ends that are Polling train: both go Initialize / LinkUp (the
    /// SM must bring them to Active), with PortStateChange and Trap 128
    /// again.
    pub(crate) fn set_cable(
        &mut self,
        node: u32,
        port: u8,
        plugged: bool,
    ) -> Result<(), CableError> {
        let Some(p) = self.node(node).and_then(|n| n.port(port)) else {
            return Err(CableError::NoSuchPort);
        };
        if self.node(node).is_some_and(|n| n.is_switch() && port == 0) {
            return Err(CableError::NoCable);
        }
        let Some((rn, rp)) = p.remote else {
            return Err(CableError::NoCable);
        };
        let ends = [(node, port), (rn, rp)];
        if !plugged {
            if p.unplugged {
                return Ok(());
            }
            let mut changed = Vec::new();
            for (n, q) in ends {
                let Some(pp) = self.port_mut(n, q) else {
                    continue;
                };
                pp.unplugged = true;
                let was_up = pp.info.port_phys_state == PhysPortState::LINK_UP;
                let phys = match pp.info.port_phys_state {
                    PhysPortState::DISABLED | PhysPortState::SLEEP => pp.info.port_phys_state,
                    _ => PhysPortState::POLLING,
                };
                self.set_port_link(n, q, PortState::DOWN, phys, was_up);
                if was_up {
                    changed.push(n);
                }
            }
            for n in changed {
                self.mark_state_change(n);
            }
            return Ok(());
        }
        if !p.unplugged {
            return Ok(());
        }
        for (n, q) in ends {
            if let Some(pp) = self.port_mut(n, q) {
                pp.unplugged = false;
            }
        }
        let polling = ends.iter().all(|&(n, q)| {
            self.node(n)
                .and_then(|x| x.port(q))
                .is_some_and(|pp| pp.info.port_phys_state == PhysPortState::POLLING)
        });
        if polling {
            for (n, q) in ends {
                self.set_port_link(n, q, PortState::INIT, PhysPortState::LINK_UP, false);
            }
            self.recompute_link(ends[0], ends[1]);
            for (n, _) in ends {
                self.mark_state_change(n);
            }
        }
        Ok(())
    }

    /// A switch sets SwitchInfo PortStateChange and, when its port 0 has
    /// a LID and knows its SM, sends it Trap 128 "link state changed"
    /// (LID-routed SubnTrap(Notice) on QP0, IssuerLID and DataDetails
    /// LIDADDR the switch's LID), as switch SMAs do. Nothing for a CA.
    pub(crate) fn mark_state_change(&mut self, node: u32) {
        let Some(n) = self.node_mut(node) else { return };
        let Some(sw) = n.sw.as_mut() else { return };
        sw.info.port_state_change = true;
        let Some(p0) = n.port(0) else { return };
        let lid = p0.info.lid;
        let mut notice = Notice::generic(
            Notice::TYPE_URGENT,
            Notice::PRODUCER_SWITCH,
            trap::LINK_STATE_CHANGE,
        );
        notice.data_details[..2].copy_from_slice(&lid.to_be_bytes());
        self.trap_to_sm(node, 0, notice);
    }

    /// Sends `notice` (IssuerLID filled in) as a Trap from management
    /// port `port` of `node` to the SM that port knows (LID-routed
    /// SubnTrap(Notice) on QP0, with the port's M_Key and MasterSMSL), as
    /// SMAs do; nothing while the port has no LID or knows no SM.
    pub(crate) fn trap_to_sm(&mut self, node: u32, port: u8, mut notice: Notice) {
        let Some(p) = self.node(node).and_then(|n| n.port(port)) else {
            return;
        };
        let (lid, sm_lid, sm_sl, m_key) = (
            p.info.lid,
            p.info.master_sm_lid,
            p.info.master_sm_sl,
            p.info.m_key,
        );
        if lid == 0 || sm_lid == 0 || sm_lid >= 0xC000 {
            return;
        }
        notice.issuer_lid = lid;
        let mut nb = [0u8; 80];
        if notice.emit(&mut nb).is_err() {
            return;
        }
        self.faults.trap_tid = self.faults.trap_tid.wrapping_add(1);
        let tid = 0x5452_0000_0000 | u64::from(self.faults.trap_tid);
        let mut mad = Box::new([0u8; MAD_LEN]);
        {
            let mut m = Mad::new_unchecked(&mut mad[..]);
            m.set_request(
                MgmtClass::SUBN_LID_ROUTED,
                1,
                Method::TRAP,
                AttributeId::NOTICE,
                0,
            );
            m.set_tid(tid);
        }
        mad[24..32].copy_from_slice(&m_key.to_be_bytes());
        // An SMP carries the first 64 bytes of the Notice (no IssuerGID).
        mad[64..128].copy_from_slice(&nb[..64]);
        self.faults.traps += 1;
        self.queue.push_back(Packet {
            mad,
            slid: lid,
            dlid: sm_lid,
            sqpn: 0,
            dqpn: 0,
            sl: sm_sl,
            pkey: 0xFFFF,
            vl15: true,
            grh: None,
            origin: None,
            start: (node, port),
        });
    }
}

/// The packets a fabric resumes (held packets going back on the wire).
pub(crate) type Resume = VecDeque<(u32, u8, Packet)>;
