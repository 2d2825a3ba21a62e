//! [`DrPath`]: a directed route as `smpquery -D` takes it.

use core::fmt;
use core::str::FromStr;

use super::layout::Smp;
use super::layout::{DR_MAX_HOPS, DR_PATH_LEN, PERMISSIVE_LID};
use crate::wire::{AttributeId, Error, Method, MgmtClass, MAD_LEN};

/// A directed route: the egress port at each hop, plus DrSLID / DrDLID.
///
/// Parsed from the comma-separated form `smpquery -D` and libibmad's
/// `str2drpath` take: `"0,1,3"` is entry 0 (unused, conventionally 0)
/// followed by the egress ports of hops 1 and 2, so HopCount = 2; `"0"`
/// is the local port (HopCount 0). DrSLID and DrDLID default to the
/// permissive LID.
#[derive(Clone, PartialEq, Eq)]
pub struct DrPath {
    path: [u8; DR_PATH_LEN],
    hop_cnt: u8,
    /// DrSLID (0xFFFF unless the route starts LID-routed).
    pub dr_slid: u16,
    /// DrDLID (0xFFFF unless the route ends LID-routed).
    pub dr_dlid: u16,
}

impl Default for DrPath {
    fn default() -> Self {
        Self::local()
    }
}

impl fmt::Debug for DrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DrPath({self}, slid {:#06x}, dlid {:#06x})",
            self.dr_slid, self.dr_dlid
        )
    }
}

impl DrPath {
    /// The local port: HopCount 0.
    #[must_use]
    pub fn local() -> Self {
        Self {
            path: [0; DR_PATH_LEN],
            hop_cnt: 0,
            dr_slid: PERMISSIVE_LID,
            dr_dlid: PERMISSIVE_LID,
        }
    }

    /// A route through `hops`: the egress port of hop 1, 2, ... (entry 0
    /// is not included and is 0).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming `hop_cnt` for more than 63 hops.
    pub fn from_hops(hops: &[u8]) -> Result<Self, Error> {
        if hops.len() > usize::from(DR_MAX_HOPS) {
            return Err(Error::Invalid {
                what: "DrPath",
                field: "hop_cnt",
                value: hops.len() as u64,
                reason: "a directed route has at most 63 hops",
            });
        }
        let mut p = Self::local();
        p.path[1..=hops.len()].copy_from_slice(hops);
        p.hop_cnt = hops.len() as u8;
        Ok(p)
    }

    /// Sets DrSLID and DrDLID.
    #[must_use]
    pub fn with_lids(mut self, dr_slid: u16, dr_dlid: u16) -> Self {
        self.dr_slid = dr_slid;
        self.dr_dlid = dr_dlid;
        self
    }

    /// HopCount.
    #[must_use]
    pub fn hop_cnt(&self) -> u8 {
        self.hop_cnt
    }

    /// The egress ports of hops 1..=HopCount.
    #[must_use]
    pub fn hops(&self) -> &[u8] {
        &self.path[1..=usize::from(self.hop_cnt)]
    }

    /// The full 64-entry InitialPath as sent (entry 0 included).
    #[must_use]
    pub fn initial_path(&self) -> &[u8; DR_PATH_LEN] {
        &self.path
    }

    /// Writes the requester's routing fields into `smp`: HopCount,
    /// HopPointer 0, D = 0 (the status is kept), DrSLID, DrDLID,
    /// InitialPath, and a zeroed ReturnPath. Other fields are untouched.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer lacks the paths (< 256 bytes).
    pub fn write_route<T: AsRef<[u8]> + AsMut<[u8]>>(&self, smp: &mut Smp<T>) -> Result<(), Error> {
        if !smp.has_paths() {
            return Err(Error::Truncated {
                what: "DrSMP",
                need: MAD_LEN,
                got: smp.as_bytes().len(),
            });
        }
        smp.set_hop_cnt(self.hop_cnt);
        smp.set_hop_ptr(0);
        smp.set_direction(false);
        smp.set_dr_slid(self.dr_slid);
        smp.set_dr_dlid(self.dr_dlid);
        smp.initial_path_mut().copy_from_slice(&self.path);
        smp.return_path_mut().fill(0);
        Ok(())
    }

    /// A complete DR request: base version 1, class 0x81, class version 1,
    /// `method`, status 0, the route, `tid`, `attr_id`, `attr_mod` and
    /// `m_key`; data zero.
    #[must_use]
    pub fn build_request(
        &self,
        method: Method,
        attr_id: AttributeId,
        attr_mod: u32,
        tid: u64,
        m_key: u64,
    ) -> [u8; MAD_LEN] {
        let mut smp = Smp::new_unchecked([0u8; MAD_LEN]);
        {
            let mut m = smp.mad_mut();
            m.set_request(MgmtClass::SUBN_DIRECTED_ROUTE, 1, method, attr_id, attr_mod);
            m.set_tid(tid);
        }
        smp.set_m_key(m_key);
        // Cannot fail: the buffer has 256 bytes.
        let _ = self.write_route(&mut smp);
        smp.into_inner()
    }
}

impl fmt::Display for DrPath {
    /// The `smpquery -D` form, entry 0 included: `0,1,3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.path[..=usize::from(self.hop_cnt)].iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl FromStr for DrPath {
    type Err = Error;

    /// Parses `"0,1,3"` (see the type docs). Each element is a decimal port
    /// number 0–255, surrounding spaces allowed; entry 0 is kept as given.
    fn from_str(s: &str) -> Result<Self, Error> {
        let mut p = Self::local();
        let mut n = 0usize;
        for (i, part) in s.split(',').enumerate() {
            let port: u8 = part.trim().parse().map_err(|_| Error::Invalid {
                what: "DrPath",
                field: "path",
                value: i as u64,
                reason: "path element is not a port number 0-255",
            })?;
            if i >= DR_PATH_LEN {
                return Err(Error::Invalid {
                    what: "DrPath",
                    field: "hop_cnt",
                    value: i as u64,
                    reason: "a directed route has at most 63 hops",
                });
            }
            p.path[i] = port;
            n = i;
        }
        p.hop_cnt = n as u8;
        Ok(p)
    }
}
