//! The Congestion Control agent (class 0x21, IBTA annex A10) of every
//! node: what `ibccquery` reads and `ibccconfig` sets.
//!
//! Switches answer CongestionInfo, CongestionKeyInfo, CongestionLog
//! (LogType 1), SwitchCongestionSetting, SwitchPortCongestionSetting and
//! Timestamp; CAs CongestionInfo (ControlTableCap [`CCT_BLOCKS`]),
//! CongestionKeyInfo, CongestionLog (LogType 2), CACongestionSetting,
//! CongestionControlTable and Timestamp; both ClassPortInfo. A Set
//! stores what its Control_Map (or an element's Valid bit) names and
//! answers the new value. The fabric carries no congestion: logs hold no
//! events. A non-zero CC_Key guards every MAD: one with another key is
//! dropped unanswered and counted in CC_KeyViolations. Timestamp counts
//! the fabric's virtual time in 1.024 µs units.

use mad_core::wire::attr::ClassPortInfo;
use mad_core::wire::cc::{
    cc_attr, CaCongestionEntry, CaCongestionSetting, CcTimestamp, CctEntry, CongestionControlTable,
    CongestionInfo, CongestionKeyInfo, CongestionLogCa, CongestionLogSwitch,
    SwitchCongestionSetting, SwitchPortCongestionElement, CCT_ENTRIES_PER_BLOCK, CC_CLASS_VERSION,
    LOG_TYPE_CA, LOG_TYPE_SWITCH, PORTS_PER_BLOCK,
};
use mad_core::wire::{MadStatus, Repr};

/// 64-entry CongestionControlTable blocks a CA keeps.
pub const CCT_BLOCKS: usize = 2;
/// SLs of CACongestionSetting.
const SLS: usize = 16;

const UNSUP_METH_ATTR: u16 = MadStatus::METHOD_ATTR_UNSUPPORTED.0;
const INVALID: u16 = MadStatus::INVALID_FIELD.0;

/// The Congestion Control state of one node.
#[derive(Debug, Clone, Default)]
pub(crate) struct CcState {
    pub(crate) key: CongestionKeyInfo,
    switch: SwitchCongestionSetting,
    /// Per port (0..=n) of a switch.
    ports: Vec<SwitchPortCongestionElement>,
    ca: CaCongestionSetting,
    ca_entries: [CaCongestionEntry; SLS],
    ccti_limit: u16,
    /// The CA's CongestionControlTable, allocated by its first Set
    /// (entries not there read as zeros).
    cct: Vec<CctEntry>,
}

impl CcState {
    /// The state of a node with `num_ports` ports.
    pub(crate) fn new(num_ports: u8) -> Self {
        Self {
            ports: vec![SwitchPortCongestionElement::default(); usize::from(num_ports) + 1],
            ..Self::default()
        }
    }
}

/// Writes `r` at the start of `out`.
fn put<R: Repr>(r: &R, out: &mut [u8]) -> Result<(), u16> {
    r.emit(out).map_err(|_| INVALID)
}

/// `bit` of `map`.
fn has(map: u32, bit: u32) -> bool {
    map & (1 << bit) != 0
}

/// The answer's data, or the status refusing the request
/// (`resp_time_value`: what ClassPortInfo reports).
#[allow(clippy::too_many_arguments)]
pub(crate) fn answer(
    cc: &mut CcState,
    is_switch: bool,
    attr: u16,
    amod: u32,
    set: bool,
    req: &[u8; 224],
    now: std::time::Duration,
    resp_time_value: u8,
) -> Result<[u8; 224], u16> {
    let mut out = [0u8; 224];
    let get_only = |set: bool| if set { Err(UNSUP_METH_ATTR) } else { Ok(()) };
    let stamp = (now.as_nanos() / 1024) as u32;
    match attr {
        cc_attr::CLASS_PORT_INFO => {
            get_only(set)?;
            let cpi = ClassPortInfo {
                base_version: 1,
                class_version: CC_CLASS_VERSION,
                resp_time_value,
                ..ClassPortInfo::default()
            };
            put(&cpi, &mut out[..])?;
        }
        cc_attr::CONGESTION_INFO => {
            get_only(set)?;
            let ci = CongestionInfo {
                control_table_cap: if is_switch { 0 } else { CCT_BLOCKS as u8 },
                ..CongestionInfo::default()
            };
            put(&ci, &mut out[..])?;
        }
        cc_attr::CONGESTION_KEY_INFO => {
            if set {
                let k = CongestionKeyInfo::parse(req).map_err(|_| INVALID)?;
                cc.key = CongestionKeyInfo {
                    cc_key_violations: cc.key.cc_key_violations,
                    ..k
                };
            }
            put(&cc.key, &mut out[..])?;
        }
        cc_attr::CONGESTION_LOG => {
            get_only(set)?;
            if is_switch {
                let l = CongestionLogSwitch {
                    common: u16::from(LOG_TYPE_SWITCH) << 8,
                    current_time_stamp: stamp,
                    ..CongestionLogSwitch::default()
                };
                put(&l, &mut out[..])?;
            } else {
                let l = CongestionLogCa {
                    common: u16::from(LOG_TYPE_CA) << 8,
                    current_time_stamp: stamp,
                    ..CongestionLogCa::default()
                };
                put(&l, &mut out[..])?;
            }
        }
        cc_attr::SWITCH_CONGESTION_SETTING if is_switch => {
            if set {
                let s = SwitchCongestionSetting::parse(req).map_err(|_| INVALID)?;
                let m = s.control_map;
                let c = &mut cc.switch;
                if has(m, 0) {
                    c.victim_mask = s.victim_mask;
                }
                if has(m, 1) {
                    c.credit_mask = s.credit_mask;
                }
                if has(m, 2) {
                    (c.threshold, c.packet_size) = (s.threshold, s.packet_size);
                }
                if has(m, 3) {
                    (c.cs_threshold, c.cs_return_delay) = (s.cs_threshold, s.cs_return_delay);
                }
                if has(m, 4) {
                    c.marking_rate = s.marking_rate;
                }
            }
            put(&cc.switch, &mut out[..])?;
        }
        cc_attr::SWITCH_PORT_CONGESTION_SETTING if is_switch => {
            let first = (amod as usize)
                .checked_mul(PORTS_PER_BLOCK)
                .ok_or(INVALID)?;
            if first >= cc.ports.len() {
                return Err(INVALID);
            }
            let el = SwitchPortCongestionElement::LEN;
            for (i, p) in cc
                .ports
                .iter_mut()
                .skip(first)
                .take(PORTS_PER_BLOCK)
                .enumerate()
            {
                if set {
                    let e =
                        SwitchPortCongestionElement::parse(&req[i * el..]).map_err(|_| INVALID)?;
                    if e.valid == 1 {
                        *p = e;
                    }
                }
                p.emit(&mut out[i * el..]).map_err(|_| INVALID)?;
            }
        }
        cc_attr::CA_CONGESTION_SETTING if !is_switch => {
            let h = CaCongestionSetting::LEN;
            let el = CaCongestionEntry::LEN;
            let mut hdr = CaCongestionSetting {
                port_control: cc.ca.port_control,
                control_map: 0,
            };
            if set {
                let s = CaCongestionSetting::parse(req).map_err(|_| INVALID)?;
                cc.ca.port_control = s.port_control;
                hdr = s.clone();
                for (sl, e) in cc.ca_entries.iter_mut().enumerate() {
                    if has(u32::from(s.control_map), sl as u32) {
                        *e = CaCongestionEntry::parse(&req[h + sl * el..]).map_err(|_| INVALID)?;
                    }
                }
            }
            put(&hdr, &mut out[..])?;
            for (sl, e) in cc.ca_entries.iter().enumerate() {
                e.emit(&mut out[h + sl * el..]).map_err(|_| INVALID)?;
            }
        }
        cc_attr::CONGESTION_CONTROL_TABLE if !is_switch => {
            let block = amod as usize;
            if block >= CCT_BLOCKS {
                return Err(INVALID);
            }
            let h = CongestionControlTable::LEN;
            let el = CctEntry::LEN;
            if set {
                let t = CongestionControlTable::parse(req).map_err(|_| INVALID)?;
                if usize::from(t.ccti_limit) >= CCT_BLOCKS * CCT_ENTRIES_PER_BLOCK {
                    return Err(INVALID);
                }
                cc.ccti_limit = t.ccti_limit;
                if cc.cct.is_empty() {
                    cc.cct = vec![CctEntry::default(); CCT_BLOCKS * CCT_ENTRIES_PER_BLOCK];
                }
                for i in 0..CCT_ENTRIES_PER_BLOCK {
                    cc.cct[block * CCT_ENTRIES_PER_BLOCK + i] =
                        CctEntry::parse(&req[h + i * el..]).map_err(|_| INVALID)?;
                }
            }
            let t = CongestionControlTable {
                ccti_limit: cc.ccti_limit,
                ..CongestionControlTable::default()
            };
            put(&t, &mut out[..])?;
            for i in 0..CCT_ENTRIES_PER_BLOCK {
                let e = cc.cct.get(block * CCT_ENTRIES_PER_BLOCK + i);
                e.cloned()
                    .unwrap_or_default()
                    .emit(&mut out[h + i * el..])
                    .map_err(|_| INVALID)?;
            }
        }
        cc_attr::TIMESTAMP => {
            get_only(set)?;
            put(&CcTimestamp { timestamp: stamp }, &mut out[..])?;
        }
        _ => return Err(UNSUP_METH_ATTR),
    }
    Ok(out)
}
