//! `mad check-routes`: can the fabric's unicast routes deadlock? Reads
//! every switch's linear forwarding table from the fabric (whichever SM
//! programmed it: mad sm, OpenSM, the built-in fabric's SM-lite), then
//! runs [`mad_sm::routing::check`]: the channel dependency graph and one
//! of its cycles if it has any, the CA pairs the tables do not connect,
//! and the routes per switch port (what OpenSM's `check_lft_balance`
//! looks at).
//!
//! ```text
//! mad [--sim[=TOPO]|--ibsim|-C CA -P PORT] check-routes [--json] [-v] [-R LIST [-a FILE]] [-l LMC]
//! ```
//! `-v` lists every switch's ports (routes: CA LIDs its table sends out
//! of the port; pairs: (source CA, destination LID) pairs whose route
//! leaves by it). On the built-in fabric (`--sim`),
//! `-R LIST` / `-a FILE` route it with those engines (as `mad sm -R` /
//! `--root_guid_file`) and `-l N` gives its CA ports LMC N (as `mad sm
//! -l`) before the check. Every LID of a port's LMC range is a
//! destination of the check (the pairs count each).
//!
//! Exit status: 0 when the routes have no cycle and connect every CA
//! pair; 1 when they do not (the report says why); 3 when discovery or a
//! table read went unanswered.
//!
//! # `--json`
//! ```json
//! {"switches": 16, "ca_ports": 16, "pairs": 240, "channels": 64,
//!  "dependencies": 96, "deadlock_free": false,
//!  "cycle": [{"guid": "0x...", "name": "...", "port": 1}],
//!  "unreachable": 0, "unreachable_examples": [{"src_guid": "0x...", "src_name": "...", "dlid": 5}],
//!  "balance": {"switch_port_min": 3, "switch_port_max": 9},
//!  "per_switch": [{"guid": "0x...", "name": "...", "min": 3, "max": 9,
//!                  "ports": [{"port": 1, "routes": 3, "pairs": 12, "to": "switch"}]}]}
//! ```

use mad_core::transport::{Address, Qp, PERMISSIVE_LID};
use mad_core::wire::attr::NodeType;
use mad_core::wire::smp::{DrPath, Smp};
use mad_core::wire::{AttributeId, Method};
use mad_sm::routing::check::{check, CaPort, Peer, Report, SwitchTables, Tables};
use mad_sm::routing::engines::{parse_guid_file, Engine, RoutingConfig};
use serde_json::json;

use crate::command::{CliError, Invocation};
use crate::discover::agent::AgentExchange;
use crate::discover::model::Fabric;
use crate::discover::pipeline::{Limits, Outcome, Pipeline, Request};
use crate::ibdiag::{self, limits, run_discovery, Opt, ToolSpec};
use crate::json::Json;
use crate::session::{Session, TransportChoice};

/// `-R` / `-a`.
const OPTS: &[Opt] = &[
    Opt::new(
        "routing_engine",
        'R',
        true,
        Some("<list>"),
        "on the built-in fabric (--sim): route with these engines first (minhop, updn, ftree)",
    ),
    Opt::new(
        "root_guid_file",
        'a',
        true,
        Some("<file>"),
        "on the built-in fabric (--sim): updn's root switch GUIDs",
    ),
    Opt::new(
        "lmc",
        'l',
        true,
        Some("<0-7>"),
        "on the built-in fabric (--sim): give CA ports 2^N LIDs first (as mad sm -l)",
    ),
];

/// The command line: no destination options.
pub const SPEC: ToolSpec<'static> = ToolSpec {
    opts: OPTS,
    exclude: "DGLKse",
    usage_args: "",
    examples: &["--json", "-v", "-R updn"],
};

/// Reads every switch's LFT through `session` and builds the check's
/// model of `f`. The blocks of all switches are read in parallel (the
/// discovery's pipeline: `lim.window` in flight, `lim.per_dest` per
/// switch). Returns the tables and the blocks that could not be read.
///
/// # Errors
/// The port failed as a whole (not one block: those are listed).
fn tables(
    session: &Session,
    f: &Fabric,
    lim: Limits,
    m_key: u64,
) -> Result<(Tables, Vec<String>), String> {
    let mut t = Tables::default();
    let mut sw_pos = vec![usize::MAX; f.nodes.len()];
    let mut ca_pos: std::collections::HashMap<(usize, u8), usize> = Default::default();
    for (i, n) in f.nodes.iter().enumerate() {
        if n.is_switch() {
            continue;
        }
        for p in n.ports.iter().flatten().filter(|p| p.base_lid != 0) {
            ca_pos.insert((i, p.num), t.cas.len());
            t.cas.push(CaPort {
                guid: p.guid,
                name: String::from_utf8_lossy(&n.desc).into_owned(),
                lid: p.base_lid,
                lmc: p.lmc,
                attach: None,
            });
        }
    }
    // (switch, block) of each request; a block not read stays NO_ROUTE.
    let mut p: Pipeline<(usize, u32)> = Pipeline::new(lim);
    let mut unroutable = Vec::new();
    for (i, n) in f.nodes.iter().enumerate() {
        if n.node_type() != NodeType::SWITCH {
            continue;
        }
        let sw = t.switches.len();
        sw_pos[i] = sw;
        let top = n.switch_info.as_ref().map_or(0, |si| si.linear_fdb_top);
        let blocks = u32::from(top) / 64 + 1;
        match DrPath::from_hops(&n.path) {
            Ok(route) => {
                for block in 0..blocks {
                    p.submit(Request {
                        qp: Qp::Qp0,
                        mad: route.build_request(
                            Method::GET,
                            AttributeId::LINEAR_FWD_TABLE,
                            block,
                            0,
                            m_key,
                        ),
                        dest: Address::smi(PERMISSIVE_LID),
                        dest_key: Some(n.guid()),
                        ctx: (sw, block),
                    });
                }
            }
            Err(e) => unroutable.push((sw, blocks, e.to_string())),
        }
        t.switches.push(SwitchTables {
            guid: n.guid(),
            name: String::from_utf8_lossy(&n.desc).into_owned(),
            lft: vec![mad_sm::NO_ROUTE; usize::from(top) + 1],
            links: vec![None; usize::from(n.num_ports()) + 1],
        });
    }
    let mut failed = Vec::new();
    for (sw, blocks, why) in unroutable {
        let s = &t.switches[sw];
        failed.extend(
            (0..blocks).map(|b| format!("0x{:016x} {:?} LFT block {b}: {why}", s.guid, s.name)),
        );
    }
    let mut ex = AgentExchange::new(session.runtime())?;
    let switches = &mut t.switches;
    let mut handler = |_: &mut Pipeline<(usize, u32)>, (sw, block): (usize, u32), o: Outcome| {
        let s = &mut switches[sw];
        let why = match o {
            Outcome::Answer(mad) => match Smp::new_checked(&mad[..]) {
                Ok(smp) if smp.dr_status() & 0x7FFF == 0 => {
                    let at = block as usize * 64;
                    let n = s.lft.len().saturating_sub(at).min(64);
                    s.lft[at..at + n].copy_from_slice(&smp.data()[..n]);
                    return Ok(());
                }
                Ok(smp) => format!("status 0x{:x}", smp.dr_status() & 0x7FFF),
                Err(_) => format!("short answer ({} bytes)", mad.len()),
            },
            Outcome::Timeout => "timeout".to_owned(),
            Outcome::Failed(e) => e,
        };
        failed.push(format!(
            "0x{:016x} {:?} LFT block {block}: {why}",
            s.guid, s.name
        ));
        Ok(())
    };
    p.run(&mut ex, &mut handler).map_err(|e| e.to_string())?;
    failed.sort();
    for (i, n) in f.nodes.iter().enumerate() {
        for p in n.ports.iter().flatten() {
            let Some(r) = p.remote else { continue };
            if sw_pos[i] != usize::MAX && p.num > 0 {
                let peer = if sw_pos[r.node] != usize::MAX {
                    Some(Peer::Switch {
                        sw: sw_pos[r.node],
                        port: r.port,
                    })
                } else {
                    ca_pos.get(&(r.node, r.port)).map(|&c| Peer::Ca(c))
                };
                if let Some(l) = t.switches[sw_pos[i]].links.get_mut(usize::from(p.num)) {
                    *l = peer;
                }
            } else if let Some(&c) = ca_pos.get(&(i, p.num)) {
                if sw_pos[r.node] != usize::MAX {
                    t.cas[c].attach = Some((sw_pos[r.node], r.port));
                }
            }
        }
    }
    Ok((t, failed))
}

/// The report as text.
fn text(t: &Tables, r: &Report, verbose: bool) -> String {
    let sw = |k: usize| format!("0x{:016x} {:?}", t.switches[k].guid, t.switches[k].name);
    let mut s = format!(
        "{} switches, {} CA ports, {} (source, destination LID) pairs: {} channels in use, {} dependencies\n",
        t.switches.len(),
        t.cas.len(),
        r.pairs,
        r.channels,
        r.dependencies
    );
    if r.cycle.is_empty() {
        s.push_str("no cycle in the channel dependency graph: the routes are deadlock-free\n");
    } else {
        s.push_str(&format!(
            "CYCLE in the channel dependency graph ({} channels): the routes can deadlock\n",
            r.cycle.len()
        ));
        for c in &r.cycle {
            s.push_str(&format!("  {} port {} ->\n", sw(c.sw), c.port));
        }
        s.push_str(&format!(
            "  (back to {} port {})\n",
            sw(r.cycle[0].sw),
            r.cycle[0].port
        ));
    }
    s.push_str(&format!(
        "unreachable pairs: {} of {}\n",
        r.unreachable, r.pairs
    ));
    for u in &r.unreachable_examples {
        let c = &t.cas[u.src];
        s.push_str(&format!(
            "  from 0x{:016x} {:?} to LID {}\n",
            c.guid, c.name, u.dlid
        ));
    }
    if let Some((lo, hi)) = switch_port_range(r) {
        s.push_str(&format!(
            "routes per switch-to-switch port: min {lo} max {hi}\n"
        ));
    }
    for b in &r.balance {
        let Some((lo, hi)) = b.port_range() else {
            continue;
        };
        s.push_str(&format!("{}: routes per port min {lo} max {hi}", sw(b.sw)));
        if verbose {
            for p in &b.ports {
                s.push_str(&format!(" {}:{}/{}", p.port, p.routes, p.pairs));
            }
        }
        s.push('\n');
    }
    s
}

/// Fewest and most routes over every switch-to-switch port.
fn switch_port_range(r: &Report) -> Option<(u32, u32)> {
    r.balance
        .iter()
        .filter_map(mad_sm::routing::check::SwitchBalance::switch_port_range)
        .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
}

/// The report as JSON (see the module docs).
fn to_json(t: &Tables, r: &Report) -> Json {
    let guid = |g: u64| format!("0x{g:016x}");
    let range = switch_port_range(r);
    json!({
        "switches": t.switches.len(),
        "ca_ports": t.cas.len(),
        "pairs": r.pairs,
        "channels": r.channels,
        "dependencies": r.dependencies,
        "deadlock_free": r.cycle.is_empty(),
        "cycle": r.cycle.iter().map(|c| json!({
            "guid": guid(t.switches[c.sw].guid),
            "name": t.switches[c.sw].name,
            "port": c.port,
        })).collect::<Vec<_>>(),
        "unreachable": r.unreachable,
        "unreachable_examples": r.unreachable_examples.iter().map(|u| json!({
            "src_guid": guid(t.cas[u.src].guid),
            "src_name": t.cas[u.src].name,
            "dlid": u.dlid,
        })).collect::<Vec<_>>(),
        "balance": {
            "switch_port_min": range.map(|x| x.0),
            "switch_port_max": range.map(|x| x.1),
        },
        "per_switch": r.balance.iter().map(|b| {
            let (lo, hi) = b.port_range().unzip();
            json!({
                "guid": guid(t.switches[b.sw].guid),
                "name": t.switches[b.sw].name,
                "min": lo,
                "max": hi,
                "ports": b.ports.iter().map(|p| json!({
                    "port": p.port,
                    "routes": p.routes,
                    "pairs": p.pairs,
                    "to": if p.to_switch { "switch" } else { "ca" },
                })).collect::<Vec<_>>(),
            })
        }).collect::<Vec<_>>(),
    })
}

/// Runs `mad check-routes`.
///
/// # Errors
/// Bad options; no port; discovery failure; routes with a cycle or
/// unconnected pairs (exit 1); LFT blocks or discovery answers missing
/// (exit 3).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let p = ibdiag::parse(inv, &SPEC)?;
    if let Some(extra) = p.args.first() {
        return Err(CliError::Usage(format!(
            "check-routes takes no argument ({extra:?})"
        )));
    }
    let mut routing = RoutingConfig::default();
    let mut lmc = None;
    for (key, val) in &p.custom {
        let v = val.as_deref().unwrap_or("");
        if *key == i32::from(b'R') {
            routing.engines = Engine::parse_list(v)
                .map_err(|e| CliError::Usage(format!("check-routes: -R: {e}")))?;
        } else if *key == i32::from(b'l') {
            lmc = Some(
                mad_sm::parse_lmc(v)
                    .map_err(|e| CliError::Usage(format!("check-routes: --lmc: {e}")))?,
            );
        } else if *key == i32::from(b'a') {
            let text = std::fs::read_to_string(v).map_err(|e| {
                CliError::Input(format!("check-routes: cannot read root_guid_file {v}: {e}"))
            })?;
            routing.root_guids = parse_guid_file(&text)
                .map_err(|e| CliError::Input(format!("check-routes: root_guid_file {v}: {e}")))?;
        }
    }
    if routing != RoutingConfig::default() || lmc.is_some() {
        if !matches!(inv.session.transport, TransportChoice::Sim(_)) {
            return Err(CliError::Usage(
                "check-routes: -R, -a and -l route the built-in fabric (--sim); on another fabric its SM chose the routes"
                    .into(),
            ));
        }
        inv.session.sim_lmc = lmc.unwrap_or(0);
    }
    if routing != RoutingConfig::default() {
        if routing.engines.is_empty() {
            routing.engines = vec![Engine::UpDown];
        }
        inv.session.sim_routing = routing;
    }
    let session = ibdiag::open_session(inv, &p.common)?;
    let lim = limits(None, p.common.timeout_ms);
    let d = run_discovery(inv, &session, lim, p.common.m_key, false)?;
    let (t, failed) = tables(&session, &d.fabric, lim, p.common.m_key)
        .map_err(|e| CliError::Failed(format!("check-routes: reading the LFTs: {e}")))?;
    let _ = session.close();
    let r = check(&t);
    if p.common.json {
        ibdiag::print_json(inv, &to_json(&t, &r));
    } else {
        inv.io.out(&text(&t, &r, p.common.verbose > 0));
    }
    if r.failed() {
        let mut why = Vec::new();
        if !r.cycle.is_empty() {
            why.push(format!(
                "a cycle of {} channels in the channel dependency graph (the routes can deadlock)",
                r.cycle.len()
            ));
        }
        if r.unreachable > 0 {
            why.push(format!("{} unreachable CA pairs", r.unreachable));
        }
        return Err(CliError::Failed(format!(
            "check-routes: {}",
            why.join("; ")
        )));
    }
    if !failed.is_empty() || !d.failures.is_empty() {
        let n = failed.len() as u64;
        return Err(ibdiag::incomplete(
            inv,
            "lft blocks",
            Some(n),
            failed,
            "check-routes: some LFT blocks or discovery answers are missing; the check covers what was read".into(),
        ));
    }
    Ok(())
}
