//! # madstack
//!
//! A user-space InfiniBand MAD (management datagram) stack with RMPP. This
//! facade crate re-exports the layers, bottom up:
//!
//! - [`core`] (`mad-core`): wire formats, the pcap writer/reader, the
//!   `Transport` trait with its umad / ibsim / loopback / fault-injecting
//!   transports, and the per-port QP0/QP1 layer;
//! - [`rmpp`] (`mad-rmpp`): sans-IO RMPP sender and receiver;
//! - [`agents`] (`mad-agents`): agents, dispatch, send tracking, timeouts,
//!   the runtime, and the SMP / SA / PerfMgt clients;
//! - [`sm`] (`mad-sm`): SM-lite, the sans-IO subnet manager, and the SA's
//!   records from its view;
//! - [`sim`] (`mad-sim`): the built-in simulated fabric (SM-lite runs as
//!   its SM).
//!
//! Its `tests/` hold the cross-crate and interop tests (ibsim, OpenSM,
//! infiniband-diags, libibmad, tshark) and its `benches/` the criterion
//! benchmarks.
//!
//! ```
//! use madstack::core::wire::{decode::decode_mad, MadHeader, MgmtClass, Method, AttributeId, Repr};
//!
//! // Build a Get(NodeInfo) SMP header, emit it, and decode it back.
//! let hdr = MadHeader {
//!     base_version: 1,
//!     mgmt_class: MgmtClass::SUBN_LID_ROUTED,
//!     class_version: 1,
//!     method: Method::GET,
//!     tid: 42,
//!     attr_id: AttributeId::NODE_INFO,
//!     ..MadHeader::default()
//! };
//! let mut mad = [0u8; 256];
//! hdr.emit(&mut mad).unwrap();
//! let decoded = decode_mad(&mad).unwrap();
//! assert_eq!(decoded.header.tid, 42);
//! ```
#![forbid(unsafe_code)]

pub use mad_agents as agents;
pub use mad_core as core;
pub use mad_rmpp as rmpp;
pub use mad_sim as sim;
pub use mad_sm as sm;
