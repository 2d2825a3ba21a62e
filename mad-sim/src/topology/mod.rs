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

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use cnum::{atoi, is_c_space, strtoul};
use mad_core::wire::attr::NodeType;

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

/// A topology file that could not be parsed: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {kind}")]
pub struct TopologyError {
    /// File and line.
    pub location: Box<Location>,
    /// What is wrong.
    pub kind: ErrorKind,
}

/// What is wrong with a topology line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(String),
    /// The line is not valid UTF-8.
    #[error("not valid UTF-8")]
    NotUtf8,
    /// The line holds a NUL byte (ibsim's C strings end there).
    #[error("NUL byte in line")]
    NulByte,
    /// Longer than [`MAX_LINE_LEN`]: ibsim would read it as two lines.
    #[error("line of {len} characters; ibsim reads at most {MAX_LINE_LEN} per line")]
    LineTooLong {
        /// Its length.
        len: usize,
    },
    /// A node header or port line without a `"quoted"` node id.
    #[error("no \"quoted\" node id")]
    NoNodeId,
    /// A node id that is empty, too long or holds `#` / `@`.
    #[error("bad node id {id:?}: {reason}")]
    BadNodeId {
        /// The id.
        id: String,
        /// Why.
        reason: &'static str,
    },
    /// Two nodes with the same id.
    #[error("node id {id:?} already defined at {first}")]
    DuplicateNodeId {
        /// The id.
        id: String,
        /// The first definition.
        first: Location,
    },
    /// A header whose port count is missing, 0 or above 255.
    #[error("bad port count {text:?} (must be 1-255)")]
    BadPortCount {
        /// What the header says.
        text: String,
    },
    /// `Ca12` / `Rt12` with no separator: ibsim starts reading the count
    /// at the third character and would see 2 ports.
    #[error("ibsim would read {ibsim} ports here, not {written}: put a tab after {keyword:?}")]
    MisreadPortCount {
        /// The keyword.
        keyword: &'static str,
        /// The count written.
        written: u64,
        /// What ibsim reads.
        ibsim: u64,
    },
    /// A node GUID or port GUID that another node or port already has.
    #[error("GUID {guid:#018x} of {what} is already used by {other} ({first})")]
    DuplicateGuid {
        /// The GUID.
        guid: u64,
        /// This node / port.
        what: String,
        /// The one that has it.
        other: String,
        /// Where that was defined.
        first: Location,
    },
    /// A local port number outside 1..=NumPorts.
    #[error("bad port number {port} (node {node:?} has ports 1-{max})")]
    BadPortNumber {
        /// The number written.
        port: i64,
        /// The node.
        node: String,
        /// Its port count.
        max: u8,
    },
    /// A port line naming port 0 (never a link port).
    #[error("port 0 cannot be linked")]
    PortZero,
    /// The same local port twice in one record.
    #[error("port {port} of {node:?} is listed twice (first at {first})")]
    DuplicatePort {
        /// The port.
        port: u8,
        /// The node.
        node: String,
        /// The first line.
        first: Location,
    },
    /// A remote port number that is 0 or not a number.
    #[error("bad remote port {text:?}")]
    BadRemotePort {
        /// What follows the remote id.
        text: String,
    },
    /// A `w=` / `s=` / `e=` option or `width=` / `speed=` / `extspeed=`
    /// value out of range.
    #[error("bad {what} {value} (must be {range})")]
    BadLinkValue {
        /// Which option.
        what: &'static str,
        /// The value.
        value: i64,
        /// The allowed range.
        range: &'static str,
    },
    /// A link to a node id that no record defines.
    #[error("node {node:?} port {port} is linked to unknown node {remote:?}")]
    UnknownRemoteNode {
        /// This node.
        node: String,
        /// This port.
        port: u8,
        /// The missing id.
        remote: String,
    },
    /// A link to a port the remote node does not have.
    #[error("node {node:?} port {port} is linked to port {remote_port} of {remote:?}, which has {remote_ports} ports")]
    RemotePortOutOfRange {
        /// This node.
        node: String,
        /// This port.
        port: u8,
        /// The remote node.
        remote: String,
        /// The port named.
        remote_port: i64,
        /// The remote's port count.
        remote_ports: u8,
    },
    /// A link that the other end does not list back.
    #[error("node {node:?} port {port} says it is linked to {remote:?} port {remote_port}, but that port {remote_says}")]
    OneSidedLink {
        /// This node.
        node: String,
        /// This port.
        port: u8,
        /// The remote node.
        remote: String,
        /// The remote port.
        remote_port: u8,
        /// What the remote port's line says instead.
        remote_says: String,
    },
    /// A port linked to itself.
    #[error("node {node:?} port {port} is linked to itself")]
    SelfLink {
        /// The node.
        node: String,
        /// The port.
        port: u8,
    },
    /// The two ends of a link enable no common width or speed (ibsim
    /// aborts on this).
    #[error("the ends of the link {node:?} port {port} - {remote:?} port {remote_port} enable no common {what} ({mine:#x} vs {theirs:#x})")]
    LinkMismatch {
        /// "width" or "speed".
        what: &'static str,
        /// This node.
        node: String,
        /// This port.
        port: u8,
        /// The remote node.
        remote: String,
        /// The remote port.
        remote_port: u8,
        /// This end's enabled mask.
        mine: u8,
        /// The other end's.
        theirs: u8,
    },
    /// A `key=value` directive that lacks its `=` or its value, or whose
    /// value is out of range.
    #[error("bad {key} assignment: {reason}")]
    BadAssignment {
        /// The directive.
        key: &'static str,
        /// Why.
        reason: String,
    },
    /// A node header or directive directly after the port lines of a
    /// record that still had unlisted ports: ibsim takes it as the end of
    /// the record and skips it. Put a blank line before it.
    #[error("{text:?} follows a node record without a blank line; ibsim would skip it")]
    SwallowedLine {
        /// The line.
        text: String,
    },
    /// A `[port]` line outside a node record (a blank line or a comment
    /// block ended the record before it?).
    #[error("port line outside a node record")]
    PortLineOutsideRecord,
    /// An `include` line that names no file, nests too deep, or fails.
    #[error("bad include: {0}")]
    Include(String),
    /// The topology, with what it includes, goes past one of its
    /// [`TopologyLimits`]; `file` is where it did (the location is the
    /// `include` line that named that file, or line 0 of the top file).
    #[error("{file} takes the topology past its limit of {limit} {what} (all files together; see TopologyLimits)")]
    TooLarge {
        /// The file being read when the limit was reached.
        file: String,
        /// `"bytes"` or `"lines"`.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// Syntax ibsim has that this parser does not support.
    #[error("{0} is not supported")]
    Unsupported(&'static str),
}

// ---------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------

/// A port line waiting for the connect pass.
#[derive(Debug, Clone)]
struct PendingLink {
    remote: String,
    remote_port: i64,
}

struct Parser {
    nodes: Vec<TopoNode>,
    pending: Vec<Vec<Option<PendingLink>>>,
    by_id: HashMap<String, usize>,
    node_guids: HashMap<u64, usize>,
    prefix: String,
    guids: [u64; 3],
    absguids: [u64; 3],
    vendid: u32,
    devid: u16,
    sysimgguid: u64,
    width: u8,
    speed: u8,
    speed_ext: u8,
    /// `(file, line)` of the includes being parsed, outermost first.
    stack: Vec<(String, usize)>,
    includes: HashSet<PathBuf>,
    limits: TopologyLimits,
    /// Bytes and lines of every file read so far.
    bytes_read: u64,
    lines_read: usize,
}

/// Line keywords ibsim acts on at the top level (a line starting with one
/// of these is not ignored): the node keywords, then the directives.
pub const DIRECTIVES: &[&str] = &[
    "Switch",
    "Hca",
    "Ca",
    "Rt",
    "switchguid",
    "hcaguids",
    "caguid",
    "rtguid",
    "vendid",
    "devid",
    "sysimgguid",
    "width",
    "speed",
    "extspeed",
    "module",
    "include",
    "pdebug",
    "do",
];

type PResult<T> = Result<T, TopologyError>;

impl Parser {
    fn new(limits: TopologyLimits) -> Self {
        Self {
            limits,
            bytes_read: 0,
            lines_read: 0,
            nodes: Vec::new(),
            pending: Vec::new(),
            by_id: HashMap::new(),
            node_guids: HashMap::new(),
            prefix: String::new(),
            guids: [GUID_BASE_CA, GUID_BASE_SWITCH, GUID_BASE_ROUTER],
            absguids: [GUID_BASE_CA, GUID_BASE_SWITCH, GUID_BASE_ROUTER],
            vendid: 0,
            devid: 0,
            sysimgguid: 0,
            width: width::W4X,
            speed: speed::SDR,
            speed_ext: 0,
            stack: Vec::new(),
            includes: HashSet::new(),
        }
    }

    fn loc(&self, file: &str, line: usize) -> Location {
        Location {
            file: file.to_owned(),
            line,
            included_from: self.stack.clone(),
        }
    }

    fn err(&self, file: &str, line: usize, kind: ErrorKind) -> TopologyError {
        TopologyError {
            location: Box::new(self.loc(file, line)),
            kind,
        }
    }

    /// Counts `n` more bytes against [`TopologyLimits::max_bytes`].
    fn take_bytes(&mut self, n: u64, file: &str) -> PResult<()> {
        self.bytes_read = self.bytes_read.saturating_add(n);
        if self.bytes_read > self.limits.max_bytes {
            return Err(self.err(
                file,
                0,
                ErrorKind::TooLarge {
                    file: file.to_owned(),
                    what: "bytes",
                    limit: self.limits.max_bytes,
                },
            ));
        }
        Ok(())
    }

    /// Reads `path` with what is left of the byte limit, and counts it.
    fn read_file(&mut self, path: &Path, label: &str) -> Result<Vec<u8>, ErrorKind> {
        let left = self.limits.max_bytes.saturating_sub(self.bytes_read);
        let mut bytes = Vec::new();
        let file = std::fs::File::open(path).map_err(|e| ErrorKind::Io(e.to_string()))?;
        match mad_core::limits::read_to_end_limited(file, left, "a topology", &mut bytes) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(ErrorKind::TooLarge {
                    file: label.to_owned(),
                    what: "bytes",
                    limit: self.limits.max_bytes,
                })
            }
            Err(e) => return Err(ErrorKind::Io(e.to_string())),
        }
        self.bytes_read += bytes.len() as u64;
        Ok(bytes)
    }

    /// Splits `bytes` into lines (a final newline does not start another
    /// line; one trailing `\r` per line is dropped), checking each and
    /// counting them against [`TopologyLimits::max_lines`].
    fn split_lines<'a>(&mut self, bytes: &'a [u8], file: &str) -> PResult<Vec<&'a str>> {
        let mut out = Vec::new();
        if bytes.is_empty() {
            return Ok(out);
        }
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        for (i, raw) in body.split(|b| *b == b'\n').enumerate() {
            self.lines_read += 1;
            if self.lines_read > self.limits.max_lines {
                return Err(self.err(
                    file,
                    i + 1,
                    ErrorKind::TooLarge {
                        file: file.to_owned(),
                        what: "lines",
                        limit: self.limits.max_lines as u64,
                    },
                ));
            }
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let line =
                std::str::from_utf8(raw).map_err(|_| self.err(file, i + 1, ErrorKind::NotUtf8))?;
            if line.contains('\0') {
                return Err(self.err(file, i + 1, ErrorKind::NulByte));
            }
            let len = line.chars().count();
            if raw.len() > MAX_LINE_LEN {
                return Err(self.err(file, i + 1, ErrorKind::LineTooLong { len }));
            }
            out.push(line);
        }
        Ok(out)
    }

    fn parse_file_bytes(&mut self, bytes: &[u8], file: &str, path: Option<PathBuf>) -> PResult<()> {
        let lines = self.split_lines(bytes, file)?;
        let dir = path
            .as_ref()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let n = i + 1;
            i += 1;
            if line.starts_with("Switch") {
                i = self.parse_node(&lines, i - 1, NodeKind::Switch, file)?;
            } else if line.starts_with("Hca") || line.starts_with("Ca") {
                i = self.parse_node(&lines, i - 1, NodeKind::Ca, file)?;
            } else if line.starts_with("Rt") {
                i = self.parse_node(&lines, i - 1, NodeKind::Router, file)?;
            } else if line.starts_with("switchguid") {
                self.parse_guidbase(line, NodeKind::Switch, file, n)?;
            } else if line.starts_with("hcaguids") || line.starts_with("caguid") {
                self.parse_guidbase(line, NodeKind::Ca, file, n)?;
            } else if line.starts_with("rtguid") {
                self.parse_guidbase(line, NodeKind::Router, file, n)?;
            } else if line.starts_with("vendid") {
                let v = self.assignment(line, "vendid", file, n)?;
                self.vendid = self.in_range(v, 0xFF_FFFF, "vendid", file, n)? as u32;
            } else if line.starts_with("devid") {
                let v = self.assignment(line, "devid", file, n)?;
                self.devid = self.in_range(v, 0xFFFF, "devid", file, n)? as u16;
            } else if line.starts_with("sysimgguid") {
                let v = self.assignment(line, "sysimgguid", file, n)?;
                self.sysimgguid = v.value;
            } else if line.starts_with("width") {
                let v = self.assignment(line, "width", file, n)?;
                self.width = self.link_value(v, "width", 1, 31, file, n)?;
            } else if line.starts_with("speed") {
                let v = self.assignment(line, "speed", file, n)?;
                self.speed = self.link_value(v, "speed", 1, 7, file, n)?;
            } else if line.starts_with("extspeed") {
                let v = self.assignment(line, "extspeed", file, n)?;
                self.speed_ext = self.link_value(v, "extspeed", 0, 7, file, n)?;
            } else if line.starts_with("module") {
                self.parse_module(line, file, n)?;
            } else if line.starts_with("include") {
                self.parse_include(line, file, n, dir.as_deref())?;
            } else if line.starts_with("pdebug") {
                if !line.contains('=') {
                    return Err(self.err(
                        file,
                        n,
                        ErrorKind::BadAssignment {
                            key: "pdebug",
                            reason: "missing '='".into(),
                        },
                    ));
                }
            } else if line.starts_with("do") {
                return Err(self.err(
                    file,
                    n,
                    ErrorKind::Unsupported("an ibsim console command ('do ...')"),
                ));
            } else if line.starts_with('[') || line.starts_with('@') {
                return Err(self.err(file, n, ErrorKind::PortLineOutsideRecord));
            }
            // Anything else (comments, blank lines, unknown text) is
            // ignored, as ibsim ignores it.
        }
        Ok(())
    }

    /// `key=value` with a C number after the `=`.
    fn assignment(
        &self,
        line: &str,
        key: &'static str,
        file: &str,
        n: usize,
    ) -> PResult<cnum::CNum> {
        let Some(eq) = line.find('=') else {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key,
                    reason: "missing '='".into(),
                },
            ));
        };
        let v = strtoul(&line[eq + 1..], true);
        if !v.digits {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key,
                    reason: format!("no number after '=' in {line:?}"),
                },
            ));
        }
        if v.overflow {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key,
                    reason: "number does not fit in 64 bits".into(),
                },
            ));
        }
        Ok(v)
    }

    fn in_range(
        &self,
        v: cnum::CNum,
        max: u64,
        key: &'static str,
        file: &str,
        n: usize,
    ) -> PResult<u64> {
        if v.negative || v.value > max {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key,
                    reason: format!(
                        "{}{:#x} is out of range 0-{max:#x}",
                        if v.negative { "-" } else { "" },
                        v.value
                    ),
                },
            ));
        }
        Ok(v.value)
    }

    fn link_value(
        &self,
        v: cnum::CNum,
        what: &'static str,
        lo: i64,
        hi: i64,
        file: &str,
        n: usize,
    ) -> PResult<u8> {
        let value = signed(v);
        if value < lo || value > hi {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadLinkValue {
                    what,
                    value,
                    range: range_text(lo, hi),
                },
            ));
        }
        Ok(value as u8)
    }

    fn parse_guidbase(&mut self, line: &str, kind: NodeKind, file: &str, n: usize) -> PResult<()> {
        let key = match kind {
            NodeKind::Ca => "caguid",
            NodeKind::Switch => "switchguid",
            NodeKind::Router => "rtguid",
        };
        let (pos, relative) = match line.find('=') {
            Some(p) => (p, false),
            None => match line.find('+') {
                Some(p) => (p, true),
                None => {
                    return Err(self.err(
                        file,
                        n,
                        ErrorKind::BadAssignment {
                            key,
                            reason: "missing '=' or '+'".into(),
                        },
                    ))
                }
            },
        };
        let v = strtoul(&line[pos + 1..], true);
        if !v.digits || v.overflow {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key,
                    reason: format!("no 64-bit GUID after '{}'", &line[pos..=pos]),
                },
            ));
        }
        // strtoull of "-N" is 2^64 - N.
        let value = if v.negative {
            v.value.wrapping_neg()
        } else {
            v.value
        };
        let k = kind.index();
        if relative {
            self.guids[k] = self.absguids[k].wrapping_add(value);
        } else {
            self.absguids[k] = value;
            self.guids[k] = value;
        }
        Ok(())
    }

    fn parse_module(&mut self, line: &str, file: &str, n: usize) -> PResult<()> {
        let bad = |reason: &str| {
            self.err(
                file,
                n,
                ErrorKind::BadAssignment {
                    key: "module",
                    reason: reason.into(),
                },
            )
        };
        let Some(eq) = line.find('=') else {
            return Err(bad("missing '='"));
        };
        let Some((name, _)) = quoted(&line[eq + 1..]) else {
            return Err(bad("no \"quoted\" prefix"));
        };
        if name.len() > MAX_PREFIX_LEN {
            return Err(bad("prefix longer than 20 characters"));
        }
        self.prefix = name.to_owned();
        Ok(())
    }

    fn parse_include(
        &mut self,
        line: &str,
        file: &str,
        n: usize,
        dir: Option<&Path>,
    ) -> PResult<()> {
        let Some((name, _)) = quoted(line) else {
            return Err(self.err(
                file,
                n,
                ErrorKind::Include("no \"quoted\" file name".into()),
            ));
        };
        let Some(dir) = dir else {
            return Err(self.err(
                file,
                n,
                ErrorKind::Include(
                    "a topology parsed from memory cannot include files (use Topology::load)"
                        .into(),
                ),
            ));
        };
        if self.stack.len() + 1 >= MAX_INCLUDE_DEPTH {
            return Err(self.err(
                file,
                n,
                ErrorKind::Include(format!("more than {MAX_INCLUDE_DEPTH} nested files")),
            ));
        }
        let path = dir.join(name);
        let key = path.canonicalize().unwrap_or_else(|_| path.clone());
        if !self.includes.insert(key.clone()) {
            return Err(self.err(
                file,
                n,
                ErrorKind::Include(format!("{} includes itself", path.display())),
            ));
        }
        let label = path.display().to_string();
        let bytes = match self.read_file(&path, &label) {
            Ok(b) => b,
            Err(ErrorKind::Io(e)) => {
                self.includes.remove(&key);
                return Err(self.err(
                    file,
                    n,
                    ErrorKind::Include(format!("cannot read {}: {e}", path.display())),
                ));
            }
            Err(kind) => {
                self.includes.remove(&key);
                return Err(self.err(file, n, kind));
            }
        };
        self.stack.push((file.to_owned(), n));
        let r = self.parse_file_bytes(&bytes, &label, Some(path));
        self.stack.pop();
        self.includes.remove(&key);
        r
    }

    /// Parses a node header at `lines[at]` and its port lines; returns the
    /// index of the next line to read at the top level.
    fn parse_node(
        &mut self,
        lines: &[&str],
        at: usize,
        kind: NodeKind,
        file: &str,
    ) -> PResult<usize> {
        let header = lines[at];
        let n = at + 1;
        let num_ports = self.header_port_count(header, kind, file, n)?;
        let Some((raw_id, after_id)) = quoted(header) else {
            return Err(self.err(file, n, ErrorKind::NoNodeId));
        };
        let id = self.node_id(raw_id, file, n)?;
        if let Some(&other) = self.by_id.get(&id) {
            return Err(self.err(
                file,
                n,
                ErrorKind::DuplicateNodeId {
                    id,
                    first: self.nodes[other].location.clone(),
                },
            ));
        }
        let (desc, rest) = parse_node_desc(after_id);
        let k = kind.index();
        let node_guid = self.guids[k];
        if let Some(&other) = self.node_guids.get(&node_guid) {
            return Err(self.err(
                file,
                n,
                ErrorKind::DuplicateGuid {
                    guid: node_guid,
                    what: format!("node {id:?}"),
                    other: format!("node {:?}", self.nodes[other].id),
                    first: self.nodes[other].location.clone(),
                },
            ));
        }
        self.guids[k] = if kind == NodeKind::Switch {
            node_guid.wrapping_add(1)
        } else {
            node_guid.wrapping_add(u64::from(num_ports) + 1)
        };
        let description = match desc {
            Some(d) if !d.is_empty() => truncate(d, MAX_DESC_LEN),
            _ => truncate(&id, MAX_DESC_LEN),
        };
        let location = self.loc(file, n);
        let mut ports = Vec::with_capacity(usize::from(num_ports) + 1);
        for p in 0..=num_ports {
            let guid = if kind == NodeKind::Switch || p == 0 {
                node_guid
            } else {
                node_guid.wrapping_add(u64::from(p))
            };
            ports.push(TopoPort {
                num: p,
                guid,
                width_enabled: self.width,
                speed_enabled: self.speed,
                speed_ext_enabled: self.speed_ext,
                fdr10_enabled: false,
                lid: 0,
                lmc: 0,
                remote: None,
                width_active: width::W4X,
                speed_active: speed::SDR,
                speed_ext_active: 0,
                fdr10_active: false,
                location: location.clone(),
            });
        }
        let mut node = TopoNode {
            kind,
            id: id.clone(),
            description,
            num_ports,
            node_guid,
            system_image_guid: if self.sysimgguid != 0 {
                self.sysimgguid
            } else {
                node_guid
            },
            vendor_id: self.vendid,
            device_id: self.devid,
            enhanced_port0: None,
            ports,
            location,
        };
        self.vendid = 0;
        self.sysimgguid = 0;
        if kind == NodeKind::Switch {
            if let Some(rest) = rest {
                if rest.contains("enhanced port 0") {
                    node.enhanced_port0 = Some(true);
                } else if rest.contains("base port 0") {
                    node.enhanced_port0 = Some(false);
                }
                let (lid, lmc) = self.lid_and_lmc(rest, file, n)?;
                node.ports[0].lid = lid.unwrap_or(0);
                node.ports[0].lmc = lmc.unwrap_or(0);
            }
        }
        let mut pending: Vec<Option<PendingLink>> = vec![None; usize::from(num_ports) + 1];
        let mut seen: Vec<Option<Location>> = vec![None; usize::from(num_ports) + 1];
        // Port lines: at most `num_ports` of them, as ibsim reads them.
        let mut j = at + 1;
        let mut count = 0u16;
        while count < u16::from(num_ports) {
            let Some(&line) = lines.get(j) else { break };
            j += 1;
            let ln = j;
            if line.starts_with('#') {
                continue;
            }
            if !line.starts_with('[') && !line.starts_with('@') {
                if DIRECTIVES.iter().any(|d| line.starts_with(d)) {
                    return Err(self.err(
                        file,
                        ln,
                        ErrorKind::SwallowedLine {
                            text: line.to_owned(),
                        },
                    ));
                }
                break;
            }
            let (port, link) = self.parse_port(line, &mut node, file, ln)?;
            let idx = usize::from(port);
            if let Some(first) = &seen[idx] {
                return Err(self.err(
                    file,
                    ln,
                    ErrorKind::DuplicatePort {
                        port,
                        node: id,
                        first: first.clone(),
                    },
                ));
            }
            let here = self.loc(file, ln);
            node.ports[idx].location = here.clone();
            seen[idx] = Some(here);
            pending[idx] = Some(link);
            count += 1;
        }
        let index = self.nodes.len();
        self.by_id.insert(id, index);
        self.node_guids.insert(node_guid, index);
        self.nodes.push(node);
        self.pending.push(pending);
        Ok(j)
    }

    /// The port count of a header, read as ibsim reads it (first digit
    /// after the keyword's first 3 or 6 characters, C `strtoul` base 0).
    fn header_port_count(&self, header: &str, kind: NodeKind, file: &str, n: usize) -> PResult<u8> {
        let (ibsim_off, keyword) = match kind {
            NodeKind::Switch => (6, "Switch"),
            NodeKind::Ca if header.starts_with("Hca") => (3, "Hca"),
            NodeKind::Ca => (3, "Ca"),
            NodeKind::Router => (3, "Rt"),
        };
        let ibsim = header.get(ibsim_off..).map(parse_node_ports);
        let written = parse_node_ports(&header[keyword.len()..]);
        let text = || {
            header[keyword.len()..]
                .trim_start()
                .chars()
                .take_while(|c| *c != '"')
                .collect::<String>()
                .trim_end()
                .to_owned()
        };
        let Some(ibsim) = ibsim else {
            return Err(self.err(file, n, ErrorKind::BadPortCount { text: text() }));
        };
        if ibsim.value != written.value {
            return Err(self.err(
                file,
                n,
                ErrorKind::MisreadPortCount {
                    keyword,
                    written: written.value,
                    ibsim: ibsim.value,
                },
            ));
        }
        if !written.digits || written.value == 0 || written.value > 255 {
            return Err(self.err(file, n, ErrorKind::BadPortCount { text: text() }));
        }
        Ok(written.value as u8)
    }

    fn node_id(&self, raw: &str, file: &str, n: usize) -> PResult<String> {
        let bad = |reason| {
            self.err(
                file,
                n,
                ErrorKind::BadNodeId {
                    id: raw.to_owned(),
                    reason,
                },
            )
        };
        if raw.is_empty() {
            return Err(bad("empty"));
        }
        if raw.contains('#') || raw.contains('@') {
            return Err(bad("'#' and '@' are reserved"));
        }
        let id = if self.prefix.is_empty() {
            raw.to_owned()
        } else {
            format!("{}#{raw}", self.prefix)
        };
        if id.len() > MAX_NODE_ID_LEN {
            return Err(bad("longer than 64 characters (with its module prefix)"));
        }
        Ok(id)
    }

    /// `lid N` / `lmc N` anywhere in `s` (ibsim's `parse_port_lid_and_lmc`).
    fn lid_and_lmc(&self, s: &str, file: &str, n: usize) -> PResult<(Option<u16>, Option<u8>)> {
        let mut lid = None;
        let mut lmc = None;
        if let Some(p) = s.find("lid ") {
            let v = strtoul(&s[p + 4..], true);
            if v.negative || v.value > 0xFFFF {
                return Err(self.err(
                    file,
                    n,
                    ErrorKind::BadAssignment {
                        key: "lid",
                        reason: format!("{} is not a LID", &s[p + 4..].trim()),
                    },
                ));
            }
            lid = Some(v.value as u16);
        }
        if let Some(p) = s.find("lmc ") {
            let v = strtoul(&s[p + 4..], true);
            if v.negative || v.value > 7 {
                return Err(self.err(
                    file,
                    n,
                    ErrorKind::BadAssignment {
                        key: "lmc",
                        reason: format!("{} is not an LMC (0-7)", &s[p + 4..].trim()),
                    },
                ));
            }
            lmc = Some(v.value as u8);
        }
        Ok((lid, lmc))
    }

    /// One `[port] "remote"[rport] ...` line (ibsim's `parse_port`).
    fn parse_port(
        &self,
        line: &str,
        node: &mut TopoNode,
        file: &str,
        n: usize,
    ) -> PResult<(u8, PendingLink)> {
        if line.starts_with('@') {
            return Err(self.err(file, n, ErrorKind::Unsupported("a port alias ('@[port]')")));
        }
        let portnum = atoi(&line[1..]);
        if portnum < 0 || portnum > i64::from(node.num_ports) {
            return Err(self.err(
                file,
                n,
                ErrorKind::BadPortNumber {
                    port: portnum,
                    node: node.id.clone(),
                    max: node.num_ports,
                },
            ));
        }
        if portnum == 0 {
            return Err(self.err(file, n, ErrorKind::PortZero));
        }
        let port = portnum as u8;
        let Some((raw_remote, rest)) = quoted(line) else {
            return Err(self.err(file, n, ErrorKind::NoNodeId));
        };
        if raw_remote.contains('@') {
            return Err(self.err(
                file,
                n,
                ErrorKind::Unsupported("a remote port alias ('name@alias')"),
            ));
        }
        let remote = if !self.prefix.is_empty() && !raw_remote.contains('#') {
            format!("{}#{raw_remote}", self.prefix)
        } else {
            raw_remote.to_owned()
        };
        let remote_port = if let Some(after) = rest.strip_prefix('[') {
            let rp = atoi(after);
            if rp <= 0 {
                return Err(self.err(
                    file,
                    n,
                    ErrorKind::BadRemotePort {
                        text: after.chars().take_while(|c| *c != ']').collect(),
                    },
                ));
            }
            rp
        } else {
            1
        };
        let p = &mut node.ports[usize::from(port)];
        // Options: every '=' after the remote id, named by the nearest
        // letter before it (ibsim scans the rest of the line, comments
        // included).
        let rest_off = line.len() - rest.len();
        let bytes = line.as_bytes();
        let mut search = rest_off + 1;
        while let Some(rel) = line.get(search..).and_then(|s| s.find('=')) {
            let eq = search + rel;
            search = eq + 1;
            let Some(opt) = bytes[..eq].iter().rposition(u8::is_ascii_alphabetic) else {
                continue;
            };
            let value = strtoul(&line[eq + 1..], true);
            match bytes[opt] {
                b'w' => {
                    p.width_enabled = self.link_value(value, "link width (w=)", 1, 31, file, n)?
                }
                b's' => {
                    p.speed_enabled = self.link_value(value, "link speed (s=)", 1, 7, file, n)?
                }
                b'e' => {
                    p.speed_ext_enabled =
                        self.link_value(value, "extended link speed (e=)", 0, 7, file, n)?;
                }
                _ => {}
            }
        }
        if node.kind != NodeKind::Router {
            self.connection_data(rest, node.kind, p, file, n)?;
        }
        Ok((
            port,
            PendingLink {
                remote,
                remote_port,
            },
        ))
    }

    /// ibnetdiscover's `lid N WxSPEED` tail (ibsim's
    /// `parse_port_connection_data`).
    fn connection_data(
        &self,
        rest: &str,
        kind: NodeKind,
        p: &mut TopoPort,
        file: &str,
        n: usize,
    ) -> PResult<()> {
        // The regex "lid[^\"]*$": the first "lid" after the last quote.
        let tail_start = rest.rfind('"').map_or(0, |q| q + 1);
        let Some(m) = rest[tail_start..].find("lid") else {
            return Ok(());
        };
        let tail = &rest[tail_start + m..];
        if kind == NodeKind::Ca {
            let (lid, lmc) = self.lid_and_lmc(rest, file, n)?;
            if let Some(l) = lid {
                p.lid = l;
            }
            if let Some(l) = lmc {
                p.lmc = l;
            }
        }
        // sscanf(tail, "lid %d %dx%9s"); a tail that does not match is
        // ignored, as ibsim only warns.
        let Some((w, sp)) = scan_lid_width_speed(tail) else {
            return Ok(());
        };
        match w {
            12 => p.width_enabled = width::W1X | width::W4X | width::W12X,
            8 => p.width_enabled = width::W8X,
            4 => p.width_enabled = width::W1X | width::W4X,
            1 => p.width_enabled = width::W1X,
            2 => p.width_enabled = width::W2X,
            _ => {}
        }
        let is = |kw: &str| kw.starts_with(sp);
        if is("SDR") {
            p.speed_enabled = speed::SDR;
        } else if is("DDR") {
            p.speed_enabled = speed::SDR | speed::DDR;
        } else if is("QDR") {
            p.speed_enabled = speed::ALL;
        } else if is("FDR") {
            p.speed_ext_enabled = speed::EXT_FDR;
            p.speed_enabled = speed::ALL;
            p.fdr10_enabled = true;
        } else if is("EDR") {
            p.speed_ext_enabled = speed::EXT_FDR | speed::EXT_EDR;
            p.speed_enabled = speed::ALL;
            p.fdr10_enabled = true;
        } else if is("HDR") {
            p.speed_ext_enabled = speed::EXT_ALL;
            p.speed_enabled = speed::ALL;
            p.fdr10_enabled = true;
        } else if is("FDR10") {
            p.speed_enabled = speed::ALL;
            p.fdr10_enabled = true;
        }
        Ok(())
    }

    /// The connect pass (ibsim's `connect_ports`): every port line must be
    /// matched by the other end's, widths and speeds must meet.
    fn finish(mut self) -> PResult<Topology> {
        let mut links = Vec::new();
        for ni in 0..self.nodes.len() {
            let first = usize::from(self.nodes[ni].first_port());
            for pi in first..self.nodes[ni].ports.len() {
                if self.nodes[ni].ports[pi].remote.is_some() {
                    continue;
                }
                let Some(link) = self.pending[ni][pi].clone() else {
                    continue;
                };
                let here = &self.nodes[ni];
                let port = pi as u8;
                let err = |kind| TopologyError {
                    location: Box::new(here.ports[pi].location.clone()),
                    kind,
                };
                let Some(&ri) = self.by_id.get(&link.remote) else {
                    return Err(err(ErrorKind::UnknownRemoteNode {
                        node: here.id.clone(),
                        port,
                        remote: link.remote.clone(),
                    }));
                };
                let remote = &self.nodes[ri];
                if link.remote_port > i64::from(remote.num_ports) {
                    return Err(err(ErrorKind::RemotePortOutOfRange {
                        node: here.id.clone(),
                        port,
                        remote: remote.id.clone(),
                        remote_port: link.remote_port,
                        remote_ports: remote.num_ports,
                    }));
                }
                let rp = link.remote_port as u8;
                if ri == ni && usize::from(rp) == pi {
                    return Err(err(ErrorKind::SelfLink {
                        node: here.id.clone(),
                        port,
                    }));
                }
                let back = self.pending[ri][usize::from(rp)].as_ref();
                let agrees =
                    back.is_some_and(|b| b.remote == here.id && b.remote_port == i64::from(port));
                if !agrees {
                    let remote_says = match back {
                        None => "lists no link".to_owned(),
                        Some(b) => format!("says {:?} port {}", b.remote, b.remote_port),
                    };
                    return Err(err(ErrorKind::OneSidedLink {
                        node: here.id.clone(),
                        port,
                        remote: remote.id.clone(),
                        remote_port: rp,
                        remote_says,
                    }));
                }
                let mine = &here.ports[pi];
                let theirs = &remote.ports[usize::from(rp)];
                let mismatch = |what, m: u8, t: u8| {
                    err(ErrorKind::LinkMismatch {
                        what,
                        node: here.id.clone(),
                        port,
                        remote: remote.id.clone(),
                        remote_port: rp,
                        mine: m,
                        theirs: t,
                    })
                };
                let w = active_width(mine.width_enabled & theirs.width_enabled)
                    .ok_or_else(|| mismatch("width", mine.width_enabled, theirs.width_enabled))?;
                let s = active_speed(mine.speed_enabled & theirs.speed_enabled)
                    .ok_or_else(|| mismatch("speed", mine.speed_enabled, theirs.speed_enabled))?;
                let e = active_speed_ext(mine.speed_ext_enabled & theirs.speed_ext_enabled);
                let f = mine.fdr10_enabled && theirs.fdr10_enabled;
                let a = PortRef { node: ni, port };
                let b = PortRef { node: ri, port: rp };
                for (r, other) in [(a, b), (b, a)] {
                    let p = &mut self.nodes[r.node].ports[usize::from(r.port)];
                    p.remote = Some(other);
                    p.width_active = w;
                    p.speed_active = s;
                    p.speed_ext_active = e;
                    p.fdr10_active = f;
                }
                links.push(TopoLink {
                    a,
                    b,
                    width: w,
                    speed: s,
                    speed_ext: e,
                });
            }
        }
        // Port GUIDs must be unique too (ibsim checks node GUIDs only).
        let mut port_guids: HashMap<u64, (usize, u8)> = HashMap::new();
        for (ni, node) in self.nodes.iter().enumerate() {
            for p in node.existing_ports() {
                if node.is_switch() && p.num > 0 {
                    continue;
                }
                if let Some(&(oi, op)) = port_guids.get(&p.guid) {
                    let other = &self.nodes[oi];
                    return Err(TopologyError {
                        location: Box::new(node.location.clone()),
                        kind: ErrorKind::DuplicateGuid {
                            guid: p.guid,
                            what: format!("node {:?} port {}", node.id, p.num),
                            other: format!("node {:?} port {op}", other.id),
                            first: other.location.clone(),
                        },
                    });
                }
                port_guids.insert(p.guid, (ni, p.num));
            }
        }
        let by_guid = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.node_guid, i))
            .collect();
        Ok(Topology {
            nodes: self.nodes,
            links,
            by_id: self.by_id,
            by_guid,
        })
    }
}

fn signed(v: cnum::CNum) -> i64 {
    let m = i64::try_from(v.value).unwrap_or(i64::MAX);
    if v.negative {
        -m
    } else {
        m
    }
}

fn range_text(lo: i64, hi: i64) -> &'static str {
    match (lo, hi) {
        (1, 31) => "1-31",
        (1, 7) => "1-7",
        (0, 7) => "0-7",
        _ => "in range",
    }
}

/// ibsim's `parse_node_ports`: skip to the first digit, then `strtoul`
/// base 0.
fn parse_node_ports(s: &str) -> cnum::CNum {
    match s.find(|c: char| c.is_ascii_digit()) {
        Some(p) => strtoul(&s[p..], true),
        None => strtoul("", true),
    }
}

/// The first `"quoted"` string of `s` and what follows its closing quote.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let open = s.find('"')?;
    let close = open + 1 + s[open + 1..].find('"')?;
    Some((&s[open + 1..close], &s[close + 1..]))
}

/// ibsim's `parse_node_desc` on the text after a header's node id:
/// the description and the rest of the line after it (`None` when ibsim
/// keeps no rest).
fn parse_node_desc(s: &str) -> (Option<&str>, Option<&str>) {
    let Some(hash) = s.find('#') else {
        return (None, Some(s));
    };
    let b = s.as_bytes();
    let mut k = hash + 1;
    while k < b.len() && is_c_space(b[k]) {
        k += 1;
    }
    let body = &s[k..];
    if let Some(q) = body.strip_prefix('"') {
        return match q.find('"') {
            Some(e) => (Some(&q[..e]), Some(&q[e + 1..])),
            None => (Some(q), None),
        };
    }
    for pat in [" enhanced port ", " base port ", " lid ", " lmc "] {
        if let Some(e) = body.find(pat) {
            return (Some(&body[..e]), Some(&body[e + 1..]));
        }
    }
    (Some(body), None)
}

/// `sscanf(s, "lid %d %dx%9s")`: the width and speed text, if all three
/// conversions succeed.
fn scan_lid_width_speed(s: &str) -> Option<(i64, &str)> {
    let rest = s.strip_prefix("lid")?;
    let (_, rest) = scan_int(rest)?;
    let (w, rest) = scan_int(rest)?;
    let rest = rest.strip_prefix('x')?;
    let rest = rest.trim_start_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    let end = rest
        .char_indices()
        .find(|(_, c)| c.is_ascii() && is_c_space(*c as u8))
        .map_or(rest.len(), |(i, _)| i);
    let word = &rest[..end];
    if word.is_empty() {
        return None;
    }
    // %9s keeps at most 9 characters.
    let cut = word.char_indices().nth(9).map_or(word.len(), |(i, _)| i);
    Some((w, &word[..cut]))
}

/// `%d`: white space, optional sign, at least one decimal digit.
fn scan_int(s: &str) -> Option<(i64, &str)> {
    let t = s.trim_start_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    let (neg, digits) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    let v: i64 = digits[..end].parse().unwrap_or(i64::MAX);
    Some((if neg { -v } else { v }, &digits[end..]))
}

fn truncate(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// The widest width in `common` (12X, 8X, 4X, 2X, 1X).
fn active_width(common: u8) -> Option<u8> {
    [width::W12X, width::W8X, width::W4X, width::W2X, width::W1X]
        .into_iter()
        .find(|w| common & w != 0)
}

/// The fastest speed in `common` (QDR, DDR, SDR).
fn active_speed(common: u8) -> Option<u8> {
    [speed::QDR, speed::DDR, speed::SDR]
        .into_iter()
        .find(|s| common & s != 0)
}

/// The fastest extended speed in `common` (HDR, EDR, FDR), else 0.
fn active_speed_ext(common: u8) -> u8 {
    [speed::EXT_HDR, speed::EXT_EDR, speed::EXT_FDR]
        .into_iter()
        .find(|s| common & s != 0)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
