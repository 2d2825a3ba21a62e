//! `smpquery` (infiniband-diags `smpquery.c`): one SMP attribute of a
//! node, by LID, directed route (`-D`), port GUID (`-G`, through the SA)
//! or combined route (`-c`).
//!
//! Ops (case insensitive, with aliases): NodeInfo (NI), NodeDesc (ND),
//! PortInfo (PI), PortInfoExtended (PIE), SwitchInfo (SI), PKeyTable
//! (PKeys), SL2VLTable (SL2VL), VLArbitration (VLArb), GUIDInfo (GI),
//! MlnxExtPortInfo (MEPI).
//!
//! `--json` prints one object: `{"command":"smpquery","op":NAME,
//! "dest":{...},"port":N, ...}` with the op's data (see tools/README.md).

use mad_agents::QueryError;
use mad_core::wire::attr::{
    GuidInfo, NodeDescription, NodeInfo, NodeType, PKeyTable, PortInfo, SlToVlTable, SwitchInfo,
    VlArbTable,
};
use mad_core::wire::{AttributeId, Repr};

use crate::command::{CliError, Invocation};
use crate::diags::{dump, smp};
use crate::ibdiag::RawSmpData;
use crate::ibdiag::{self, Dest, DestType, Opt, ToolSpec};
use crate::json::{Json, JsonExt};
use crate::namemap::NameMap;
use crate::session::Session;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    NodeInfo,
    NodeDesc,
    PortInfo,
    PortInfoExt,
    SwitchInfo,
    PKeys,
    Sl2Vl,
    VlArb,
    GuidInfo,
    MlnxExtPortInfo,
}

/// (name, alias, op, takes a port number): `match_tbl`.
const OPS: &[(&str, &str, Op, bool)] = &[
    ("NodeInfo", "NI", Op::NodeInfo, false),
    ("NodeDesc", "ND", Op::NodeDesc, false),
    ("PortInfo", "PI", Op::PortInfo, true),
    ("PortInfoExtended", "PIE", Op::PortInfoExt, true),
    ("SwitchInfo", "SI", Op::SwitchInfo, false),
    ("PKeyTable", "PKeys", Op::PKeys, true),
    ("SL2VLTable", "SL2VL", Op::Sl2Vl, true),
    ("VLArbitration", "VLArb", Op::VlArb, true),
    ("GUIDInfo", "GI", Op::GuidInfo, false),
    ("MlnxExtPortInfo", "MEPI", Op::MlnxExtPortInfo, true),
];

const KEY_COMBINED: i32 = 'c' as i32;
const KEY_NODE_NAME_MAP: i32 = 1;
const KEY_EXTENDED: i32 = 'x' as i32;

const OPTS: &[Opt] = &[
    Opt::new(
        "combined",
        'c',
        false,
        None,
        "use Combined route address argument",
    ),
    ibdiag::node_name_map_opt(KEY_NODE_NAME_MAP),
    Opt::new("extended", 'x', false, None, "use extended speeds"),
];

const EXAMPLES: &[&str] = &[
    "portinfo 3 1\t\t\t\t# portinfo by lid, with port modifier",
    "-G switchinfo 0x2C9000100D051 1\t# switchinfo by guid",
    "-D nodeinfo 0\t\t\t\t# nodeinfo by direct route",
    "-c nodeinfo 6 0,12\t\t\t# nodeinfo by combined route",
];

fn usage_args() -> String {
    ibdiag::ops::ops_usage(
        "<op> <dest dr_path|lid|guid> [op params]",
        "<addr>",
        OPS.iter()
            .map(|(n, a, _, port)| (*n, *a, ibdiag::ops::optional_port(*port))),
    )
}

fn match_op(name: &str) -> Option<Op> {
    ibdiag::ops::match_op(OPS.iter().map(|(n, a, op, _)| (*n, *a, *op)), name)
}

struct Ctx<'s> {
    s: &'s Session,
    dest: Dest,
    port: i32,
    extended: bool,
    names: NameMap,
    show_keys: bool,
    /// Text printed so far (before a failure, smpquery has printed it).
    out: String,
    data: Json,
    /// The first failed query (for libibmad's warning).
    failed: Option<QueryError>,
    /// `IBWARN` lines.
    warnings: Vec<String>,
}

impl Ctx<'_> {
    fn get<R: Repr>(&mut self, attr: AttributeId, attr_mod: u32) -> Option<R> {
        match ibdiag::smp_get(self.s, &self.dest, attr, attr_mod) {
            Ok(r) => Some(r),
            Err(e) => {
                self.failed.get_or_insert(e);
                None
            }
        }
    }

    /// The destination's NodeInfo.
    fn node_info(&mut self) -> Result<NodeInfo, &'static str> {
        self.get(AttributeId::NODE_INFO, 0)
            .ok_or("node info query failed")
    }

    fn put(&mut self, key: &str, v: Json) {
        self.data.push(key, v);
    }

    /// Blocks `0..count` of the table `attr` (block `i` at attribute
    /// modifier `attr_mod(i)`), up to the first that could not be read:
    /// the blocks read, and `failed` if one could not be.
    fn blocks<R: Repr>(
        &mut self,
        attr: AttributeId,
        count: u32,
        attr_mod: impl Fn(u32) -> u32,
        failed: &'static str,
    ) -> (Vec<R>, Result<(), &'static str>) {
        let mut blocks = Vec::new();
        for i in 0..count {
            match self.get::<R>(attr, attr_mod(i)) {
                Some(b) => blocks.push(b),
                None => return (blocks, Err(failed)),
            }
        }
        (blocks, Ok(()))
    }

    /// A table's JSON: its `capacity`, and its first `capacity` entries
    /// under `key`.
    fn put_table(&mut self, capacity: u16, key: &str, entries: impl Iterator<Item = Json>) {
        self.put("capacity", Json::from(u64::from(capacity)));
        let entries = entries.take(usize::from(capacity)).collect();
        self.put(key, Json::Array(entries));
    }
}

fn run_op(c: &mut Ctx<'_>, op: Op) -> Result<(), &'static str> {
    let port = c.port;
    let pu32 = port as u32;
    match op {
        Op::NodeInfo => {
            let ni = c.node_info()?;
            c.out.push_str(&smp::format_nodeinfo(&c.dest.text, &ni));
            c.put("node_info", ibdiag::attr_json(&ni));
        }
        Op::NodeDesc => {
            let ni = c.node_info()?;
            let nd: NodeDescription = c
                .get(AttributeId::NODE_DESC, 0)
                .ok_or("node desc query failed")?;
            let name = c.names.remap(ni.node_guid, &nd);
            c.out.push_str(&smp::format_nodedesc_name(&name));
            c.put("node_guid", ibdiag::hex(ni.node_guid, 16));
            c.put("node_description", Json::String(name));
        }
        Op::PortInfo => {
            let m = if c.extended { pu32 | (1 << 31) } else { pu32 };
            let pi: PortInfo = c
                .get(AttributeId::PORT_INFO, m)
                .ok_or("port info query failed")?;
            c.out
                .push_str(&smp::format_portinfo(&c.dest.text, port, &pi, c.show_keys));
            c.put("port_info", ibdiag::portinfo_json(&pi, c.show_keys));
        }
        Op::PortInfoExt => port_info_ext(c)?,
        Op::SwitchInfo => {
            let si: SwitchInfo = c
                .get(AttributeId::SWITCH_INFO, 0)
                .ok_or("switch info query failed")?;
            c.out.push_str(&smp::format_switchinfo(&c.dest.text, &si));
            c.put("switch_info", ibdiag::attr_json(&si));
        }
        Op::PKeys => {
            let ni = c.node_info()?;
            if port > i32::from(ni.num_ports) {
                return Err("invalid port number");
            }
            let cap = if ni.node_type == NodeType::SWITCH && port != 0 {
                let si: SwitchInfo = c
                    .get(AttributeId::SWITCH_INFO, 0)
                    .ok_or("switch info failed")?;
                si.partition_enforcement_cap
            } else {
                ni.partition_cap
            };
            let (blocks, result) = c.blocks::<PKeyTable>(
                AttributeId::PKEY_TABLE,
                u32::from(cap).div_ceil(32),
                |i| i | (pu32 << 16),
                "pkey table query failed",
            );
            c.out.push_str(&smp::format_pkeys(cap, &blocks));
            let keys = blocks.iter().flat_map(|b| b.pkeys.iter());
            let keys = keys.map(|k| ibdiag::hex(u64::from(*k), 4));
            c.put_table(cap, "pkeys", keys);
            result?;
        }
        Op::Sl2Vl => {
            let ni = c.node_info()?;
            if port > i32::from(ni.num_ports) {
                return Err("invalid port number");
            }
            c.out.push_str(&smp::sl2vl_header(&c.dest.text));
            let rows: Vec<(u8, u8)> = if ni.node_type == NodeType::SWITCH {
                (0..=ni.num_ports).map(|i| (i, port as u8)).collect()
            } else {
                vec![(0, 0)]
            };
            let mut jrows = Vec::new();
            let mut result = Ok(());
            for (i, o) in rows {
                let m = (u32::from(i) << 8) | u32::from(o);
                match c.get::<SlToVlTable>(AttributeId::SL_TO_VL_TABLE, m) {
                    Some(t) => {
                        c.out.push_str(&smp::sl2vl_row(i, o, &t));
                        jrows.push(
                            Json::obj()
                                .with("in_port", Json::from(u64::from(i)))
                                .with("out_port", Json::from(u64::from(o)))
                                .with(
                                    "vl",
                                    Json::Array(
                                        t.vl.iter().map(|v| Json::from(u64::from(*v))).collect(),
                                    ),
                                ),
                        );
                    }
                    None => {
                        result = Err("slvl query failed");
                        break;
                    }
                }
            }
            c.put("rows", Json::Array(jrows));
            result?;
        }
        Op::VlArb => vlarb(c)?,
        Op::GuidInfo => {
            let pi: PortInfo = c.get(AttributeId::PORT_INFO, 0).ok_or("port info failed")?;
            let n = pi.guid_cap;
            let (blocks, result) = c.blocks::<GuidInfo>(
                AttributeId::GUID_INFO,
                u32::from(n).div_ceil(8),
                |i| i,
                "guid info query failed",
            );
            c.out.push_str(&smp::format_guids(n, &blocks));
            let guids = blocks.iter().flat_map(|b| b.guids.iter());
            c.put_table(u16::from(n), "guids", guids.map(|g| ibdiag::hex(*g, 16)));
            result?;
        }
        Op::MlnxExtPortInfo => {
            let d: RawSmpData = c
                .get(AttributeId(0xFF90), pu32)
                .ok_or("Mellanox ext port info query failed")?;
            c.out
                .push_str(&smp::format_mlnx_ext_port_info(&c.dest.text, port, &d.0));
            c.put(
                "mlnx_ext_port_info",
                Json::obj()
                    .with("state_change_enable", Json::from(u64::from(d.0[3])))
                    .with("link_speed_supported", Json::from(u64::from(d.0[7])))
                    .with("link_speed_enabled", Json::from(u64::from(d.0[11])))
                    .with("link_speed_active", Json::from(u64::from(d.0[15]))),
            );
        }
    }
    Ok(())
}

fn vlarb(c: &mut Ctx<'_>) -> Result<(), &'static str> {
    let port = c.port;
    let pu32 = port as u32;
    if port == 0 {
        let ni = c.node_info()?;
        if ni.node_type == NodeType::SWITCH {
            let si: SwitchInfo = c
                .get(AttributeId::SWITCH_INFO, 0)
                .ok_or("switch info query failed")?;
            if !si.enhanced_port0 {
                c.out.push_str(&smp::format_vlarb_no_bsp0(&c.dest.text));
                c.put("no_tables_bsp0", Json::Bool(true));
                return Ok(());
            }
        }
    }
    let pi: PortInfo = c
        .get(AttributeId::PORT_INFO, pu32)
        .ok_or("port info query failed")?;
    let (lc, hc) = (pi.vl_arb_low_cap, pi.vl_arb_high_cap);
    let get = |c: &mut Ctx<'_>, offset: u32, cap: u8| -> (Vec<VlArbTable>, bool) {
        let mut v = Vec::new();
        let n = if cap > 32 { 2 } else { 1 };
        for k in 0..n {
            match c.get::<VlArbTable>(AttributeId::VL_ARB_TABLE, ((offset + k) << 16) | pu32) {
                Some(t) => v.push(t),
                None => return (v, false),
            }
        }
        (v, true)
    };
    let (low, low_ok) = if lc > 0 {
        get(c, 1, lc)
    } else {
        (vec![], true)
    };
    let (high, high_ok) = if low_ok && hc > 0 {
        get(c, 3, hc)
    } else {
        (vec![], true)
    };
    c.out
        .push_str(&smp::format_vlarb(&c.dest.text, port, lc, hc, &low, &high));
    let entries = |blocks: &[VlArbTable], cap: u8| -> Json {
        Json::Array(
            blocks
                .iter()
                .flat_map(|b| b.entries.iter())
                .take(usize::from(cap))
                .map(|e| {
                    Json::obj()
                        .with("vl", Json::from(u64::from((e >> 8) & 0xF)))
                        .with("weight", Json::from(u64::from(e & 0xFF)))
                })
                .collect(),
        )
    };
    c.put("low_cap", Json::from(u64::from(lc)));
    c.put("high_cap", Json::from(u64::from(hc)));
    c.put("low", entries(&low, lc));
    c.put("high", entries(&high, hc));
    if low_ok && high_ok {
        Ok(())
    } else {
        Err("vl arb query failed")
    }
}

fn port_info_ext(c: &mut Ctx<'_>) -> Result<(), &'static str> {
    use mad_core::wire::attr::{port_cap, port_cap2};
    let port = c.port;
    let ni = c.node_info()?;
    let pn = if ni.node_type == NodeType::SWITCH {
        0
    } else {
        port as u32
    };
    let pi: PortInfo = c
        .get(AttributeId::PORT_INFO, pn)
        .ok_or("port info query failed")?;
    if pi.capability_mask & port_cap::HAS_CAP_MASK2 == 0 {
        c.warnings
            .push("port info capability mask2 not supported".into());
        return Err("port info extended not supported");
    }
    if pi.capability_mask2 & port_cap2::IS_PORT_INFO_EXT_SUPPORTED == 0 {
        c.warnings.push(format!(
            "port info capability mask2 = 0x{:x} doesn't indicate PortInfoExtended support",
            pi.capability_mask2
        ));
        return Err("port info extended not supported");
    }
    let d: RawSmpData = c
        .get(AttributeId::PORT_INFO_EXT, port as u32)
        .ok_or("port info extended query failed")?;
    let b = |i: usize| u64::from(d.0[i]);
    let w16 = |i: usize| (b(i) << 8) | b(i + 1);
    let cap = (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
    let mut s = format!("# Port info Extended: {} port {port}\n", c.dest.text);
    let fields: [(&str, String); 10] = [
        ("CapMask", dump::hex(cap, 4)),
        ("FECModeActive", dump::uint(w16(4))),
        ("FDRFECModeSupported", dump::hex(w16(6), 2)),
        ("FDRFECModeEnabled", dump::hex(w16(8), 2)),
        ("EDRFECModeSupported", dump::hex(w16(10), 2)),
        ("EDRFECModeEnabled", dump::hex(w16(12), 2)),
        ("HDRFECModeSupported", dump::hex(w16(14), 2)),
        ("HDRFECModeEnabled", dump::hex(w16(16), 2)),
        ("NDRFECModeSupported", dump::hex(w16(18), 2)),
        ("NDRFECModeEnabled", dump::hex(w16(20), 2)),
    ];
    let mut j = Json::obj();
    for (name, v) in &fields {
        s.push_str(&dump::field(name, v));
        s.push('\n');
    }
    j.push("capability_mask", Json::from(cap));
    j.push("fec_mode_active", Json::from(w16(4)));
    c.out.push_str(&s);
    c.put("port_info_extended", j);
    Ok(())
}

/// Runs `smpquery`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let usage_args = usage_args();
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "",
        usage_args: &usage_args,
        examples: EXAMPLES,
    };
    let p = ibdiag::parse(inv, &spec)?;
    let mut common_opts = p.common.clone();
    if p.has(KEY_COMBINED) {
        common_opts.dest_type = DestType::DrSlid;
    }
    let extended = p.has(KEY_EXTENDED);
    let map_file = p.value(KEY_NODE_NAME_MAP).map(str::to_owned);
    if p.args.len() < 2 {
        return Err(CliError::ToolUsage(ibdiag::usage_text(&inv.prog, &spec)));
    }
    let op_name = p.args[0].clone();
    let Some(op) = match_op(&op_name) else {
        return Err(CliError::IbExit(format!(
            "operation '{op_name}' not supported"
        )));
    };
    let session = ibdiag::open_session(inv, &common_opts)?;
    let names = ibdiag::open_name_map(inv, map_file.as_deref()).unwrap_or_default();
    let (addr, rest) = if common_opts.dest_type == DestType::DrSlid {
        let second = p.args.get(2).cloned().unwrap_or_else(|| "(null)".into());
        (
            format!("{} {second}", p.args[1]),
            p.args.get(3..).unwrap_or(&[]),
        )
    } else {
        (p.args[1].clone(), p.args.get(2..).unwrap_or(&[]))
    };
    let (session, dest) = ibdiag::dest_arg(session, &common_opts, &addr)?;
    let port = rest.first().map_or(0, |a| crate::cnum::c_strtol(a) as i32);
    let json = common_opts.json;
    let mut c = Ctx {
        s: &session,
        dest: dest.clone(),
        port,
        extended,
        names,
        show_keys: common_opts.show_keys,
        out: String::new(),
        data: Json::obj(),
        failed: None,
        warnings: Vec::new(),
    };
    let r = run_op(&mut c, op);
    let Ctx {
        out,
        data,
        failed,
        warnings,
        ..
    } = c;
    for w in warnings {
        // Raised by infiniband-diags' is_port_info_extended_supported.
        inv.io.err(&ibdiag::ibdebug::ibwarn(
            "is_port_info_extended_supported",
            &w,
        ));
    }
    if let Some(e) = &failed {
        ibdiag::warn_failed(inv, &dest.text, e);
    }
    let close = session.close();
    if json {
        let mut j = Json::obj()
            .with("command", Json::String("smpquery".into()))
            .with("op", Json::String(op_name.to_ascii_lowercase()))
            .with("dest", ibdiag::dest_json(&dest))
            .with("port", Json::from(u64::from(port.max(0) as u32)));
        if let Json::Object(fields) = data {
            for (k, v) in fields {
                j.push(&k, v);
            }
        }
        if let Err(m) = r {
            j.push("error", Json::String(format!("operation {op_name}: {m}")));
            ibdiag::print_json(inv, &j);
            return Err(CliError::Exit(255));
        }
        ibdiag::print_json(inv, &j);
    } else {
        inv.io.out(&out);
        if let Err(m) = r {
            return Err(CliError::IbExit(format!("operation {op_name}: {m}")));
        }
    }
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_match_names_and_aliases_case_insensitively() {
        assert_eq!(match_op("nodeinfo"), Some(Op::NodeInfo));
        assert_eq!(match_op("NI"), Some(Op::NodeInfo));
        assert_eq!(match_op("pkeys"), Some(Op::PKeys));
        assert_eq!(match_op("pkeytable"), Some(Op::PKeys));
        assert_eq!(match_op("vlarb"), Some(Op::VlArb));
        assert_eq!(match_op("gi"), Some(Op::GuidInfo));
        assert_eq!(match_op("guids"), None);
    }

    #[test]
    fn usage_lists_the_ops_like_smpquery() {
        let u = usage_args();
        assert!(u.contains("  PortInfo (PI) <addr> [<portnum>]\n"));
        assert!(u.contains("  NodeInfo (NI) <addr>\n"));
    }
}
