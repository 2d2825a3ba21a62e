//! The subnet management agent of every node: M_Key checking and Get /
//! Set of the SMP attributes (IBA vol. 1 §14.2.4–14.2.5).

mod port_state;

use std::sync::Arc;
use std::time::Duration;

use mad_core::transport::AsyncEvent;
use mad_core::wire::attr::{
    trap, GuidInfo, LinearFwdTable, MulticastFwdTable, NodeInfo, Notice, PKeyTable, PhysPortState,
    PortInfo, PortState, SwitchInfo, VlArbTable,
};
use mad_core::wire::smp::Smp;
use mad_core::wire::{AttributeId, Mad, MadStatus, Method, Repr};

use crate::fabric::engine::{Core, Packet};
use crate::fabric::node::default_vlarb;
use crate::fabric::DropReason;
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
                self.bad_mkey_trap(node, in_port, pkt);
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
                self.bad_mkey_trap(node, in_port, pkt);
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

    /// Trap 256 "Bad M_Key" to the SM for the SMP `pkt` refused at
    /// `in_port` of `node` (IBA 14.2.5.1 DataDetails: the requester's
    /// LID, DrSLID, Method, AttributeID, AttributeModifier, the M_Key it
    /// presented, DRNotice and hop count).
    fn bad_mkey_trap(&mut self, node: u32, in_port: u8, pkt: &Packet) {
        let Some(n) = self.node(node) else {
            return;
        };
        let mgmt = n.mgmt_port(in_port);
        let producer = if n.is_switch() {
            Notice::PRODUCER_SWITCH
        } else {
            Notice::PRODUCER_CA
        };
        let smp = Smp::new_unchecked(&pkt.mad[..]);
        let mad = smp.mad();
        let mut notice = Notice::generic(Notice::TYPE_SECURITY, producer, trap::BAD_MKEY);
        let d = &mut notice.data_details;
        d[0..2].copy_from_slice(&pkt.slid.to_be_bytes());
        if smp.is_directed_route() {
            d[2..4].copy_from_slice(&smp.dr_slid().to_be_bytes());
            d[20] = 0x80 | (smp.hop_cnt() & 0x3F);
        }
        d[4] = mad.method().0;
        d[6..8].copy_from_slice(&mad.attr_id().0.to_be_bytes());
        d[8..12].copy_from_slice(&mad.attr_mod().to_be_bytes());
        d[12..20].copy_from_slice(&smp.m_key().to_be_bytes());
        self.trap_to_sm(node, mgmt, notice);
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
        let Some(sw) = self.node(node).and_then(|n| n.sw.as_ref()) else {
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
        let mut out = sw.lft.get(block).map_or([0xFF; 64], |b| **b);
        if set {
            out[..count].copy_from_slice(&data[..count]);
            let shared = self.lft_blocks.intern(&out);
            let Some(sw) = self.node_mut(node).and_then(|n| n.sw.as_mut()) else {
                return (UNSUP_METH_ATTR, *data);
            };
            if sw.lft.len() <= block {
                // The whole table up to LinearFDBTop at once, unwritten
                // blocks sharing one "no route" block (an SM writes the
                // blocks in order: one allocation, not one per block).
                let none = Arc::new([0xFF; 64]);
                let top = usize::from(sw.info.linear_fdb_top) / LinearFwdTable::ENTRIES + 1;
                let len = top.max(block + 1);
                sw.lft.reserve_exact(len - sw.lft.len());
                sw.lft.resize(len, none);
            }
            sw.lft[block] = shared;
        }
        out[count..].fill(0xFF);
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
            Some(i) => (OK, emit(&**i)),
            None => (UNSUP_METH_ATTR, *data),
        }
    }
}
