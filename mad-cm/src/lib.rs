//! # mad-cm
//!
//! InfiniBand connection management (IBTA vol. 1 ch. 12, the Linux
//! kernel's `ib_cm`) as a sans-IO state machine: [`Cm`] holds every
//! connection of one port, takes received CM MADs with
//! [`Cm::handle_recv`], deadlines with [`Cm::handle_timeout`] and user
//! calls ([`Cm::listen`], [`Cm::connect`], [`Cm::accept`], [`Cm::reject`],
//! [`Cm::delay`], [`Cm::establish`], [`Cm::disconnect`]), and hands out
//! MADs to send ([`Cm::poll_transmit`]) and rdma_cm-style events
//! ([`Cm::poll_event`]). It never performs I/O and never reads a clock.
//!
//! [`service::CmService`] runs it on a live port in the shape of librdmacm:
//! an agent for the CM class on QP1, a driver thread, and events read
//! with [`service::CmService::next_event`]; [`service::resolve_route`]
//! gets the path from the SA. RoCE has no LIDs and no SA: [`CmPath::roce`]
//! builds the path from the two ports' GIDs (MADs along it carry a GRH).
//!
//! ```
//! use mad_cm::{AcceptParams, Cm, CmConfig, CmEvent, CmPath, ConnectParams};
//! use mad_core::transport::Address;
//! use std::time::Instant;
//!
//! let now = Instant::now();
//! let mut server = Cm::new(CmConfig { ca_guid: 2, ..CmConfig::default() });
//! let mut client = Cm::new(CmConfig { ca_guid: 1, ..CmConfig::default() });
//! server.listen(0x1000).unwrap();
//! let path = CmPath { local_lid: 1, remote_lid: 2, subnet_local: true, mtu: 4, ..CmPath::default() };
//! let id = client.connect(now, ConnectParams::new(0x1000, 0x40, 7, path)).unwrap();
//! // Carry each side's MADs to the other until both are quiet.
//! let mut events = Vec::new();
//! loop {
//!     let mut moved = false;
//!     while let Some(t) = client.poll_transmit() {
//!         server.handle_recv(now, &Address::gsi(1), &t.mad).unwrap();
//!         moved = true;
//!     }
//!     while let Some(t) = server.poll_transmit() {
//!         client.handle_recv(now, &Address::gsi(2), &t.mad).unwrap();
//!         moved = true;
//!     }
//!     while let Some((sid, ev)) = server.poll_event() {
//!         if let CmEvent::ConnectRequest { .. } = ev {
//!             server.accept(now, sid, AcceptParams { qpn: 0x50, ..AcceptParams::default() }).unwrap();
//!             moved = true;
//!         }
//!     }
//!     while let Some(e) = client.poll_event() {
//!         events.push(e);
//!     }
//!     if !moved { break; }
//! }
//! assert!(matches!(&events[..], [(c, CmEvent::Established { info })] if *c == id && info.remote_qpn == 0x50));
//! ```

mod cm;
mod conn;
pub mod service;
mod types;

pub use cm::{Cm, CmStats, CmTables};
pub use conn::State;
pub use types::{
    iboe_mtu, AcceptParams, CmConfig, CmError, CmEvent, CmPath, ConnId, ConnInfo, ConnectParams,
    DisconnectCause, ListenId, Transmit,
};
