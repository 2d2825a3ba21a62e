//! `ibccquery` (infiniband-diags `ibccquery.c`): one Congestion Control
//! attribute (class 0x21) of a node by LID or GUID, with an optional
//! CC_Key (`-c`).
//!
//! Ops (case insensitive, with aliases): ClassPortInfo (CP),
//! CongestionInfo (CI), CongestionKeyInfo (CK), CongestionLog (CL),
//! SwitchCongestionSetting (SS), SwitchPortCongestionSetting (SP, with an
//! optional port), CACongestionSetting (CS), CongestionControlTable (CT),
//! Timestamp (TI).
//!
//! `--json` prints `{"command":"ibccquery","op":NAME,"dest":{...},
//! "attribute":{...},"entries":[{...}]}` (`entries`: the log events, the
//! ports' elements, the SLs' entries or the table's entries).

use mad_core::wire::attr::{ClassPortInfo, NodeInfo, NodeType};
use mad_core::wire::cc::{
    cc_attr, CaCongestionEntry, CaCongestionSetting, CcTimestamp, CctEntry, CongestionControlTable,
    CongestionInfo, CongestionKeyInfo, CongestionLogCa, CongestionLogCommon, CongestionLogEventCa,
    CongestionLogEventSwitch, CongestionLogSwitch, SwitchCongestionSetting,
    SwitchPortCongestionElement, CA_LOG_EVENTS, CCT_ENTRIES_PER_BLOCK, LOG_TYPE_CA,
    LOG_TYPE_SWITCH, PORTS_PER_BLOCK, SWITCH_LOG_EVENTS,
};
use mad_core::wire::{Fields, Method, Repr};

use crate::command::{CliError, Invocation};
use crate::diags::cc;
use crate::ibdiag;
use crate::ibdiag::ops::OpRun;
use crate::json::Json;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    ClassPortInfo,
    CongestionInfo,
    CongestionKeyInfo,
    CongestionLog,
    SwitchCongestionSetting,
    SwitchPortCongestionSetting,
    CaCongestionSetting,
    CongestionControlTable,
    Timestamp,
}

/// (name, alias, op, takes a port number): `match_tbl`.
const OPS: &[(&str, &str, Op, bool)] = &[
    ("ClassPortInfo", "CP", Op::ClassPortInfo, false),
    ("CongestionInfo", "CI", Op::CongestionInfo, false),
    ("CongestionKeyInfo", "CK", Op::CongestionKeyInfo, false),
    ("CongestionLog", "CL", Op::CongestionLog, false),
    (
        "SwitchCongestionSetting",
        "SS",
        Op::SwitchCongestionSetting,
        false,
    ),
    (
        "SwitchPortCongestionSetting",
        "SP",
        Op::SwitchPortCongestionSetting,
        true,
    ),
    ("CACongestionSetting", "CS", Op::CaCongestionSetting, false),
    (
        "CongestionControlTable",
        "CT",
        Op::CongestionControlTable,
        false,
    ),
    ("Timestamp", "TI", Op::Timestamp, false),
];

const EXAMPLES: &[&str] = &[
    "CongestionInfo 3\t\t\t# Congestion Info by lid",
    "SwitchPortCongestionSetting 3\t# Query all Switch Port Congestion Settings",
    "SwitchPortCongestionSetting 3 1\t# Query Switch Port Congestion Setting for port 1",
];

fn usage_args() -> String {
    ibdiag::ops::ops_usage(
        "[-c key] <op> <lid|guid>",
        "<lid|guid>",
        OPS.iter()
            .map(|(n, a, _, port)| (*n, *a, ibdiag::ops::optional_port(*port))),
    )
}

fn rows() -> impl Iterator<Item = (&'static str, &'static str, Op)> {
    OPS.iter().map(|(n, a, op, _)| (*n, *a, *op))
}

struct Ctx<'r> {
    run: &'r mut OpRun,
    /// Text printed so far.
    out: String,
    attribute: Json,
    entries: Vec<Json>,
}

impl Ctx<'_> {
    /// `cc_query_status_via`: a Get of `attr` / `amod` with the CC_Key;
    /// the answer's data (from byte 32 for CongestionLog, else 64).
    fn get(&mut self, attr: u16, amod: u32) -> Option<Vec<u8>> {
        let run = &self.run;
        let r = cc::rpc(
            &run.session,
            run.dest.lid,
            Method::GET,
            (attr, amod),
            run.cc_key,
            &[],
        );
        self.run.keep(r)
    }

    /// Decodes `R` at `at` of `data` (the data area is long enough for
    /// every entry ibccquery reads).
    fn entry<R: Repr + Fields>(data: &[u8], at: usize) -> Option<R> {
        R::parse(data.get(at..)?).ok()
    }

    /// Prints `# NAME: PORTID` and a fixed attribute.
    fn simple<R: Repr + Fields>(
        &mut self,
        name: &str,
        attr: u16,
        fail: &'static str,
    ) -> Result<(), &'static str> {
        let d = self.get(attr, 0).ok_or(fail)?;
        let r: R = Self::entry(&d, 0).ok_or(fail)?;
        self.out
            .push_str(&cc::titled(name, &self.run.dest.text, &r));
        self.attribute = ibdiag::attr_json(&r);
        Ok(())
    }

    /// Prints `entry` with its blank line and keeps it for `--json`.
    fn push_entry(&mut self, e: &dyn Fields) {
        self.out.push_str(&cc::fields(e));
        self.out.push('\n');
        self.entries.push(ibdiag::attr_json(e));
    }
}

const LOG_FAIL: &str = "congestion log query failed";

fn congestion_log(c: &mut Ctx<'_>) -> Result<(), &'static str> {
    let d = c.get(cc_attr::CONGESTION_LOG, 0).ok_or(LOG_FAIL)?;
    let common: CongestionLogCommon = Ctx::entry(&d, 0).ok_or(LOG_FAIL)?;
    if common.log_type != LOG_TYPE_SWITCH && common.log_type != LOG_TYPE_CA {
        return Err("unrecognized log type");
    }
    c.out
        .push_str(&cc::titled("CongestionLog", &c.run.dest.text, &common));
    if common.log_type == LOG_TYPE_SWITCH {
        log_events::<CongestionLogSwitch, CongestionLogEventSwitch>(c, &d, SWITCH_LOG_EVENTS)
    } else {
        log_events::<CongestionLogCa, CongestionLogEventCa>(c, &d, CA_LOG_EVENTS)
    }
}

/// The log's header `H` (printed with its blank line), then each of its
/// `count` events `E` that is not all zero.
fn log_events<H: Repr + Fields, E: Repr + Fields>(
    c: &mut Ctx<'_>,
    d: &[u8],
    count: usize,
) -> Result<(), &'static str> {
    let h: H = Ctx::entry(d, 0).ok_or(LOG_FAIL)?;
    c.out.push_str(&cc::fields(&h));
    c.out.push('\n');
    c.attribute = ibdiag::attr_json(&h);
    for i in 0..count {
        let at = H::LEN + i * E::LEN;
        if d.get(at..at + E::LEN)
            .is_some_and(|b| b.iter().any(|x| *x != 0))
        {
            let e: E = Ctx::entry(d, at).ok_or(LOG_FAIL)?;
            c.push_entry(&e);
        }
    }
    Ok(())
}

fn switch_port_congestion_setting(c: &mut Ctx<'_>, port: u32) -> Result<(), &'static str> {
    const FAIL: &str = "switch port congestion setting query failed";
    let r = c.run.session.smp().node_info(&c.run.dest.target);
    let ni: NodeInfo = c.run.keep(r).ok_or("node info query failed")?;
    if ni.node_type != NodeType::SWITCH {
        return Err("destination not a switch");
    }
    let num_ports = u32::from(ni.num_ports);
    c.out.push_str(&format!(
        "# SwitchPortCongestionSetting: {}\n",
        c.run.dest.text
    ));
    let el = SwitchPortCongestionElement::LEN;
    if port != 0 {
        if port > num_ports {
            return Err("invalid port number specified");
        }
        let d = c
            .get(cc_attr::SWITCH_PORT_CONGESTION_SETTING, port / 48)
            .ok_or(FAIL)?;
        let e: SwitchPortCongestionElement =
            Ctx::entry(&d, (port as usize % PORTS_PER_BLOCK) * el).ok_or(FAIL)?;
        c.out.push_str(&cc::fields(&e));
        c.entries.push(ibdiag::attr_json(&e));
        return Ok(());
    }
    let mut count = 0u32;
    for block in 0..=num_ports / 48 {
        let d = c
            .get(cc_attr::SWITCH_PORT_CONGESTION_SETTING, block)
            .ok_or(FAIL)?;
        for j in 0..PORTS_PER_BLOCK {
            if count > num_ports {
                break;
            }
            c.out
                .push_str(&cc::index_line("Port", block as usize * 48 + j));
            let e: SwitchPortCongestionElement = Ctx::entry(&d, j * el).ok_or(FAIL)?;
            c.push_entry(&e);
            count += 1;
        }
    }
    Ok(())
}

fn ca_congestion_setting(c: &mut Ctx<'_>) -> Result<(), &'static str> {
    const FAIL: &str = "ca congestion setting query failed";
    let d = c.get(cc_attr::CA_CONGESTION_SETTING, 0).ok_or(FAIL)?;
    let h: CaCongestionSetting = Ctx::entry(&d, 0).ok_or(FAIL)?;
    c.out
        .push_str(&cc::titled("CACongestionSetting", &c.run.dest.text, &h));
    c.out.push('\n');
    c.attribute = ibdiag::attr_json(&h);
    for sl in 0..16 {
        c.out.push_str(&cc::index_line("SL", sl));
        let e: CaCongestionEntry =
            Ctx::entry(&d, CaCongestionSetting::LEN + sl * CaCongestionEntry::LEN).ok_or(FAIL)?;
        c.push_entry(&e);
    }
    Ok(())
}

fn congestion_control_table(c: &mut Ctx<'_>) -> Result<(), &'static str> {
    const FAIL: &str = "congestion control table query failed";
    let mut d = c.get(cc_attr::CONGESTION_CONTROL_TABLE, 0).ok_or(FAIL)?;
    let h: CongestionControlTable = Ctx::entry(&d, 0).ok_or(FAIL)?;
    c.out
        .push_str(&cc::titled("CongestionControlTable", &c.run.dest.text, &h));
    c.out.push('\n');
    c.attribute = ibdiag::attr_json(&h);
    let limit = usize::from(h.ccti_limit);
    if limit == 0 {
        return Ok(());
    }
    let mut count = 0usize;
    for block in 0..=limit / 64 {
        if block > 0 {
            d = c
                .get(cc_attr::CONGESTION_CONTROL_TABLE, block as u32)
                .ok_or(FAIL)?;
        }
        for j in 0..CCT_ENTRIES_PER_BLOCK {
            if count > limit {
                break;
            }
            c.out.push_str(&cc::index_line("Entry", block * 64 + j));
            let e: CctEntry =
                Ctx::entry(&d, CongestionControlTable::LEN + j * CctEntry::LEN).ok_or(FAIL)?;
            c.push_entry(&e);
            count += 1;
        }
    }
    Ok(())
}

fn run_op(c: &mut Ctx<'_>, op: Op, port: u32) -> Result<(), &'static str> {
    match op {
        Op::ClassPortInfo => c.simple::<ClassPortInfo>(
            "ClassPortInfo",
            cc_attr::CLASS_PORT_INFO,
            "class port info query failed",
        ),
        Op::CongestionInfo => c.simple::<CongestionInfo>(
            "CongestionInfo",
            cc_attr::CONGESTION_INFO,
            "congestion info query failed",
        ),
        Op::CongestionKeyInfo => c.simple::<CongestionKeyInfo>(
            "CongestionKeyInfo",
            cc_attr::CONGESTION_KEY_INFO,
            "congestion key info query failed",
        ),
        Op::CongestionLog => congestion_log(c),
        Op::SwitchCongestionSetting => c.simple::<SwitchCongestionSetting>(
            "SwitchCongestionSetting",
            cc_attr::SWITCH_CONGESTION_SETTING,
            "switch congestion setting query failed",
        ),
        Op::SwitchPortCongestionSetting => switch_port_congestion_setting(c, port),
        Op::CaCongestionSetting => ca_congestion_setting(c),
        Op::CongestionControlTable => congestion_control_table(c),
        Op::Timestamp => {
            c.simple::<CcTimestamp>("Timestamp", cc_attr::TIMESTAMP, "timestamp query failed")
        }
    }
}

/// Runs `ibccquery`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let (op, mut run) = ibdiag::ops::start(inv, (&usage_args(), EXAMPLES), rows())?;
    // strtol(argv[0], NULL, 0) of the port, as an int.
    let port = run
        .rest
        .first()
        .map_or(0, |a| crate::cnum::c_strtol(a) as i32 as u32);
    let mut c = Ctx {
        run: &mut run,
        out: String::new(),
        attribute: Json::Null,
        entries: Vec::new(),
    };
    let r = run_op(&mut c, op, port);
    let Ctx {
        out,
        attribute,
        entries,
        ..
    } = c;
    let fields = vec![("attribute", attribute), ("entries", Json::Array(entries))];
    run.finish(inv, "ibccquery", (&out, fields), r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_match_names_and_aliases_case_insensitively() {
        let m = |n: &str| ibdiag::ops::match_op(rows(), n);
        assert_eq!(m("congestioninfo"), Some(Op::CongestionInfo));
        assert_eq!(m("sp"), Some(Op::SwitchPortCongestionSetting));
        assert_eq!(m("Ti"), Some(Op::Timestamp));
        assert_eq!(m("cc"), None);
        let u = usage_args();
        assert!(u.starts_with("[-c key] <op> <lid|guid>\n\nSupported ops"));
        assert!(u.contains("  SwitchPortCongestionSetting (SP) <lid|guid> [<portnum>]\n"));
        assert!(u.contains("  Timestamp (TI) <lid|guid>\n"));
    }
}
