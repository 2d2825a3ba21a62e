//! # mad-sim
//!
//! The in-process simulated InfiniBand fabric of madstack.
//!
//! - [`topology`]: topology files in the ibnetdiscover format that ibsim
//!   reads, parsed the way ibsim parses them (same nodes, links, GUIDs).
#![deny(unsafe_code)]

pub mod topology;

pub use topology::{Topology, TopologyError};
