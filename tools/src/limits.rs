//! Size limits on the files `mad` reads (issue 13).
//!
//! Every file a command reads whole is read with [`Read::take`]
//! ([`mad_core::limits`]), so an endless input (`/dev/zero`, a FIFO whose
//! writer never stops, an endless standard input) stops at its limit with
//! an error naming the file and the limit instead of filling memory:
//!
//! | input | limit |
//! |---|---|
//! | `mad decode` hex text or pcap file, or its standard input | [`MAX_DECODE_INPUT_LEN`] (64 MiB) |
//! | node name maps (`--node-name-map`, the default map) | [`MAX_NODE_NAME_MAP_LEN`] (16 MiB) |
//! | topology files (`--sim FILE`, `ibhosts` / `ibswitches` topology) | [`mad_sim::topology::MAX_TOPOLOGY_BYTES`] (64 MiB, includes included) |
//! | ibnetdiscover cache files (`--load-cache`, `--diff`, `ibcacheedit`; the header is checked before the rest is read) | [`MAX_CACHE_FILE_LEN`] (128 MiB) |
//! | `ibtracert --ports-file` | [`MAX_PORTS_FILE_LEN`] (16 MiB) |
//! | the ibdiag configuration file | [`MAX_CONFIG_FILE_LEN`] (1 MiB) |
//! | the time-zone file (`ctime` in `ibnetdiscover` output) | [`MAX_ZONE_FILE_LEN`] (1 MiB) |
//! | `mad sim --script FILE` and its console on standard input (read line by line, a session may be long) | [`mad_sim::console::MAX_COMMAND_LINE`] (4096 bytes) a line |
//!
//! [`Read::take`]: std::io::Read::take

use std::io;
use std::path::Path;

use mad_core::limits::MIB;

/// `mad decode` input, hex text or pcap, from a file or standard input.
pub const MAX_DECODE_INPUT_LEN: u64 = 64 * MIB;
/// A node name map: `GUID "name"` lines (a fabric of 100 000 nodes needs
/// about 5 MiB).
pub const MAX_NODE_NAME_MAP_LEN: u64 = 16 * MIB;
/// An ibnetdiscover cache file (`--load-cache`, `--diff`, `ibcacheedit`):
/// 95 bytes a port and about 250 a node, so a fabric of 1 million ports
/// needs about 100 MiB.
pub const MAX_CACHE_FILE_LEN: u64 = 128 * MIB;
/// An `ibtracert --ports-file`.
pub const MAX_PORTS_FILE_LEN: u64 = 16 * MIB;
/// The ibdiag configuration file.
pub const MAX_CONFIG_FILE_LEN: u64 = MIB;
/// The time-zone (TZif) file read for local time.
pub const MAX_ZONE_FILE_LEN: u64 = MIB;

/// Reads the file at `path`, at most `limit` bytes of it (`what` names
/// the kind of file in the error).
///
/// # Errors
/// As [`std::fs::read`], or one naming the limit when the file is longer.
pub fn read_file(path: impl AsRef<Path>, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    mad_core::limits::read_limited(path.as_ref(), limit, what)
}

/// [`read_file`] for a text file (UTF-8, as [`std::fs::read_to_string`]).
///
/// # Errors
/// As [`read_file`], or [`io::ErrorKind::InvalidData`] for bytes that
/// are not UTF-8.
pub fn read_text(path: impl AsRef<Path>, limit: u64, what: &str) -> io::Result<String> {
    String::from_utf8(read_file(path, limit, what)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}
