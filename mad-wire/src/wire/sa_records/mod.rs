//! SA records (class 0x03 attributes) as lossless [`Repr`] structures.
//!
//! Every record is a [`wire_struct!`](crate::wire_struct) whose field table
//! covers all of its bits; records that carry an SMP attribute (NodeRecord,
//! PortInfoRecord, ...) embed the [`crate::wire::attr`] structure as a
//! nested field. Each record also implements [`SaRecord`]:
//!
//! - [`SaRecord::ATTR_ID`]: the SA attribute ID;
//! - [`SaRecord::PADDED_LEN`]: the record's stride in a GetTable response
//!   (a multiple of 8; `AttributeOffset = PADDED_LEN / 8`), which may exceed
//!   [`Repr::LEN`], the bytes the record really defines;
//! - [`SaRecord::COMPONENTS`]: the name of ComponentMask bit *n* at index
//!   *n*. The bits themselves are associated constants on each record
//!   (`PathRecord::COMP_DGID`, ...), as host-order `u64` values (`1 << n`);
//!   the SA header carries the mask big-endian.
//!
//! Components are numbered in record field order, reserved fields included,
//! as in opensm's `IB_*_COMPMASK_*` (`/usr/include/infiniband/iba/ib_types.h`)
//! and the IBA tables (python-rdma `IBA_struct.py`, generated from them).
//!
//! ```
//! use mad_wire::wire::Repr;
//! use mad_wire::wire::sa_records::{PathRecord, SaRecord};
//! let pr = PathRecord { dlid: 7, slid: 1, sl: 3, numb_path: 1, ..PathRecord::default() };
//! let bytes = pr.to_vec().unwrap();
//! assert_eq!(bytes[53] & 0x0F, 3);
//! assert_eq!(PathRecord::parse(&bytes).unwrap(), pr);
//! let mask = PathRecord::COMP_DLID | PathRecord::COMP_SLID | PathRecord::COMP_NUMB_PATH;
//! assert_eq!(PathRecord::component_names(mask), ["DLID", "SLID", "NumbPath"]);
//! assert_eq!(PathRecord::PADDED_LEN, 64);
//! ```

use super::field::{Fields, Repr};
use super::{AttributeId, Error};

/// An SA record: a [`Repr`] with its attribute ID, GetTable stride and
/// ComponentMask bit names.
pub trait SaRecord: Repr {
    /// SA attribute ID (MAD bytes 16–17).
    const ATTR_ID: AttributeId;
    /// Stride of the record in a GetTable response: [`Repr::LEN`] rounded
    /// up to a multiple of 8 (as opensm sizes its record structs).
    const PADDED_LEN: usize;
    /// `COMPONENTS[n]` names ComponentMask bit `n` (`1 << n`); reserved
    /// components are named `"reserved"`.
    const COMPONENTS: &'static [&'static str];
    /// The SA header's AttributeOffset for a GetTable of these records.
    const ATTR_OFFSET: u16 = (Self::PADDED_LEN / 8) as u16;

    /// Names of the components whose bits are set in `mask` (host order),
    /// lowest bit first. Bits beyond [`SaRecord::COMPONENTS`] are ignored.
    #[must_use]
    fn component_names(mask: u64) -> Vec<&'static str> {
        Self::COMPONENTS
            .iter()
            .enumerate()
            .filter(|(n, _)| *n < 64 && mask & (1u64 << n) != 0)
            .map(|(_, name)| *name)
            .collect()
    }
}

crate::wire_enum! {
    /// Selector in the top two bits of the MTU, Rate and PacketLifeTime
    /// bytes of PathRecord and MCMemberRecord (opensm `IB_PATH_SELECTOR_*`).
    pub struct Selector(u8) {
        /// Greater than the given value.
        GREATER_THAN = 0 => "GreaterThan",
        /// Less than the given value.
        LESS_THAN = 1 => "LessThan",
        /// Exactly the given value.
        EXACTLY = 2 => "Exactly",
        /// Largest available (smallest for PacketLifeTime).
        BEST = 3 => "Best",
    }
}

/// Declares the component-mask constants and the [`SaRecord`] impl of a
/// record, and checks at compile time that the bits run 0, 1, 2, ... and
/// that the padded length is the record length rounded up to 8.
macro_rules! sa_record {
    (
        $ty:ident, $attr:expr, padded $pad:expr;
        $( $bit:literal $cname:ident => $clabel:literal ),* $(,)?
    ) => {
        impl $ty {
            $(
                #[doc = concat!("ComponentMask bit ", stringify!($bit), ": `", $clabel, "`.")]
                pub const $cname: u64 = 1u64 << $bit;
            )*
        }

        impl $crate::wire::sa_records::SaRecord for $ty {
            const ATTR_ID: $crate::wire::AttributeId = $attr;
            const PADDED_LEN: usize = $pad;
            const COMPONENTS: &'static [&'static str] = &[$($clabel),*];
        }

        const _: () = {
            let bits: &[u32] = &[$($bit),*];
            let mut i = 0;
            while i < bits.len() {
                assert!(bits[i] as usize == i, "component bits must be 0, 1, 2, ...");
                i += 1;
            }
            assert!(bits.len() <= 64);
            let len = <$ty as $crate::wire::field::Repr>::LEN;
            assert!($pad & 7 == 0 && $pad >= len && $pad - len < 8);
        };
    };
}

mod fwd;
mod guid;
mod inform;
mod link;
mod mcmember;
mod multipath;
mod node;
mod path;
mod pkey;
mod port;
mod qos;
mod service;
mod sm;
mod switch;
mod trace;

pub use fwd::{LftRecord, MftRecord};
pub use guid::GuidInfoRecord;
pub use inform::{InformInfo, InformInfoRecord};
pub use link::LinkRecord;
pub use mcmember::McMemberRecord;
pub use multipath::MultiPathRecord;
pub use node::NodeRecord;
pub use path::PathRecord;
pub use pkey::PKeyTableRecord;
pub use port::PortInfoRecord;
pub use qos::{Sl2VlRecord, VlArbRecord};
pub use service::ServiceRecord;
pub use sm::SmInfoRecord;
pub use switch::SwitchInfoRecord;
pub use trace::TraceRecord;

/// Static facts about one record type, for generic code (decoders, the
/// SA server) that only knows the attribute ID.
#[derive(Debug, Clone, Copy)]
pub struct RecordInfo {
    /// SA attribute ID.
    pub attr_id: AttributeId,
    /// The structure's name (`"PathRecord"`).
    pub name: &'static str,
    /// Bytes the record defines ([`Repr::LEN`]).
    pub len: usize,
    /// GetTable stride ([`SaRecord::PADDED_LEN`]).
    pub padded_len: usize,
    /// ComponentMask bit names ([`SaRecord::COMPONENTS`]).
    pub components: &'static [&'static str],
    /// Parses the record from the start of a buffer.
    pub parse: ParseFn,
}

/// Parses a record from the start of a buffer into a reflective box.
pub type ParseFn = fn(&[u8]) -> Result<Box<dyn Fields>, Error>;

impl RecordInfo {
    fn of<R: SaRecord + Fields + 'static>() -> Self {
        Self {
            attr_id: R::ATTR_ID,
            name: R::NAME,
            len: R::LEN,
            padded_len: R::PADDED_LEN,
            components: R::COMPONENTS,
            parse: |b| R::parse(b).map(|r| Box::new(r) as Box<dyn Fields>),
        }
    }
}

/// Every record type of this module, by attribute ID.
#[must_use]
pub fn all_records() -> Vec<RecordInfo> {
    vec![
        RecordInfo::of::<InformInfo>(),
        RecordInfo::of::<NodeRecord>(),
        RecordInfo::of::<PortInfoRecord>(),
        RecordInfo::of::<Sl2VlRecord>(),
        RecordInfo::of::<SwitchInfoRecord>(),
        RecordInfo::of::<LftRecord>(),
        RecordInfo::of::<MftRecord>(),
        RecordInfo::of::<SmInfoRecord>(),
        RecordInfo::of::<LinkRecord>(),
        RecordInfo::of::<GuidInfoRecord>(),
        RecordInfo::of::<ServiceRecord>(),
        RecordInfo::of::<PKeyTableRecord>(),
        RecordInfo::of::<PathRecord>(),
        RecordInfo::of::<VlArbRecord>(),
        RecordInfo::of::<McMemberRecord>(),
        RecordInfo::of::<TraceRecord>(),
        RecordInfo::of::<MultiPathRecord>(),
        RecordInfo::of::<InformInfoRecord>(),
    ]
}

/// The record type carried by SA attribute `attr_id`, if this module
/// knows it.
#[must_use]
pub fn record_info(attr_id: AttributeId) -> Option<RecordInfo> {
    all_records().into_iter().find(|r| r.attr_id == attr_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_table_has_one_entry_per_attribute_id_with_consistent_sizes() {
        let all = all_records();
        for (i, r) in all.iter().enumerate() {
            assert!(
                all[i + 1..].iter().all(|o| o.attr_id != r.attr_id),
                "duplicate attribute id {:?}",
                r.attr_id
            );
            assert_eq!(r.padded_len % 8, 0, "{}", r.name);
            assert!(
                r.padded_len >= r.len && r.padded_len - r.len < 8,
                "{}",
                r.name
            );
            let zeros = vec![0u8; r.len];
            let parsed = (r.parse)(&zeros).unwrap();
            assert_eq!(parsed.struct_name(), r.name);
            assert!((r.parse)(&zeros[..r.len - 1]).is_err(), "{}", r.name);
        }
    }

    #[test]
    fn record_info_finds_records_by_sa_attribute_id() {
        let pr = record_info(AttributeId::SA_PATH_RECORD).unwrap();
        assert_eq!((pr.name, pr.len, pr.padded_len), ("PathRecord", 64, 64));
        let mcr = record_info(AttributeId::SA_MCMEMBER_RECORD).unwrap();
        assert_eq!((mcr.len, mcr.padded_len), (52, 56));
        assert!(record_info(AttributeId(0x7777)).is_none());
    }

    #[test]
    fn component_names_lists_set_bits_in_bit_order() {
        let m = McMemberRecord::COMP_JOIN_STATE | McMemberRecord::COMP_MGID | (1 << 63);
        assert_eq!(McMemberRecord::component_names(m), ["MGID", "JoinState"]);
        assert_eq!(McMemberRecord::component_names(0), Vec::<&str>::new());
    }

    #[test]
    fn selector_names_follow_opensm() {
        assert_eq!(Selector(2).name(), Some("Exactly"));
        assert_eq!(Selector::BEST.0, 3);
    }
}
