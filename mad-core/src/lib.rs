//! # mad-core
//!
//! The bottom of madstack, a user-space InfiniBand MAD stack: the
//! transports ([`transport`]:
//! umad, ibsim, loopback, fault injection), the per-port QP0/QP1 layer
//! ([`port`]), and [`MadBuf`], the pooled fixed-size buffer a MAD travels
//! in. The wire formats ([`wire`]) and the pcap reader and writer
//! ([`pcap`]) live in the `mad-wire` crate and are re-exported here.
//!
//! Parsing never panics and never performs I/O; all structures are
//! lossless (`emit(parse(bytes)) == bytes`).
//!
//! ```
//! use mad_core::wire::{Mad, MgmtClass, Method};
//! let mut buf = [0u8; 256];
//! buf[0] = 1; // base version
//! buf[1] = 0x01; // SubnMgmt (LID routed)
//! buf[2] = 1;
//! buf[3] = 0x81; // GetResp
//! let mad = Mad::new_checked(&buf[..]).unwrap();
//! assert_eq!(mad.mgmt_class(), MgmtClass::SUBN_LID_ROUTED);
//! assert!(mad.is_response());
//! assert_eq!(mad.method(), Method::GET);
//! ```
//!
//! The wire macros work through this crate's paths too:
//!
//! ```
//! use mad_core::wire::Repr;
//! mad_core::wire_struct! {
//!     /// A 16-bit example.
//!     pub struct Pair ("Pair", 2) {
//!         /// High nibble.
//!         hi: uint u8 [0, 4] => "Hi",
//!         /// Low 12 bits.
//!         lo: uint u16 [4, 12] => "Lo",
//!     }
//! }
//! let p = Pair::parse(&[0xAB, 0xCD]).unwrap();
//! assert_eq!((p.hi, p.lo), (0xA, 0xBCD));
//! ```
#![deny(unsafe_code)]

pub mod buf;
pub mod hash;
pub mod port;
pub mod transport;

// The wire formats, pcap and the bounded file readers live in the pure
// `mad-wire` crate; they stay reachable at their old paths.
pub use mad_wire::{limits, pcap, wire};
pub use mad_wire::{wire_enum, wire_struct};

pub use buf::MadBuf;
