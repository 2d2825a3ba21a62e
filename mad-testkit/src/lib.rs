//! The madstack test kit, upper tier: what a test of the stack needs,
//! written once.
//!
//! Everything of the lower tier, [`mad_testkit_wire`] (on `mad-wire`
//! alone, so that the tests of `mad-wire`, `mad-core` and `mad-rmpp` can
//! use it too), is re-exported here under the same names:
//! - [`build`]: MADs from the wire crate's `Repr`s ([`MadBuilder`]:
//!   `MadBuilder::perf_get(1, AttributeId::PM_PORT_COUNTERS).tid(7).build()`),
//!   so that no test pokes header bytes; [`header`]: a MAD's header as a
//!   `Repr` ([`header::of`], [`header::edit`]).
//! - [`rng`]: the one seeded RNG of the tests and benches ([`Rng`], the
//!   project's xorshift64* from the fault injector, with a fixed default
//!   seed and helpers for ranges and bytes).
//!
//! What needs the engine, the transports or the simulated fabric is here:
//! - [`far`]: loopback far sides ([`far::answering`], [`far::get_resp`]).
//! - [`fabric`]: a far side that answers like the simulated fabric
//!   because it *is* the simulated fabric ([`fabric::builtin`],
//!   [`fabric::from_text`], [`fabric::drain`]).
//! - [`pair`]: a quinn-`Pair`-style harness, two [`mad_agents::Engine`]s
//!   over a connected loopback pair on a virtual clock ([`Pair`]), with
//!   loss and duplication on each side's receive path, a configuration
//!   per side, a hook between steps ([`Pair::drive_until`]) and an
//!   optional cost per step in virtual time; each engine is a
//!   [`mad_agents::Stack`] (the engine and the driver of its transport).
//! - [`port`]: [`PortPair`], a port's state and the driver of its
//!   transport together, for the tests of the port layer.
//! - [`wrap`]: one way to wrap a [`Transport`](mad_core::transport::Transport)
//!   ([`Wrapped`] forwards every method to the inner transport and lets a
//!   [`Hooks`] value see or change sends, receives and registrations);
//!   [`Recording`], [`Tap`] and [`WithFd`] are the hooks tests use.
//! - [`text`]: assertions on text output ([`assert_contains_all`]);
//!   [`hex`]: bytes as plain hex text and back (both from the lower tier).
//!
//! Used only as a dev-dependency (`publish = false`).
//!
//! # Example
//! A directed-route Get of NodeInfo to the port's own node of the
//! built-in fabric, and the same MAD built by hand from its `Repr`s:
//! ```
//! use mad_core::wire::attr::NodeInfo;
//! use mad_core::wire::{AttributeId, Method, MgmtClass, Repr};
//! use mad_testkit::{fabric, MadBuilder};
//!
//! let (fab, mut port) = fabric::builtin();
//! let (status, data) = fabric::dr_get(&fab, &mut port, &[], AttributeId::NODE_INFO, 0, 7)
//!     .expect("the local SMA answers");
//! assert_eq!(status, 0);
//! let info = NodeInfo::parse(&data).expect("a NodeInfo");
//! assert_ne!(info.node_guid, 0);
//!
//! let mad = MadBuilder::dr(&[], Method::GET, AttributeId::NODE_INFO).tid(7).build();
//! assert_eq!(mad_testkit::header::of(&mad).mgmt_class, MgmtClass::SUBN_DIRECTED_ROUTE);
//! ```
#![deny(unsafe_code)]

pub mod fabric;
pub mod far;
pub mod pair;
pub mod port;
pub mod rng;
pub mod wrap;

pub use build::MadBuilder;
pub use mad_testkit_wire::{build, header, hex, text};
pub use pair::{Pair, Side};
pub use port::PortPair;
pub use rng::Rng;
pub use text::assert_contains_all;
pub use wrap::{Hooks, Recording, Tap, WithFd, Wrapped};
