//! Reading files with a size limit.
//!
//! Every file the stack and its tools read whole (topologies, node-name
//! maps, hex input, pcap captures) is read through [`read_limited`] or
//! [`read_to_end_limited`], which read with [`Read::take`]: an endless
//! file (`/dev/zero`, a FIFO whose writer never stops) stops at the limit
//! with an error instead of filling memory. Each kind of file documents
//! its own limit where it is read.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// One mebibyte, for writing limits.
pub const MIB: u64 = 1 << 20;

/// The error for input longer than `limit` bytes: kind
/// [`io::ErrorKind::InvalidData`], the message naming the limit (the
/// caller adds the file's name).
#[must_use]
pub fn too_large(limit: u64, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("larger than {}, the limit for {what}", describe_size(limit)),
    )
}

/// `limit` in bytes, with its MiB / KiB form when it is a whole number of
/// them: "67108864 bytes (64 MiB)".
#[must_use]
pub fn describe_size(limit: u64) -> String {
    if limit >= MIB && limit & (MIB - 1) == 0 {
        format!("{limit} bytes ({} MiB)", limit / MIB)
    } else if limit >= 1024 && limit & 1023 == 0 {
        format!("{limit} bytes ({} KiB)", limit / 1024)
    } else {
        format!("{limit} bytes")
    }
}

/// Appends all of `r` to `buf`, reading at most `limit` bytes of it.
///
/// # Errors
/// The read's I/O error, or [`too_large`] (`what` names the kind of
/// input) when `r` holds more than `limit` bytes; `buf` then holds the
/// first `limit` bytes and nothing more was read.
pub fn read_to_end_limited<R: Read>(
    r: R,
    limit: u64,
    what: &str,
    buf: &mut Vec<u8>,
) -> io::Result<()> {
    let start = buf.len();
    r.take(limit.saturating_add(1)).read_to_end(buf)?;
    if (buf.len() - start) as u64 > limit {
        buf.truncate(start + usize::try_from(limit).unwrap_or(usize::MAX));
        return Err(too_large(limit, what));
    }
    Ok(())
}

/// Reads the file at `path`, at most `limit` bytes of it.
///
/// # Errors
/// As [`std::fs::read`], or [`too_large`] when the file holds more than
/// `limit` bytes (a FIFO or a character device is read until then, never
/// further).
pub fn read_limited(path: &Path, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    read_to_end_limited(File::open(path)?, limit, what, &mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_endless_file_stops_at_the_limit_with_an_error_naming_it() {
        let e = read_limited(Path::new("/dev/zero"), 4096, "a test file").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            e.to_string(),
            "larger than 4096 bytes (4 KiB), the limit for a test file"
        );
    }

    #[test]
    fn input_of_exactly_the_limit_is_read_and_one_byte_more_is_refused() {
        let mut buf = Vec::new();
        read_to_end_limited(&[7u8; 100][..], 100, "x", &mut buf).unwrap();
        assert_eq!(buf.len(), 100);
        let mut buf = Vec::new();
        assert!(read_to_end_limited(&[7u8; 101][..], 100, "x", &mut buf).is_err());
        assert_eq!(buf.len(), 100, "nothing past the limit is kept");
    }
}
