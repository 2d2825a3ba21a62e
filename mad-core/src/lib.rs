//! # mad-core
//!
//! The bottom of madstack, a user-space InfiniBand MAD stack: wire formats
//! for every MAD the stack speaks ([`wire`]), a pcap writer that
//! Wireshark / tshark decode ([`pcap`]), the transports ([`transport`]:
//! umad, ibsim, loopback, fault injection), the per-port QP0/QP1 layer
//! ([`port`]), and [`MadBuf`], the pooled fixed-size buffer a MAD travels
//! in.
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
#![deny(unsafe_code)]

pub mod buf;
pub mod hash;
pub mod limits;
pub mod pcap;
pub mod port;
pub mod transport;
pub mod wire;

pub use buf::MadBuf;
