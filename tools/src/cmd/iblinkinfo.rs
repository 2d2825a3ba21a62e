//! `iblinkinfo` (infiniband-diags `iblinkinfo.c` over libibnetdisc), on
//! the [`crate::discover`] engine: every port of every node with its
//! link (width, speed, state) and what it is connected to, as
//! infiniband-diags 44 prints it.
//!
//! Options: `-S` / `-G GUID` and `-D PATH` (print the node of that port
//! only), `-d` (down ports only), `-l` (one line per port), `-p` (HoQ
//! life and VL stall count), `--switches-only`, `--cas-only`,
//! `--node-name-map`, `-o` (SMPs in flight), `--load-cache FILE` (the
//! fabric from an ibnetdiscover cache instead of the port),
//! `--diff FILE` (what differs from a cache, `< ` / `> ` lines, the
//! checks picked by `--diffcheck port,state,lid,nodedesc`),
//! `--filterdownports FILE` (leave out Down ports that are Down in a
//! cache too), `-a` (every node of a partial scan), `-n HOPS` (the
//! scan's hop limit), and the common ones.
//!
//! # Partial scans
//! `-S` / `-G` (a port the SA resolves) and `-D` start libibnetdisc's
//! scan at that port, `-n` hops deep (1 unless given); `-n` alone
//! limits the scan from the local port. What the scan can reach is
//! read in parallel ([`crate::discover`]; the whole fabric for `-S` /
//! `-G`), and libibnetdisc's scan is replayed over it from that start
//! ([`crate::discover::model::Scan`]): the
//! nodes, links and "Port not available" ports are those the C tool's
//! scan finds, with its complaints on stderr.
//!
//! # `--json` (stable shape)
//! ```json
//! {"command": "iblinkinfo",
//!  "nodes": [{"guid": "0x...", "type": "Switch" | "CA" | "Router",
//!             "description": "Switch1", "lid": 1,
//!             "ports": [{"port": 1, "guid": "0x...", "lid": 1,
//!                        "width": "4X", "speed": "2.5 Gbps",
//!                        "state": "Active", "phys_state": "LinkUp",
//!                        "remote": {"guid": "0x...", "port": 1, "lid": 2,
//!                                   "description": "Hca1"} | null}]}]}
//! ```
//! Nodes and ports are those the text shows, in its order; `width` and
//! `speed` are `null` on a port that is Down.

use mad_core::wire::attr::{NodeType, PortInfo, PortState};

use crate::command::{CliError, Invocation};
use crate::diags::dump;
use crate::discover::diff::parse_keys;
use crate::discover::gather::Gathered;
use crate::discover::model::{Fabric, Node, Port};
use crate::ibdiag::{self, Opt, ScanStart, ToolSpec};
use crate::ibdiag::{
    cached_discovery, limits, link_str, load_cache, max_msg, open_name_map, remap, run_scan,
};
use crate::json::{Json, JsonExt};
use crate::namemap::NameMap;

const OPT_NODE_NAME_MAP: i32 = 1;
const OPT_LOAD_CACHE: i32 = 2;
const OPT_DIFF: i32 = 3;
const OPT_DIFFCHECK: i32 = 4;
const OPT_FILTERDOWNPORTS: i32 = 5;
const OPT_SWITCHES_ONLY: i32 = 6;
const OPT_CAS_ONLY: i32 = 7;

/// iblinkinfo's own options, in its order.
pub const OPTS: &[Opt] = &[
    ibdiag::node_name_map_opt(OPT_NODE_NAME_MAP),
    Opt::new(
        "switch",
        'S',
        true,
        Some("<port_guid>"),
        "start partial scan at the port specified by <port_guid> (hex format)",
    ),
    Opt::new("port-guid", 'G', true, Some("<port_guid>"), "(same as -S)"),
    Opt::new(
        "Direct",
        'D',
        true,
        Some("<dr_path>"),
        "start partial scan at the port specified by <dr_path>",
    ),
    Opt::new(
        "all",
        'a',
        false,
        None,
        "print all nodes found in a partial fabric scan",
    ),
    Opt::new(
        "hops",
        'n',
        true,
        Some("<hops>"),
        "Number of hops to include away from specified node",
    ),
    Opt::new("down", 'd', false, None, "print only down links"),
    Opt::new(
        "line",
        'l',
        false,
        None,
        "(line mode) print all information for each link on a single line",
    ),
    Opt::new(
        "additional",
        'p',
        false,
        None,
        "print additional port settings (PktLifeTime, HoqLife, VLStallCount)",
    ),
    ibdiag::load_cache_opt(OPT_LOAD_CACHE),
    ibdiag::diff_opts(OPT_DIFF, OPT_DIFFCHECK)[0],
    ibdiag::diff_opts(OPT_DIFF, OPT_DIFFCHECK)[1],
    Opt::long(
        "filterdownports",
        OPT_FILTERDOWNPORTS,
        true,
        Some("<file>"),
        "filename of ibnetdiscover cache to filter downports",
    ),
    ibdiag::OUTSTANDING_SMPS_OPT,
    Opt::long(
        "switches-only",
        OPT_SWITCHES_ONLY,
        false,
        None,
        "Output only switches",
    ),
    Opt::long("cas-only", OPT_CAS_ONLY, false, None, "Output only CAs"),
];

/// The command line of iblinkinfo.
pub const SPEC: ToolSpec<'static> = ToolSpec {
    opts: OPTS,
    exclude: "aDdGgKLlnpRS",
    usage_args: "",
    examples: &[],
};

/// What to print and how.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkInfoOptions<'a> {
    /// `-d`: only ports whose state is Down.
    pub down_only: bool,
    /// `-l`: one line per port with the node's GUID and name.
    pub line: bool,
    /// `-p`: HoQ life and VL stall count of each port that is not Down.
    pub additional: bool,
    /// `--node-name-map`.
    pub name_map: Option<&'a NameMap>,
    /// `--filterdownports`: a Down port is left out where it is Down in
    /// this fabric too.
    pub filter: Option<&'a Fabric>,
}

/// `%Ns`: right-aligned to `width` bytes (C pads by bytes, not chars).
fn pad_left(s: &str, width: usize) -> String {
    format!("{}{s}", " ".repeat(width.saturating_sub(s.len())))
}

fn type_str(t: NodeType) -> &'static str {
    match t.0 {
        1 => "CA",
        2 => "Switch",
        3 => "Router",
        _ => "??",
    }
}

/// One port as `print_port` prints it.
fn port_line(f: &Fabric, node: &Node, port: &Port, o: &LinkInfoOptions<'_>) -> String {
    let (link, _) = link_str(node, port, o.additional);
    let down = port
        .info
        .as_ref()
        .is_none_or(|pi| pi.port_state == PortState::DOWN);
    let remote_str = match port.remote.and_then(|r| Some((r, f.port(r)?))) {
        Some((r, rp)) => {
            let rnode = &f.nodes[r.node];
            let (wm, sm) = max_msg(node, port, rp, rnode);
            let guid = if o.line {
                format!("0x{:016x} ", rp.guid)
            } else {
                String::new()
            };
            let lid = rnode.far_lid(rp);
            format!(
                "{guid}{lid:6} {:4}[  ] \"{}\" ({wm} {sm})\n",
                rp.num,
                remap(rnode, o.name_map)
            )
        }
        None if down => "           [  ] \"\" ( )\n".to_owned(),
        None => "    \"Port not available\"\n".to_owned(),
    };
    let mut s = if o.line {
        format!(
            "0x{:016x} \"{}\" ",
            port.guid,
            pad_left(&remap(node, o.name_map), 30)
        )
    } else {
        "      ".to_owned()
    };
    let lid = if node.is_switch() {
        node.smalid
    } else {
        if !o.line {
            s.push_str(&format!("0x{:016x} ", port.guid));
        }
        port.base_lid
    };
    s.push_str(&format!(
        "{lid:6} {:4}[  ] =={link}==>  {remote_str}",
        port.num
    ));
    s
}

/// The ports of `node` that `print_node` shows.
fn shown_ports<'n>(node: &'n Node, o: &LinkInfoOptions<'_>) -> impl Iterator<Item = &'n Port> {
    let down_only = o.down_only;
    (1..=node.num_ports())
        .filter_map(|i| node.port(i))
        .filter(move |p| {
            !down_only
                || p.info
                    .as_ref()
                    .is_none_or(|pi| pi.port_state == PortState::DOWN)
        })
}

/// `print_node_header`: the node's header line (nothing in line mode).
fn header_line(node: &Node, o: &LinkInfoOptions<'_>, prefix: &str) -> String {
    if o.line {
        return String::new();
    }
    let name = remap(node, o.name_map);
    let t = type_str(node.node_type());
    if node.is_switch() {
        let guid = node.port(0).map_or(node.info.port_guid, |p0| p0.guid);
        format!("{prefix}{t}: 0x{guid:016x} {name}:\n")
    } else {
        format!("{prefix}{t}: {name}:\n")
    }
}

fn is_down(p: &Port) -> bool {
    p.info
        .as_ref()
        .is_none_or(|pi| pi.port_state == PortState::DOWN)
}

/// `print_port`: the port's line after `prefix`, or nothing for a Down
/// port `--filterdownports` leaves out.
fn print_port(
    f: &Fabric,
    node: &Node,
    port: &Port,
    o: &LinkInfoOptions<'_>,
    prefix: &str,
) -> String {
    if let Some(filter) = o.filter {
        let down_there = filter
            .find(node.guid())
            .and_then(|i| filter.nodes[i].port(port.num))
            .is_some_and(is_down);
        if is_down(port) && down_there {
            return String::new();
        }
    }
    format!("{prefix}{}", port_line(f, node, port, o))
}

/// `print_node`: the node's header (unless line mode) and its ports;
/// nothing when no port is shown.
#[must_use]
pub fn node_text(f: &Fabric, idx: usize, o: &LinkInfoOptions<'_>) -> String {
    node_text_with(f, idx, o, "")
}

fn node_text_with(f: &Fabric, idx: usize, o: &LinkInfoOptions<'_>, prefix: &str) -> String {
    let node = &f.nodes[idx];
    let mut s = String::new();
    for (k, p) in shown_ports(node, o).enumerate() {
        if k == 0 {
            s.push_str(&header_line(node, o, prefix));
        }
        s.push_str(&print_port(f, node, p, o, prefix));
    }
    s
}

/// iblinkinfo's `--diffcheck` bits.
const DIFF_PORT: u32 = 0x01;
const DIFF_STATE: u32 = 0x02;
const DIFF_LID: u32 = 0x04;
const DIFF_DESC: u32 = 0x08;

/// One side of a comparison: its fabric and line prefix.
#[derive(Clone, Copy)]
struct Side<'a> {
    f: &'a Fabric,
    prefix: &'static str,
}

/// `diff_node_iter`: node `i1` of `one` against its namesake in `two`.
fn diff_node_iter(
    out: &mut String,
    one: Side<'_>,
    i1: usize,
    two: Side<'_>,
    flags: u32,
    o: &LinkInfoOptions<'_>,
) {
    let n1 = &one.f.nodes[i1];
    let Some(i2) = two.f.find(n1.guid()) else {
        out.push_str(&node_text_with(one.f, i1, o, one.prefix));
        return;
    };
    if flags & (DIFF_PORT | DIFF_STATE | DIFF_LID | DIFF_DESC) == 0 {
        return;
    }
    let n2 = &two.f.nodes[i2];
    let mut head = false;
    if (n1.is_switch() && flags & DIFF_LID != 0 && n1.smalid != n2.smalid)
        || (flags & DIFF_DESC != 0 && n1.desc != n2.desc)
    {
        out.push_str(&header_line(n1, o, one.prefix));
        out.push_str(&header_line(n2, o, two.prefix));
        head = true;
    }
    let mut header_once = |out: &mut String| {
        if !head {
            out.push_str(&header_line(n1, o, ""));
            head = true;
        }
    };
    if n1.num_ports() != n2.num_ports() {
        header_once(out);
        out.push_str(&format!("{}numports = {}\n", one.prefix, n1.num_ports()));
        out.push_str(&format!("{}numports = {}\n", two.prefix, n2.num_ports()));
        return;
    }
    let remote = |f: &'_ Fabric, p: &Port| -> Option<(u64, u16, Vec<u8>)> {
        let r = p.remote?;
        let rp = f.port(r)?;
        Some((rp.guid, rp.base_lid, f.nodes[r.node].desc.clone()))
    };
    for i in 1..=n1.num_ports() {
        let (p1, p2) = (n1.port(i), n2.port(i));
        let (r1, r2) = (
            p1.and_then(|p| remote(one.f, p)),
            p2.and_then(|p| remote(two.f, p)),
        );
        let mut diff = false;
        match (p1, p2) {
            (None, None) => continue,
            (Some(_), None) | (None, Some(_)) => diff |= flags & DIFF_PORT != 0,
            (Some(a), Some(b)) => {
                let state = |p: &Port| p.info.as_ref().map_or(0, |pi| pi.port_state.0);
                diff |= flags & DIFF_PORT != 0
                    && match (&r1, &r2) {
                        (Some(x), Some(y)) => x.0 != y.0,
                        (None, None) => false,
                        _ => true,
                    };
                diff |= flags & DIFF_STATE != 0 && state(a) != state(b);
                if let (Some(x), Some(y)) = (&r1, &r2) {
                    diff |= flags & DIFF_PORT != 0 && flags & DIFF_LID != 0 && x.1 != y.1;
                    diff |= flags & DIFF_PORT != 0 && flags & DIFF_DESC != 0 && x.2 != y.2;
                }
            }
        }
        if diff {
            if let Some(p) = p1 {
                header_once(out);
                out.push_str(&print_port(one.f, n1, p, o, one.prefix));
            }
            if let Some(p) = p2 {
                header_once(out);
                out.push_str(&print_port(two.f, n2, p, o, two.prefix));
            }
        }
    }
}

/// `diff_node`: the cache `old` against `new`, for one node of `new` or
/// for every node (of one type).
fn diff_text(
    old: &Fabric,
    new: &Fabric,
    node: Option<usize>,
    only: Option<NodeType>,
    flags: u32,
    o: &LinkInfoOptions<'_>,
) -> String {
    let mut out = String::new();
    let (lt, gt) = (
        Side {
            f: old,
            prefix: "< ",
        },
        Side {
            f: new,
            prefix: "> ",
        },
    );
    let of = |f: &Fabric| -> Vec<usize> {
        match only {
            None => f.listed().collect(),
            Some(t) => f.listed_of(t).collect(),
        }
    };
    match node {
        // iblinkinfo passes the node of the new fabric as the first
        // fabric's: it finds itself there.
        Some(i) => diff_node_iter(
            &mut out,
            Side {
                f: new,
                prefix: "< ",
            },
            i,
            gt,
            flags,
            o,
        ),
        None => {
            for i in of(old) {
                diff_node_iter(&mut out, lt, i, gt, flags, o);
            }
        }
    }
    // The other way round only finds nodes the cache lacks.
    let flags = flags & !(DIFF_PORT | DIFF_STATE | DIFF_LID | DIFF_DESC);
    let list = node.map_or_else(|| of(new), |i| vec![i]);
    for i in list {
        diff_node_iter(&mut out, gt, i, lt, flags, o);
    }
    out
}

fn node_json(f: &Fabric, idx: usize, o: &LinkInfoOptions<'_>) -> Json {
    let node = &f.nodes[idx];
    let g = |v: u64| ibdiag::hex(v, 16);
    let mut ports = Vec::new();
    for p in shown_ports(node, o) {
        let zero = PortInfo::default();
        let pi = p.info.as_ref().unwrap_or(&zero);
        let (_, ws) = link_str(node, p, false);
        let remote = p
            .remote
            .and_then(|r| Some((r, f.port(r)?)))
            .map_or(Json::Null, |(r, rp)| {
                let rn = &f.nodes[r.node];
                Json::obj()
                    .with("guid", g(rp.guid))
                    .with("port", Json::from(u64::from(rp.num)))
                    .with("lid", Json::from(u64::from(rn.far_lid(rp))))
                    .with("description", Json::from(remap(rn, o.name_map)))
            });
        let (w, s) = ws.map_or((Json::Null, Json::Null), |(w, s)| {
            (Json::from(w), Json::from(s))
        });
        ports.push(
            Json::obj()
                .with("port", Json::from(u64::from(p.num)))
                .with("guid", g(p.guid))
                .with("lid", Json::from(u64::from(node.lid_of(p.num))))
                .with("width", w)
                .with("speed", s)
                .with("state", Json::from(dump::port_state(pi.port_state.0)))
                .with(
                    "phys_state",
                    Json::from(dump::phys_port_state(pi.port_phys_state.0)),
                )
                .with("remote", remote),
        );
    }
    Json::obj()
        .with("guid", g(node.guid()))
        .with("type", Json::from(type_str(node.node_type())))
        .with("description", Json::from(remap(node, o.name_map)))
        .with("lid", Json::from(u64::from(node.smalid)))
        .with("ports", Json::Array(ports))
}

/// Which nodes to print.
enum Select {
    /// Every node (newest first), or of one type.
    All(Option<NodeType>),
    /// The node owning this port GUID (`-S`, `-G`, `-D`), with the
    /// argument for the "Failed to find port" message.
    Port(u64, String, Option<NodeType>),
}

/// Runs `iblinkinfo`.
///
/// # Errors
/// Bad options (usage, exit 2), no port (exit 1), a directed route that
/// does not answer (exit 1), discovery failure (exit 1).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let p = ibdiag::parse(inv, &SPEC)?;
    let mut o = LinkInfoOptions::default();
    let mut map_file: Option<String> = None;
    let mut guid_arg: Option<String> = None;
    let mut dr_arg: Option<String> = None;
    let mut only: Option<NodeType> = None;
    let mut window: Option<usize> = None;
    let mut load: Option<String> = None;
    let mut diff_file: Option<String> = None;
    let mut filter_file: Option<String> = None;
    let mut diffcheck = DIFF_PORT | DIFF_STATE;
    let mut all = false;
    let mut max_hops: u32 = 0;
    for (key, val) in &p.custom {
        match (u8::try_from(*key).map(char::from).unwrap_or('\0'), *key) {
            ('S' | 'G', _) => guid_arg.clone_from(val),
            ('a', _) => all = true,
            // An unsigned int, as libibnetdisc keeps it.
            ('n', _) => max_hops = crate::cnum::c_strtoul(val.as_deref().unwrap_or("0")) as u32,
            ('D', _) => dr_arg.clone_from(val),
            ('d', _) => o.down_only = true,
            ('l', _) => o.line = true,
            ('p', _) => o.additional = true,
            ('o', _) => {
                let n = crate::cnum::c_strtoul(val.as_deref().unwrap_or("0"));
                window = (n != 0).then(|| usize::try_from(n).unwrap_or(usize::MAX));
            }
            (_, OPT_NODE_NAME_MAP) => map_file.clone_from(val),
            (_, OPT_LOAD_CACHE) => load.clone_from(val),
            (_, OPT_DIFF) => diff_file.clone_from(val),
            (_, OPT_FILTERDOWNPORTS) => filter_file.clone_from(val),
            (_, OPT_DIFFCHECK) => {
                diffcheck = parse_keys(
                    val.as_deref().unwrap_or(""),
                    &[
                        ("port", DIFF_PORT),
                        ("state", DIFF_STATE),
                        ("lid", DIFF_LID),
                        ("nodedesc", DIFF_DESC),
                    ],
                )
                .map_err(|m| {
                    CliError::ToolUsage(format!("{m}\n{}", ibdiag::usage_text(&inv.prog, &SPEC)))
                })?;
            }
            (_, OPT_SWITCHES_ONLY) => only = Some(NodeType::SWITCH),
            (_, OPT_CAS_ONLY) => only = Some(NodeType::CA),
            _ => {}
        }
    }
    let mut session = match ibdiag::open_session(inv, &p.common) {
        Ok(s) => s,
        Err(CliError::IbExit(_)) => {
            return Err(CliError::Stderr(
                format!(
                    "Failed to open {} port {}\n",
                    p.common.ca.as_deref().unwrap_or("(null)"),
                    p.common.port.unwrap_or(0)
                ),
                1,
            ))
        }
        Err(e) => return Err(e),
    };
    let map = open_name_map(inv, map_file.as_deref());
    o.name_map = map.as_ref();
    if dr_arg.is_some() && load.is_some() {
        let _ = session.close();
        return Err(CliError::Stderr(
            "Cannot specify cache and direct route path\n".into(),
            1,
        ));
    }
    // Where libibnetdisc's scan starts: `resolve_portid_str` of the
    // route (no query) or of the GUID (the SA).
    let mut start: Option<ScanStart> = None;
    let select = if let Some(path) = &dr_arg {
        start = ibdiag::route_start(inv, path);
        // Unless all are printed, the node at the end of the route must
        // answer NodeInfo.
        let ni = if all {
            None
        } else {
            let ni = ibdiag::dr_node_info(inv, &session, path, |_, _, _| {});
            if ni.is_none() {
                let _ = session.close();
                return Err(CliError::Stderr(
                    "Failed to get local Node Info\n".into(),
                    1,
                ));
            }
            ni
        };
        match ni {
            Some(ni) => Select::Port(ni.port_guid, path.clone(), only),
            None => Select::All(only),
        }
    } else if let Some(g) = &guid_arg {
        let (guid, resolved) = ibdiag::resolve_guid_warned(inv, &mut session, &p.common, g, "\n\n");
        if resolved {
            start = Some(ScanStart::Guid(guid));
        }
        if all {
            Select::All(only)
        } else {
            Select::Port(guid, g.clone(), only)
        }
    } else {
        Select::All(only)
    };
    let old = match &diff_file {
        Some(path) => {
            Some(load_cache(inv, path, "loading cached fabric for diff failed\n")?.fabric)
        }
        None => None,
    };
    let filter = match &filter_file {
        Some(path) => Some(
            load_cache(
                inv,
                path,
                "loading cached fabric for filterdownports failed\n",
            )?
            .fabric,
        ),
        None => None,
    };
    o.filter = filter.as_ref();
    let d = if let Some(path) = &load {
        let _ = session.close();
        cached_discovery(path).map_err(|e| {
            CliError::Stderr(
                format!("loading cached fabric failed\n{}: {e}\n", inv.prog),
                1,
            )
        })?
    } else {
        let lim = limits(window, p.common.timeout_ms);
        let mut pick = |g: &Gathered| ibdiag::scan_of(g, start.as_ref(), max_hops);
        let (d, lines) = match run_scan(
            inv,
            &session,
            lim,
            p.common.m_key,
            false,
            ibdiag::scan_depth(start.as_ref(), max_hops),
            &mut pick,
        ) {
            Ok(d) => d,
            Err(_) => {
                let _ = session.close();
                return Err(CliError::Stderr("discover failed\n".into(), 1));
            }
        };
        let _ = session.close();
        inv.io.err(&lines.concat());
        d
    };
    let f = &d.fabric;
    let nodes: Vec<usize> = match &select {
        Select::All(None) => f.listed().collect(),
        Select::All(Some(t)) => f.listed_of(*t).collect(),
        Select::Port(guid, arg, only) => {
            let found = f.listed().find(|&i| {
                let n = &f.nodes[i];
                n.info.port_guid == *guid || n.ports.iter().flatten().any(|p| p.guid == *guid)
            });
            match found.filter(|&i| only.is_none_or(|t| f.nodes[i].node_type() == t)) {
                Some(i) => vec![i],
                None => {
                    inv.io.err(&format!("Failed to find port: {arg}\n"));
                    Vec::new()
                }
            }
        }
    };
    if let Some(old) = &old {
        if p.common.json {
            return Err(CliError::Failed("--diff has no --json form".into()));
        }
        let text = match select {
            Select::All(only) => diff_text(old, f, None, only, diffcheck, &o),
            Select::Port(..) => nodes
                .iter()
                .map(|&i| diff_text(old, f, Some(i), None, diffcheck, &o))
                .collect(),
        };
        inv.io.out(&text);
        return Ok(());
    }
    if p.common.json {
        let arr = nodes
            .iter()
            .filter(|&&i| shown_ports(&f.nodes[i], &o).next().is_some())
            .map(|&i| node_json(f, i, &o))
            .collect();
        ibdiag::print_json(inv, &Json::obj().with("nodes", Json::Array(arr)));
        return Ok(());
    }
    let mut out = String::new();
    for i in nodes {
        out.push_str(&node_text(f, i, &o));
    }
    inv.io.out(&out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_left_counts_bytes_as_c_does() {
        assert_eq!(pad_left("ab", 4), "  ab");
        assert_eq!(pad_left("é", 3), " é");
        assert_eq!(pad_left("longer", 2), "longer");
    }
}
