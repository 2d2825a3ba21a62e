//! The subnet management agent of every node: M_Key checking and Get /
//! Set of the SMP attributes (IBA vol. 1 §14.2.4–14.2.5).

use std::time::Duration;

use mad_core::transport::AsyncEvent;
use mad_core::wire::attr::{
    GuidInfo, LinearFwdTable, MulticastFwdTable, NodeInfo, PKeyTable, PhysPortState, PortInfo,
    PortState, SwitchInfo, VlArbTable,
};
use mad_core::wire::smp::Smp;
use mad_core::wire::{AttributeId, Mad, MadStatus, Method, Repr};

use super::engine::{Core, Packet};
use super::node::default_vlarb;
use super::DropReason;
use crate::topology::{speed, width};

type Data = [u8; 64];

const OK: u16 = MadStatus::SUCCESS.0;
const BAD_VERSION: u16 = MadStatus::BAD_VERSION.0;
const UNSUP_METHOD: u16 = MadStatus::METHOD_UNSUPPORTED.0;
const UNSUP_METH_ATTR: u16 = MadStatus::METHOD_ATTR_UNSUPPORTED.0;
const INVALID: u16 = MadStatus::INVALID_FIELD.0;

/// Result of the M_Key check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mkey {
    /// Go on.
    Pass,
    /// Go on, but a PortInfo answer shows M_Key 0 (protect level 1, Get
    /// with the wrong key).
    PassHidden,
    /// Drop the SMP (and count a violation).
    Violation,
}

/// What a Set(PortInfo) asks of the port and physical state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StateCmd {
    None,
    /// Link down; then (phys 0/2) retrain, (1) sleep, (3) disable.
    Down(u8),
    Armed,
    Active,
}

fn emit<R: Repr>(r: &R) -> Data {
    let mut d = [0u8; 64];
    // Cannot fail: every Repr here fits 64 bytes and its fields come from
    // parsed wire data or in-range defaults.
    let _ = r.emit(&mut d);
    d
}

impl Core {
    /// Runs the SMA of `node` on an SMP request received on `in_port`.
    pub(crate) fn sma(&mut self, node: u32, in_port: u8, pkt: &Packet) {
        self.stats.to_sma += 1;
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        let method = mad.method();
        let attr = mad.attr_id();
        let amod = mad.attr_mod();
        let class_version = mad.class_version();
        let m_key = Smp::new_unchecked(&pkt.mad[..]).m_key();
        let mut data = [0u8; 64];
        data.copy_from_slice(&pkt.mad[64..128]);
        if class_version != 1 {
            self.respond_smp(node, in_port, pkt, BAD_VERSION, &data);
            return;
        }
        if method == Method::TRAP_REPRESS {
            // Nothing to answer; only the M_Key rules apply.
            if self.mkey_check(node, in_port, method, m_key) == Mkey::Violation {
                self.drop_pkt(DropReason::MKey, node, in_port);
            }
            return;
        }
        if method != Method::GET && method != Method::SET {
            self.respond_smp(node, in_port, pkt, UNSUP_METHOD, &data);
            return;
        }
        let hide = match self.mkey_check(node, in_port, method, m_key) {
            Mkey::Violation => {
                self.drop_pkt(DropReason::MKey, node, in_port);
                return;
            }
            Mkey::PassHidden => true,
            Mkey::Pass => false,
        };
        let set = method == Method::SET;
        let (status, out) = match attr {
            AttributeId::NODE_DESC => self.node_desc(node, set),
            AttributeId::NODE_INFO => self.node_info(node, in_port, set),
            AttributeId::SWITCH_INFO => self.switch_info(node, set, &data),
            AttributeId::GUID_INFO => self.guid_info(node, in_port, amod, set, &data),
            AttributeId::PORT_INFO => self.port_info(node, in_port, amod, set, &data, hide),
            AttributeId::PKEY_TABLE => self.pkey_table(node, in_port, amod, set, &data),
            AttributeId::SL_TO_VL_TABLE => self.sl2vl(node, in_port, amod, set, &data),
            AttributeId::VL_ARB_TABLE => self.vlarb(node, in_port, amod, set, &data),
            AttributeId::LINEAR_FWD_TABLE => self.lft(node, amod, set, &data),
            AttributeId::MCAST_FWD_TABLE => self.mft(node, amod, set, &data),
            AttributeId::SM_INFO => self.sm_info(node, in_port, set, &data),
            _ => (UNSUP_METH_ATTR, data),
        };
        self.respond_smp(node, in_port, pkt, status, &out);
    }

    /// The M_Key check of IBA §14.2.4 as the Linux qib/hfi1 SMAs do it:
    /// a port M_Key of 0 or a matching key passes (and stops the lease
    /// timer); otherwise Get passes below protect level 2 (level 1 hides
    /// the M_Key in PortInfo), and Get at levels 2–3, Set and TrapRepress
    /// are violations: counted in M_KeyViolations, starting the lease
    /// timer, and dropped. An expired lease clears the protect bits.
    fn mkey_check(&mut self, node: u32, in_port: u8, method: Method, key: u64) -> Mkey {
        let now = self.now;
        let Some(n) = self.node_mut(node) else {
            return Mkey::Pass;
        };
        let mgmt = n.mgmt_port(in_port);
        let Some(p) = n.port_mut(mgmt) else {
            return Mkey::Pass;
        };
        if p.mkey_lease_end.is_some_and(|end| now >= end) {
            p.mkey_lease_end = None;
            p.info.m_key_protect_bits = 0;
        }
        let checked =
            method == Method::GET || method == Method::SET || method == Method::TRAP_REPRESS;
        if p.info.m_key == 0 || p.info.m_key == key {
            if checked {
                p.mkey_lease_end = None;
            }
            return Mkey::Pass;
        }
        if !checked {
            return Mkey::Pass;
        }
        if method == Method::GET && p.info.m_key_protect_bits < 2 {
            return if p.info.m_key_protect_bits == 1 {
                Mkey::PassHidden
            } else {
                Mkey::Pass
            };
        }
        p.info.m_key_violations = p.info.m_key_violations.saturating_add(1);
        if p.mkey_lease_end.is_none() && p.info.m_key_lease_period != 0 {
            p.mkey_lease_end =
                Some(now.saturating_add(Duration::from_secs(u64::from(p.info.m_key_lease_period))));
        }
        self.stats.mkey_violations += 1;
        Mkey::Violation
    }

    fn node_desc(&self, node: u32, set: bool) -> (u16, Data) {
        let d = self.node(node).map_or([0; 64], |n| n.desc);
        (if set { UNSUP_METH_ATTR } else { OK }, d)
    }

    fn node_info(&self, node: u32, in_port: u8, set: bool) -> (u16, Data) {
        let Some(n) = self.node(node) else {
            return (INVALID, [0; 64]);
        };
        let mut i: NodeInfo = n.info.clone();
        i.local_port_num = in_port;
        i.port_guid = if n.is_switch() {
            n.info.node_guid
        } else {
            n.port(in_port).map_or(n.info.node_guid, |p| p.guid)
        };
        (if set { UNSUP_METH_ATTR } else { OK }, emit(&i))
    }

    fn switch_info(&mut self, node: u32, set: bool, data: &Data) -> (u16, Data) {
        let Some(sw) = self.node_mut(node).and_then(|n| n.sw.as_mut()) else {
            return (UNSUP_METH_ATTR, *data);
        };
        if set {
            let Ok(new) = SwitchInfo::parse(data) else {
                return (INVALID, emit(&sw.info));
            };
            if new.linear_fdb_top >= sw.info.linear_fdb_cap && new.linear_fdb_top != 0 {
                return (INVALID, emit(&sw.info));
            }
            let i = &mut sw.info;
            i.linear_fdb_top = new.linear_fdb_top;
            i.default_port = new.default_port;
            i.default_mcast_primary_port = new.default_mcast_primary_port;
            i.default_mcast_not_primary_port = new.default_mcast_not_primary_port;
            i.life_time_value = new.life_time_value;
            i.multicast_fdb_top = new.multicast_fdb_top;
            if new.port_state_change {
                // Writing 1 clears it.
                i.port_state_change = false;
            }
        }
        (OK, emit(&sw.info))
    }

    fn guid_info(
        &mut self,
        node: u32,
        in_port: u8,
        amod: u32,
        set: bool,
        data: &Data,
    ) -> (u16, Data) {
        let Some(n) = self.node_mut(node) else {
            return (INVALID, *data);
        };
        let mgmt = n.mgmt_port(in_port);
        let Some(p) = n.port_mut(mgmt) else {
            return (INVALID, *data);
        };
        let cap = usize::from(p.info.guid_cap);
        let blocks = cap.div_ceil(GuidInfo::ENTRIES);
        let Ok(block) = usize::try_from(amod) else {
            return (INVALID, *data);
        };
        if block >= blocks {
            return (INVALID, *data);
        }
        let first = block * GuidInfo::ENTRIES;
        if set {
            if let Ok(new) = GuidInfo::parse(data) {
                for (k, g) in new.guids.iter().enumerate() {
                    let idx = first + k;
                    if idx == 0 || idx >= cap {
                        continue; // GUID 0 is the port GUID; read-only.
                    }
                    if p.guids.len() <= idx {
                        p.guids.resize(idx + 1, 0);
                    }
                    p.guids[idx] = *g;
                }
            }
        }
        let mut out = GuidInfo::default();
        for k in 0..GuidInfo::ENTRIES {
            let idx = first + k;
            out.guids[k] = if idx == 0 {
                p.guid
            } else if idx < cap {
                p.guids.get(idx).copied().unwrap_or(0)
            } else {
                0
            };
        }
        (OK, emit(&out))
    }

    fn port_info_out(&self, node: u32, in_port: u8, portnum: u8, hide: bool) -> Data {
        let Some(p) = self.node(node).and_then(|n| n.port(portnum)) else {
            return [0; 64];
        };
        let mut i = p.info.clone();
        i.local_port_num = in_port;
        if hide {
            i.m_key = 0;
        }
        emit(&i)
    }

    fn port_info(
        &mut self,
        node: u32,
        in_port: u8,
        amod: u32,
        set: bool,
        data: &Data,
        hide: bool,
    ) -> (u16, Data) {
        let Some(n) = self.node(node) else {
            return (INVALID, *data);
        };
        let is_switch = n.is_switch();
        let Ok(mut portnum) = u8::try_from(amod & 0x7FFF_FFFF) else {
            return (INVALID, *data);
        };
        if portnum > n.num_ports() {
            return (INVALID, *data);
        }
        if portnum == 0 && !is_switch {
            portnum = in_port;
        }
        if set {
            if !is_switch && portnum != in_port {
                // A CA sets only the port the SMP came in on.
                return (INVALID, self.port_info_out(node, in_port, portnum, hide));
            }
            let Ok(new) = PortInfo::parse(data) else {
                return (INVALID, *data);
            };
            let status = self.port_info_set(node, portnum, &new);
            return (status, self.port_info_out(node, in_port, portnum, hide));
        }
        (OK, self.port_info_out(node, in_port, portnum, hide))
    }

    /// Applies a Set(PortInfo) to `node`/`portnum`: every writable field,
    /// or nothing when one of them is invalid (status 0x1C).
    fn port_info_set(&mut self, node: u32, portnum: u8, new: &PortInfo) -> u16 {
        let Some(n) = self.node(node) else {
            return INVALID;
        };
        let is_switch = n.is_switch();
        let Some(p) = n.port(portnum) else {
            return INVALID;
        };
        let old = p.info.clone();
        let remote = p.remote;
        let remote_info = remote
            .and_then(|(rn, rp)| self.node(rn).and_then(|n| n.port(rp)))
            .map(|r| r.info.clone());
        let mut i = old.clone();

        // Validated fields.
        let width_en = match new.link_width_enabled {
            0 => old.link_width_enabled,
            255 => old.link_width_supported,
            w if w & !old.link_width_supported == 0 => w,
            _ => return INVALID,
        };
        let speed_en = match new.link_speed_enabled {
            0 => old.link_speed_enabled,
            15 => old.link_speed_supported,
            s if s & !old.link_speed_supported == 0 => s,
            _ => return INVALID,
        };
        let ext_en = match new.link_speed_ext_enabled {
            0 => old.link_speed_ext_enabled,
            30 => 0,
            31 => p.speed_ext_capable,
            e if e & !p.speed_ext_capable == 0 => e,
            _ => return INVALID,
        };
        if new.neighbor_mtu > old.mtu_cap || new.operational_vls > old.vl_cap {
            return INVALID;
        }
        if new.link_down_default_state > 2 {
            return INVALID;
        }
        let cmd = match state_command(new, &old, is_switch && portnum == 0, remote_info.as_ref()) {
            Some(c) => c,
            None => return INVALID,
        };
        // The link's active width and speed, if it runs.
        let relink = width_en != old.link_width_enabled
            || speed_en != old.link_speed_enabled
            || ext_en != old.link_speed_ext_enabled;
        if relink {
            if let Some(r) = &remote_info {
                if width_en & r.link_width_enabled == 0 || speed_en & r.link_speed_enabled == 0 {
                    return INVALID;
                }
            }
        }

        // Plain writable fields.
        i.m_key = new.m_key;
        i.gid_prefix = new.gid_prefix;
        i.lid = new.lid;
        i.master_sm_lid = new.master_sm_lid;
        i.m_key_lease_period = new.m_key_lease_period;
        i.m_key_protect_bits = new.m_key_protect_bits;
        i.lmc = new.lmc;
        i.master_sm_sl = new.master_sm_sl;
        i.vl_high_limit = new.vl_high_limit;
        i.init_type_reply = new.init_type_reply;
        i.vl_stall_count = new.vl_stall_count;
        i.hoq_life = new.hoq_life;
        i.partition_enforcement_inbound = new.partition_enforcement_inbound;
        i.partition_enforcement_outbound = new.partition_enforcement_outbound;
        i.filter_raw_inbound = new.filter_raw_inbound;
        i.filter_raw_outbound = new.filter_raw_outbound;
        i.m_key_violations = new.m_key_violations;
        i.p_key_violations = new.p_key_violations;
        i.q_key_violations = new.q_key_violations;
        i.mcast_pkey_trap_suppression_enabled = new.mcast_pkey_trap_suppression_enabled;
        i.subnet_timeout = new.subnet_timeout;
        i.local_phy_errors = new.local_phy_errors;
        i.overrun_errors = new.overrun_errors;
        if new.neighbor_mtu != 0 {
            i.neighbor_mtu = new.neighbor_mtu;
        }
        if new.operational_vls != 0 {
            i.operational_vls = new.operational_vls;
        }
        if new.link_down_default_state != 0 {
            i.link_down_default_state = new.link_down_default_state;
        }
        i.link_width_enabled = width_en;
        i.link_speed_enabled = speed_en;
        i.link_speed_ext_enabled = ext_en;
        // ClientReregister is an action, reported back as 0.
        i.client_reregister = false;
        if let Some(p) = self.port_mut(node, portnum) {
            p.info = i.clone();
        }
        self.port_events(node, portnum, &old, &i);
        if relink {
            if let Some((rn, rp)) = remote {
                self.recompute_link((node, portnum), (rn, rp));
            }
        }
        match cmd {
            StateCmd::None => {}
            StateCmd::Down(phys) => self.link_down_cmd(node, portnum, phys),
            StateCmd::Armed | StateCmd::Active => {
                let st = if cmd == StateCmd::Armed {
                    PortState::ARMED
                } else {
                    PortState::ACTIVE
                };
                let before = i.clone();
                i.port_state = st;
                if let Some(p) = self.port_mut(node, portnum) {
                    p.info.port_state = st;
                }
                self.port_events(node, portnum, &before, &i);
            }
        }
        if new.client_reregister {
            self.port_event(node, portnum, AsyncEvent::ClientReregister);
        }
        OK
    }

    /// Sets both ends' active width and speeds from what they enable.
    pub(crate) fn recompute_link(&mut self, a: (u32, u8), b: (u32, u8)) {
        let get = |c: &Core, (n, p): (u32, u8)| {
            c.node(n).and_then(|x| x.port(p)).map(|p| {
                (
                    p.info.link_width_enabled,
                    p.info.link_speed_enabled,
                    p.info.link_speed_ext_enabled,
                )
            })
        };
        let (Some(ea), Some(eb)) = (get(self, a), get(self, b)) else {
            return;
        };
        let w = best(
            ea.0 & eb.0,
            &[width::W12X, width::W8X, width::W4X, width::W2X, width::W1X],
        );
        let s = best(ea.1 & eb.1, &[speed::QDR, speed::DDR, speed::SDR]);
        let e = best(
            ea.2 & eb.2,
            &[speed::EXT_HDR, speed::EXT_EDR, speed::EXT_FDR],
        );
        for (n, p) in [a, b] {
            if let Some(port) = self.port_mut(n, p) {
                if let Some(w) = w {
                    port.info.link_width_active = w;
                }
                if let Some(s) = s {
                    port.info.link_speed_active = s;
                }
                // As ibsim: LinkSpeedExtSupported reads 0 while no
                // extended speed is active.
                port.info.link_speed_ext_active = e.unwrap_or(0);
                port.info.link_speed_ext_supported = if e.is_some() { speed::EXT_ALL } else { 0 };
            }
        }
    }

    /// PortState Down (with PortPhysicalState `phys`): 0 or 2 retrain the
    /// link (both ends come back in Init), 1 / 3 put this port to sleep /
    /// disable it (the other end goes Down / Polling).
    fn link_down_cmd(&mut self, node: u32, port: u8, phys: u8) {
        let Some(p) = self.node(node).and_then(|n| n.port(port)) else {
            return;
        };
        let remote = p.remote;
        let plugged = !p.unplugged;
        let was_up = p.info.port_phys_state == PhysPortState::LINK_UP;
        match phys {
            1 | 3 => {
                let ps = if phys == 1 {
                    PhysPortState::SLEEP
                } else {
                    PhysPortState::DISABLED
                };
                self.set_port_link(node, port, PortState::DOWN, ps, was_up);
                if was_up {
                    self.mark_state_change(node);
                }
                if let Some((rn, rp)) = remote.filter(|_| was_up) {
                    self.set_port_link(rn, rp, PortState::DOWN, PhysPortState::POLLING, true);
                    self.mark_state_change(rn);
                }
            }
            _ => {
                let remote_ready = remote
                    .and_then(|(rn, rp)| self.node(rn).and_then(|n| n.port(rp)))
                    .is_some_and(|r| {
                        r.info.port_phys_state == PhysPortState::LINK_UP
                            || r.info.port_phys_state == PhysPortState::POLLING
                    });
                match remote.filter(|_| remote_ready && plugged) {
                    Some((rn, rp)) => {
                        self.set_port_link(
                            node,
                            port,
                            PortState::INIT,
                            PhysPortState::LINK_UP,
                            was_up,
                        );
                        self.set_port_link(rn, rp, PortState::INIT, PhysPortState::LINK_UP, was_up);
                        self.recompute_link((node, port), (rn, rp));
                        self.mark_state_change(node);
                        self.mark_state_change(rn);
                    }
                    None => {
                        self.set_port_link(
                            node,
                            port,
                            PortState::DOWN,
                            PhysPortState::POLLING,
                            was_up,
                        );
                    }
                }
            }
        }
    }

    /// Sets a port's logical and physical state (counting LinkDowned when
    /// a link that was up went down) and tells its endpoint.
    pub(crate) fn set_port_link(
        &mut self,
        node: u32,
        port: u8,
        state: PortState,
        phys: PhysPortState,
        was_up: bool,
    ) {
        let Some(p) = self.port_mut(node, port) else {
            return;
        };
        let old = p.info.clone();
        p.info.port_state = state;
        p.info.port_phys_state = phys;
        if was_up {
            p.counters.link_downed_counter = p.counters.link_downed_counter.saturating_add(1);
            p.counters_ext.link_downed_counter += 1;
        }
        let new = p.info.clone();
        self.port_events(node, port, &old, &new);
    }

    fn pkey_table(
        &mut self,
        node: u32,
        in_port: u8,
        amod: u32,
        set: bool,
        data: &Data,
    ) -> (u16, Data) {
        let Some(n) = self.node_mut(node) else {
            return (INVALID, *data);
        };
        let port = if n.is_switch() {
            match u8::try_from(amod >> 16) {
                Ok(p) if p <= n.num_ports() => p,
                _ => return (INVALID, *data),
            }
        } else {
            in_port
        };
        let Some(p) = n.port_mut(port) else {
            return (INVALID, *data);
        };
        let block = (amod & 0xFFFF) as usize;
        let cap = usize::from(p.pkey_cap);
        let first = block * PKeyTable::ENTRIES;
        if first >= cap {
            return (INVALID, *data);
        }
        let count = (cap - first).min(PKeyTable::ENTRIES);
        let mut changed = false;
        if set {
            if let Ok(new) = PKeyTable::parse(data) {
                if p.pkeys.len() < first + count {
                    p.pkeys.resize(first + count, 0);
                }
                for k in 0..count {
                    changed |= p.pkeys[first + k] != new.pkeys[k];
                    p.pkeys[first + k] = new.pkeys[k];
                }
                while p.pkeys.last() == Some(&0) {
                    p.pkeys.pop();
                }
            }
        }
        let mut out = PKeyTable::default();
        for k in 0..count {
            out.pkeys[k] = p.pkeys.get(first + k).copied().unwrap_or(0);
        }
        let d = emit(&out);
        if changed {
            self.port_event(node, port, AsyncEvent::PkeyChange);
        }
        (OK, d)
    }

    fn sl2vl(&mut self, node: u32, in_port: u8, amod: u32, set: bool, data: &Data) -> (u16, Data) {
        let Some(n) = self.node_mut(node) else {
            return (INVALID, *data);
        };
        let nports = n.num_ports();
        let mut out = [0u8; 64];
        if let Some(sw) = n.sw.as_mut() {
            let inp = ((amod >> 8) & 0xFF) as u8;
            let outp = (amod & 0xFF) as u8;
            if inp > nports || outp > nports {
                return (INVALID, *data);
            }
            if set {
                let mut t = [0u8; 8];
                t.copy_from_slice(&data[..8]);
                sw.sl2vl.insert((inp, outp), t);
            }
            let t = sw
                .sl2vl
                .get(&(inp, outp))
                .copied()
                .unwrap_or(super::node::DEFAULT_SL2VL);
            out[..8].copy_from_slice(&t);
        } else {
            let Some(p) = n.port_mut(in_port) else {
                return (INVALID, *data);
            };
            if set {
                p.sl2vl.copy_from_slice(&data[..8]);
            }
            out[..8].copy_from_slice(&p.sl2vl);
        }
        // The block is 8 bytes; the rest of the SMP data is reserved.
        (OK, out)
    }

    fn vlarb(&mut self, node: u32, in_port: u8, amod: u32, set: bool, data: &Data) -> (u16, Data) {
        let Some(n) = self.node_mut(node) else {
            return (INVALID, *data);
        };
        let port = if n.is_switch() {
            match u8::try_from(amod & 0xFFFF) {
                Ok(p) if p <= n.num_ports() => p,
                _ => return (INVALID, *data),
            }
        } else {
            in_port
        };
        let Some(p) = n.port_mut(port) else {
            return (INVALID, *data);
        };
        let block = amod >> 16;
        if !(1..=4).contains(&block) {
            return (INVALID, *data);
        }
        let high = block >= 3;
        let upper = block & 1 == 0;
        let cap = usize::from(if high {
            p.info.vl_arb_high_cap
        } else {
            p.info.vl_arb_low_cap
        });
        let first = if upper { 32 } else { 0 };
        if cap <= first {
            return (INVALID, *data);
        }
        let count = (cap - first).min(32);
        let base = if high { 64 } else { 0 } + first;
        let table = p.vlarb.get_or_insert_with(default_vlarb);
        if set {
            if let Ok(new) = VlArbTable::parse(data) {
                table[base..base + count].copy_from_slice(&new.entries[..count]);
            }
        }
        let mut out = VlArbTable::default();
        out.entries[..count].copy_from_slice(&table[base..base + count]);
        (OK, emit(&out))
    }

    fn lft(&mut self, node: u32, amod: u32, set: bool, data: &Data) -> (u16, Data) {
        let Some(sw) = self.node_mut(node).and_then(|n| n.sw.as_mut()) else {
            return (UNSUP_METH_ATTR, *data);
        };
        let Ok(block) = usize::try_from(amod) else {
            return (INVALID, *data);
        };
        let cap = usize::from(sw.info.linear_fdb_cap);
        let first = block.saturating_mul(LinearFwdTable::ENTRIES);
        if first >= cap {
            return (INVALID, *data);
        }
        let count = (cap - first).min(LinearFwdTable::ENTRIES);
        if set {
            if sw.lft.len() < first + count {
                sw.lft.resize(first + count, 0xFF);
            }
            sw.lft[first..first + count].copy_from_slice(&data[..count]);
        }
        let mut out = [0xFFu8; 64];
        for (k, o) in out.iter_mut().enumerate().take(count) {
            *o = sw.lft.get(first + k).copied().unwrap_or(0xFF);
        }
        (OK, out)
    }

    fn mft(&mut self, node: u32, amod: u32, set: bool, data: &Data) -> (u16, Data) {
        let Some(n) = self.node_mut(node) else {
            return (INVALID, *data);
        };
        let nports = usize::from(n.num_ports());
        let Some(sw) = n.sw.as_mut() else {
            return (UNSUP_METH_ATTR, *data);
        };
        let position = (amod >> 28) as usize;
        let block = (amod & 0x1FF) as usize;
        let positions = nports / 16 + 1;
        let cap = usize::from(sw.info.multicast_fdb_cap);
        let first = block * MulticastFwdTable::ENTRIES;
        if position >= positions || first >= cap {
            return (INVALID, *data);
        }
        let count = (cap - first).min(MulticastFwdTable::ENTRIES);
        if set {
            if let Ok(new) = MulticastFwdTable::parse(data) {
                if sw.mft.is_empty() {
                    sw.mft = vec![0; cap * positions];
                }
                for k in 0..count {
                    if let Some(e) = sw.mft.get_mut((first + k) * positions + position) {
                        *e = new.masks[k];
                    }
                }
            }
        }
        let mut out = MulticastFwdTable::default();
        for k in 0..count {
            out.masks[k] = sw
                .mft
                .get((first + k) * positions + position)
                .copied()
                .unwrap_or(0);
        }
        (OK, emit(&out))
    }

    /// SMInfo reaches the SMA only when no SM handler or SM endpoint took
    /// it: answered from the port's configured SMInfo, else "unsupported"
    /// (what the kernel answers for a port without an SM).
    fn sm_info(&mut self, node: u32, in_port: u8, _set: bool, data: &Data) -> (u16, Data) {
        let Some(n) = self.node(node) else {
            return (INVALID, *data);
        };
        let mgmt = n.mgmt_port(in_port);
        match n.port(mgmt).and_then(|p| p.sm_info.as_ref()) {
            Some(i) => (OK, emit(i)),
            None => (UNSUP_METH_ATTR, *data),
        }
    }
}

/// Decodes the PortState / PortPhysicalState of a Set(PortInfo); `None`
/// when the request is invalid for the port's current state.
fn state_command(
    new: &PortInfo,
    old: &PortInfo,
    switch_port0: bool,
    remote: Option<&PortInfo>,
) -> Option<StateCmd> {
    let r = new.port_state.0;
    let ps = new.port_phys_state.0;
    if r == PortState::INIT.0 || r > PortState::ACTIVE.0 || ps > PhysPortState::DISABLED.0 {
        return None;
    }
    if switch_port0 {
        // Port 0 of a switch is always up and Active.
        return Some(StateCmd::None);
    }
    if r == PortState::NO_CHANGE.0 && ps == 0 {
        return Some(StateCmd::None);
    }
    if r == PortState::DOWN.0 || r == PortState::NO_CHANGE.0 {
        return Some(StateCmd::Down(ps));
    }
    if ps != 0 {
        return None;
    }
    let up = old.port_phys_state == PhysPortState::LINK_UP;
    let rstate = remote.filter(|_| up).map(|r| r.port_state.0)?;
    let cur = old.port_state;
    if r == PortState::ARMED.0 {
        if (cur == PortState::INIT || cur == PortState::ARMED) && rstate >= PortState::INIT.0 {
            return Some(StateCmd::Armed);
        }
        return None;
    }
    // Active.
    if (cur == PortState::ARMED || cur == PortState::ACTIVE) && rstate >= PortState::ARMED.0 {
        return Some(StateCmd::Active);
    }
    None
}

fn best(common: u8, order: &[u8]) -> Option<u8> {
    order.iter().copied().find(|b| common & b != 0)
}
