//! `ibccconfig` (infiniband-diags `ibccconfig.c`): sets one Congestion
//! Control attribute (class 0x21) of a node by LID or GUID, with an
//! optional CC_Key (`-c`). Prints nothing when the Set is answered.
//!
//! Ops (case insensitive, with aliases): CongestionKeyInfo (CK),
//! SwitchCongestionSetting (SS), SwitchPortCongestionSetting (SP),
//! CACongestionSetting (CS), CongestionControlTable (CT), with the C
//! tool's arguments and checks. Kept from the C tool: SP reads the
//! current block of port `p` as `p / 32` (element `p % 32`) and writes it
//! back as block `p / 48`: the same for switches of up to 31 ports.
//!
//! `--json` prints `{"command":"ibccconfig","op":NAME,"dest":{...},
//! "attribute":{...}}` (the attribute as the node answered the Set).

use mad_core::wire::attr::{NodeInfo, NodeType};
use mad_core::wire::cc::{
    cc_attr, CaCongestionEntry, CaCongestionSetting, CctEntry, CongestionControlTable,
    CongestionKeyInfo, SwitchCongestionSetting, SwitchPortCongestionElement,
};
use mad_core::wire::{Fields, Method, Repr};

use crate::command::{CliError, Invocation};
use crate::diags::cc;
use crate::ibdiag;
use crate::ibdiag::ops::OpRun;
use crate::json::Json;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    CongestionKeyInfo,
    SwitchCongestionSetting,
    SwitchPortCongestionSetting,
    CaCongestionSetting,
    CongestionControlTable,
}

/// (name, alias, op, takes a port number, its arguments): `match_tbl`.
const OPS: &[(&str, &str, Op, bool, &str)] = &[
    (
        "CongestionKeyInfo",
        "CK",
        Op::CongestionKeyInfo,
        false,
        "<cckey> <cckeyprotectbit> <cckeyleaseperiod> <cckeyviolations>",
    ),
    (
        "SwitchCongestionSetting",
        "SS",
        Op::SwitchCongestionSetting,
        false,
        "<controlmap> <victimmask> <creditmask> <threshold> <packetsize> <csthreshold> <csreturndelay> <markingrate>",
    ),
    (
        "SwitchPortCongestionSetting",
        "SP",
        Op::SwitchPortCongestionSetting,
        true,
        "<valid> <control_type> <threshold> <packet_size> <cong_parm_marking_rate>",
    ),
    (
        "CACongestionSetting",
        "CS",
        Op::CaCongestionSetting,
        false,
        "<port_control> <control_map> <ccti_timer> <ccti_increase> <trigger_threshold> <ccti_min>",
    ),
    (
        "CongestionControlTable",
        "CT",
        Op::CongestionControlTable,
        false,
        "<cctilimit> <index> <cctentry> <cctentry> ...",
    ),
];

const EXAMPLES: &[&str] = &[
    "SwitchCongestionSetting 2 0x1F 0x1FFFFFFFFF 0x0 0xF 8 0 0:0 1\t# Configure Switch Congestion Settings",
    "CACongestionSetting 1 0 0x3 150 1 0 0\t\t# Configure CA Congestion Settings to SL 0 and SL 1",
    "CACongestionSetting 1 0 0x4 200 1 0 0\t\t# Configure CA Congestion Settings to SL 2",
    "CongestionControlTable 1 63 0 0:0 0:1 ...\t# Configure first block of Congestion Control Table",
    "CongestionControlTable 1 127 0 0:64 0:65 ...\t# Configure second block of Congestion Control Table",
];

fn usage_args() -> String {
    ibdiag::ops::ops_usage(
        "[-c key] <op> <lid|guid>\n\nWARNING -- You should understand what you are doing before \
         using this tool.  Misuse of this tool could result in a broken fabric.",
        "<lid|guid>",
        OPS.iter().map(|(n, a, _, port, extra)| {
            let port = if *port { " <portnum>" } else { "" };
            let sep = if extra.is_empty() { "" } else { " " };
            (*n, *a, format!("{port}{sep}{extra}"))
        }),
    )
}

fn rows() -> impl Iterator<Item = (&'static str, &'static str, Op)> {
    OPS.iter().map(|(n, a, op, ..)| (*n, *a, *op))
}

/// `parseint` / `parselonglongint`: the whole text as a number
/// (`strtoul` base 0), or the C tool's complaint (`ERANGE` first, as the
/// C checks `errno` before the end). A 32-bit result keeps the low bits of
/// `strtoul`'s, as the C `uint32_t` does.
fn parse_num(arg: &str) -> Result<u64, &'static str> {
    let n = crate::cnum::scan(arg, true);
    if n.overflow {
        Err("value out of range")
    } else if n.digits == 0 || n.end != arg.len() {
        Err("invalid integer input")
    } else {
        Ok(n.unsigned())
    }
}

fn parse32(arg: &str) -> Result<u32, &'static str> {
    parse_num(arg).map(|v| v as u32)
}

/// `parse256`: up to 64 hex digits, right-aligned in 32 bytes.
fn parse256(arg: &str) -> Result<[u8; 32], &'static str> {
    let a = arg
        .strip_prefix("0x")
        .or_else(|| arg.strip_prefix("0X"))
        .unwrap_or(arg);
    if !a.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err("invalid hex digit read");
    }
    if a.len() > 64 {
        return Err("hex code too long");
    }
    let mut buf = [0u8; 32];
    let padded = format!("{a:0>64}");
    for (i, b) in buf.iter_mut().enumerate() {
        *b = u8::from_str_radix(&padded[2 * i..2 * i + 2], 16)
            .map_err(|_| "invalid hex digit read")?;
    }
    Ok(buf)
}

/// `parsecct`: `shift:multiplier`.
fn parse_cct(arg: &str) -> Result<(u32, u32), &'static str> {
    let (s, m) = arg
        .split_once(':')
        .ok_or("ccts are formatted shift:multiplier")?;
    Ok((parse32(s)?, parse32(m)?))
}

struct Ctx<'r> {
    run: &'r mut OpRun,
    answer: Json,
}

impl Ctx<'_> {
    fn rpc(&mut self, method: Method, attr: (u16, u32), payload: &[u8]) -> Option<Vec<u8>> {
        let run = &self.run;
        let r = cc::rpc(
            &run.session,
            run.dest.lid,
            method,
            attr,
            run.cc_key,
            payload,
        );
        self.run.keep(r)
    }

    /// Sets `attr` to `payload`; keeps the answer as `R` for `--json`.
    fn set<R: Repr + Fields>(
        &mut self,
        attr: (u16, u32),
        payload: &[u8],
        fail: &'static str,
    ) -> Result<(), &'static str> {
        let d = self.rpc(Method::SET, attr, payload).ok_or(fail)?;
        if let Ok(r) = R::parse(&d) {
            self.answer = ibdiag::attr_json(&r);
        }
        Ok(())
    }

    /// Sets `attr` to `r` ([`Ctx::set`]).
    fn set_to<R: Repr + Fields>(
        &mut self,
        attr: (u16, u32),
        r: &R,
        fail: &'static str,
    ) -> Result<(), &'static str> {
        self.set::<R>(attr, &encoded(r)?, fail)
    }
}

/// `r`'s bytes, or the complaint of libibmad's encoder about a value that
/// does not fit.
fn encoded<R: Repr>(r: &R) -> Result<Vec<u8>, &'static str> {
    r.to_vec().map_err(|_| "invalid integer input")
}

/// Writes `r` at the start of `buf`, or the same complaint as [`encoded`].
fn encode_into<R: Repr>(r: &R, buf: &mut [u8]) -> Result<(), &'static str> {
    r.emit(buf).map_err(|_| "invalid integer input")
}

fn congestion_key_info(c: &mut Ctx<'_>, a: &[String]) -> Result<(), &'static str> {
    if a.len() != 4 {
        return Err("invalid number of parameters for CongestionKeyInfo");
    }
    let key = parse_num(&a[0])?;
    let (protect, lease, violations) = (parse32(&a[1])?, parse32(&a[2])?, parse32(&a[3])?);
    if protect > 1 {
        return Err("invalid cc_keyprotectbit value");
    }
    let lease = u16::try_from(lease).map_err(|_| "invalid cc_keyleaseperiod value")?;
    let violations = u16::try_from(violations).map_err(|_| "invalid cc_keyviolations value")?;
    let k = CongestionKeyInfo {
        cc_key: key,
        cc_key_protect_bit: protect as u8,
        cc_key_lease_period: lease,
        cc_key_violations: violations,
        ..CongestionKeyInfo::default()
    };
    c.set_to(
        (cc_attr::CONGESTION_KEY_INFO, 0),
        &k,
        "congestion key info config failed",
    )
}

fn switch_congestion_setting(c: &mut Ctx<'_>, a: &[String]) -> Result<(), &'static str> {
    if a.len() != 8 {
        return Err("invalid number of parameters for SwitchCongestionSetting");
    }
    let control_map = parse32(&a[0])?;
    let victim_mask = parse256(&a[1])?;
    let credit_mask = parse256(&a[2])?;
    let (threshold, packet_size, cs_threshold) =
        (parse32(&a[3])?, parse32(&a[4])?, parse32(&a[5])?);
    let (shift, mult) = parse_cct(&a[6])?;
    let marking_rate = parse32(&a[7])?;
    // mad_encode_field keeps each value's low bits.
    let s = SwitchCongestionSetting {
        control_map,
        victim_mask,
        credit_mask,
        threshold: (threshold & 0xF) as u8,
        packet_size: packet_size as u8,
        cs_threshold: (cs_threshold & 0xF) as u8,
        cs_return_delay: (mult | (shift << 14)) as u16,
        marking_rate: marking_rate as u16,
        ..SwitchCongestionSetting::default()
    };
    c.set_to(
        (cc_attr::SWITCH_CONGESTION_SETTING, 0),
        &s,
        "switch congestion setting config failed",
    )
}

fn switch_port_congestion_setting(c: &mut Ctx<'_>, a: &[String]) -> Result<(), &'static str> {
    if a.len() != 6 {
        return Err("invalid number of parameters for SwitchPortCongestion");
    }
    let port = parse32(&a[0])?;
    let vals = [
        parse32(&a[1])?,
        parse32(&a[2])?,
        parse32(&a[3])?,
        parse32(&a[4])?,
        parse32(&a[5])?,
    ];
    let r = c.run.session.smp().node_info(&c.run.dest.target);
    let ni: NodeInfo = c.run.keep(r).ok_or("node info config failed")?;
    if ni.node_type != NodeType::SWITCH {
        return Err("destination not a switch");
    }
    if port > u32::from(ni.num_ports) {
        return Err("invalid port number specified");
    }
    let mut payload = c
        .rpc(
            Method::GET,
            (cc_attr::SWITCH_PORT_CONGESTION_SETTING, port / 32),
            &[],
        )
        .ok_or("switch port congestion setting query failed")?;
    payload.resize(192, 0);
    let at = (port as usize % 32) * SwitchPortCongestionElement::LEN;
    let e = SwitchPortCongestionElement {
        valid: (vals[0] & 1) as u8,
        control_type: (vals[1] & 1) as u8,
        threshold: (vals[2] & 0xF) as u8,
        packet_size: vals[3] as u8,
        marking_rate: vals[4] as u16,
        reserved: SwitchPortCongestionElement::parse(&payload[at..]).map_or(0, |o| o.reserved),
    };
    encode_into(&e, &mut payload[at..])?;
    let d = c
        .rpc(
            Method::SET,
            (cc_attr::SWITCH_PORT_CONGESTION_SETTING, port / 48),
            &payload,
        )
        .ok_or("switch port congestion setting config failed")?;
    if let Ok(r) = SwitchPortCongestionElement::parse(d.get(at..).unwrap_or_default()) {
        c.answer = ibdiag::attr_json(&r);
    }
    Ok(())
}

fn ca_congestion_setting(c: &mut Ctx<'_>, a: &[String]) -> Result<(), &'static str> {
    if a.len() != 6 {
        return Err("invalid number of parameters for CACongestionSetting");
    }
    let v: Vec<u32> = a.iter().map(|x| parse32(x)).collect::<Result<_, _>>()?;
    let h = CaCongestionSetting {
        port_control: v[0] as u16,
        control_map: v[1] as u16,
    };
    let mut payload = encoded(&h)?;
    payload.resize(192, 0);
    let e = CaCongestionEntry {
        ccti_timer: v[2] as u16,
        ccti_increase: v[3] as u8,
        trigger_threshold: v[4] as u8,
        ccti_min: v[5] as u8,
        ..CaCongestionEntry::default()
    };
    for sl in (0..16).filter(|sl| v[1] & (1 << sl) != 0) {
        encode_into(
            &e,
            &mut payload[CaCongestionSetting::LEN + sl * CaCongestionEntry::LEN..],
        )?;
    }
    c.set::<CaCongestionSetting>(
        (cc_attr::CA_CONGESTION_SETTING, 0),
        &payload,
        "ca congestion setting config failed",
    )
}

fn congestion_control_table(c: &mut Ctx<'_>, a: &[String]) -> Result<(), &'static str> {
    if a.len() < 2 || a.len() > 66 {
        return Err("invalid number of parameters for CongestionControlTable");
    }
    let limit = parse32(&a[0])?;
    let index = parse32(&a[1])?;
    let n = a.len() - 2;
    if limit != 0 && u64::from(limit) + 1 != u64::from(index) * 64 + n as u64 {
        return Err("invalid number of cct entries input given ccti_limit and index");
    }
    let entries: Vec<(u32, u32)> = a[2..]
        .iter()
        .map(|x| parse_cct(x))
        .collect::<Result<_, _>>()?;
    let h = CongestionControlTable {
        ccti_limit: limit as u16,
        ..CongestionControlTable::default()
    };
    let mut payload = encoded(&h)?;
    payload.resize(192, 0);
    for (i, (shift, mult)) in entries.into_iter().enumerate() {
        let e = CctEntry {
            shift: (shift & 3) as u8,
            multiplier: (mult & 0x3FFF) as u16,
        };
        encode_into(
            &e,
            &mut payload[CongestionControlTable::LEN + i * CctEntry::LEN..],
        )?;
    }
    c.set::<CongestionControlTable>(
        (cc_attr::CONGESTION_CONTROL_TABLE, index),
        &payload,
        "congestion control table config failed",
    )
}

/// Runs `ibccconfig`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let (op, mut run) = ibdiag::ops::start(inv, (&usage_args(), EXAMPLES), rows())?;
    let rest = std::mem::take(&mut run.rest);
    let mut c = Ctx {
        run: &mut run,
        answer: Json::Null,
    };
    let rest = &rest;
    let r = match op {
        Op::CongestionKeyInfo => congestion_key_info(&mut c, rest),
        Op::SwitchCongestionSetting => switch_congestion_setting(&mut c, rest),
        Op::SwitchPortCongestionSetting => switch_port_congestion_setting(&mut c, rest),
        Op::CaCongestionSetting => ca_congestion_setting(&mut c, rest),
        Op::CongestionControlTable => congestion_control_table(&mut c, rest),
    };
    let Ctx { answer, .. } = c;
    run.finish(inv, "ibccconfig", ("", vec![("attribute", answer)]), r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_as_the_c_tool_checks_them() {
        assert_eq!(parse_num("0x1F"), Ok(31));
        assert_eq!(parse_num("010"), Ok(8));
        assert_eq!(parse_num("0"), Ok(0));
        assert_eq!(parse_num("12a"), Err("invalid integer input"));
        assert_eq!(parse_num(""), Err("invalid integer input"));
        assert_eq!(
            parse_num("99999999999999999999999"),
            Err("value out of range")
        );
        assert_eq!(
            parse_num("99999999999999999999999x"),
            Err("value out of range")
        );
        assert_eq!(parse_num("0x"), Err("invalid integer input"));
        assert_eq!(parse_num("-1"), Ok(u64::MAX));
        assert_eq!(parse32("0x100000001"), Ok(1));
        let m = parse256("0x1FFFFFFFFF").unwrap();
        assert_eq!(&m[27..], &[0x1F, 0xFF, 0xFF, 0xFF, 0xFF]);
        assert!(m[..27].iter().all(|b| *b == 0));
        assert_eq!(parse256("xyz"), Err("invalid hex digit read"));
        assert_eq!(parse256(&"f".repeat(65)), Err("hex code too long"));
        assert_eq!(parse_cct("1:300"), Ok((1, 300)));
        assert_eq!(parse_cct("1"), Err("ccts are formatted shift:multiplier"));
    }

    #[test]
    fn usage_lists_the_ops_and_their_arguments() {
        let u = usage_args();
        assert!(u.contains("\nWARNING -- You should understand what you are doing before using this tool.  Misuse of this tool could result in a broken fabric.\n"));
        assert!(u.contains("  SwitchPortCongestionSetting (SP) <lid|guid> <portnum> <valid> <control_type> <threshold> <packet_size> <cong_parm_marking_rate>\n"));
        assert_eq!(
            ibdiag::ops::match_op(rows(), "ct"),
            Some(Op::CongestionControlTable)
        );
        assert_eq!(ibdiag::ops::match_op(rows(), "CI"), None);
    }
}
