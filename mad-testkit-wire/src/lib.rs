//! The lower tier of the madstack test kit: what a test needs that
//! depends on the wire formats alone, so that the tests of every crate
//! (`mad-wire`, `mad-core`, `mad-rmpp` included) can use it.
//!
//! - [`build`]: MADs from the wire crate's `Repr`s ([`MadBuilder`]:
//!   `MadBuilder::perf_get(1, AttributeId::PM_PORT_COUNTERS).tid(7).build()`),
//!   so that no test pokes header bytes.
//! - [`header`]: a MAD's header as a `Repr` ([`header::of`]) and the few
//!   edits tests make to a MAD they hold ([`header::edit`]), so that tests
//!   compare `MadHeader`s and typed fields, not bytes.
//! - [`rng`]: the one seeded RNG of the tests and benches ([`Rng`], the
//!   project's xorshift64*, with a fixed default seed and helpers for
//!   ranges and bytes).
//! - [`hex`]: bytes as plain hex text and back; [`text`]: assertions on
//!   text output ([`assert_contains_all`]).
//!
//! The upper tier, `mad-testkit`, re-exports all of this and adds what
//! needs the engine, the transports and the simulated fabric (far sides,
//! `Pair`, `Wrapped`).
//!
//! # Used by `mad-wire` itself
//! `mad-wire` takes this crate as a dev-dependency. Cargo allows it, but
//! the `mad-wire` this crate links is a second build of it: in
//! `mad-wire`'s own unit tests (`src/**` under `#[cfg(test)]`) a
//! [`mad_wire::wire::MadHeader`] from here is not `crate::wire::MadHeader`.
//! Pass bytes across (`MadBuilder::build` gives `[u8; 256]`), not types;
//! `mad-wire`'s integration tests (`mad-wire/tests/`) see one `mad-wire`
//! and may pass types freely.
//!
//! Used only as a dev-dependency (`publish = false`).
//!
//! # Example
//! ```
//! use mad_wire::wire::{AttributeId, MadHeader, Method, MgmtClass};
//! use mad_testkit_wire::{header, MadBuilder};
//!
//! let mad = MadBuilder::dr(&[], Method::GET, AttributeId::NODE_INFO).tid(7).build();
//! let h = header::of(&mad);
//! assert_eq!(h.mgmt_class, MgmtClass::SUBN_DIRECTED_ROUTE);
//! assert_eq!((h.method, h.tid), (Method::GET, 7));
//! ```
#![deny(unsafe_code)]

pub mod build;
pub mod header;
pub mod hex;
pub mod rng;
pub mod text;

pub use build::MadBuilder;
pub use rng::Rng;
pub use text::assert_contains_all;
