//! # mad-sim
//!
//! The in-process simulated InfiniBand fabric of madstack: what ibsim is,
//! as a library, deterministic and without a server.
//!
//! - [`topology`]: topology files in the ibnetdiscover format that ibsim
//!   reads, parsed the way ibsim parses them (same nodes, links, GUIDs);
//!   [`default_topology`] is the built-in one.
//! - [`fabric`]: nodes, ports and links from a topology, an SMA and a PMA
//!   on every node, directed-route and LID-routed forwarding, P_Key and
//!   M_Key checks, seeded link faults (drop, duplicate, reorder, delay),
//!   cables pulled and plugged back (with Trap 128), hooks for an SM, for
//!   link filters and for in-fabric services.
//! - [`SimPort`]: an endpoint at a port, implementing
//!   [`mad_core::transport::Transport`], so the whole stack runs on the
//!   simulated fabric; [`FaultyPort`] wraps one in mad-core's
//!   `FaultInjector` for device-level faults ([`EndpointFault`]).
//! - [`Subnet`]: a fabric brought up in one call (SM-lite of the
//!   `mad-sm` crate as an in-fabric service, the SA responder on the SM's
//!   port, fed from SM-lite's view by `mad_sm::sa`).
//! - [`console`]: the fault console of `mad sim`.
//! - [`serve`]: the fabric served in ibsim's socket protocol, for stacks
//!   in other processes (madstack's ibsim transport, libumad2sim).
//!
//! Only [`Subnet`] (its SA runs on a `mad_agents::Runtime`) and
//! [`serve::IbSimServer::spawn`] start threads, and only the server reads
//! the wall clock (to move virtual time on for its clients); otherwise
//! time in the fabric is virtual ([`Fabric::advance`]). Only topology
//! files are read.
#![deny(unsafe_code)]

pub mod console;
pub mod fabric;
pub mod faulty;
pub mod serve;
pub mod subnet;
pub mod topology;

pub use endpoint::SimPort;
/// Endpoints at fabric ports (the module lives in [`fabric`], beside the
/// fabric core it shares state with).
pub use fabric::endpoint;
pub use fabric::{
    Fabric, FabricConfig, LinkFaults, NodeSel, SimError, SmaFault, FULL_LINEAR_FDB_CAP,
    IBSIM_LINEAR_FDB_CAP,
};
pub use faulty::{EndpointFault, FaultyPort};
pub use subnet::{Subnet, SubnetOptions, Summary, UpError};
pub use topology::{Topology, TopologyError, TopologyLimits};

/// The text of the built-in default topology (ibnetdiscover / ibsim
/// format): a two-level fat tree of two spine and two leaf switches
/// (8 ports each) and eight two-port HCAs `host-1` … `host-8`, port 1 of
/// each cabled to a leaf. ibsim loads the same text with the same GUIDs.
pub const DEFAULT_TOPOLOGY: &str = include_str!("topology/default.net");

/// What the default topology is called in messages and summaries.
pub const DEFAULT_TOPOLOGY_NAME: &str = "built-in default";

/// The built-in default topology ([`DEFAULT_TOPOLOGY`]), parsed.
#[must_use]
pub fn default_topology() -> Topology {
    // The text is part of the crate and parsed by a unit test.
    #[allow(clippy::expect_used)]
    Topology::parse_str(DEFAULT_TOPOLOGY).expect("the built-in default topology parses")
}
