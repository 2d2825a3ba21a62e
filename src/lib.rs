//! # madstack
//!
//! A user-space InfiniBand MAD (management datagram) stack with RMPP.
//!
//! ## Quick start
//!
//! Open a port ([`open`]: the built-in fabric here, `--ibsim` or a real
//! port with other [`Options`]), then ask by attribute name:
//!
//! ```
//! use madstack::{open, Options, Target};
//!
//! let port = open(&Options::sim())?;
//! let ni = port.smp_get("NodeInfo", &Target::Lid(port.attrs().lid), 0)?;
//! println!("node GUID {:#018x}, {} ports", ni.uint("node_guid").unwrap(), ni.uint("num_ports").unwrap());
//! let paths = port.sa_get_table("PathRecord", &[("slid".into(), madstack::Input::Uint(port.attrs().lid.into()))])?;
//! assert!(!paths.is_empty());
//! for p in &paths {
//!     println!("{}", p.to_json()); // the object `mad saquery --json` prints
//! }
//! port.close()?;
//! # Ok::<(), madstack::Error>(())
//! ```
//!
//! Typed clients are there too ([`Port::smp`], [`Port::perf`],
//! [`Port::sa`]), and so are discovery and the counter sweep
//! ([`fabric`]), port events ([`Port::events`]) and trap subscriptions
//! ([`Port::subscribe`]). `examples/` has a program per task
//! (`cargo run --example port_errors -- --sim`).
//!
//! ## Services on one port
//!
//! A process that runs several services on one port — the SA client with
//! its subscriptions, the connection manager, the exporter's reader, an
//! SA, its own agents — opens them all on the [`Port`]'s shared port
//! ([`Port::shared_port`], an [`agents::SharedPort`]): [`Port::open_sa`],
//! [`Port::open_cm`], [`Port::open_reader`], [`Port::register`] /
//! [`Port::register_channel`]. Each service holds a handle and the port
//! (transport, engine, loop thread, and the built-in fabric under it)
//! lives while any handle does: closing or dropping the [`Port`] that
//! opened it stops nothing the services still use, and the last service
//! to go deregisters everything and joins the port's thread. Every one of
//! these services holds the port's two-phase soft reset while its work in
//! flight drains and resumes after it ([`agents::ResetHold`]), and hears
//! of a device-fatal error (the SA client then fails at once with
//! [`agents::sa::SaError::PortDead`]; the CM gives every ID
//! DEVICE_REMOVAL; agents get `AgentEvent::DeviceFatal`).
//!
//! ```
//! use madstack::{open, Options};
//! use madstack::cm::CmConfig;
//!
//! let port = open(&Options::sim())?;
//! let cm = port.open_cm(CmConfig::default())?;
//! let lid = port.attrs().lid;
//! port.close()?; // the CM still runs on the port
//! assert_eq!(cm.port().map(|p| p.port_attrs().lid), Some(lid));
//! drop(cm); // the last holder: the port stops here
//! # Ok::<(), madstack::Error>(())
//! ```
//!
//! ## The layers
//!
//! The facade re-exports the crates, bottom up:
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
//!   its SM);
//! - [`cm`] (`mad-cm`): the connection manager and its rdma_cm-style
//!   events;
//! - [`tools`] (`mad-tools`): the `mad` commands' library (sessions,
//!   discovery, the infiniband-diags formatters, the JSON contract).
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
pub use mad_cm as cm;
pub use mad_core as core;
pub use mad_rmpp as rmpp;
pub use mad_sim as sim;
pub use mad_sm as sm;
pub use mad_tools as tools;

pub mod attr;
pub mod events;
pub mod fabric;
pub mod port;

pub use attr::{Answer, Attribute, Input, Value};
pub use events::Events;
pub use port::{open, Backend, Options, Port, SaTable, Target};

use mad_agents::sa::SaError;
use mad_agents::QueryError;

/// Why a front-door call failed; the cause is kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The port could not be opened (no such topology, device, ibsim).
    #[error("cannot open the port: {0}")]
    Open(String),
    /// An agent could not be registered on the port.
    #[error("agent registration refused: {0}")]
    Register(String),
    /// The caller's input: an unknown attribute or field, a bad value.
    #[error("{0}")]
    Input(String),
    /// An SMP or PerfMgt query failed (timeout, MAD status, ...).
    #[error(transparent)]
    Query(#[from] QueryError),
    /// An SA query failed (no records, a status, a timeout, ...).
    #[error(transparent)]
    Sa(#[from] SaError),
    /// An answer that does not parse as what was asked.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// Discovery or the sweep failed as a whole.
    #[error("discovery: {0}")]
    Discover(String),
    /// The caller interrupted a discovery or sweep.
    #[error("interrupted")]
    Interrupted,
}

impl Error {
    /// True for a timeout (no answer after the retries).
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            Error::Query(QueryError::Timeout { .. }) | Error::Sa(SaError::Timeout { .. })
        )
    }

    /// The MAD status of an answer that carried one.
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Query(QueryError::Status { status, .. }) => Some(status.0),
            Error::Sa(e) => e.status(),
            _ => None,
        }
    }
}
