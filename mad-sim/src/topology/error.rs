//! Why a topology file is refused: [`TopologyError`] names the place, [`ErrorKind`] the reason.

use super::{Location, MAX_LINE_LEN};

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
    /// [`TopologyLimits`](super::TopologyLimits); `file` is where it did (the location is the
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
