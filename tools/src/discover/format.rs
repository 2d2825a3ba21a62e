//! ibnetdiscover's outputs (topology file, `--list` / `--Hca_list` /
//! `--Switch_list` / `--Router_list`, `--ports`, `--grouping`, `--full`,
//! `--max_hops`) and the ibhosts / ibswitches scripts, byte for byte as
//! infiniband-diags 44 prints them from the same fabric model.

use std::fmt::Write as _;

use mad_core::wire::attr::{port_cap, NodeType, PortInfo};

mod chassis;
mod scripts;

pub use self::scripts::{ibhosts, ibrouters, ibswitches};

use self::chassis::{is_xsigo_hca, is_xsigo_tca, Chassis};
use super::model::{Fabric, Node, Port};
use crate::namemap::NameMap;

/// ibnetdiscover's link speed names (its own table, not libibmad's).
fn speed_compat(speed: u8) -> &'static str {
    match speed {
        1 => "SDR",
        2 => "DDR",
        4 => "QDR",
        _ => "???",
    }
}

fn speed_ext_compat(espeed: u8, speed: u8, fdr10: u8) -> &'static str {
    match espeed {
        0 if fdr10 & 1 != 0 => "FDR10",
        0 => speed_compat(speed),
        1 => "FDR",
        2 => "EDR",
        4 => "HDR",
        8 => "NDR",
        _ => "???",
    }
}

fn width_compat(width: u8) -> &'static str {
    match width {
        1 => "1x",
        2 => "4x",
        4 => "8x",
        8 => "12x",
        16 => "2x",
        _ => "??",
    }
}

/// `"S-0000000000200000"` (with the quotes), ibnetdiscover's node name.
fn node_id(n: &Node) -> NodeId {
    let c = match n.node_type().0 {
        2 => b'S',
        1 => b'H',
        3 => b'R',
        _ => b'?',
    };
    NodeId(c, n.guid())
}

/// A node's quoted id as printed (`"S-0002c90300000001"`), written
/// straight into the output.
struct NodeId(u8, u64);

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut b = *b"\"?-0000000000000000\"";
        b[1] = self.0;
        for (i, d) in b[3..19].iter_mut().enumerate() {
            *d = HEX[((self.1 >> (60 - 4 * i)) & 0xf) as usize];
        }
        f.write_str(std::str::from_utf8(&b).map_err(|_| std::fmt::Error)?)
    }
}

/// A node's name as infiniband-diags prints it (`remap_node_name`):
/// the map's name, else the description with every byte that is not
/// printable ASCII a space ([`Node::clean_desc`]); written straight into
/// the output.
struct Name<'a>(Option<&'a str>, &'a [u8]);

impl std::fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(name) = self.0 {
            return f.write_str(name);
        }
        let mut rest = self.1;
        loop {
            let printable = rest
                .iter()
                .position(|b| !(0x20..0x7f).contains(b))
                .unwrap_or(rest.len());
            let (run, tail) = rest.split_at(printable);
            f.write_str(std::str::from_utf8(run).map_err(|_| std::fmt::Error)?)?;
            let Some((_, after)) = tail.split_first() else {
                return Ok(());
            };
            f.write_str(" ")?;
            rest = after;
        }
    }
}

/// Options of the topology output.
#[derive(Debug, Clone, Default)]
pub struct TopologyOptions<'a> {
    /// `--full`: ` s=SPEED w=WIDTH v=VLCAP` after every link.
    pub full: bool,
    /// `--grouping`: chassis grouping.
    pub group: bool,
    /// `--max_hops`: the two report lines in the header.
    pub max_hops: bool,
    /// `--node-name-map` (or the default map file).
    pub name_map: Option<&'a NameMap>,
    /// The date as C's `ctime()` prints it (with its newline), for the
    /// "generated on" line.
    pub ctime: String,
}

fn remap<'a>(map: Option<&'a NameMap>, n: &'a Node) -> Name<'a> {
    Name(map.and_then(|m| m.get(n.guid())), &n.desc)
}

fn info(p: &Port) -> PortInfoView {
    PortInfoView::of(p.info.as_ref())
}

/// The PortInfo fields the outputs use (zero without an answer).
#[derive(Debug, Clone, Copy, Default)]
struct PortInfoView {
    width: u8,
    speed: u8,
    ext_speed: u8,
    vl_cap: u8,
    cap_mask: u32,
}

impl PortInfoView {
    fn of(pi: Option<&PortInfo>) -> Self {
        pi.map_or_else(Self::default, |pi| Self {
            width: pi.link_width_active,
            speed: pi.link_speed_active,
            ext_speed: pi.link_speed_ext_active,
            vl_cap: pi.vl_cap,
            cap_mask: pi.capability_mask,
        })
    }
}

fn speed_name(speed: u8, espeed: u8, fdr10: u8) -> &'static str {
    if speed != 4 && espeed == 0 {
        speed_compat(speed)
    } else {
        speed_ext_compat(espeed, speed, fdr10)
    }
}

fn rate(width: u8, speed: u8, espeed: u8, fdr10: u8) -> Rate {
    Rate(width_compat(width), speed_name(speed, espeed, fdr10))
}

/// Width and speed as printed (`4xQDR`), written straight into the
/// output.
struct Rate(&'static str, &'static str);

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)?;
        f.write_str(self.1)
    }
}

/// A port's width and speed as ibnetdiscover prints them (`4xSDR`):
/// `cap_mask` is the CapabilityMask that says whether the extended
/// speeds are valid (a switch's port 0's), `fdr10` the Mellanox
/// ExtendedPortInfo LinkSpeedActive.
#[must_use]
pub fn link_rate(pi: &PortInfo, cap_mask: u32, fdr10: u8) -> (&'static str, &'static str) {
    let espeed = if cap_mask & port_cap::HAS_EXT_SPEEDS != 0 {
        pi.link_speed_ext_active
    } else {
        0
    };
    (
        width_compat(pi.link_width_active),
        speed_name(pi.link_speed_active, espeed, fdr10),
    )
}

fn out_ids(o: &mut String, n: &Node, chassis: u32) {
    let _ = write!(
        o,
        "\nvendid=0x{:x}\ndevid=0x{:x}\n",
        n.info.vendor_id, n.info.device_id
    );
    let sys = n.info.system_image_guid;
    if sys != 0 {
        let _ = write!(o, "sysimgguid=0x{sys:x}");
    }
    if chassis != 0 {
        let _ = write!(o, "\t\t# Chassis {chassis}");
    }
    if sys != 0 || chassis != 0 {
        o.push('\n');
    }
}

/// Node `i`'s block: its head line, then a line per linked port (port 0
/// left out).
fn out_node(o: &mut String, f: &Fabric, i: usize, opts: &TopologyOptions<'_>, chassis: u32) {
    out_head(o, f, i, opts, chassis);
    let n = &f.nodes[i];
    for p in n.ports.iter().skip(1).flatten() {
        out_port(o, f, n, p, opts);
    }
}

/// Node `i`'s head line, in the switch or the CA/router form by its type.
fn out_head(o: &mut String, f: &Fabric, i: usize, opts: &TopologyOptions<'_>, chassis: u32) {
    if f.nodes[i].is_switch() {
        out_switch_head(o, f, i, opts, chassis);
    } else {
        out_ca_head(o, f, i, opts, chassis);
    }
}

/// Port `p`'s line (nothing when it has no remote port), in the switch or
/// the CA/router form by its node's type.
fn out_port(o: &mut String, f: &Fabric, n: &Node, p: &Port, opts: &TopologyOptions<'_>) {
    if n.is_switch() {
        out_switch_port(o, f, n, p, opts);
    } else {
        out_ca_port(o, f, n, p, opts);
    }
}

fn out_switch_head(o: &mut String, f: &Fabric, i: usize, opts: &TopologyOptions<'_>, chassis: u32) {
    let n = &f.nodes[i];
    out_ids(o, n, chassis);
    let _ = write!(o, "switchguid=0x{:x}({:x})", n.guid(), n.info.port_guid);
    if opts.group {
        // Chassis type and slot strings exist for Voltaire / Mellanox
        // chassis only.
        o.push_str("\t# ");
    }
    o.push('\n');
    let _ = writeln!(
        o,
        "Switch\t{} {}\t\t# \"{}\" {} port 0 lid {} lmc {}",
        n.num_ports(),
        node_id(n),
        remap(opts.name_map, n),
        if n.enhanced_port0 { "enhanced" } else { "base" },
        n.smalid,
        n.smalmc
    );
}

fn out_switch_port(o: &mut String, f: &Fabric, n: &Node, p: &Port, opts: &TopologyOptions<'_>) {
    let Some(r) = p.remote else { return };
    let Some(rn) = f.nodes.get(r.node) else {
        return;
    };
    let Some(rp) = rn.port(r.port) else { return };
    let v = info(p);
    let (speed, espeed) = match n.port(0) {
        None => (0, 0),
        Some(p0) => {
            let cap = info(p0).cap_mask;
            let e = if cap & port_cap::HAS_EXT_SPEEDS != 0 {
                v.ext_speed
            } else {
                0
            };
            (v.speed, e)
        }
    };
    let _ = write!(o, "[{}]\t{}[{}]", p.num, node_id(rn), rp.num);
    if !rn.is_switch() {
        let _ = write!(o, "({:x}) ", rp.guid);
    }
    let _ = write!(
        o,
        "\t\t# \"{}\" lid {} {}",
        remap(opts.name_map, rn),
        rn.lid_of(rp.num),
        rate(v.width, speed, espeed, p.ext_speed_active)
    );
    if opts.full {
        // ibnetdiscover prints the speed it read, not the one it zeroed.
        let _ = write!(o, " s={} w={} v={}", v.speed, v.width, v.vl_cap);
    }
    if is_xsigo_tca(rp.guid) {
        let _ = write!(o, " slot {}", p.num);
    } else if is_xsigo_hca(rp.guid) {
        o.push_str(" (scp)");
    }
    o.push('\n');
}

fn out_ca_head(o: &mut String, f: &Fabric, i: usize, opts: &TopologyOptions<'_>, chassis: u32) {
    let n = &f.nodes[i];
    out_ids(o, n, chassis);
    let (lower, upper) = match n.node_type().0 {
        1 => ("ca", "Ca"),
        3 => ("rt", "Rt"),
        _ => ("???", "???"),
    };
    let _ = writeln!(o, "{lower}guid=0x{:x}", n.guid());
    let _ = write!(
        o,
        "{upper}\t{} {}\t\t# \"{}\"",
        n.num_ports(),
        node_id(n),
        Name(None, &n.desc)
    );
    if opts.group && is_xsigo_hca(n.guid()) {
        o.push_str(" (scp)");
    }
    o.push('\n');
}

fn out_ca_port(o: &mut String, f: &Fabric, n: &Node, p: &Port, opts: &TopologyOptions<'_>) {
    let Some(r) = p.remote else { return };
    let Some(rn) = f.nodes.get(r.node) else {
        return;
    };
    let Some(rp) = rn.port(r.port) else { return };
    let v = info(p);
    let _ = write!(o, "[{}]", p.num);
    if !n.is_switch() {
        let _ = write!(o, "({:x}) ", p.guid);
    }
    let _ = write!(o, "\t{}[{}]", node_id(rn), rp.num);
    if !rn.is_switch() {
        let _ = write!(o, " ({:x}) ", rp.guid);
    }
    let espeed = if v.cap_mask & port_cap::HAS_EXT_SPEEDS != 0 {
        v.ext_speed
    } else {
        0
    };
    let _ = write!(
        o,
        "\t\t# lid {} lmc {} \"{}\" lid {} {}",
        p.base_lid,
        p.lmc,
        remap(opts.name_map, rn),
        rn.lid_of(rp.num),
        rate(v.width, v.speed, espeed, p.ext_speed_active)
    );
    if opts.full {
        let _ = write!(o, " s={} w={} v={}", v.speed, v.width, v.vl_cap);
    }
    o.push('\n');
}

/// One node's lines of the topology output without its ports (what
/// ibnetdiscover's `out_switch` / `out_ca` print, ungrouped): the blank
/// line, the IDs, the GUID line and the detail line.
#[must_use]
pub fn node_head(f: &Fabric, i: usize, opts: &TopologyOptions<'_>) -> String {
    let mut o = String::new();
    out_head(&mut o, f, i, opts, 0);
    o
}

/// The topology output's line of node `i`'s port `port` (nothing when it
/// has no remote port).
#[must_use]
pub fn port_line(f: &Fabric, i: usize, port: u8, opts: &TopologyOptions<'_>) -> String {
    let mut o = String::new();
    let n = &f.nodes[i];
    if let Some(p) = n.port(port) {
        out_port(&mut o, f, n, p, opts);
    }
    o
}

/// ibnetdiscover's default output: the topology file.
#[must_use]
pub fn topology(f: &Fabric, opts: &TopologyOptions<'_>) -> String {
    let mut all = String::new();
    topology_to(f, opts, &mut |s| all.push_str(s));
    all
}

/// About how much of the topology [`topology_to`] hands over at a time.
const CHUNK: usize = 64 * 1024;

/// Fabrics of at least this many nodes listed outside chassis have
/// their second half written on another thread.
pub const TWO_THREADS_FROM: usize = 4096;

/// Node `i`'s block into `o`, handed to `sink` once `o` holds a chunk.
fn node_to(
    o: &mut String,
    f: &Fabric,
    i: usize,
    opts: &TopologyOptions<'_>,
    chassis: u32,
    sink: &mut dyn FnMut(&str),
) {
    out_node(o, f, i, opts, chassis);
    if o.len() >= CHUNK {
        sink(o);
        o.clear();
    }
}

/// The blocks of `nodes` (outside chassis), a chunk a piece.
fn blocks(f: &Fabric, nodes: &[usize], opts: &TopologyOptions<'_>) -> Vec<String> {
    let mut parts = Vec::new();
    let mut o = String::with_capacity(CHUNK + CHUNK / 4);
    for &i in nodes {
        node_to(&mut o, f, i, opts, 0, &mut |s| parts.push(s.to_owned()));
    }
    parts.push(o);
    parts
}

/// [`topology`] handed to `sink` a piece at a time (whole nodes, about
/// 64 KiB each). A large fabric's nodes are written in two halves at
/// once, on two threads: at most the second half's text is held.
pub fn topology_to(f: &Fabric, opts: &TopologyOptions<'_>, sink: &mut dyn FnMut(&str)) {
    topology_split(f, opts, TWO_THREADS_FROM, sink);
}

/// [`topology_to`] writing the second half on another thread from
/// `two_threads_from` nodes (outside chassis) on.
pub fn topology_split(
    f: &Fabric,
    opts: &TopologyOptions<'_>,
    two_threads_from: usize,
    sink: &mut dyn FnMut(&str),
) {
    let mut o = String::with_capacity(CHUNK + CHUNK / 4);
    let _ = write!(o, "#\n# Topology file: generated on {}#\n", opts.ctime);
    if opts.max_hops {
        let _ = write!(
            o,
            "# Reported max hops discovered: {}\n# Total MADs used: {}\n",
            f.max_hops, f.total_mads
        );
    }
    if let Some(from) = f.nodes.get(f.from_node) {
        let _ = writeln!(
            o,
            "# Initiated from node {:016x} port {:016x}",
            from.guid(),
            from.info.port_guid
        );
    }
    let chassis = if opts.group {
        Chassis::build(f)
    } else {
        Chassis::default()
    };
    let num = |i: usize| chassis.num.get(i).copied().unwrap_or(0);
    if opts.group {
        for (cnum, cguid, members) in &chassis.list {
            let _ = write!(o, "\nChassis {cnum}");
            if *cguid != 0 {
                let _ = write!(o, " (guid 0x{cguid:x})");
            }
            o.push('\n');
            o.push_str("\n# Spine Nodes");
            o.push_str("\n# Line Nodes");
            o.push_str("\n# Chassis Switches");
            for &i in members.iter().filter(|&&i| f.nodes[i].is_switch()) {
                node_to(&mut o, f, i, opts, num(i), sink);
            }
            o.push_str("\n# Chassis CAs");
            for &i in members
                .iter()
                .filter(|&&i| f.nodes[i].node_type() == NodeType::CA)
            {
                node_to(&mut o, f, i, opts, num(i), sink);
            }
        }
        o.push_str("\nNon-Chassis Nodes\n");
    }
    let rest: Vec<usize> = f
        .listed_of(NodeType::SWITCH)
        .chain(f.listed_of(NodeType::CA))
        .chain(f.listed_of(NodeType::ROUTER))
        .filter(|&i| !(opts.group && num(i) != 0))
        .collect();
    // Halves of about the same text: a node's block has a line per
    // port (a switch's is ten times a CA's).
    let weight = |i: usize| 3 + f.nodes[i].ports.len();
    let total: usize = rest.iter().map(|&i| weight(i)).sum();
    let mut acc = 0;
    let half = if rest.len() >= two_threads_from {
        rest.iter()
            .position(|&i| {
                acc += weight(i);
                2 * acc >= total
            })
            .map_or(rest.len(), |at| at + 1)
    } else {
        rest.len()
    };
    let (mine, theirs) = rest.split_at(half);
    std::thread::scope(|s| {
        let later = (!theirs.is_empty())
            .then(|| {
                std::thread::Builder::new()
                    .name("topology".into())
                    .spawn_scoped(s, || blocks(f, theirs, opts))
                    .ok()
            })
            .flatten();
        for &i in mine {
            node_to(&mut o, f, i, opts, 0, sink);
        }
        sink(&o);
        // Without the thread (or if it failed), the second half here.
        match later.map(std::thread::ScopedJoinHandle::join) {
            Some(Ok(parts)) => parts.iter().for_each(|p| sink(p)),
            _ => blocks(f, theirs, opts).iter().for_each(|p| sink(p)),
        }
    });
}

/// Which node types `--list` and friends print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListMask {
    /// CAs (`-H`).
    pub ca: bool,
    /// Switches (`-S`).
    pub switch: bool,
    /// Routers (`-R`).
    pub router: bool,
}

impl ListMask {
    /// `--list`: every type.
    pub const ALL: Self = Self {
        ca: true,
        switch: true,
        router: true,
    };

    /// True when nothing is selected.
    #[must_use]
    pub fn is_empty(self) -> bool {
        !(self.ca || self.switch || self.router)
    }
}

/// ibnetdiscover `--list` / `-H` / `-S` / `-R`: one line per node, CAs
/// first, then switches, then routers.
#[must_use]
pub fn list(f: &Fabric, mask: ListMask, map: Option<&NameMap>) -> String {
    let mut o = String::new();
    for (on, t) in [
        (mask.ca, NodeType::CA),
        (mask.switch, NodeType::SWITCH),
        (mask.router, NodeType::ROUTER),
    ] {
        if !on {
            continue;
        }
        for i in f.listed_of(t) {
            let n = &f.nodes[i];
            let kind = match n.node_type().0 {
                2 => "Switch",
                1 => "Ca",
                3 => "Router",
                _ => "???",
            };
            let _ = writeln!(
                o,
                "{kind}\t : 0x{:016x} ports {} devid 0x{:x} vendid 0x{:x} \"{}\"",
                n.guid(),
                n.num_ports(),
                n.info.device_id,
                n.info.vendor_id,
                remap(map, n)
            );
        }
    }
    o
}

/// ibnetdiscover `--ports`: every port of every node, highest port
/// first, with its link partner.
#[must_use]
pub fn ports_report(f: &Fabric, map: Option<&NameMap>) -> String {
    let mut o = String::new();
    let nt = |n: &Node| match n.node_type().0 {
        2 => "SW",
        1 => "CA",
        3 => "RT",
        _ => "??",
    };
    for i in f.listed() {
        let n = &f.nodes[i];
        for pn in (1..=n.num_ports()).rev() {
            let Some(p) = n.port(pn) else { continue };
            let v = info(p);
            let cap = if n.is_switch() {
                n.port(0).map(|p0| info(p0).cap_mask)
            } else {
                Some(v.cap_mask)
            };
            let (width, speed, espeed) = match cap {
                Some(c) => (
                    v.width,
                    v.speed,
                    if c & port_cap::HAS_EXT_SPEEDS != 0 {
                        v.ext_speed
                    } else {
                        0
                    },
                ),
                None => (0, 0, 0),
            };
            let s = if speed != 4 && espeed == 0 {
                speed_compat(speed)
            } else {
                speed_ext_compat(espeed, speed, p.ext_speed_active)
            };
            let name = remap(map, n);
            let _ = write!(
                o,
                "{:>2} {:>5} {:>2} 0x{:016x} {} {}",
                nt(n),
                n.lid_of(pn),
                pn,
                p.guid,
                width_compat(width),
                s
            );
            match p
                .remote
                .and_then(|r| f.nodes.get(r.node).map(|rn| (rn, r.port)))
            {
                Some((rn, rport)) => {
                    let rguid = rn.port(rport).map_or(0, |rp| rp.guid);
                    let _ = writeln!(
                        o,
                        " - {:>2} {:>5} {:>2} 0x{:016x} ( '{}' - '{}' )",
                        nt(rn),
                        rn.lid_of(rport),
                        rport,
                        rguid,
                        name,
                        remap(map, rn)
                    );
                }
                None => {
                    let _ = writeln!(o, "{:36}'{name}'", "");
                }
            }
        }
    }
    o
}

/// The `--show` lines (printed before the topology).
#[must_use]
pub fn show_lines(f: &Fabric) -> String {
    let mut o = String::new();
    for l in &f.show_lines {
        o.push_str(l);
        o.push('\n');
    }
    o
}
