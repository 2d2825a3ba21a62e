//! # mad-wire
//!
//! The wire formats of madstack, a user-space InfiniBand MAD stack: every
//! MAD the stack speaks as a zero-copy view and as a lossless `Repr`
//! ([`wire`]), the UD address a MAD is sent to or received from
//! ([`addr`]), pcap captures that Wireshark / tshark decode ([`pcap`]),
//! and bounded reads of whole files ([`limits`]).
//!
//! This crate is pure data: no `unsafe`, no transports, no clocks. The
//! RMPP state machines (`mad-rmpp`) and the fuzz targets depend on it
//! alone; `mad-core` adds the transports and the port layer on top and
//! re-exports these modules at their old paths.
//!
//! Parsing never panics; all structures are lossless
//! (`emit(parse(bytes)) == bytes`).
//!
//! ```
//! use mad_wire::wire::{AttributeId, Mad, MadHeader, MgmtClass, Method, Repr, MAD_LEN};
//! // Emit a header into a MAD ...
//! let hdr = MadHeader {
//!     base_version: 1,
//!     mgmt_class: MgmtClass::SUBN_LID_ROUTED,
//!     class_version: 1,
//!     method: Method::GET,
//!     tid: 0x1234,
//!     attr_id: AttributeId::NODE_INFO,
//!     ..MadHeader::default()
//! };
//! let mut buf = [0u8; MAD_LEN];
//! hdr.emit(&mut buf).unwrap();
//! // ... read it back through the zero-copy view ...
//! let mad = Mad::new_checked(&buf[..]).unwrap();
//! assert_eq!(mad.mgmt_class(), MgmtClass::SUBN_LID_ROUTED);
//! assert_eq!(mad.tid(), 0x1234);
//! assert!(!mad.is_response());
//! // ... and as a `Repr`: parsing is lossless.
//! assert_eq!(MadHeader::parse(&buf).unwrap(), hdr);
//! // A short buffer is an error, not a panic.
//! assert!(Mad::new_checked(&buf[..10]).is_err());
//! ```
#![forbid(unsafe_code)]

pub mod addr;
pub mod limits;
pub mod pcap;
pub mod wire;
