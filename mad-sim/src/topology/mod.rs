//! Topology files in the ibnetdiscover format that ibsim reads
//! (`ibsim -s FILE`), parsed the way ibsim 0.10 parses them
//! (`ibsim/sim_net.c`), so that one file gives the same nodes, ports,
//! links and GUIDs in both simulators.
//!
//! # The format
//! ```text
//! # comment
//! switchguid=0x2c90300a1b2c3        (optional: GUID of the next switch)
//! Switch 8 "Switch1"  # "a description" enhanced port 0 lid 1 lmc 0
//! [1]   "Hca1"[1]                   (local port, remote node id, remote port)
//! [3]   "Switch2"[3]   w=3 s=7      (optional enabled width / speed / ext speed)
//!
//! caguid=0x2c90300c2d3e4
//! Ca 2 "Hca1"                       ("Hca" also works; "Rt" is a router)
//! [1](2c90300c2d3e5)  "Switch1"[1]  # lid 2 lmc 0 "Switch1" lid 1 4xQDR
//! ```
//! A node record is a header line followed by one line per connected port;
//! a blank (or any other) line ends it. Top-level directives: `switchguid`,
//! `caguid` / `hcaguids`, `rtguid` (`=` absolute, `+` relative to the last
//! absolute base), `sysimgguid`, `vendid`, `devid` (apply to the next node;
//! `devid` stays), `width`, `speed`, `extspeed` (defaults for the ports of
//! later nodes), `module="prefix"` (node ids become `prefix#id`),
//! `include "file"` and `pdebug`. Other lines are ignored, as ibsim does.
//!
//! # GUIDs, as ibsim assigns them
//! Three counters, one per node kind, start at `0x100000` (CAs),
//! `0x200000` (switches) and `0` (routers). A node takes its counter's
//! value as node GUID; a switch then advances the counter by 1, a CA or
//! router by `ports + 1`. `switchguid=X` / `caguid=X` / `rtguid=X` set
//! the counter (and the base for `+`), which is how ibnetdiscover output
//! carries each node's real GUID. Port GUIDs: every port of a switch has
//! the node GUID; port *n* of a CA or router has node GUID + *n*. The
//! system image GUID is the node GUID unless a `sysimgguid=` line precedes
//! the node. Node ids such as `S-0002c903...` are names only: ibsim does
//! not read GUIDs out of them, and neither does this parser.
//!
//! # Refused files
//! Everything ibsim refuses is refused here too, with the file, line and
//! reason ([`TopologyError`]). A few things ibsim accepts silently but
//! misreads are refused as well, each documented on its
//! [`ErrorKind`] variant: lines over 255 characters (ibsim splits them),
//! a node header or directive directly after a record's port lines
//! without a blank line (ibsim swallows it), `Ca12` without a
//! separator (ibsim reads 2 ports), a port line outside a record, a port
//! listed twice, duplicate port GUIDs, and ids longer than 64 characters.
//! Port aliases (`@`) and console commands (`do`) are not supported.
//!
//! # Size limits
//! A topology is read within [`TopologyLimits`]: at most
//! [`MAX_TOPOLOGY_BYTES`] (64 MiB) and [`MAX_TOPOLOGY_LINES`] (4 Mi lines)
//! for the file and everything it includes together, at most
//! [`MAX_INCLUDE_DEPTH`] nested files and [`MAX_LINE_LEN`] characters a
//! line. Files are read with [`std::io::Read::take`], so an `include` of
//! an endless file (`/dev/zero`, a FIFO whose writer never stops) ends at
//! the limit with [`ErrorKind::TooLarge`] naming the file and the limit
//! instead of exhausting memory. The parser keeps one 16-byte index entry
//! a line beside the text, so the worst case is about
//! `MAX_TOPOLOGY_BYTES + 16 × MAX_TOPOLOGY_LINES` = 128 MiB. (Opening a
//! FIFO that no one writes to blocks, as it does for every reader.)

mod cnum;
mod error;
mod parse;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use mad_core::wire::attr::NodeType;

use parse::Parser;

/// The longest line ibsim reads in one piece (its buffer is 256 bytes).
pub const MAX_LINE_LEN: usize = 255;
/// The longest node id ibsim keeps (`NODEIDLEN` − 1).
pub const MAX_NODE_ID_LEN: usize = 64;
/// The longest NodeDescription text ibsim keeps.
pub const MAX_DESC_LEN: usize = 63;
/// The longest `module=` prefix ibsim accepts (`NODEPREFIX`).
pub const MAX_PREFIX_LEN: usize = 20;
/// Deepest `include` nesting ibsim handles (`MAX_INCLUDE`).
pub const MAX_INCLUDE_DEPTH: usize = 9;
/// The default [`TopologyLimits::max_bytes`]: 64 MiB, for a topology and
/// its includes together (ibnetdiscover's output for a fabric of 50 000
/// nodes is under 20 MiB).
pub const MAX_TOPOLOGY_BYTES: u64 = 64 << 20;
/// The default [`TopologyLimits::max_lines`]: 4 Mi lines, for a topology
/// and its includes together.
pub const MAX_TOPOLOGY_LINES: usize = 4 << 20;

/// How much a topology may be (see [Size limits](self#size-limits)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopologyLimits {
    /// Bytes of the file and every file it includes, together.
    pub max_bytes: u64,
    /// Lines of the file and every file it includes, together.
    pub max_lines: usize,
}

impl Default for TopologyLimits {
    fn default() -> Self {
        Self {
            max_bytes: MAX_TOPOLOGY_BYTES,
            max_lines: MAX_TOPOLOGY_LINES,
        }
    }
}

/// First GUID of the CA, switch and router counters.
pub const GUID_BASE_CA: u64 = 0x10_0000;
/// First switch GUID.
pub const GUID_BASE_SWITCH: u64 = 0x20_0000;
/// First router GUID.
pub const GUID_BASE_ROUTER: u64 = 0;

/// PortInfo LinkWidth bits (1X, 4X, 8X, 12X, 2X).
pub mod width {
    /// 1X.
    pub const W1X: u8 = 1;
    /// 4X.
    pub const W4X: u8 = 2;
    /// 8X.
    pub const W8X: u8 = 4;
    /// 12X.
    pub const W12X: u8 = 8;
    /// 2X.
    pub const W2X: u8 = 16;
    /// Every width (what ibsim reports as LinkWidthSupported).
    pub const ALL: u8 = 31;
}

/// PortInfo LinkSpeed bits (SDR, DDR, QDR).
pub mod speed {
    /// 2.5 Gb/s.
    pub const SDR: u8 = 1;
    /// 5 Gb/s.
    pub const DDR: u8 = 2;
    /// 10 Gb/s.
    pub const QDR: u8 = 4;
    /// SDR, DDR and QDR (LinkSpeedSupported).
    pub const ALL: u8 = 7;
    /// Extended speed FDR.
    pub const EXT_FDR: u8 = 1;
    /// Extended speed EDR.
    pub const EXT_EDR: u8 = 2;
    /// Extended speed HDR.
    pub const EXT_HDR: u8 = 4;
    /// FDR, EDR and HDR (LinkSpeedExtSupported when an extended speed is active).
    pub const EXT_ALL: u8 = 7;
}

/// Kind of node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// Channel adapter (`Hca` / `Ca`).
    Ca,
    /// Switch (`Switch`); it has a management port 0.
    Switch,
    /// Router (`Rt`), numbered like a CA.
    Router,
}

impl NodeKind {
    /// The NodeInfo NodeType.
    #[must_use]
    pub fn node_type(self) -> NodeType {
        match self {
            Self::Ca => NodeType::CA,
            Self::Switch => NodeType::SWITCH,
            Self::Router => NodeType::ROUTER,
        }
    }
    fn index(self) -> usize {
        match self {
            Self::Ca => 0,
            Self::Switch => 1,
            Self::Router => 2,
        }
    }
    fn keyword(self) -> &'static str {
        match self {
            Self::Ca => "Ca",
            Self::Switch => "Switch",
            Self::Router => "Rt",
        }
    }
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// A port of a node: node index in [`Topology::nodes`] and port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortRef {
    /// Index of the node.
    pub node: usize,
    /// Port number.
    pub port: u8,
}

/// Where a line came from: a file (or `<string>`) and a 1-based line
/// number, plus the `include` lines that led there, outermost first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// File name as given (or `<string>`).
    pub file: String,
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// `(file, line)` of each `include` that led to this file.
    pub included_from: Vec<(String, usize)>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        for (file, line) in self.included_from.iter().rev() {
            write!(f, " (included from {file}:{line})")?;
        }
        Ok(())
    }
}

/// One port of a [`TopoNode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopoPort {
    /// Port number.
    pub num: u8,
    /// Port GUID.
    pub guid: u64,
    /// LinkWidthEnabled (bit mask, [`width`]).
    pub width_enabled: u8,
    /// LinkSpeedEnabled (bit mask, [`speed`]).
    pub speed_enabled: u8,
    /// LinkSpeedExtEnabled (bit mask; 0 = none).
    pub speed_ext_enabled: u8,
    /// Mellanox FDR10 enabled (ibnetdiscover FDR/EDR/HDR/FDR10 speeds).
    pub fdr10_enabled: bool,
    /// LID from ibnetdiscover data (`lid N` on a CA port line or a switch
    /// header), 0 if none.
    pub lid: u16,
    /// LMC from ibnetdiscover data.
    pub lmc: u8,
    /// The other end of this port's link, if connected.
    pub remote: Option<PortRef>,
    /// LinkWidthActive once linked (the widest width both ends enable),
    /// else 4X as ibsim reports for an unconnected port.
    pub width_active: u8,
    /// LinkSpeedActive (the fastest common speed; SDR if unconnected).
    pub speed_active: u8,
    /// LinkSpeedExtActive (0 = none).
    pub speed_ext_active: u8,
    /// FDR10 active.
    pub fdr10_active: bool,
    /// Line of this port in the file (the header line for ports that
    /// have no port line).
    pub location: Location,
}

/// A node of the topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopoNode {
    /// CA, switch or router.
    pub kind: NodeKind,
    /// The node id (`"..."` on the header line), with the `module=`
    /// prefix as `prefix#id` if one was set. Links name nodes by it.
    pub id: String,
    /// NodeDescription text (the quoted text after `#` on the header,
    /// else the id), at most 63 bytes.
    pub description: String,
    /// Physical ports (NodeInfo NumPorts).
    pub num_ports: u8,
    /// Node GUID.
    pub node_guid: u64,
    /// System image GUID.
    pub system_image_guid: u64,
    /// NodeInfo VendorID (24 bits; `vendid=`, else 0 as in ibsim).
    pub vendor_id: u32,
    /// NodeInfo DeviceID (`devid=`, else 0 as in ibsim).
    pub device_id: u16,
    /// SwitchInfo EnhancedPort0 from `enhanced port 0` / `base port 0`
    /// on a switch header (`None`: not stated, ibsim reports 0).
    pub enhanced_port0: Option<bool>,
    /// Ports by number: index 0 is the management port of a switch and an
    /// unused placeholder on CAs and routers (use [`TopoNode::port`]).
    pub ports: Vec<TopoPort>,
    /// The header line.
    pub location: Location,
}

impl TopoNode {
    /// True for switches.
    #[must_use]
    pub fn is_switch(&self) -> bool {
        self.kind == NodeKind::Switch
    }
    /// First port number: 0 on a switch, 1 otherwise.
    #[must_use]
    pub fn first_port(&self) -> u8 {
        u8::from(!self.is_switch())
    }
    /// Port `n` (`None` for port 0 of a CA or router, or beyond NumPorts).
    #[must_use]
    pub fn port(&self, n: u8) -> Option<&TopoPort> {
        if n < self.first_port() {
            return None;
        }
        self.ports.get(usize::from(n))
    }
    /// The ports that exist: 0..=n on a switch, 1..=n otherwise.
    pub fn existing_ports(&self) -> impl Iterator<Item = &TopoPort> {
        self.ports.iter().skip(usize::from(self.first_port()))
    }
}

/// A link between two ports, listed once (the end that comes first in
/// the file is `a`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopoLink {
    /// One end.
    pub a: PortRef,
    /// The other end.
    pub b: PortRef,
    /// LinkWidthActive of both ends.
    pub width: u8,
    /// LinkSpeedActive.
    pub speed: u8,
    /// LinkSpeedExtActive.
    pub speed_ext: u8,
}

/// A parsed topology: nodes in file order and their links.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Topology {
    nodes: Vec<TopoNode>,
    links: Vec<TopoLink>,
    by_id: HashMap<String, usize>,
    by_guid: HashMap<u64, usize>,
}

impl Topology {
    /// Parses a topology held in memory. `include` lines are refused
    /// (there is no directory to resolve them in): use [`Topology::load`].
    ///
    /// # Errors
    /// A [`TopologyError`] naming the line and what is wrong.
    pub fn parse_str(text: &str) -> Result<Self, TopologyError> {
        Self::parse_bytes(text.as_bytes())
    }

    /// [`Topology::parse_str`] for bytes that may not be UTF-8 (refused
    /// with the line of the first bad byte).
    ///
    /// # Errors
    /// As [`Topology::parse_str`].
    pub fn parse_bytes(bytes: &[u8]) -> Result<Self, TopologyError> {
        let mut p = Parser::new(TopologyLimits::default());
        p.take_bytes(bytes.len() as u64, "<string>")?;
        p.parse_file_bytes(bytes, "<string>", None)?;
        p.finish()
    }

    /// Reads and parses the file at `path` within the default
    /// [`TopologyLimits`]; `include "name"` lines are resolved relative to
    /// the including file's directory.
    ///
    /// # Errors
    /// A [`TopologyError`] (also for I/O errors, with line 0;
    /// [`ErrorKind::TooLarge`] past a limit).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, TopologyError> {
        Self::load_with_limits(path, TopologyLimits::default())
    }

    /// [`Topology::load`] within `limits`.
    ///
    /// # Errors
    /// As [`Topology::load`].
    pub fn load_with_limits(
        path: impl AsRef<Path>,
        limits: TopologyLimits,
    ) -> Result<Self, TopologyError> {
        let path = path.as_ref();
        let label = path.display().to_string();
        let mut p = Parser::new(limits);
        let bytes = p.read_file(path, &label).map_err(|kind| TopologyError {
            location: Box::new(Location {
                file: label.clone(),
                line: 0,
                included_from: Vec::new(),
            }),
            kind,
        })?;
        p.parse_file_bytes(&bytes, &label, Some(path.to_path_buf()))?;
        p.finish()
    }

    /// Nodes in file order (index = the node's index everywhere else).
    #[must_use]
    pub fn nodes(&self) -> &[TopoNode] {
        &self.nodes
    }

    /// Node `i`.
    #[must_use]
    pub fn node(&self, i: usize) -> Option<&TopoNode> {
        self.nodes.get(i)
    }

    /// Links, each once, in the order ibsim connects them.
    #[must_use]
    pub fn links(&self) -> &[TopoLink] {
        &self.links
    }

    /// The node with this id (module prefix included).
    #[must_use]
    pub fn find(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// The node with this node GUID.
    #[must_use]
    pub fn find_guid(&self, node_guid: u64) -> Option<usize> {
        self.by_guid.get(&node_guid).copied()
    }

    /// Where ibsim attaches a client that names no node: the first node's
    /// first port (port 0 of a switch, port 1 of a CA). `None` when the
    /// file has no node.
    #[must_use]
    pub fn default_port(&self) -> Option<PortRef> {
        self.nodes.first().map(|n| PortRef {
            node: 0,
            port: n.first_port(),
        })
    }

    /// The port at `r`.
    #[must_use]
    pub fn port(&self, r: PortRef) -> Option<&TopoPort> {
        self.nodes.get(r.node).and_then(|n| n.port(r.port))
    }

    /// Number of switches.
    #[must_use]
    pub fn switch_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.is_switch()).count()
    }
}

pub use error::{ErrorKind, TopologyError};
pub use parse::DIRECTIVES;

#[cfg(test)]
mod tests;
