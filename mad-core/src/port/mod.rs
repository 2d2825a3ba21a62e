//! The per-port layer: one port's QP0 and QP1 shared by several clients,
//! with flow control and error recovery.
//!
//! # Design overview
//!
//! A port is two halves: a [`PortCore`], its state with no transport
//! (clients, send lists, overflow queues, recovery and soft-reset state,
//! counters; every call only changes state), and a [`Driver`], the one
//! pump that moves MADs, completions and events between a [`Transport`]
//! and a core and runs the recovery the core asks for. [`Port`] is the
//! two together, for callers that own both. Nothing here performs I/O
//! of its own or reads a clock: the caller drives it (sans-IO), passing
//! `now` in.
//!
//! - **getters**: [`Port::attrs`], [`Port::stats`], [`Port::qp_state`],
//!   [`Port::posted`], [`Port::queued`], [`Port::outstanding`], ...
//! - **commands**: [`Port::register`], [`Port::subscribe_all`],
//!   [`Port::post`], [`Port::ack_reset`], [`Port::request_reset`],
//!   [`Port::unregister`], [`Port::reopen`];
//! - **driving**: [`Port::poll`]`(now)` when the transport's fd is readable,
//!   when [`Port::next_deadline`] has passed, or simply after commands; it
//!   drains send completions, then receives, then async events, recovers,
//!   checks the soft-reset deadline and posts queued sends;
//! - **output**: [`Port::poll_client`]`(client)` hands each client its
//!   [`PortEvent`]s in order.
//!
//! # Send list and overflow queue (seed 003, AGENTS.md §3)
//!
//! Each QP has a *send list* of posted work requests, at most
//! [`Transport::send_queue_depth`] long, and an ordered *overflow queue*.
//! [`Port::post`] posts at once when the QP is in RTS, has room and nothing
//! is queued before it; otherwise the send waits on the overflow queue.
//! Each completion is matched back to its request by [`WrId`](crate::transport::WrId) and reported
//! to the owner as [`PortEvent::SendComplete`]; queued sends are posted in
//! order as room appears. If the transport refuses a queued send when its
//! turn comes (not for lack of room), it completes with
//! `IBV_WC_LOC_QP_OP_ERR`, as the kernel does.
//!
//! The overflow queue is bounded: at most [`PortConfig::overflow_limit`]
//! sends wait on each QP (default [`DEFAULT_OVERFLOW_LIMIT`]); a post
//! that would queue one more is refused with [`PortError::OverflowFull`]
//! (nothing queued, no token, counted in [`PortStats::overflow_refused`]),
//! so a caller that keeps posting while the device is stalled gets an
//! error instead of growing the queue without end.
//!
//! **Every accepted send completes to its owner exactly once.** A request
//! lives in exactly one place (send list or overflow queue) and completing
//! it consumes it; debug builds also keep the set of live tokens and assert.
//! Completions for work requests not on the send list (e.g. after the port
//! flushed them itself) are ignored and counted as stale.
//!
//! # Memory
//!
//! What a port holds for sends is bounded by its configuration, whatever
//! its callers post while the device does not move:
//!
//! - each QP's send list: at most [`Transport::send_queue_depth`] entries
//!   of bookkeeping (the MADs themselves are in the transport);
//! - each QP's overflow queue: at most [`PortConfig::overflow_limit`]
//!   sends, each a copy of its MAD in a 256-byte pooled buffer plus a
//!   queue slot of under 128 bytes (destination address, owner, token,
//!   cookie, a request's answer wait) — about 380 bytes a send, allocator
//!   overhead aside.
//!
//! So the worst case for queued sends is about `2 × overflow_limit × 380`
//! bytes a port: about 3 MiB with the default limit of 4096, 30 MiB
//! with 40 960. (A queue's slots, once grown, stay allocated until the
//! port is dropped; the buffers go back to the thread's pool.) Received MADs are not queued here beyond each client's
//! event queue, which its owner drains.
//!
//! # Recovery
//!
//! | what | the port does |
//! |---|---|
//! | a work request completes in error | complete it in error to its owner; once the transport's completions are drained, complete every request still posted on that QP as `IBV_WC_WR_FLUSH_ERR` (those behind the failed one; the owner decides whether to resend), bring the QP back (ERR → RESET → INIT → RTR → RTS, or SQE → RTS) and go on with the queued sends |
//! | `IBV_EVENT_QP_FATAL` | the same for that QP (no completions come from a fatal QP) |
//! | `IBV_EVENT_CQ_ERR` (overflow) | complete every posted request on both QPs as flushed, `recreate_queues`, resume with the queued ones |
//! | `IBV_EVENT_DEVICE_FATAL`, or any call failing with `DeviceDead` | [`PortEvent::DeviceFatal`] to every client, complete everything posted and queued as flushed, mark the port dead: every later [`Port::post`] fails at once with [`PortError::Dead`]; only [`Port::reopen`] with a new transport revives it |
//! | port active / error, LID, P_Key, GID, SM change | `refresh_port_attrs`, then [`PortEvent::Async`] to every client, once |
//! | client reregister | [`PortEvent::Async`] to every client, once (no attribute changed) |
//! | soft reset request | two phases, below |
//!
//! A recovery step that fails for a reason other than device death is
//! retried at the next `poll`. Unlike Linux's `ib_mad`, which reposts the
//! flushed requests behind a failed one once (AGENTS.md §6), the port never
//! resends: as issue 3 and seed 003 ask, the owner decides.
//!
//! # Soft reset (seed 001)
//!
//! On [`AsyncEvent::SoftResetRequest`](crate::transport::AsyncEvent::SoftResetRequest) from the transport, or
//! [`Port::request_reset`] from a client: [`PortEvent::ResetPending`] goes to
//! every client, idle ones included, and the deadline `now +`
//! [`PortConfig::reset_ack_timeout`] is set. Sends posted meanwhile are
//! queued. When every client has called [`Port::ack_reset`] (a client that
//! unregisters counts as acknowledged), or at the deadline, the port resets:
//! sends the device already finished keep their status, everything still
//! posted completes as flushed, the queues are recreated,
//! [`PortEvent::ResetEnd`] goes to every client, and the queued sends go
//! out. A second request during a reset is folded into it. The transport's
//! own `SoftResetEnd` event is ignored: the port ends the reset itself.
//!
//! # Receives
//!
//! A received MAD is checked once, here, into an [`Inbound`] (the shared
//! bytes and source address, one pointer; its accessors read the common
//! header, the RMPP header for the classes that carry one and the vendor
//! OUI through the wire views); one that is shorter than a MAD header, has
//! a base version other than 1 or a class that does not belong on its QP
//! is dropped and counted ([`PortStats::recv_malformed`]). The
//! [`Inbound`] goes, as [`PortEvent::Received`], to every client that
//! takes receives ([`Port::subscribe_all`]), in the order they asked. The
//! port does not route by class: its one client in production is the
//! agent engine, which takes everything and does all the dispatch (TID,
//! QP, class, method, class version, OUI) on the parsed value, so there
//! is one routing stage, the engine's. A MAD nobody takes is dropped and
//! counted.
//!
//! Sharing one port among the services of a process is the runtime's
//! business (one engine, many agents), not the port's.

mod boxed;
mod clients;
mod driver;
mod inbound;
mod recovery;
mod state;
mod types;

pub use clients::ClientId;
pub use driver::Driver;
pub use inbound::{Inbound, InboundError};
pub use state::PortCore;
pub use types::{PortConfig, PortError, PortEvent, PortStats, SendToken, DEFAULT_OVERFLOW_LIMIT};

use std::time::Instant;

use crate::transport::{Address, PortAttrs, Qp, QpState, Transport};

/// One port's QP0/QP1 layer, a [`PortCore`] and the [`Driver`] of its
/// transport together; see the [module documentation](self).
pub struct Port<T: Transport = Box<dyn Transport>> {
    core: PortCore,
    driver: Driver<T>,
}

impl<T: Transport> std::fmt::Debug for Port<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Port")
            .field("ca", &self.core.ca)
            .field("port", &self.core.port_num)
            .field("clients", &self.core.client_count())
            .field("dead", &self.core.is_dead())
            .field("stats", &self.core.stats)
            .finish_non_exhaustive()
    }
}

impl<T: Transport> Port<T> {
    /// A port layer over `transport`.
    #[must_use]
    pub fn new(transport: T, cfg: PortConfig) -> Self {
        Self {
            core: PortCore::new(transport.port_attrs(), cfg),
            driver: Driver::new(transport),
        }
    }

    // ----- getters -----

    /// The port's state.
    #[must_use]
    pub fn core(&self) -> &PortCore {
        &self.core
    }

    /// The port's cached attributes.
    #[must_use]
    pub fn attrs(&self) -> &PortAttrs {
        self.driver.transport().port_attrs()
    }

    /// The transport.
    #[must_use]
    pub fn transport(&self) -> &T {
        self.driver.transport()
    }

    /// The transport, mutably (tests reach a fault injector this way).
    pub fn transport_mut(&mut self) -> &mut T {
        self.driver.transport_mut()
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &PortConfig {
        self.core.config()
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> PortStats {
        self.core.stats()
    }

    /// The last transport error the port swallowed (recovery retries it).
    #[must_use]
    pub fn last_error(&self) -> Option<&str> {
        self.core.last_error()
    }

    /// True after a device-fatal error, until [`Port::reopen`].
    #[must_use]
    pub fn is_dead(&self) -> bool {
        self.core.is_dead()
    }

    /// True between a soft reset request and the reset itself.
    #[must_use]
    pub fn is_reset_pending(&self) -> bool {
        self.core.is_reset_pending()
    }

    /// Clients that have not acknowledged the pending soft reset.
    #[must_use]
    pub fn reset_waiting_for(&self) -> Vec<ClientId> {
        self.core.reset_waiting_for()
    }

    /// The transport's state of `qp`.
    #[must_use]
    pub fn qp_state(&self, qp: Qp) -> QpState {
        self.driver.transport().qp_state(qp)
    }

    /// Work requests on `qp`'s send list.
    #[must_use]
    pub fn posted(&self, qp: Qp) -> usize {
        self.core.posted(qp)
    }

    /// Sends waiting on `qp`'s overflow queue.
    #[must_use]
    pub fn queued(&self, qp: Qp) -> usize {
        self.core.queued(qp)
    }

    /// Sends of `client` accepted and not yet completed (0 for an unknown
    /// client). The agent layer waits for 0 before unregistering.
    #[must_use]
    pub fn outstanding(&self, client: ClientId) -> usize {
        self.core.outstanding(client)
    }

    /// Number of registered clients.
    #[must_use]
    pub fn client_count(&self) -> usize {
        self.core.client_count()
    }

    /// Ids of the registered clients.
    #[must_use]
    pub fn clients(&self) -> Vec<ClientId> {
        self.core.clients()
    }

    /// The earliest time [`Port::poll`] has timed work to do (the soft-reset
    /// deadline), if any.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.core.next_deadline()
    }

    // ----- clients -----

    /// Registers a client. During a soft reset it is asked to acknowledge
    /// too.
    pub fn register(&mut self) -> ClientId {
        self.core.register()
    }

    /// Unregisters `client` ([`PortCore::unregister`]); a soft reset that
    /// waited only for it runs now.
    ///
    /// # Errors
    /// [`PortError::UnknownClient`].
    pub fn unregister(&mut self, client: ClientId) -> Result<Vec<(SendToken, u64)>, PortError> {
        let r = self.core.unregister(client);
        self.driver.run_due(&mut self.core);
        r
    }

    /// Delivers every received MAD to `client` ([`PortCore::subscribe_all`]).
    ///
    /// # Errors
    /// [`PortError::UnknownClient`].
    pub fn subscribe_all(&mut self, client: ClientId) -> Result<(), PortError> {
        self.core.subscribe_all(client)
    }

    /// The next event for `client`, in order.
    pub fn poll_client(&mut self, client: ClientId) -> Option<PortEvent> {
        self.core.poll_client(client)
    }

    // ----- sends -----

    /// Accepts one checked MAD to send on its QP to `dest` for `client`.
    /// It is posted now if the QP has room, otherwise queued in order;
    /// either way it completes later, exactly once, as
    /// [`PortEvent::SendComplete`] with `cookie`. The MAD's own checks
    /// ran once, when the [`OutMad`](crate::transport::OutMad) was made
    /// ([`Unsendable::check_post`](crate::transport::Unsendable::check_post));
    /// the port does not repeat them.
    ///
    /// # Errors
    /// Unknown client; a dead port (at once, nothing is queued); a
    /// transport that cannot carry the MAD (a carrier limit,
    /// [`Unsendable::is_carrier_limit`](crate::transport::Unsendable::is_carrier_limit));
    /// [`PortError::OverflowFull`] when it would have to wait and
    /// [`PortConfig::overflow_limit`] sends already wait on the QP. On
    /// error no token exists and nothing will complete.
    pub fn post(
        &mut self,
        client: ClientId,
        mad: crate::transport::OutMad<'_>,
        dest: &Address,
        cookie: u64,
    ) -> Result<SendToken, PortError> {
        self.post_waiting(client, mad, dest, cookie, None)
    }

    /// As [`Port::post`], with the wait for the answer of a request
    /// (`Some`: [`Transport::post_waiting`], also when the send waits on
    /// the overflow queue first; `None`: [`Transport::post`]).
    ///
    /// # Errors
    /// As [`Port::post`].
    pub fn post_waiting(
        &mut self,
        client: ClientId,
        mad: crate::transport::OutMad<'_>,
        dest: &Address,
        cookie: u64,
        wait: Option<std::time::Duration>,
    ) -> Result<SendToken, PortError> {
        self.driver
            .post(&mut self.core, client, mad, dest, cookie, wait)
    }

    // ----- driving -----

    /// Does everything due at `now` ([`Driver::drive`]): drains send
    /// completions, receives and async events from the transport, recovers
    /// from errors, forces a soft reset whose deadline has passed, and
    /// posts queued sends.
    pub fn poll(&mut self, now: Instant) {
        self.driver.drive(&mut self.core, now);
    }

    // ----- soft reset and reopening -----

    /// A client asks for an HCA soft reset ([`PortCore::request_reset`]).
    pub fn request_reset(&mut self, now: Instant) {
        self.core.request_reset(now);
        self.driver.run_due(&mut self.core);
    }

    /// `client` has released what it holds ([`PortCore::ack_reset`]).
    /// When the last client acknowledges, the port resets at once and
    /// [`PortEvent::ResetEnd`] is queued for every client.
    ///
    /// # Errors
    /// Unknown client, or no reset pending.
    pub fn ack_reset(&mut self, client: ClientId) -> Result<(), PortError> {
        self.core.ack_reset(client)?;
        self.driver.run_due(&mut self.core);
        Ok(())
    }

    /// Puts a new transport under the port ([`Driver::reopen`]).
    pub fn reopen(&mut self, transport: T) {
        self.driver.reopen(&mut self.core, transport);
    }
}

#[cfg(test)]
mod memory_doc {
    /// The [Memory](super#memory) section's per-send figure: a queued send
    /// is its slot in the overflow queue plus one 256-byte buffer.
    #[test]
    fn a_queued_send_costs_what_the_memory_docs_say() {
        let slot = std::mem::size_of::<super::state::Queued>();
        eprintln!("overflow slot: {slot} bytes");
        assert!(slot < 128, "the docs say under 128 bytes, a slot is {slot}");
        assert!(slot + crate::wire::MAD_LEN <= 390, "the docs say about 380");
    }
}
