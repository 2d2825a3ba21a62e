//! # mad-sim
//!
//! The in-process simulated InfiniBand fabric of madstack: what ibsim is,
//! as a library, deterministic and without a server.
//!
//! - [`topology`]: topology files in the ibnetdiscover format that ibsim
//!   reads, parsed the way ibsim parses them (same nodes, links, GUIDs).
//! - [`fabric`]: nodes, ports and links from a topology, an SMA and a PMA
//!   on every node, directed-route and LID-routed forwarding, P_Key and
//!   M_Key checks, hooks for an SM and for link faults.
//! - [`SimPort`]: an endpoint at a port, implementing
//!   [`mad_core::transport::Transport`], so the whole stack runs on the
//!   simulated fabric.
//!
//! Nothing here performs I/O (but reading topology files), spawns a
//! thread or reads a clock.
#![deny(unsafe_code)]

pub mod endpoint;
pub mod fabric;
pub mod sm;
pub mod topology;

pub use endpoint::SimPort;
pub use fabric::{Fabric, FabricConfig, NodeSel, SimError};
pub use topology::{Topology, TopologyError};
