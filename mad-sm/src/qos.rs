//! QoS: OpenSM's QoS options (`qos`, `qos_max_vls`, `qos_high_limit`,
//! `qos_vlarb_high`, `qos_vlarb_low`, `qos_sl2vl` and their `qos_ca_`,
//! `qos_sw0_`, `qos_swe_`, `qos_rtr_` variants), parsed, and the
//! SLtoVLMappingTable and VLArbitrationTable Sets they mean for each
//! node, by OpenSM 3.3's rules (`osm_qos.c`):
//!
//! - A port class's value is its own option, else the `qos_` one, else
//!   OpenSM's default (high limit 0; VLArb high `0:4,1:0,...,14:0`, low
//!   `0:0,1:4,...,14:4`; SL2VL `0,1,...,14,7`).
//! - CA and router ports, and switch port 0 when it is enhanced: the
//!   VLArbitration blocks (AttributeModifier port 0) and, when the port's
//!   CapabilityMask has IsSLMappingSupported, the SL2VL table (0).
//! - Switch external ports not Down: the VLArbitration blocks of each
//!   (port in the AttributeModifier); then, when port 0 has
//!   IsSLMappingSupported, the SL2VL table of every (input port 0..=N,
//!   output port) pair (from port 0 as output too when port 0 is
//!   enhanced).
//! - A port whose VLCap is VL0 only gets no VLArbitration table (and
//!   VLHighLimit 0). Low / high blocks are written as the capacity asks:
//!   the first block with `min(cap, 32)` entries, the second, when the
//!   capacity is over 32, with `cap % 32` entries (OpenSM's arithmetic);
//!   entries past those are zero.
//! - Every VL is masked by the port's OperationalVLs: `vl & ((1 <<
//!   (OpVLs - 1)) - 1)` (VL 15 of an SL2VL entry is kept: it drops).
//!
//! `qos_max_vls` is read and checked (1-15) as OpenSM does, and, as in
//! OpenSM 3.3, does not change the tables: the VLs a port runs are its
//! OperationalVLs, which the SM sets to the lower VLCap of the link's two
//! ends, at most `max_op_vls` ([`op_vls`]).
//!
//! Unlike OpenSM, which warns and goes on, a malformed list is an error
//! naming the key and the entry ([`parse_vlarb`], [`parse_sl2vl`]).

use mad_core::wire::attr::{port_cap, PortInfo, PortState, VlArbTable};
use mad_core::wire::AttributeId;

use crate::subnet::SmNode;

/// OpenSM's `qos_max_vls` default.
pub const DEFAULT_MAX_VLS: u8 = 15;
/// OpenSM's `qos_high_limit` default.
pub const DEFAULT_HIGH_LIMIT: u8 = 0;
/// OpenSM's `qos_vlarb_high` default.
pub const DEFAULT_VLARB_HIGH: &str =
    "0:4,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0,12:0,13:0,14:0";
/// OpenSM's `qos_vlarb_low` default.
pub const DEFAULT_VLARB_LOW: &str =
    "0:0,1:4,2:4,3:4,4:4,5:4,6:4,7:4,8:4,9:4,10:4,11:4,12:4,13:4,14:4";
/// OpenSM's `qos_sl2vl` default.
pub const DEFAULT_SL2VL: &str = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7";
/// OpenSM's `max_op_vls` default (VL0-14).
pub const DEFAULT_MAX_OP_VLS: u8 = 5;
/// Entries of a VLArbitration list (two blocks of 32).
pub const VLARB_ENTRIES: usize = 64;

/// A QoS option string that could not be read: the key it came from and
/// what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosParseError {
    /// The option (`qos_vlarb_high`, `qos_ca_sl2vl`, ...).
    pub key: String,
    /// What is wrong, naming the entry.
    pub reason: String,
}

impl std::fmt::Display for QosParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.reason)
    }
}

impl std::error::Error for QosParseError {}

/// A number as `strtoul(s, _, 0)` reads a whole token: decimal, `0x`
/// hexadecimal or `0`-led octal.
fn c_number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if s.len() > 1 && s.starts_with('0') {
        return u64::from_str_radix(&s[1..], 8).ok();
    }
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The entries of a list, split at commas (and newlines, as OpenSM's
/// check does); an empty string is no entry.
fn entries(v: &str) -> impl Iterator<Item = (usize, &str)> {
    v.split([',', '\n'])
        .enumerate()
        .filter(|(_, t)| !t.trim().is_empty())
        .map(|(i, t)| (i + 1, t))
}

/// Reads a VLArbitration list (`qos_vlarb_high`, `qos_vlarb_low`, ...):
/// up to 64 comma-separated `VL:WEIGHT` entries, VL 0-14, weight 0-255.
///
/// # Errors
/// An entry that is not `VL:WEIGHT` with numbers in range, or more than
/// 64 entries, naming `key` and the entry.
pub fn parse_vlarb(key: &str, v: &str) -> Result<Vec<(u8, u8)>, QosParseError> {
    let err = |reason: String| QosParseError {
        key: key.to_owned(),
        reason,
    };
    let mut out = Vec::new();
    for (i, tok) in entries(v) {
        let Some((vl, w)) = tok.split_once(':') else {
            return Err(err(format!("entry {i} {tok:?} is not VL:WEIGHT")));
        };
        let vl = c_number(vl)
            .filter(|&n| n <= 14)
            .ok_or_else(|| err(format!("entry {i} {tok:?}: VL {:?} is not 0-14", vl.trim())))?;
        let w = c_number(w).filter(|&n| n <= 255).ok_or_else(|| {
            err(format!(
                "entry {i} {tok:?}: weight {:?} is not 0-255",
                w.trim()
            ))
        })?;
        if out.len() == VLARB_ENTRIES {
            return Err(err(format!("more than {VLARB_ENTRIES} VL:WEIGHT entries")));
        }
        out.push((vl as u8, w as u8));
    }
    Ok(out)
}

/// Reads an SL2VL list (`qos_sl2vl`, ...): exactly 16 comma-separated
/// VLs 0-15, the VL of SL 0 first.
///
/// # Errors
/// A VL that is not a number 0-15, or not 16 of them, naming `key`.
pub fn parse_sl2vl(key: &str, v: &str) -> Result<[u8; 16], QosParseError> {
    let err = |reason: String| QosParseError {
        key: key.to_owned(),
        reason,
    };
    let mut out = [0u8; 16];
    let mut n = 0;
    for (i, tok) in entries(v) {
        let vl = c_number(tok)
            .filter(|&x| x <= 15)
            .ok_or_else(|| err(format!("entry {i}: VL {:?} is not 0-15", tok.trim())))?;
        if n == 16 {
            return Err(err("more than 16 VLs (one per SL 0-15)".to_owned()));
        }
        out[n] = vl as u8;
        n += 1;
    }
    if n != 16 {
        return Err(err(format!("{n} VLs listed, 16 needed (one per SL 0-15)")));
    }
    Ok(out)
}

/// One set of QoS options (the `qos_` defaults or a port class's);
/// `None` where the option was not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosOptions {
    /// `*_max_vls`, 1-15 (checked, not applied: see the module docs).
    pub max_vls: Option<u8>,
    /// `*_high_limit`: PortInfo VLHighLimit, 0-255.
    pub high_limit: Option<u8>,
    /// `*_vlarb_high`: (VL, weight) entries of the high-priority table.
    pub vlarb_high: Option<Vec<(u8, u8)>>,
    /// `*_vlarb_low`: (VL, weight) entries of the low-priority table.
    pub vlarb_low: Option<Vec<(u8, u8)>>,
    /// `*_sl2vl`: the VL of each SL.
    pub sl2vl: Option<[u8; 16]>,
}

impl QosOptions {
    /// Sets option `what` (`max_vls`, `high_limit`, `vlarb_high`,
    /// `vlarb_low`, `sl2vl`) from `v`; `key` names it in errors.
    /// `Ok(false)` for another `what`.
    ///
    /// # Errors
    /// A value out of range or malformed, naming `key`.
    pub fn set(&mut self, key: &str, what: &str, v: &str) -> Result<bool, QosParseError> {
        let err = |reason: String| QosParseError {
            key: key.to_owned(),
            reason,
        };
        match what {
            "max_vls" => {
                let n = c_number(v)
                    .filter(|n| (1..=15).contains(n))
                    .ok_or_else(|| err(format!("{:?} is not 1-15", v.trim())))?;
                self.max_vls = Some(n as u8);
            }
            "high_limit" => {
                let n = c_number(v)
                    .filter(|&n| n <= 255)
                    .ok_or_else(|| err(format!("{:?} is not 0-255", v.trim())))?;
                self.high_limit = Some(n as u8);
            }
            "vlarb_high" => self.vlarb_high = Some(parse_vlarb(key, v)?),
            "vlarb_low" => self.vlarb_low = Some(parse_vlarb(key, v)?),
            "sl2vl" => self.sl2vl = Some(parse_sl2vl(key, v)?),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The kinds of port OpenSM configures QoS for, each with its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortClass {
    /// CA ports (`qos_ca_`).
    Ca,
    /// Switch port 0 (`qos_sw0_`; enhanced port 0 only).
    SwitchPort0,
    /// Switch external ports (`qos_swe_`).
    SwitchExternal,
    /// Router ports (`qos_rtr_`).
    Router,
}

/// `mad sm`'s QoS settings (`-Q`, OpenSM's QoS keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosConfig {
    /// `qos` / `-Q`: program SL2VL and VLArbitration tables.
    pub enabled: bool,
    /// `qos_*`: the options every class falls back to.
    pub default: QosOptions,
    /// `qos_ca_*`.
    pub ca: QosOptions,
    /// `qos_sw0_*`.
    pub sw0: QosOptions,
    /// `qos_swe_*`.
    pub swe: QosOptions,
    /// `qos_rtr_*`.
    pub rtr: QosOptions,
    /// `max_op_vls`: the most OperationalVLs any port is given (1 = VL0
    /// ... 5 = VL0-14; default 5), QoS or not.
    pub max_op_vls: u8,
}

impl Default for QosConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            default: QosOptions::default(),
            ca: QosOptions::default(),
            sw0: QosOptions::default(),
            swe: QosOptions::default(),
            rtr: QosOptions::default(),
            max_op_vls: DEFAULT_MAX_OP_VLS,
        }
    }
}

/// The tables of one port class, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosTables {
    /// PortInfo VLHighLimit.
    pub high_limit: u8,
    /// High-priority VLArbitration entries (wire form, [`VlArbTable::entry`]).
    pub vlarb_high: [u16; VLARB_ENTRIES],
    /// Low-priority VLArbitration entries.
    pub vlarb_low: [u16; VLARB_ENTRIES],
    /// VL of each SL.
    pub sl2vl: [u8; 16],
}

fn vlarb_table(list: &[(u8, u8)]) -> [u16; VLARB_ENTRIES] {
    let mut t = [0u16; VLARB_ENTRIES];
    for (e, &(vl, w)) in t.iter_mut().zip(list) {
        *e = VlArbTable::entry(vl, w);
    }
    t
}

impl QosConfig {
    /// The options `class` uses.
    #[must_use]
    pub fn options(&self, class: PortClass) -> &QosOptions {
        match class {
            PortClass::Ca => &self.ca,
            PortClass::SwitchPort0 => &self.sw0,
            PortClass::SwitchExternal => &self.swe,
            PortClass::Router => &self.rtr,
        }
    }

    /// The tables of `class`: its own options, else the `qos_` ones,
    /// else OpenSM's defaults.
    #[must_use]
    pub fn tables(&self, class: PortClass) -> QosTables {
        let o = self.options(class);
        let d = &self.default;
        let list = |own: &Option<Vec<(u8, u8)>>, dflt: &Option<Vec<(u8, u8)>>, builtin: &str| {
            own.clone()
                .or_else(|| dflt.clone())
                .unwrap_or_else(|| parse_vlarb("", builtin).unwrap_or_default())
        };
        QosTables {
            high_limit: o.high_limit.or(d.high_limit).unwrap_or(DEFAULT_HIGH_LIMIT),
            vlarb_high: vlarb_table(&list(&o.vlarb_high, &d.vlarb_high, DEFAULT_VLARB_HIGH)),
            vlarb_low: vlarb_table(&list(&o.vlarb_low, &d.vlarb_low, DEFAULT_VLARB_LOW)),
            sl2vl: o
                .sl2vl
                .or(d.sl2vl)
                .unwrap_or_else(|| parse_sl2vl("", DEFAULT_SL2VL).unwrap_or_default()),
        }
    }
}

/// OperationalVLs for a port as OpenSM computes it: the lower VLCap of
/// the two ends of its link (its own OperationalVLs when it has no far
/// end), at least 1, at most `max_op_vls`.
#[must_use]
pub fn op_vls(port: &PortInfo, remote: Option<&PortInfo>, max_op_vls: u8) -> u8 {
    let v = match remote {
        Some(r) => port.vl_cap.min(r.vl_cap),
        None => port.operational_vls,
    };
    v.max(1).min(max_op_vls.max(1))
}

/// The VL mask OperationalVLs `op_vls` allows (OpenSM's
/// `(1 << (op_vls - 1)) - 1`).
#[must_use]
pub fn vl_mask(op_vls: u8) -> u8 {
    match op_vls {
        0 => 0xFF,
        n => ((1u32 << (u32::from(n) - 1).min(8)) - 1) as u8,
    }
}

/// One QoS Set: the port it is kept under, the attribute, the
/// AttributeModifier and the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosSet {
    /// The port whose table it writes (a switch's output port).
    pub port: u8,
    /// SLtoVLMappingTable or VLArbitrationTable.
    pub attr: AttributeId,
    /// The AttributeModifier.
    pub attr_mod: u32,
    /// The SMP data (8 bytes for SL2VL, 64 for VLArbitration).
    pub data: [u8; 64],
}

/// The SL2VL block for `t` masked for a port running `op_vls`.
fn sl2vl_data(sl2vl: &[u8; 16], op_vls: u8) -> [u8; 64] {
    let m = vl_mask(op_vls);
    let mut d = [0u8; 64];
    for (i, b) in d[..8].iter_mut().enumerate() {
        let f = |vl: u8| if vl == 15 { 15 } else { vl & m & 0x0F };
        *b = (f(sl2vl[2 * i]) << 4) | f(sl2vl[2 * i + 1]);
    }
    d
}

/// The VLArbitration Sets of `pi` (port `port_num` in the modifier).
fn vlarb_sets(out: &mut Vec<QosSet>, key: u8, port_num: u8, pi: &PortInfo, op: u8, t: &QosTables) {
    if pi.vl_cap == 1 {
        return;
    }
    let m = vl_mask(op);
    let mut block = |block: u32, entries: &[u16]| {
        let mut d = [0u8; 64];
        for (k, e) in entries.iter().enumerate() {
            let vl = ((e >> 8) as u8) & m;
            d[2 * k] = vl;
            d[2 * k + 1] = (e & 0xFF) as u8;
        }
        out.push(QosSet {
            port: key,
            attr: AttributeId::VL_ARB_TABLE,
            attr_mod: ((block + 1) << 16) | u32::from(port_num),
            data: d,
        });
    };
    let low = usize::from(pi.vl_arb_low_cap);
    let high = usize::from(pi.vl_arb_high_cap);
    if low > 0 {
        block(0, &t.vlarb_low[..low.min(32)]);
    }
    if low > 32 {
        block(1, &t.vlarb_low[32..32 + low % 32]);
    }
    if high > 0 {
        block(2, &t.vlarb_high[..high.min(32)]);
    }
    if high > 32 {
        block(3, &t.vlarb_high[32..32 + high % 32]);
    }
}

/// Every QoS Set `node` needs by OpenSM's rules (module docs), given the
/// OperationalVLs each of its ports runs (`op_vls(port)`).
#[must_use]
pub fn node_sets(cfg: &QosConfig, node: &SmNode, op_vls: impl Fn(u8) -> u8) -> Vec<QosSet> {
    let mut out = Vec::new();
    if !node.is_switch() {
        let class = if node.info.node_type == mad_core::wire::attr::NodeType::ROUTER {
            PortClass::Router
        } else {
            PortClass::Ca
        };
        let t = cfg.tables(class);
        for p in node.ports.iter().flatten() {
            end_port(&mut out, p.num, &p.info, op_vls(p.num), &t);
        }
        return out;
    }
    let enhanced = node.switch_info.as_ref().is_some_and(|s| s.enhanced_port0);
    let t = cfg.tables(PortClass::SwitchExternal);
    let nports = node.info.num_ports;
    let live = |n: u8| {
        node.port(n)
            .filter(|p| p.info.port_state != PortState::DOWN)
    };
    for out_port in 1..=nports {
        if let Some(p) = live(out_port) {
            vlarb_sets(&mut out, out_port, out_port, &p.info, op_vls(out_port), &t);
        }
    }
    let sl_map = node
        .port(0)
        .is_some_and(|p| p.info.has_cap(port_cap::HAS_SL_MAP));
    if sl_map {
        for out_port in u8::from(!enhanced)..=nports {
            if live(out_port).is_none() {
                continue;
            }
            let d = sl2vl_data(&t.sl2vl, op_vls(out_port));
            for in_port in 0..=nports {
                out.push(QosSet {
                    port: out_port,
                    attr: AttributeId::SL_TO_VL_TABLE,
                    attr_mod: (u32::from(in_port) << 8) | u32::from(out_port),
                    data: d,
                });
            }
        }
    }
    if enhanced {
        if let Some(p0) = node.port(0) {
            let t0 = cfg.tables(PortClass::SwitchPort0);
            end_port(&mut out, 0, &p0.info, op_vls(0), &t0);
        }
    }
    out
}

/// An end port's Sets: VLArbitration, then SL2VL when it maps SLs.
fn end_port(out: &mut Vec<QosSet>, num: u8, pi: &PortInfo, op: u8, t: &QosTables) {
    vlarb_sets(out, num, 0, pi, op, t);
    if pi.has_cap(port_cap::HAS_SL_MAP) {
        out.push(QosSet {
            port: num,
            attr: AttributeId::SL_TO_VL_TABLE,
            attr_mod: 0,
            data: sl2vl_data(&t.sl2vl, op),
        });
    }
}

/// The VLHighLimit a port of `class` is given with QoS on (0 for a port
/// with VL0 only, which has no VLArbitration table).
#[must_use]
pub fn high_limit(cfg: &QosConfig, class: PortClass, pi: &PortInfo) -> u8 {
    if pi.vl_cap == 1 {
        0
    } else {
        cfg.tables(class).high_limit
    }
}

/// The VL an SL maps to in `sl2vl` (16 VLs).
#[must_use]
pub fn vl_of(sl2vl: &[u8; 16], sl: u8) -> u8 {
    sl2vl[usize::from(sl & 0x0F)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vlarb_lists_parse_as_vl_weight_pairs_and_errors_name_the_key_and_entry() {
        assert_eq!(
            parse_vlarb("qos_vlarb_high", "0:4, 1:0x10,2:010").unwrap(),
            vec![(0, 4), (1, 16), (2, 8)]
        );
        assert_eq!(parse_vlarb("k", "").unwrap(), vec![]);
        let e = parse_vlarb("qos_vlarb_low", "0:4,1").unwrap_err();
        assert_eq!(e.key, "qos_vlarb_low");
        assert!(
            e.to_string().contains("entry 2") && e.to_string().contains("\"1\""),
            "{e}"
        );
        let e = parse_vlarb("qos_swe_vlarb_high", "15:1").unwrap_err();
        assert!(
            e.to_string().starts_with("qos_swe_vlarb_high: entry 1"),
            "{e}"
        );
        assert!(e.to_string().contains("0-14"), "{e}");
        let e = parse_vlarb("k", "1:256").unwrap_err();
        assert!(e.to_string().contains("0-255"), "{e}");
        let e = parse_vlarb("k", "1:x").unwrap_err();
        assert!(e.to_string().contains("weight \"x\""), "{e}");
        let long = vec!["1:1"; 65].join(",");
        assert!(parse_vlarb("k", &long).unwrap_err().reason.contains("64"));
        assert_eq!(
            parse_vlarb("k", &vec!["1:1"; 64].join(",")).unwrap().len(),
            64
        );
    }

    #[test]
    fn sl2vl_lists_need_sixteen_vls_of_0_to_15() {
        let t = parse_sl2vl("qos_sl2vl", DEFAULT_SL2VL).unwrap();
        assert_eq!(t[14], 14);
        assert_eq!(t[15], 7);
        let e = parse_sl2vl("qos_ca_sl2vl", "0,1,2").unwrap_err();
        assert!(e.to_string().starts_with("qos_ca_sl2vl: 3 VLs"), "{e}");
        let e = parse_sl2vl("qos_sl2vl", &vec!["1"; 17].join(",")).unwrap_err();
        assert!(e.reason.contains("more than 16"), "{e}");
        let e = parse_sl2vl("qos_sl2vl", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,16,7").unwrap_err();
        assert!(
            e.reason.contains("entry 15") && e.reason.contains("\"16\""),
            "{e}"
        );
        assert!(parse_sl2vl("k", "").is_err());
    }

    #[test]
    fn a_class_falls_back_to_the_qos_options_then_to_opensms_defaults() {
        let mut c = QosConfig::default();
        let t = c.tables(PortClass::Ca);
        assert_eq!(t.high_limit, 0);
        assert_eq!(t.vlarb_high[0], VlArbTable::entry(0, 4));
        assert_eq!(t.vlarb_low[1], VlArbTable::entry(1, 4));
        assert_eq!(t.vlarb_low[15], 0);
        assert!(c.default.set("qos_high_limit", "high_limit", "9").unwrap());
        assert!(c.swe.set("qos_swe_high_limit", "high_limit", "3").unwrap());
        assert!(c
            .ca
            .set("qos_ca_sl2vl", "sl2vl", "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,15")
            .unwrap());
        assert!(!c.ca.set("qos_ca_x", "x", "1").unwrap());
        assert_eq!(c.tables(PortClass::Ca).high_limit, 9);
        assert_eq!(c.tables(PortClass::SwitchExternal).high_limit, 3);
        assert_eq!(c.tables(PortClass::Ca).sl2vl[15], 15);
        assert_eq!(c.tables(PortClass::SwitchExternal).sl2vl[15], 7);
        assert!(c.default.set("qos_max_vls", "max_vls", "16").is_err());
    }

    #[test]
    fn vls_are_masked_by_the_operational_vls_but_vl15_is_kept() {
        assert_eq!(vl_mask(4), 7);
        assert_eq!(vl_mask(1), 0);
        assert_eq!(vl_mask(5), 15);
        let d = sl2vl_data(
            &parse_sl2vl("k", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,15,7").unwrap(),
            4,
        );
        assert_eq!(&d[..8], &[0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0xF7]);
        let a = PortInfo {
            vl_cap: 4,
            operational_vls: 2,
            ..PortInfo::default()
        };
        let b = PortInfo {
            vl_cap: 3,
            ..PortInfo::default()
        };
        assert_eq!(op_vls(&a, Some(&b), 5), 3);
        assert_eq!(op_vls(&a, None, 5), 2);
        assert_eq!(op_vls(&a, Some(&a), 2), 2);
        assert_eq!(op_vls(&b, Some(&PortInfo::default()), 5), 1);
    }
}
