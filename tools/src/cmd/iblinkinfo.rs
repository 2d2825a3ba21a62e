//! `iblinkinfo` (infiniband-diags `iblinkinfo.c` over libibnetdisc), on
//! the [`crate::discover`] engine: every port of every node with its
//! link (width, speed, state) and what it is connected to, as
//! infiniband-diags 44 prints it.
//!
//! Options: `-S` / `-G GUID` and `-D PATH` (print the node of that port
//! only), `-d` (down ports only), `-l` (one line per port), `-p` (HoQ
//! life and VL stall count), `--switches-only`, `--cas-only`,
//! `--node-name-map`, `-o` (SMPs in flight), and the common ones. The
//! fabric is always discovered whole (in parallel): `-S` / `-G` / `-D`
//! print the node's ports as a full scan sees them. Partial scans (`-a`,
//! `-n`) and the cache options (`--load-cache`, `--diff`,
//! `--diffcheck`, `--filterdownports`) are not offered.
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
use crate::discover::model::{Fabric, Node, Port};
use crate::ibdiag::{self, Opt, ToolSpec};
use crate::ibdiag::{limits, link_str, max_msg, open_name_map, remap, run_discovery};
use crate::json::{Json, JsonExt};
use crate::namemap::NameMap;

const OPT_NODE_NAME_MAP: i32 = 1;
const OPT_SWITCHES_ONLY: i32 = 6;
const OPT_CAS_ONLY: i32 = 7;

/// iblinkinfo's own options (the ones this implementation has), in its
/// order.
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

/// `print_node`: the node's header (unless line mode) and its ports;
/// nothing when no port is shown.
#[must_use]
pub fn node_text(f: &Fabric, idx: usize, o: &LinkInfoOptions<'_>) -> String {
    let node = &f.nodes[idx];
    let mut s = String::new();
    for (k, p) in shown_ports(node, o).enumerate() {
        if k == 0 && !o.line {
            let name = remap(node, o.name_map);
            if node.is_switch() {
                let guid = node.port(0).map_or(node.info.port_guid, |p0| p0.guid);
                s.push_str(&format!(
                    "{}: 0x{guid:016x} {name}:\n",
                    type_str(node.node_type())
                ));
            } else {
                s.push_str(&format!("{}: {name}:\n", type_str(node.node_type())));
            }
        }
        s.push_str(&port_line(f, node, p, o));
    }
    s
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
    for (key, val) in &p.custom {
        match (u8::try_from(*key).map(char::from).unwrap_or('\0'), *key) {
            ('S' | 'G', _) => guid_arg.clone_from(val),
            ('D', _) => dr_arg.clone_from(val),
            ('d', _) => o.down_only = true,
            ('l', _) => o.line = true,
            ('p', _) => o.additional = true,
            ('o', _) => {
                let n = crate::cnum::c_strtoul(val.as_deref().unwrap_or("0"));
                window = (n != 0).then(|| usize::try_from(n).unwrap_or(usize::MAX));
            }
            (_, OPT_NODE_NAME_MAP) => map_file.clone_from(val),
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
    let select = if let Some(path) = &dr_arg {
        // The node at the end of the route must answer NodeInfo.
        let ni = ibdiag::dr_node_info(inv, &session, path, |_, _, _| {});
        let Some(ni) = ni else {
            let _ = session.close();
            return Err(CliError::Stderr(
                "Failed to get local Node Info\n".into(),
                1,
            ));
        };
        Select::Port(ni.port_guid, path.clone(), only)
    } else if let Some(g) = &guid_arg {
        let guid = ibdiag::resolve_guid_or_warn(inv, &mut session, &p.common, g, "\n\n");
        Select::Port(guid, g.clone(), only)
    } else {
        Select::All(only)
    };
    let lim = limits(window, p.common.timeout_ms);
    let d = match run_discovery(inv, &session, lim, p.common.m_key, false) {
        Ok(d) => d,
        Err(_) => {
            let _ = session.close();
            return Err(CliError::Stderr("discover failed\n".into(), 1));
        }
    };
    let _ = session.close();
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
