//! `ibnetdiscover` (infiniband-diags `ibnetdiscover.c` over
//! libibnetdisc), on the [`crate::discover`] engine: the same model and
//! output, with many SMPs in flight instead of two.
//!
//! Options as infiniband-diags 44: `-f` `-s` `-l` `-g` `-H` `-S` `-R`
//! `--node-name-map` `-p` `-m` `-o`, the common ones, and an output file
//! argument. `-o N` bounds the SMPs in flight on the port (default 256;
//! at most 4 per destination node). `--cache FILE` writes libibnetdisc's
//! cache file ([`crate::discover::cache`]) after the output,
//! `--load-cache FILE` reads the fabric from one instead of the port, and
//! `--diff FILE` prints what differs between a cache and the fabric
//! ([`crate::discover::diff`]; `--diffcheck` picks the checks).
//!
//! # `--json` (stable shape)
//! In the envelope of [`crate::json`] (`command`, `version`, `complete`,
//! and `missing` / `error` when discovery did not reach everything):
//! ```json
//! {"from": {"node_guid": "0x0000000000200000", "port_guid": "0x...", "port": 0},
//!  "nodes": [{"guid": "0x...", "type": "Switch" | "Ca" | "Router",
//!             "description": "Switch1", "num_ports": 8,
//!             "vendor_id": "0x000000", "device_id": "0x0000",
//!             "system_image_guid": "0x...", "port_guid": "0x...",
//!             "lid": 0, "lmc": 0, "enhanced_port0": false,
//!             "ports": [{"port": 1, "guid": "0x...", "lid": 0, "lmc": 0,
//!                        "width": "4x", "speed": "SDR",
//!                        "state": 4, "phys_state": 5,
//!                        "remote": {"guid": "0x...", "port": 1,
//!                                   "type": "Ca", "description": "Hca1"} | null}]}],
//!  "summary": {"nodes": 4, "switches": 2, "cas": 2, "routers": 0,
//!              "links": 5, "smps": 40, "elapsed_us": 1234}}
//! ```
//! Nodes come in the order of the topology output (switches, CAs,
//! routers; newest first within each); `lid` / `lmc` of a node are its
//! port 0's for a switch and 0 otherwise; `ports` lists the ports the
//! model has (switches: 1..=N; CAs: the ports discovery reached), with
//! their `lid` as the topology output shows it (a switch port: the
//! switch's LID), `width` / `speed` as ibnetdiscover prints them.

use mad_core::wire::attr::NodeType;

use crate::command::{CliError, Invocation};
use crate::discover::cache;
use crate::discover::diff::{diff, DiffCheck};
use crate::discover::format::{self, ListMask, TopologyOptions};
use crate::discover::model::{type_word, Fabric};
use crate::discover::Discovery;
use crate::ibdiag::{
    self, check_complete, limits, load_cache, open_name_map, run_discovery, Opt, ToolSpec,
};
use crate::json::{Json, JsonExt};
use crate::namemap::NameMap;

const OPT_NODE_NAME_MAP: i32 = 1;
const OPT_CACHE: i32 = 2;
const OPT_LOAD_CACHE: i32 = 3;
const OPT_DIFF: i32 = 4;
const OPT_DIFFCHECK: i32 = 5;

/// ibnetdiscover's own options, in its order.
pub const OPTS: &[Opt] = &[
    Opt::new(
        "full",
        'f',
        false,
        None,
        "show full information (ports' speed and width, vlcap)",
    ),
    Opt::new("show", 's', false, None, "show more information"),
    Opt::new("list", 'l', false, None, "list of connected nodes"),
    Opt::new("grouping", 'g', false, None, "show grouping"),
    Opt::new("Hca_list", 'H', false, None, "list of connected CAs"),
    Opt::new(
        "Switch_list",
        'S',
        false,
        None,
        "list of connected switches",
    ),
    Opt::new("Router_list", 'R', false, None, "list of connected routers"),
    ibdiag::node_name_map_opt(OPT_NODE_NAME_MAP),
    Opt::long(
        "cache",
        OPT_CACHE,
        true,
        Some("<file>"),
        "filename to cache ibnetdiscover data to",
    ),
    ibdiag::load_cache_opt(OPT_LOAD_CACHE),
    ibdiag::diff_opts(OPT_DIFF, OPT_DIFFCHECK)[0],
    ibdiag::diff_opts(OPT_DIFF, OPT_DIFFCHECK)[1],
    Opt::new("ports", 'p', false, None, "obtain a ports report"),
    Opt::new(
        "max_hops",
        'm',
        false,
        None,
        "report max hops discovered by the library",
    ),
    ibdiag::OUTSTANDING_SMPS_OPT,
];

/// The command line of ibnetdiscover.
pub const SPEC: ToolSpec<'static> = ToolSpec {
    opts: OPTS,
    exclude: "DGKLs",
    usage_args: "[topology-file]",
    examples: &[],
};

fn width_speed(
    pi: Option<&mad_core::wire::attr::PortInfo>,
    cap_mask: u32,
    fdr10: u8,
) -> (String, String) {
    // The same names ibnetdiscover prints in the topology.
    let Some(pi) = pi else {
        return ("??".into(), "???".into());
    };
    let (w, s) = format::link_rate(pi, cap_mask, fdr10);
    (w.to_owned(), s.to_owned())
}

/// The node indices of the `--json` form's `nodes`, in its order:
/// switches, then CAs, then routers, each newest first (the topology
/// output's order).
#[must_use]
pub fn json_order(f: &Fabric) -> Vec<usize> {
    f.listed_of(NodeType::SWITCH)
        .chain(f.listed_of(NodeType::CA))
        .chain(f.listed_of(NodeType::ROUTER))
        .collect()
}

/// A node's description as the `--json` form writes it: its name in
/// `map`, else its cleaned NodeDescription.
#[must_use]
pub fn json_name(f: &Fabric, map: Option<&NameMap>, i: usize) -> String {
    let n = &f.nodes[i];
    map.and_then(|m| m.get(n.guid()))
        .map_or_else(|| n.clean_desc(), str::to_owned)
}

/// One object of the `--json` form's `nodes`: node `i` of `f` (an index
/// into [`Fabric::nodes`]) with its ports and their remote ends.
#[must_use]
pub fn node_json(f: &Fabric, map: Option<&NameMap>, i: usize) -> Json {
    let g = |v: u64| ibdiag::hex(v, 16);
    let n = &f.nodes[i];
    let cap0 = if n.is_switch() {
        n.port(0)
            .and_then(|p| p.info.as_ref())
            .map_or(0, |pi| pi.capability_mask)
    } else {
        0
    };
    let mut ports = Vec::new();
    for p in n.ports.iter().skip(1).flatten() {
        let cap = if n.is_switch() {
            cap0
        } else {
            p.info.as_ref().map_or(0, |pi| pi.capability_mask)
        };
        let (w, s) = width_speed(p.info.as_ref(), cap, p.ext_speed_active);
        let remote = p.remote.map_or(Json::Null, |r| {
            let rn = &f.nodes[r.node];
            Json::obj()
                .with("guid", g(rn.guid()))
                .with("port", Json::from(u64::from(r.port)))
                .with("type", Json::String(type_word(rn.node_type()).into()))
                .with("description", Json::String(json_name(f, map, r.node)))
        });
        ports.push(
            Json::obj()
                .with("port", Json::from(u64::from(p.num)))
                .with("guid", g(p.guid))
                .with("lid", Json::from(u64::from(n.lid_of(p.num))))
                .with(
                    "lmc",
                    Json::from(u64::from(if n.is_switch() { n.smalmc } else { p.lmc })),
                )
                .with("width", Json::String(w))
                .with("speed", Json::String(s))
                .with(
                    "state",
                    Json::from(p.info.as_ref().map_or(0, |pi| u64::from(pi.port_state.0))),
                )
                .with(
                    "phys_state",
                    Json::from(
                        p.info
                            .as_ref()
                            .map_or(0, |pi| u64::from(pi.port_phys_state.0)),
                    ),
                )
                .with("remote", remote),
        );
    }
    Json::obj()
        .with("guid", g(n.guid()))
        .with("type", Json::String(type_word(n.node_type()).into()))
        .with("description", Json::String(json_name(f, map, i)))
        .with("num_ports", Json::from(u64::from(n.num_ports())))
        .with("vendor_id", ibdiag::hex(u64::from(n.info.vendor_id), 6))
        .with("device_id", ibdiag::hex(u64::from(n.info.device_id), 4))
        .with("system_image_guid", g(n.info.system_image_guid))
        .with("port_guid", g(n.info.port_guid))
        .with("lid", Json::from(u64::from(n.smalid)))
        .with("lmc", Json::from(u64::from(n.smalmc)))
        .with("enhanced_port0", Json::Bool(n.enhanced_port0))
        .with("ports", Json::Array(ports))
}

/// The `--json` form's `from` object: where discovery started.
#[must_use]
pub fn from_json(f: &Fabric) -> Json {
    let g = |v: u64| ibdiag::hex(v, 16);
    let from = &f.nodes[f.from_node];
    Json::obj()
        .with("node_guid", g(from.guid()))
        .with("port_guid", g(from.info.port_guid))
        .with("port", Json::from(u64::from(f.from_port)))
}

/// The `--json` form's `summary` object: counts, SMPs sent, time taken.
#[must_use]
pub fn summary_json(f: &Fabric, d: &Discovery) -> Json {
    let count = |t: NodeType| f.listed_of(t).count() as u64;
    Json::obj()
        .with("nodes", Json::from(f.nodes.len() as u64))
        .with("switches", Json::from(count(NodeType::SWITCH)))
        .with("cas", Json::from(count(NodeType::CA)))
        .with("routers", Json::from(count(NodeType::ROUTER)))
        .with("links", Json::from(f.links().len() as u64))
        .with("smps", Json::from(d.stats.sent))
        .with(
            "elapsed_us",
            Json::from(u64::try_from(d.elapsed.as_micros()).unwrap_or(u64::MAX)),
        )
}

/// The `--json` form of a discovered fabric (see the module docs).
#[must_use]
pub fn fabric_json(f: &Fabric, map: Option<&NameMap>, d: &Discovery) -> Json {
    let nodes = json_order(f)
        .into_iter()
        .map(|i| node_json(f, map, i))
        .collect();
    Json::obj()
        .with("from", from_json(f))
        .with("nodes", Json::Array(nodes))
        .with("summary", summary_json(f, d))
}

/// What ibnetdiscover was asked to do, from its own options.
#[derive(Default)]
struct Asked {
    full: bool,
    show: bool,
    group: bool,
    ports: bool,
    max_hops: bool,
    list: ListMask,
    map_file: Option<String>,
    window: Option<usize>,
    cache: Option<String>,
    load_cache: Option<String>,
    diff: Option<String>,
    diffcheck: Option<DiffCheck>,
}

fn asked(inv: &Invocation<'_, '_>, p: &ibdiag::Parsed) -> Result<Asked, CliError> {
    let mut a = Asked::default();
    for (key, val) in &p.custom {
        let val = val.clone();
        match (u8::try_from(*key).map(char::from).unwrap_or('\0'), *key) {
            ('f', _) => a.full = true,
            ('s', _) => a.show = true,
            ('l', _) => a.list = ListMask::ALL,
            ('g', _) => a.group = true,
            ('S', _) => {
                a.list = ListMask {
                    switch: true,
                    ..ListMask::default()
                }
            }
            ('H', _) => {
                a.list = ListMask {
                    ca: true,
                    ..ListMask::default()
                }
            }
            ('R', _) => {
                a.list = ListMask {
                    router: true,
                    ..ListMask::default()
                }
            }
            ('p', _) => a.ports = true,
            ('m', _) => a.max_hops = true,
            ('o', _) => {
                let n = crate::cnum::c_strtoul(val.as_deref().unwrap_or("0"));
                // 0 means libibnetdisc's default; ours is the window.
                a.window = (n != 0).then(|| usize::try_from(n).unwrap_or(usize::MAX));
            }
            (_, OPT_NODE_NAME_MAP) => a.map_file = val,
            (_, OPT_CACHE) => a.cache = val,
            (_, OPT_LOAD_CACHE) => a.load_cache = val,
            (_, OPT_DIFF) => a.diff = val,
            (_, OPT_DIFFCHECK) => {
                a.diffcheck =
                    Some(DiffCheck::parse(val.as_deref().unwrap_or("")).map_err(|m| {
                        CliError::ToolUsage(format!(
                            "{m}\n{}",
                            ibdiag::usage_text(&inv.prog, &SPEC)
                        ))
                    })?);
            }
            _ => {}
        }
    }
    Ok(a)
}

/// What ibnetdiscover printed before writing its cache.
#[derive(Clone, Copy)]
enum Printed {
    Topology,
    Ports,
    List(ListMask),
    Nothing,
}

/// The fabric as ibnetdiscover caches it after printing: printing a
/// description (`clean_nodedesc`, also inside `remap_node_name` when the
/// map has no name for the node) turns its unprintable bytes into spaces
/// in place, so the cache holds them so.
fn as_printed(f: &Fabric, printed: Printed, map: Option<&NameMap>) -> Fabric {
    let mut out = f.clone();
    for n in &mut out.nodes {
        let mapped = map.is_some_and(|m| m.get(n.guid()).is_some());
        let cleaned = match printed {
            Printed::Nothing => false,
            // A CA's or router's line prints the description itself.
            Printed::Topology => !mapped || !n.is_switch(),
            Printed::Ports => !mapped,
            Printed::List(l) => {
                !mapped
                    && match n.node_type() {
                        NodeType::SWITCH => l.switch,
                        NodeType::CA => l.ca,
                        NodeType::ROUTER => l.router,
                        _ => false,
                    }
            }
        };
        if cleaned {
            n.desc = n.clean_desc().into_bytes();
        }
    }
    out
}

/// Runs `ibnetdiscover`.
///
/// # Errors
/// Bad options (usage), no port, discovery failure (`IBEXIT`), a cache
/// file that cannot be read or written, an unwritable output file.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let p = ibdiag::parse(inv, &SPEC)?;
    let a = asked(inv, &p)?;
    // ibnetdiscover opens its output file first.
    let mut outfile = match p.args.first() {
        None => None,
        Some(path) => Some(
            std::fs::File::create(path)
                .map_err(|_| CliError::IbExit(format!("can't open file {path} for writing")))?,
        ),
    };
    // The "generated on" date: its zone found while discovering.
    let ctime = crate::discover::ctime::ctime_later();
    let map = open_name_map(inv, a.map_file.as_deref());
    let old = match &a.diff {
        None => None,
        Some(path) => {
            Some(load_cache(inv, path, "loading cached fabric for diff failed\n")?.fabric)
        }
    };
    let d = if let Some(path) = &a.load_cache {
        load_cache(inv, path, "loading cached fabric failed\n")?
    } else {
        let session = ibdiag::open_session(inv, &p.common)?;
        let lim = limits(a.window, p.common.timeout_ms);
        let d = run_discovery(inv, &session, lim, p.common.m_key, a.show)?;
        let _ = session.close();
        d
    };
    let f = &d.fabric;
    if p.common.verbose > 0 && a.load_cache.is_none() {
        inv.io.err(&format!(
            "# discovered {} nodes with {} SMPs ({} answered, {} retried, at most {} in flight) in {}\n",
            f.nodes.len(),
            d.stats.sent,
            d.stats.answered,
            d.stats.retries,
            d.stats.max_in_flight,
            ibdiag::human_duration(d.elapsed)
        ));
    }
    if p.common.json {
        ibdiag::print_json(inv, &fabric_json(f, map.as_ref(), &d));
    } else {
        // --show lines go out while discovering, before everything else.
        let mut out = String::new();
        if a.show {
            out.push_str(&format::show_lines(f));
        }
        let opts = TopologyOptions {
            full: a.full,
            group: a.group,
            max_hops: a.max_hops,
            name_map: map.as_ref(),
            ctime: ctime(),
        };
        if a.ports {
            // The ports report always goes to stdout.
            out.push_str(&format::ports_report(f, map.as_ref()));
        }
        inv.io.out(&out);
        // The rest to the output file or stdout, as it is made (the
        // topology of a large fabric a piece at a time).
        let mut failed = false;
        let mut put = |s: &str| match outfile.as_mut() {
            None => inv.io.out(s),
            Some(file) if !failed => {
                failed = std::io::Write::write_all(file, s.as_bytes()).is_err();
            }
            Some(_) => {}
        };
        if a.ports {
            // Printed above, with the header lines.
        } else if !a.list.is_empty() {
            put(&format::list(f, a.list, map.as_ref()));
        } else if let Some(old) = &old {
            let plain = TopologyOptions {
                group: false,
                ..opts
            };
            put(&diff(
                old,
                f,
                a.diffcheck.unwrap_or(DiffCheck::DEFAULT),
                &plain,
            ));
        } else {
            format::topology_to(f, &opts, &mut put);
        }
        if failed {
            let path = p.args.first().map_or("", String::as_str);
            return Err(CliError::IbExit(format!(
                "can't open file {path} for writing"
            )));
        }
    }
    if let Some(path) = &a.cache {
        let printed = if p.common.json || old.is_some() {
            Printed::Nothing
        } else if a.ports {
            Printed::Ports
        } else if !a.list.is_empty() {
            Printed::List(a.list)
        } else {
            Printed::Topology
        };
        if let Err(e) = cache::store(&as_printed(f, printed, map.as_ref()), path) {
            inv.io.err(&format!("{}: {e}\n", inv.prog));
            return Err(CliError::IbExit(
                "caching ibnetdiscover data failed\n".into(),
            ));
        }
    }
    let done = check_complete(inv, &d.failures);
    // All of it printed: the model is the OS's to free at exit.
    crate::session::drop_or_leave(d);
    done
}
