//! `ibqueryerrors` (infiniband-diags `ibqueryerrors.c`): the error
//! counters of every port of the fabric, above their thresholds, as
//! infiniband-diags 44 prints them, with the exit status 1 when a port
//! has errors.
//!
//! The fabric is discovered in parallel ([`crate::discover`]); the
//! counters are read in parallel rounds of PerfMgt MADs
//! ([`crate::discover::pma`]): ClassPortInfo of every node, then each
//! node's `AllPortSelect` counters where its PMA has them (else every
//! port's), then the ports of the nodes whose aggregate shows errors,
//! then the resets (`-k`, `-K`). What is printed, and in which order, is
//! what the C tool prints reading one MAD at a time.
//!
//! Options: `-s`, `-c`, `-G`/`-S`, `-D`, `-r`, `--threshold-file`,
//! `--data`, `--switch`, `--ca`, `--router`, `--details`, `--counters`,
//! `-k`, `-K`, `--node-name-map`, `--skip-sl` (always: SL 0 is used),
//! `-R`, `-o` and the common ones, and `--load-cache FILE` (the fabric
//! from an ibnetdiscover cache instead of a discovery; the counters are
//! still read from the fabric).
//!
//! `--details` reads, for each reported port (or AllPortSelect) whose
//! PortXmitDiscards / PortRcvErrors are beyond threshold, its
//! PortXmitDiscardDetails / PortRcvErrorDetails in one more round, and
//! prints their non-zero counters after the count as the C tool does:
//! each decoded with the *other* attribute's field names and layout
//! (infiniband-diags 44 swaps the two field ranges). With `-k` it also
//! clears both.
//!
//! # `--json` (stable shape)
//! ```json
//! {"nodes": [{"guid": "0x...", "description": "Switch1",
//!             "ports": [{"port": 1 | "ALL", "guid": "0x...",
//!                        "errors": {"PortRcvErrors": 3, ...}}]}],
//!  "summary": {"nodes_checked": 4, "bad_nodes": 1, "ports_checked": 20,
//!              "bad_ports": 0, "pma_query_failures": 0},
//!  "command": "ibqueryerrors"}
//! ```
//! `nodes` lists the nodes with errors beyond their thresholds, `ports`
//! the lines the text prints for them.

use mad_core::wire::attr::{
    pm_attr, pm_cap, ClassPortInfo, NodeType, PortCounters, PortCountersExt,
};
use mad_core::wire::{AttributeId, Repr};

use crate::command::{CliError, Invocation};
use crate::discover::agent::AgentExchange;
use crate::discover::gather::Gathered;
use crate::discover::model::{Fabric, Node};
use crate::discover::pma::{self, PmaQuery, PmaResult};
use crate::discover::Limits;
use crate::ibdiag::{self, Opt, ToolSpec};
use crate::ibdiag::{cached_discovery, limits, open_name_map, run_scan, ScanStart};
use crate::namemap::NameMap;

mod clear;
mod fmt;
mod settings;

use clear::clear;

use settings::Settings;

const OPT_NODE_NAME_MAP: i32 = 1;
const OPT_DATA: i32 = 2;
const OPT_SWITCH: i32 = 3;
const OPT_CA: i32 = 4;
const OPT_ROUTER: i32 = 5;
const OPT_LOAD_CACHE: i32 = 7;
const OPT_THRESHOLD_FILE: i32 = 8;
const OPT_COUNTERS: i32 = 9;
const OPT_SKIP_SL: i32 = 10;
const OPT_DETAILS: i32 = 6;

/// ibqueryerrors' own options, in its order.
pub const OPTS: &[Opt] = &[
    Opt::new(
        "suppress",
        's',
        true,
        Some("<err1,err2,...>"),
        "suppress errors listed",
    ),
    Opt::new(
        "suppress-common",
        'c',
        false,
        None,
        "suppress some of the common counters",
    ),
    ibdiag::node_name_map_opt(OPT_NODE_NAME_MAP),
    Opt::new(
        "port-guid",
        'G',
        true,
        Some("<port_guid>"),
        "report the node containing the port specified by <port_guid>",
    ),
    Opt::new(
        "",
        'S',
        true,
        Some("<port_guid>"),
        "Same as \"-G\" for backward compatibility",
    ),
    Opt::new(
        "Direct",
        'D',
        true,
        Some("<dr_path>"),
        "report the node containing the port specified by <dr_path>",
    ),
    Opt::long(
        "skip-sl",
        OPT_SKIP_SL,
        false,
        None,
        "don't obtain SL to all destinations",
    ),
    Opt::new(
        "report-port",
        'r',
        false,
        None,
        "report port link information",
    ),
    Opt::long(
        "threshold-file",
        OPT_THRESHOLD_FILE,
        true,
        None,
        "specify an alternate threshold file, default: /etc/infiniband-diags/error_thresholds",
    ),
    Opt::new(
        "GNDN",
        'R',
        false,
        None,
        "(This option is obsolete and does nothing)",
    ),
    Opt::long(
        "data",
        OPT_DATA,
        false,
        None,
        "include data counters for ports with errors",
    ),
    Opt::long(
        "switch",
        OPT_SWITCH,
        false,
        None,
        "print data for switches only",
    ),
    Opt::long("ca", OPT_CA, false, None, "print data for CA's only"),
    Opt::long(
        "router",
        OPT_ROUTER,
        false,
        None,
        "print data for routers only",
    ),
    Opt::long(
        "details",
        OPT_DETAILS,
        false,
        None,
        "include transmit discard details",
    ),
    Opt::long(
        "counters",
        OPT_COUNTERS,
        false,
        None,
        "print data counters only",
    ),
    Opt::new(
        "clear-errors",
        'k',
        false,
        None,
        "Clear error counters after read",
    ),
    Opt::new(
        "clear-counts",
        'K',
        false,
        None,
        "Clear data counters after read",
    ),
    ibdiag::load_cache_opt(OPT_LOAD_CACHE),
    ibdiag::OUTSTANDING_SMPS_OPT,
];

/// The command line of ibqueryerrors.
pub const SPEC: ToolSpec<'static> = ToolSpec {
    opts: OPTS,
    exclude: "cDGKLnRrSs",
    usage_args: "",
    examples: &[],
};

/// The default threshold file.
pub const DEFAULT_THRESHOLD_FILE: &str = "/etc/infiniband-diags/error_thresholds";

const ALL_PORTS: u8 = 0xFF;

/// What was read for one port (or `AllPortSelect`).
#[derive(Debug, Clone, Default)]
struct PortRead {
    pc: Option<PmaResult>,
    pce: Option<PmaResult>,
    /// `--details`: PortXmitDiscardDetails, PortRcvErrorDetails.
    details: [Option<PmaResult>; 2],
}

/// Per selected node: where its PMA is and what it said.
#[derive(Debug, Clone)]
struct NodeWork {
    node: usize,
    name: String,
    /// The LID and port of the ClassPortInfo query.
    lid: u16,
    cpi_port: u8,
    cpi: Option<PmaResult>,
    cap_mask: u16,
    cap_mask2: u32,
    all: PortRead,
    /// Ports of the per-port loop: (port, LID, read).
    ports: Vec<(u8, u16, PortRead)>,
}

impl NodeWork {
    fn all_port_sup(&self) -> bool {
        matches!(self.cpi, Some(Ok(_))) && self.cap_mask & pm_cap::ALL_PORT_SELECT != 0
    }

    fn ext(&self) -> bool {
        self.cap_mask & (pm_cap::EXT_WIDTH_SUPPORTED | pm_cap::EXT_WIDTH_NOIETF_SUP) != 0
    }
}

fn reads(lid: u16, port: u8, with_pc: bool, with_ext: bool) -> Vec<PmaQuery> {
    let mut v = Vec::new();
    if with_pc {
        v.push(PmaQuery::get(
            lid,
            AttributeId::PM_PORT_COUNTERS,
            Some(port),
        ));
    }
    if with_ext {
        v.push(PmaQuery::get(
            lid,
            AttributeId::PM_PORT_COUNTERS_EXT,
            Some(port),
        ));
    }
    v
}

/// Runs a round of reads: `plan` gives, per query, where to put the
/// answer.
fn round<T>(
    ex: &mut AgentExchange<'_>,
    lim: Limits,
    plan: Vec<(T, PmaQuery)>,
) -> Result<Vec<(T, PmaResult)>, CliError> {
    // Nothing is sent to LID 0 (a fabric without an SM): it fails as
    // libibmad's query does.
    let (keys, qs): (Vec<T>, Vec<PmaQuery>) = plan.into_iter().unzip();
    let sendable: Vec<PmaQuery> = qs.iter().filter(|q| q.lid != 0).cloned().collect();
    let mut answers = pma::run_batch(ex, lim, &sendable)
        .map_err(|e| CliError::Failed(e.to_string()))?
        .into_iter();
    Ok(keys
        .into_iter()
        .zip(&qs)
        .map(|(k, q)| {
            let r = if q.lid == 0 {
                Err("no LID".to_owned())
            } else {
                answers.next().unwrap_or_else(|| Err("not sent".into()))
            };
            (k, r)
        })
        .collect())
}

/// Where a read's answer goes: node slot, port slot (`None`: the
/// AllPortSelect read), and which attribute it is.
type Slot = (usize, Option<usize>, AttributeId);

fn store(work: &mut [NodeWork], res: Vec<(Slot, PmaResult)>) {
    for ((w, port, attr), r) in res {
        let Some(nw) = work.get_mut(w) else { continue };
        let read = match port {
            None => &mut nw.all,
            Some(i) => match nw.ports.get_mut(i) {
                Some(p) => &mut p.2,
                None => continue,
            },
        };
        let slot = match attr {
            AttributeId::PM_PORT_COUNTERS_EXT => &mut read.pce,
            a if a == AttributeId(pm_attr::PORT_XMIT_DISCARD_DETAILS) => &mut read.details[0],
            a if a == AttributeId(pm_attr::PORT_RCV_ERROR_DETAILS) => &mut read.details[1],
            _ => &mut read.pc,
        };
        *slot = Some(r);
    }
}

fn parse_ok<R: Repr>(r: Option<&PmaResult>) -> Option<R> {
    match r {
        Some(Ok(d)) => R::parse(d).ok(),
        _ => None,
    }
}

/// Runs `ibqueryerrors`.
///
/// # Errors
/// Bad options (usage), no port (`IBEXIT`), discovery failure (exit
/// 255 after "discover failed"); exit status 1 when a port has errors.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let p = ibdiag::parse(inv, &SPEC)?;
    let mut st = Settings::default();
    let mut map_file: Option<String> = None;
    let mut threshold_file = DEFAULT_THRESHOLD_FILE.to_owned();
    let mut guid_arg: Option<String> = None;
    let mut dr_arg: Option<String> = None;
    let mut types: u8 = 0;
    let mut window: Option<usize> = None;
    let mut skip_sl = false;
    let mut load: Option<String> = None;
    for (key, val) in &p.custom {
        let v = val.as_deref().unwrap_or("");
        match (u8::try_from(*key).map(char::from).unwrap_or('\0'), *key) {
            ('s', _) => st.suppress_list(v),
            ('c', _) => st.suppress("PortRcvSwitchRelayErrors"),
            ('G' | 'S', _) => guid_arg = Some(v.to_owned()),
            ('D', _) => dr_arg = Some(v.to_owned()),
            ('r', _) => st.port_config = true,
            ('k', _) => st.clear_errors = true,
            ('K', _) => st.clear_counts = true,
            ('o', _) => {
                let n = crate::cnum::c_strtoul(v);
                window = (n != 0).then(|| usize::try_from(n).unwrap_or(usize::MAX));
            }
            (_, OPT_NODE_NAME_MAP) => map_file = Some(v.to_owned()),
            (_, OPT_DATA) => st.data = true,
            (_, OPT_DETAILS) => st.details = true,
            (_, OPT_SWITCH) => types |= 1,
            (_, OPT_CA) => types |= 2,
            (_, OPT_ROUTER) => types |= 4,
            (_, OPT_THRESHOLD_FILE) => threshold_file = v.to_owned(),
            (_, OPT_COUNTERS) => st.counters_only = true,
            (_, OPT_SKIP_SL) => skip_sl = true,
            (_, OPT_LOAD_CACHE) => load = Some(v.to_owned()),
            _ => {}
        }
    }
    if types == 0 {
        types = 0xFF;
    }
    let mut session = match ibdiag::open_session(inv, &p.common) {
        Ok(s) => s,
        Err(CliError::IbExit(_)) => {
            return Err(CliError::IbExit(format!(
                "Failed to open port; {}:{}\n",
                p.common.ca.as_deref().unwrap_or("(null)"),
                p.common.port.unwrap_or(0)
            )))
        }
        Err(e) => return Err(e),
    };
    if dr_arg.is_some() && load.is_some() {
        let _ = session.close();
        return Err(CliError::Stderr(
            "Cannot specify cache and direct route path\n".into(),
            255,
        ));
    }
    let map = open_name_map(inv, map_file.as_deref());
    let pid = std::process::id();
    // -D: the node at the end of the route, by its NodeInfo.
    let mut select_guid: Option<(u64, String)> = None;
    // The partial scan's start (`resolve_portid_str`).
    let mut start: Option<ScanStart> = None;
    if let Some(path) = &dr_arg {
        start = ibdiag::route_start(inv, path);
    }
    if let Some(g) = &guid_arg {
        let (guid, resolved) = ibdiag::resolve_guid_warned(inv, &mut session, &p.common, g, "\n");
        if resolved && dr_arg.is_none() {
            start = Some(ScanStart::Guid(guid));
        }
        select_guid = Some((guid, g.clone()));
    }
    let lim = limits(window, p.common.timeout_ms);
    let d = if let Some(path) = &load {
        match cached_discovery(path) {
            Ok(d) => d,
            Err(e) => {
                let _ = session.close();
                return Err(CliError::Stderr(
                    format!("loading cached fabric failed\n{}: {e}\n", inv.prog),
                    255,
                ));
            }
        }
    } else {
        let mut pick = |g: &Gathered| ibdiag::scan_of(g, start.as_ref(), 0);
        match run_scan(
            inv,
            &session,
            lim,
            p.common.m_key,
            false,
            ibdiag::scan_depth(start.as_ref(), 0),
            &mut pick,
        ) {
            Ok((d, lines)) => {
                inv.io.err(&lines.concat());
                d
            }
            Err(_) => {
                let _ = session.close();
                return Err(CliError::Stderr("discover failed\n".into(), 255));
            }
        }
    };
    st.thresholds = settings::read_thresholds(&threshold_file);
    let f = &d.fabric;
    let selected: Vec<usize> = if let Some(path) = &dr_arg {
        // (The partial scan from there said what went unanswered.)
        let ni = ibdiag::dr_node_info(inv, &session, path, |_, _, _| {});
        let Some(ni) = ni else {
            let _ = session.close();
            return Err(CliError::Stderr(
                "Failed to query local Node Info\n".into(),
                0,
            ));
        };
        match find_port(f, ni.port_guid) {
            Some(i) => {
                if !skip_sl && !sa_reachable(inv, &session, &p.common) {
                    let _ = session.close();
                    return Ok(());
                }
                vec![i]
            }
            None => {
                inv.io.err(&format!("Failed to find node: {path}\n"));
                Vec::new()
            }
        }
    } else if let Some((guid, arg)) = &select_guid {
        match find_port(f, *guid) {
            Some(i) => vec![i],
            None => {
                inv.io.err(&format!("Failed to find node: {arg}\n"));
                Vec::new()
            }
        }
    } else {
        if !skip_sl && !sa_reachable(inv, &session, &p.common) {
            let _ = session.close();
            return Ok(());
        }
        f.listed().collect()
    };
    let type_bit = |n: &Node| match n.node_type() {
        NodeType::SWITCH => 1u8,
        NodeType::CA => 2,
        NodeType::ROUTER => 4,
        _ => 0,
    };
    let mut work: Vec<NodeWork> = selected
        .into_iter()
        .filter(|&i| type_bit(&f.nodes[i]) & types != 0)
        .map(|i| new_work(f, i, map.as_ref()))
        .collect();
    let mut ex = AgentExchange::new(session.runtime()).map_err(CliError::Failed)?;
    read_all(&mut ex, lim, &st, &mut work)?;
    let out = fmt::report(f, &work_view(&work), &st, map.as_ref(), pid);
    if st.clear_errors || st.clear_counts {
        let fails = clear(&mut ex, lim, &st, &work)?;
        // The C tool resets as it goes: its complaints come after the
        // node's lines on stderr, which is a separate stream anyway.
        inv.io.err(&out.stderr);
        inv.io.err(&fails);
    } else {
        inv.io.err(&out.stderr);
    }
    drop(ex);
    let _ = session.close();
    if p.common.json {
        ibdiag::print_json(inv, &out.json);
    } else {
        inv.io.out(&out.stdout);
    }
    if out.bad_ports > 0 {
        return Err(CliError::Exit(1));
    }
    Ok(())
}

/// Whether the SA can be asked for the SLs (`path_record_query`): not
/// without an SM, which the C tool reports and then exits 0 without a
/// report. (With one, SL 0 is used: the SLs are not asked for.)
fn sa_reachable(
    inv: &mut Invocation<'_, '_>,
    session: &crate::session::Session,
    c: &ibdiag::Common,
) -> bool {
    if session.port_attrs().sm_lid != 0 {
        return true;
    }
    inv.io.err(&format!(
        "ibwarn: [{}] sa_get_handle: No SM/SA found on port {}:{}\n",
        std::process::id(),
        c.ca.as_deref().unwrap_or("(null)"),
        c.port.unwrap_or(0)
    ));
    false
}

fn find_port(f: &Fabric, guid: u64) -> Option<usize> {
    f.listed().find(|&i| {
        let n = &f.nodes[i];
        n.info.port_guid == guid || n.ports.iter().flatten().any(|p| p.guid == guid)
    })
}

fn new_work(f: &Fabric, i: usize, map: Option<&NameMap>) -> NodeWork {
    let n = &f.nodes[i];
    let name = map
        .and_then(|m| m.get(n.guid()))
        .map_or_else(|| n.clean_desc(), str::to_owned);
    let (lid, cpi_port) = if n.is_switch() {
        (n.smalid, 0)
    } else {
        (1..=n.num_ports())
            .find_map(|p| n.port(p).map(|pp| (pp.base_lid, p)))
            .unwrap_or((0, n.num_ports().saturating_add(1)))
    };
    let start = u8::from(!(n.is_switch() && n.enhanced_port0));
    let ports = (start..=n.num_ports())
        .filter(|&p| n.port(p).is_some())
        .map(|p| (p, n.lid_of(p), PortRead::default()))
        .collect();
    NodeWork {
        node: i,
        name,
        lid,
        cpi_port,
        cpi: None,
        cap_mask: 0,
        cap_mask2: 0,
        all: PortRead::default(),
        ports,
    }
}

/// The reads, in rounds: ClassPortInfo; AllPortSelect or every port;
/// the ports of nodes whose aggregate has errors.
fn read_all(
    ex: &mut AgentExchange<'_>,
    lim: Limits,
    st: &Settings,
    work: &mut [NodeWork],
) -> Result<(), CliError> {
    let plan: Vec<(usize, PmaQuery)> = work
        .iter()
        .enumerate()
        .map(|(w, nw)| (w, PmaQuery::get(nw.lid, AttributeId::CLASS_PORT_INFO, None)))
        .collect();
    for (w, r) in round(ex, lim, plan)? {
        let nw = &mut work[w];
        if let Ok(d) = &r {
            if let Ok(c) = ClassPortInfo::parse(d) {
                nw.cap_mask = c.capability_mask;
                nw.cap_mask2 = c.capability_mask2;
            }
        }
        nw.cpi = Some(r);
    }
    let port_plan = |w: usize, nw: &NodeWork, counters_only: bool| {
        let mut v: Vec<(Slot, PmaQuery)> = Vec::new();
        for (i, (port, lid, _)) in nw.ports.iter().enumerate() {
            let (pc, ext) = if counters_only {
                (!nw.ext(), nw.ext())
            } else {
                (true, nw.ext())
            };
            for q in reads(*lid, *port, pc, ext) {
                v.push(((w, Some(i), q.attr), q));
            }
        }
        v
    };
    let mut plan: Vec<(Slot, PmaQuery)> = Vec::new();
    for (w, nw) in work.iter().enumerate() {
        if !st.counters_only && nw.all_port_sup() {
            for q in reads(nw.lid, ALL_PORTS, true, nw.ext()) {
                plan.push(((w, None, q.attr), q));
            }
        } else {
            plan.extend(port_plan(w, nw, st.counters_only));
        }
    }
    store(work, round(ex, lim, plan)?);
    // Nodes whose aggregate read shows errors: every port too.
    let mut plan: Vec<(Slot, PmaQuery)> = Vec::new();
    for (w, nw) in work.iter().enumerate() {
        if !st.counters_only && nw.all_port_sup() && all_has_errors(nw, st) {
            plan.extend(port_plan(w, nw, false));
        }
    }
    store(work, round(ex, lim, plan)?);
    if st.details && !st.counters_only {
        store(work, round(ex, lim, details_plan(work, st))?);
    }
    Ok(())
}

/// `--details`: the details of every read the report prints whose
/// PortXmitDiscards / PortRcvErrors are beyond threshold (`print_results`
/// asks as it goes).
fn details_plan(work: &[NodeWork], st: &Settings) -> Vec<(Slot, PmaQuery)> {
    let mut plan = Vec::new();
    for (w, nw) in work.iter().enumerate() {
        let mut printed: Vec<(Option<usize>, u16, u8, &PortRead)> = Vec::new();
        if nw.all_port_sup() {
            printed.push((None, nw.lid, ALL_PORTS, &nw.all));
        }
        if !nw.all_port_sup() || all_has_errors(nw, st) {
            for (i, (port, lid, r)) in nw.ports.iter().enumerate() {
                printed.push((Some(i), *lid, *port, r));
            }
        }
        for (slot, lid, port, r) in printed {
            let Some((pc, pce)) = view_read(nw, r) else {
                continue;
            };
            for (name, _, _) in fmt::error_fields(&pc, pce.as_ref(), nw.cap_mask2, st) {
                let attr = match name {
                    "PortXmitDiscards" => pm_attr::PORT_XMIT_DISCARD_DETAILS,
                    "PortRcvErrors" => pm_attr::PORT_RCV_ERROR_DETAILS,
                    _ => continue,
                };
                let q = PmaQuery::get(lid, AttributeId(attr), Some(port));
                plan.push(((w, slot, q.attr), q));
            }
        }
    }
    plan
}

/// True when the AllPortSelect read answered and shows something to
/// print (the C tool then reads every port).
fn all_has_errors(nw: &NodeWork, st: &Settings) -> bool {
    let v = view_read(nw, &nw.all);
    match v {
        Some((pc, pce)) => !fmt::error_fields(&pc, pce.as_ref(), nw.cap_mask2, st).is_empty(),
        None => false,
    }
}

/// The counters of a read as `print_errors` sees them: `None` when a
/// query failed.
fn view_read(nw: &NodeWork, r: &PortRead) -> Option<(PortCounters, Option<PortCountersExt>)> {
    let mut pc: PortCounters = parse_ok(r.pc.as_ref())?;
    let pce = if nw.ext() {
        Some(parse_ok::<PortCountersExt>(r.pce.as_ref())?)
    } else {
        None
    };
    if nw.cap_mask & pm_cap::PC_XMIT_WAIT_SUP == 0 {
        pc.port_xmit_wait = 0;
    }
    Some((pc, pce))
}

fn work_view(work: &[NodeWork]) -> Vec<fmt::NodeView<'_>> {
    work.iter()
        .map(|nw| fmt::NodeView {
            node: nw.node,
            name: &nw.name,
            lid: nw.lid,
            cpi_port: nw.cpi_port,
            cpi_failed: !matches!(nw.cpi, Some(Ok(_))),
            cpi: nw.cpi.as_ref(),
            all_port_sup: nw.all_port_sup(),
            ext: nw.ext(),
            cap_mask: nw.cap_mask,
            cap_mask2: nw.cap_mask2,
            all: fmt::ReadView::of(&nw.all),
            ports: nw
                .ports
                .iter()
                .map(|(p, l, r)| (*p, *l, fmt::ReadView::of(r)))
                .collect(),
        })
        .collect()
}
