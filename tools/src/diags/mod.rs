//! Output formats of infiniband-diags 44 (rdma-core v44.0), as pure
//! functions from mad-core `Repr` values to text.
//!
//! Nothing here sends a MAD: callers fetch attributes however they like
//! and pass them in; the functions return exactly the bytes the C tools
//! write to stdout for the same attribute contents, quirks included
//! (each reproduced quirk is commented where it is implemented):
//!
//! - [`dump`]: libibmad's value formatters (`mad_dump_*`) and the
//!   `Name:......value` field line;
//! - [`smp`]: `smpquery` (nodeinfo, portinfo, switchinfo, pkeys, sl2vl,
//!   vlarb, nodedesc, guids, mlnxextportinfo) and `sminfo`;
//! - [`perf`]: `perfquery` (basic, `-x`, and the `-a` aggregates);
//! - [`sa`]: `saquery` record dumps, node lists and ClassPortInfo.
//!
//! Destinations are described by [`PortIdText`], libibmad's
//! `portid2str`.
//!
//! ```
//! use mad_core::wire::attr::NodeDescription;
//! use mad_tools::diags::{smp, PortIdText};
//! assert_eq!(PortIdText::dr(&[0, 1]).to_string(), "DR path slid 65535; dlid 65535; 0,1");
//! assert_eq!(PortIdText::lid(4).to_string(), "Lid 4");
//! let nd = NodeDescription::from_text("Hca1");
//! assert_eq!(
//!     smp::format_nodedesc(&nd),
//!     "Node Description:............................Hca1\n"
//! );
//! ```

use std::fmt;

pub mod cc;
pub mod dump;
pub mod openib;
pub mod perf;
pub mod sa;
pub mod smp;

/// A destination as libibmad's `portid2str` prints it: `Lid N` (with
/// ` Gid G` when a GRH is used), `DR path slid S; dlid D; p0,p1,...`, or
/// both for a combined route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortIdText {
    /// Destination LID; 0 for a pure directed route.
    pub lid: u16,
    /// Destination GID when the query carries a GRH.
    pub gid: Option<[u8; 16]>,
    /// Directed-route SLID (`drslid`; 65535 for a plain `-D` path).
    pub drslid: u16,
    /// Directed-route DLID (`drdlid`; 65535 for a plain `-D` path).
    pub drdlid: u16,
    /// The path entries `p[0..=hops]` as the user gave them: for
    /// `-D 0,1,3` this is `[0, 1, 3]`. Empty means none (a LID route).
    pub path: Vec<u8>,
}

impl PortIdText {
    /// A LID-routed destination.
    #[must_use]
    pub fn lid(lid: u16) -> Self {
        Self {
            lid,
            gid: None,
            drslid: 0,
            drdlid: 0,
            path: Vec::new(),
        }
    }

    /// A directed route as `-D p0,p1,...` gives it (`str2drpath` with
    /// permissive SLID/DLID 65535).
    #[must_use]
    pub fn dr(path: &[u8]) -> Self {
        Self {
            lid: 0,
            gid: None,
            drslid: 0xFFFF,
            drdlid: 0xFFFF,
            path: path.to_vec(),
        }
    }

    /// Hop count (`drpath.cnt`): path entries after `p[0]`.
    #[must_use]
    pub fn hops(&self) -> usize {
        self.path.len().saturating_sub(1)
    }
}

impl fmt::Display for PortIdText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lid > 0 {
            write!(f, "Lid {}", self.lid)?;
            if let Some(g) = &self.gid {
                write!(f, " Gid {}", dump::inet_ntop6(g))?;
            }
            if self.hops() == 0 {
                return Ok(());
            }
            f.write_str(" ")?;
        }
        write!(
            f,
            "DR path slid {}; dlid {}; {}",
            self.drslid,
            self.drdlid,
            self.path.first().copied().unwrap_or(0)
        )?;
        for p in self.path.iter().skip(1) {
            write!(f, ",{p}")?;
        }
        Ok(())
    }
}

/// The line `IBEXIT` prints on stdout before a tool exits with status 255:
/// `PROG: iberror: failed: MESSAGE`.
#[must_use]
pub fn format_iberror(prog: &str, message: &str) -> String {
    format!("{prog}: iberror: failed: {message}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portid_text_matches_portid2str() {
        assert_eq!(PortIdText::lid(1).to_string(), "Lid 1");
        assert_eq!(
            PortIdText::dr(&[0]).to_string(),
            "DR path slid 65535; dlid 65535; 0"
        );
        assert_eq!(
            PortIdText::dr(&[0, 1, 3]).to_string(),
            "DR path slid 65535; dlid 65535; 0,1,3"
        );
        let combined = PortIdText {
            lid: 6,
            gid: None,
            drslid: 6,
            drdlid: 0xFFFF,
            path: vec![0, 12],
        };
        assert_eq!(
            combined.to_string(),
            "Lid 6 DR path slid 6; dlid 65535; 0,12"
        );
        let mut g = PortIdText::lid(2);
        let mut gid = [0u8; 16];
        gid[0] = 0xfe;
        gid[1] = 0x80;
        gid[15] = 1;
        g.gid = Some(gid);
        assert_eq!(g.to_string(), "Lid 2 Gid fe80::1");
    }

    #[test]
    fn iberror_line() {
        assert_eq!(
            format_iberror("smpquery", "operation switchinfo: switch info query failed"),
            "smpquery: iberror: failed: operation switchinfo: switch info query failed\n"
        );
    }
}
