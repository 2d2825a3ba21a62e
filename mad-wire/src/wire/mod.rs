//! Wire formats: zero-copy views over MAD buffers plus lossless `Repr`
//! structures with `parse` / `emit`.
//!
//! # Design
//! - Views such as [`Mad`] wrap any `T: AsRef<[u8]>` (and `AsMut` for
//!   setters). `new_checked` validates the length once; after that no
//!   accessor can panic.
//! - Every header, attribute and SA record is also a plain struct built by
//!   [`wire_struct!`](crate::wire_struct): public fields, `parse`, `emit`,
//!   and a reflective field table with the labels infiniband-diags prints.
//!   Reserved bit ranges are kept as `reserved*` fields, so parsing and
//!   emitting is lossless: `emit(parse(b)) == b` for any `b`.
//! - A header's view accessors come from the same declaration: the
//!   `wire_struct!` of [`MadHeader`] also writes [`Mad`]'s getters and
//!   setters (likewise `RmppHeader` / `RmppView`, `SaHeader` / `SaMad`,
//!   `DrSmpRepr` / `Smp`, `VendorHeader` / `VendorMad`), so each field's
//!   bit range is written once.
//! - Wire enums ([`MgmtClass`], [`Method`], [`AttributeId`], ...) are
//!   newtypes over the integer, so unknown values survive.
//!
//! # Panics
//! Nothing in this module panics on any input. A short or inconsistent
//! buffer yields an [`Error`] naming the structure, the field and why.
//!
//! ```
//! use mad_wire::wire::{MadHeader, MgmtClass, Method, AttributeId, Repr};
//! let hdr = MadHeader {
//!     base_version: 1,
//!     mgmt_class: MgmtClass::SUBN_LID_ROUTED,
//!     class_version: 1,
//!     method: Method::GET,
//!     tid: 0x1234,
//!     attr_id: AttributeId::NODE_INFO,
//!     ..MadHeader::default()
//! };
//! let mut buf = [0u8; 256];
//! hdr.emit(&mut buf).unwrap();
//! assert_eq!(MadHeader::parse(&buf).unwrap(), hdr);
//! ```

pub mod attr;
mod bytes;
pub mod cc;
pub mod cm;
pub mod decode;
pub mod enums;
pub mod field;
pub mod mad;
pub mod openib;
pub mod perf;
pub mod rmpp;
pub mod sa;
pub mod sa_records;
pub mod smp;
pub mod vendor;

pub use enums::{AttributeId, MadStatus, Method, MgmtClass, METHOD_RESPONSE_BIT};
pub use field::{FieldDesc, FieldKind, FieldValue, Fields, Repr};
pub use mad::{Mad, MadHeader};

/// Every IB MAD is exactly this many bytes (UD payload).
pub const MAD_LEN: usize = 256;
/// Length of the common MAD header.
pub const MAD_HEADER_LEN: usize = 24;
/// Where the RMPP header ends (common header + 12).
pub const RMPP_HEADER_END: usize = 36;
/// Where vendor range-2 class data starts.
pub const VENDOR_DATA_OFFSET: usize = 40;
/// Where SA data starts.
pub const SA_DATA_OFFSET: usize = 56;
/// Where SMP and PerfMgt attribute data starts.
pub const SMP_DATA_OFFSET: usize = 64;
/// Bytes of SMP attribute data.
pub const SMP_DATA_LEN: usize = 64;
/// Bytes of SA data in one MAD.
pub const SA_DATA_LEN: usize = 200;

/// Why a buffer could not be parsed or emitted.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer is shorter than the structure.
    #[error("{what}: truncated: {got} bytes, need at least {need}")]
    Truncated {
        /// Structure being read or written.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        got: usize,
    },
    /// A field's value does not fit its bit range (emit).
    #[error("{what}.{field}: value {value:#x} does not fit in {bits} bits")]
    FieldOverflow {
        /// Structure.
        what: &'static str,
        /// Field.
        field: &'static str,
        /// Offending value.
        value: u64,
        /// Width of the field.
        bits: u32,
    },
    /// A field holds a value that is inconsistent with the rest.
    #[error("{what}.{field}: {reason} (value {value:#x})")]
    Invalid {
        /// Structure.
        what: &'static str,
        /// Field.
        field: &'static str,
        /// Offending value.
        value: u64,
        /// Why it is wrong.
        reason: &'static str,
    },
}
