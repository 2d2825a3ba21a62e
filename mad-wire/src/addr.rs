//! Where a MAD goes or comes from: the UD address of a send or a receive
//! ([`Address`], with its optional [`Grh`]), as a verbs address handle
//! describes it.
//!
//! ```
//! use mad_wire::addr::{Address, GSI_QKEY, PERMISSIVE_LID};
//! let sa = Address::gsi(1);
//! assert_eq!((sa.qpn, sa.qkey), (1, GSI_QKEY));
//! let dr = Address::smi(PERMISSIVE_LID);
//! assert_eq!((dr.qpn, dr.qkey), (0, 0));
//! ```

pub use crate::wire::smp::PERMISSIVE_LID;

/// The GSI's well-known Q_Key.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// Global route header fields for a send or a receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Grh {
    /// Destination GID (send) / source GID (receive).
    pub gid: [u8; 16],
    /// Local GID index (send).
    pub sgid_index: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
}

/// A UD address: where a send goes, or where a receive came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Address {
    /// Destination LID (send) or source LID (receive).
    pub lid: u16,
    /// Remote QP number (send) or source QP (receive).
    pub qpn: u32,
    /// Q_Key (0 on QP0, [`GSI_QKEY`] for QP1 peers).
    pub qkey: u32,
    /// Service level.
    pub sl: u8,
    /// P_Key table index to send with (receive: the index it matched).
    pub pkey_index: u16,
    /// Source path bits (LMC).
    pub path_bits: u8,
    /// Optional GRH.
    pub grh: Option<Grh>,
}

impl Address {
    /// An SMP destination: QP0 at `lid` (use [`PERMISSIVE_LID`] for
    /// directed route).
    #[must_use]
    pub fn smi(lid: u16) -> Self {
        Self {
            lid,
            qpn: 0,
            qkey: 0,
            ..Self::default()
        }
    }
    /// A GSI destination: QP1 at `lid` with the well-known Q_Key.
    #[must_use]
    pub fn gsi(lid: u16) -> Self {
        Self {
            lid,
            qpn: 1,
            qkey: GSI_QKEY,
            ..Self::default()
        }
    }
}
