//! The per-port layer: one port's QP0 and QP1 shared by several clients,
//! with flow control and error recovery.
//!
//! # Design overview
//!
//! A [`Port`] owns a [`Transport`] and never performs I/O or reads a clock
//! of its own: the caller drives it (sans-IO), passing `now` in.
//!
//! - **getters**: [`Port::attrs`], [`Port::stats`], [`Port::qp_state`],
//!   [`Port::posted`], [`Port::queued`], [`Port::outstanding`], ...
//! - **commands**: [`Port::register`], [`Port::subscribe`],
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
//! Each completion is matched back to its request by [`WrId`] and reported
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
//! subscribed to its QP and management class ([`Port::subscribe`]), in the
//! order they subscribed, then to every client that takes everything
//! ([`Port::subscribe_all`]). Class routing is for several clients sharing
//! one port (a [`PortRegistry`]); the agent engine takes everything and
//! does the finer dispatch (TID, method, class version, OUI) on the
//! parsed value. A MAD nobody takes is dropped and counted.
//!
//! # Sharing a port
//!
//! [`PortRegistry`] hands out [`PortHandle`]s to one port per (CA name,
//! port number): the transport is created on first open and dropped (its
//! QPs, CQ and registrations released) when the last handle goes, the way
//! seed 004 keeps a receive QP alive until its domain's last reference.

mod boxed;
mod clients;
mod inbound;
mod recovery;
mod registry;
mod types;

pub use clients::ClientId;
pub use inbound::{Inbound, InboundError};
pub use registry::{PortHandle, PortRegistry, TransportFactory};
pub use types::{PortConfig, PortError, PortEvent, PortStats, SendToken, DEFAULT_OVERFLOW_LIMIT};

use std::collections::VecDeque;
use std::time::Instant;

use crate::hash::FastMap;
use crate::transport::{
    Address, PortAttrs, Qp, QpState, Received, SendCompletion, Transport, TransportError,
    Unsendable, WcStatus, WrId,
};
use crate::wire::{MgmtClass, MAD_LEN};

use clients::Clients;

/// Who a send belongs to.
#[derive(Debug, Clone, Copy)]
struct Meta {
    token: SendToken,
    client: ClientId,
    cookie: u64,
}

/// A send waiting on the overflow queue.
#[derive(Debug)]
struct Queued {
    meta: Meta,
    mad: crate::MadBuf,
    dest: Address,
    /// The answer's wait of a request ([`Port::post_request`]).
    wait: Option<std::time::Duration>,
}

#[derive(Debug, Default)]
struct QpQueues {
    /// The send list: posted, completion not yet seen; in post order.
    posted: VecDeque<(WrId, Meta)>,
    /// Waiting for room, in order.
    overflow: VecDeque<Queued>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recreate {
    CqError,
    SoftReset,
}

#[derive(Debug)]
struct ResetState {
    deadline: Instant,
    pending: Vec<ClientId>,
}

/// One port's QP0/QP1 layer; see the [module documentation](self).
pub struct Port<T: Transport = Box<dyn Transport>> {
    transport: T,
    cfg: PortConfig,
    clients: Clients,
    subs: FastMap<(Qp, u8), Vec<ClientId>>,
    /// Clients that take every received MAD ([`Port::subscribe_all`]).
    catch_all: Vec<ClientId>,
    qps: [QpQueues; 2],
    next_token: u64,
    dead: bool,
    reset: Option<ResetState>,
    recreate: Option<Recreate>,
    stats: PortStats,
    last_error: Option<String>,
    scratch: Vec<SendCompletion>,
    #[cfg(debug_assertions)]
    live: crate::hash::FastSet<SendToken>,
}

impl<T: Transport> std::fmt::Debug for Port<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = self.transport.port_attrs();
        f.debug_struct("Port")
            .field("ca", &a.ca_name)
            .field("port", &a.port_num)
            .field("clients", &self.clients.len())
            .field("dead", &self.dead)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<T: Transport> Port<T> {
    /// A port layer over `transport`.
    #[must_use]
    pub fn new(transport: T, cfg: PortConfig) -> Self {
        Self {
            transport,
            cfg,
            clients: Clients::default(),
            subs: FastMap::default(),
            catch_all: Vec::new(),
            qps: [QpQueues::default(), QpQueues::default()],
            next_token: 1,
            dead: false,
            reset: None,
            recreate: None,
            stats: PortStats::default(),
            last_error: None,
            scratch: Vec::new(),
            #[cfg(debug_assertions)]
            live: crate::hash::FastSet::default(),
        }
    }

    // ----- getters -----

    /// The port's cached attributes.
    #[must_use]
    pub fn attrs(&self) -> &PortAttrs {
        self.transport.port_attrs()
    }

    /// The transport.
    #[must_use]
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably (tests reach a fault injector this way).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &PortConfig {
        &self.cfg
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> PortStats {
        self.stats
    }

    /// The last transport error the port swallowed (recovery retries it).
    #[must_use]
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// True after a device-fatal error, until [`Port::reopen`].
    #[must_use]
    pub fn is_dead(&self) -> bool {
        self.dead
    }

    /// True between a soft reset request and the reset itself.
    #[must_use]
    pub fn is_reset_pending(&self) -> bool {
        self.reset.is_some()
    }

    /// Clients that have not acknowledged the pending soft reset.
    #[must_use]
    pub fn reset_waiting_for(&self) -> Vec<ClientId> {
        self.reset
            .as_ref()
            .map(|r| r.pending.clone())
            .unwrap_or_default()
    }

    /// The transport's state of `qp`.
    #[must_use]
    pub fn qp_state(&self, qp: Qp) -> QpState {
        self.transport.qp_state(qp)
    }

    /// Work requests on `qp`'s send list.
    #[must_use]
    pub fn posted(&self, qp: Qp) -> usize {
        self.qps[qp.index()].posted.len()
    }

    /// Sends waiting on `qp`'s overflow queue.
    #[must_use]
    pub fn queued(&self, qp: Qp) -> usize {
        self.qps[qp.index()].overflow.len()
    }

    /// Sends of `client` accepted and not yet completed (0 for an unknown
    /// client). The agent layer waits for 0 before unregistering.
    #[must_use]
    pub fn outstanding(&self, client: ClientId) -> usize {
        self.clients.get(client).map_or(0, |c| c.outstanding)
    }

    /// Number of registered clients.
    #[must_use]
    pub fn client_count(&self) -> usize {
        self.clients.len()
    }

    /// Ids of the registered clients.
    #[must_use]
    pub fn clients(&self) -> Vec<ClientId> {
        self.clients.ids()
    }

    /// The earliest time [`Port::poll`] has timed work to do (the soft-reset
    /// deadline), if any.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.reset.as_ref().map(|r| r.deadline)
    }

    // ----- clients -----

    /// Registers a client. During a soft reset it is asked to acknowledge
    /// too.
    pub fn register(&mut self) -> ClientId {
        let id = self.clients.insert();
        if let Some(r) = &mut self.reset {
            r.pending.push(id);
            if let Some(c) = self.clients.get_mut(id) {
                c.events.push_back(PortEvent::ResetPending);
            }
        }
        id
    }

    /// Unregisters `client`: its subscriptions end, its queued sends are
    /// dropped (returned as `(token, cookie)`; they never complete), and
    /// completions of its posted sends are discarded when they come. To
    /// see every send complete, wait until [`Port::outstanding`] is 0
    /// first.
    ///
    /// # Errors
    /// [`PortError::UnknownClient`].
    pub fn unregister(&mut self, client: ClientId) -> Result<Vec<(SendToken, u64)>, PortError> {
        if self.clients.remove(client).is_none() {
            return Err(PortError::UnknownClient(client));
        }
        for subs in self.subs.values_mut() {
            subs.retain(|c| *c != client);
        }
        self.subs.retain(|_, v| !v.is_empty());
        self.catch_all.retain(|c| *c != client);
        let mut dropped = Vec::new();
        for q in &mut self.qps {
            q.overflow.retain(|r| {
                if r.meta.client == client {
                    dropped.push((r.meta.token, r.meta.cookie));
                    false
                } else {
                    true
                }
            });
        }
        self.stats.dropped_on_unregister += dropped.len() as u64;
        #[cfg(debug_assertions)]
        for (t, _) in &dropped {
            self.live.remove(t);
        }
        if let Some(r) = &mut self.reset {
            r.pending.retain(|c| *c != client);
            if r.pending.is_empty() {
                self.execute_reset(false);
            }
        }
        Ok(dropped)
    }

    /// Delivers MADs arriving on `qp` with management class `class` to
    /// `client` (idempotent).
    ///
    /// # Errors
    /// [`PortError::UnknownClient`].
    pub fn subscribe(
        &mut self,
        client: ClientId,
        qp: Qp,
        class: MgmtClass,
    ) -> Result<(), PortError> {
        if !self.clients.contains(client) {
            return Err(PortError::UnknownClient(client));
        }
        let subs = self.subs.entry((qp, class.0)).or_default();
        if !subs.contains(&client) {
            subs.push(client);
        }
        Ok(())
    }

    /// Delivers every received MAD, whatever its QP and class, to
    /// `client` (idempotent): the subscription of a client that
    /// dispatches everything itself, such as the agent engine, which must
    /// see (and answer) MADs of classes no agent registered.
    ///
    /// # Errors
    /// [`PortError::UnknownClient`].
    pub fn subscribe_all(&mut self, client: ClientId) -> Result<(), PortError> {
        if !self.clients.contains(client) {
            return Err(PortError::UnknownClient(client));
        }
        if !self.catch_all.contains(&client) {
            self.catch_all.push(client);
        }
        Ok(())
    }

    /// Ends a subscription (no-op if there was none).
    pub fn unsubscribe(&mut self, client: ClientId, qp: Qp, class: MgmtClass) {
        if let Some(subs) = self.subs.get_mut(&(qp, class.0)) {
            subs.retain(|c| *c != client);
        }
    }

    /// The next event for `client`, in order.
    pub fn poll_client(&mut self, client: ClientId) -> Option<PortEvent> {
        self.clients.get_mut(client)?.events.pop_front()
    }

    // ----- sends -----

    /// Accepts one MAD to send on `qp` to `dest` for `client`. It is posted
    /// now if the QP has room, otherwise queued in order; either way it
    /// completes later, exactly once, as [`PortEvent::SendComplete`] with
    /// `cookie`.
    ///
    /// # Errors
    /// Unknown client; a dead port (at once, nothing is queued); a MAD
    /// shorter than its header or longer than 256 bytes; a transport that
    /// refuses the MAD itself; [`PortError::OverflowFull`] when it would
    /// have to wait and [`PortConfig::overflow_limit`] sends already wait
    /// on the QP. On error no token exists and nothing will complete.
    pub fn post(
        &mut self,
        client: ClientId,
        qp: Qp,
        mad: &[u8],
        dest: &Address,
        cookie: u64,
    ) -> Result<SendToken, PortError> {
        self.post_waiting(client, qp, mad, dest, cookie, None)
    }

    /// As [`Port::post`], with the wait for the answer of a request
    /// (`Some`: [`Transport::post_request`], also when the send waits on
    /// the overflow queue first; `None`: [`Transport::post_send`]).
    ///
    /// # Errors
    /// As [`Port::post`].
    pub fn post_waiting(
        &mut self,
        client: ClientId,
        qp: Qp,
        mad: &[u8],
        dest: &Address,
        cookie: u64,
        wait: Option<std::time::Duration>,
    ) -> Result<SendToken, PortError> {
        if !self.clients.contains(client) {
            return Err(PortError::UnknownClient(client));
        }
        if self.dead {
            return Err(self.dead_error());
        }
        Unsendable::check_len(mad, MAD_LEN).map_err(PortError::BadSend)?;
        let meta = Meta {
            token: SendToken(self.next_token),
            client,
            cookie,
        };
        let mut queue = true;
        if self.can_post_now(qp) {
            let r = match wait {
                Some(w) => self.transport.post_request(qp, mad, dest, w),
                None => self.transport.post_send(qp, mad, dest),
            };
            match r {
                Ok(wr) => {
                    self.qps[qp.index()].posted.push_back((wr, meta));
                    self.stats.posted += 1;
                    queue = false;
                }
                Err(TransportError::QueueFull { .. } | TransportError::QpNotReady { .. }) => {}
                Err(TransportError::DeviceDead(_)) => {
                    self.go_dead();
                    return Err(self.dead_error());
                }
                Err(e) => return Err(PortError::Transport(e)),
            }
        }
        if queue {
            let limit = self.cfg.overflow_limit;
            if self.qps[qp.index()].overflow.len() >= limit {
                self.stats.overflow_refused += 1;
                return Err(PortError::OverflowFull { qp, limit });
            }
            self.qps[qp.index()].overflow.push_back(Queued {
                meta,
                mad: crate::MadBuf::from_slice(mad),
                dest: *dest,
                wait,
            });
            self.stats.queued += 1;
        }
        self.next_token += 1;
        self.stats.accepted += 1;
        if let Some(c) = self.clients.get_mut(client) {
            c.outstanding += 1;
        }
        #[cfg(debug_assertions)]
        {
            let fresh = self.live.insert(meta.token);
            debug_assert!(fresh, "send token {:?} issued twice", meta.token);
        }
        Ok(meta.token)
    }

    fn can_post_now(&self, qp: Qp) -> bool {
        let q = &self.qps[qp.index()];
        self.reset.is_none()
            && self.recreate.is_none()
            && q.overflow.is_empty()
            && q.posted.len() < self.transport.send_queue_depth()
            && self.transport.qp_state(qp) == QpState::Rts
    }

    fn dead_error(&self) -> PortError {
        let a = self.transport.port_attrs();
        PortError::Dead {
            ca: a.ca_name.clone(),
            port: a.port_num,
        }
    }

    /// Finishes one send: the single place where a send completes.
    fn complete(&mut self, meta: Meta, qp: Qp, status: WcStatus, vendor_err: u32) {
        #[cfg(debug_assertions)]
        {
            let was_live = self.live.remove(&meta.token);
            debug_assert!(was_live, "send {:?} completed twice", meta.token);
        }
        self.stats.completed += 1;
        match status {
            WcStatus::Success => self.stats.succeeded += 1,
            WcStatus::WrFlushErr => self.stats.flushed += 1,
            _ => self.stats.wr_errors += 1,
        }
        match self.clients.get_mut(meta.client) {
            Some(c) => {
                c.outstanding = c.outstanding.saturating_sub(1);
                c.events.push_back(PortEvent::SendComplete {
                    token: meta.token,
                    cookie: meta.cookie,
                    qp,
                    status,
                    vendor_err,
                });
            }
            None => self.stats.orphaned += 1,
        }
    }

    /// Completes everything on `qp`'s send list as flushed.
    fn flush_posted(&mut self, qp: Qp) {
        let posted = std::mem::take(&mut self.qps[qp.index()].posted);
        for (_, meta) in posted {
            self.complete(meta, qp, WcStatus::WrFlushErr, 0);
        }
    }

    fn broadcast(&mut self, event: &PortEvent) {
        for c in self.clients.iter_mut() {
            c.events.push_back(event.clone());
        }
    }

    fn transport_error(&mut self, e: &TransportError) {
        self.stats.transport_errors += 1;
        self.last_error = Some(e.to_string());
    }

    /// Handles a failed transport call: device death kills the port.
    /// Returns true if the port is now dead.
    fn failed(&mut self, e: &TransportError) -> bool {
        if let TransportError::DeviceDead(_) = e {
            self.go_dead();
            true
        } else {
            self.transport_error(e);
            false
        }
    }

    // ----- driving -----

    /// Does everything due at `now`: drains send completions, receives and
    /// async events from the transport, recovers from errors, forces a
    /// soft reset whose deadline has passed, and posts queued sends.
    pub fn poll(&mut self, now: Instant) {
        if self.dead {
            return;
        }
        self.poll_completions();
        if !self.dead {
            self.poll_receives();
        }
        if !self.dead {
            self.poll_events(now);
        }
        if !self.dead {
            self.recover();
        }
        if !self.dead && self.reset.as_ref().is_some_and(|r| now >= r.deadline) {
            self.execute_reset(true);
        }
        if !self.dead {
            self.drain_overflow();
        }
    }

    fn poll_completions(&mut self) {
        loop {
            let mut buf = std::mem::take(&mut self.scratch);
            buf.clear();
            let r = self.transport.poll_send_completions(&mut buf);
            for c in buf.drain(..) {
                self.on_completion(c);
            }
            self.scratch = buf;
            match r {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    self.failed(&e);
                    break;
                }
            }
        }
    }

    fn on_completion(&mut self, c: SendCompletion) {
        let q = &mut self.qps[c.qp.index()];
        // Work requests mostly complete in the order they were posted.
        let found = if q.posted.front().is_some_and(|(w, _)| *w == c.wr_id) {
            q.posted.pop_front()
        } else {
            let pos = q.posted.iter().position(|(w, _)| *w == c.wr_id);
            pos.and_then(|pos| q.posted.remove(pos))
        };
        let Some((_, meta)) = found else {
            self.stats.stale_completions += 1;
            return;
        };
        self.complete(meta, c.qp, c.status, c.vendor_err);
    }

    fn poll_receives(&mut self) {
        loop {
            match self.transport.poll_recv() {
                Ok(Some(r)) => self.dispatch(r),
                Ok(None) => break,
                Err(e) => {
                    self.failed(&e);
                    break;
                }
            }
        }
    }

    /// Parses a received MAD once ([`Inbound::parse`]) and hands it to
    /// the clients subscribed to its QP and class, then to those that
    /// take everything.
    fn dispatch(&mut self, r: Received) {
        let Ok(inbound) = Inbound::parse(r) else {
            self.stats.recv_malformed += 1;
            return;
        };
        let subs = self
            .subs
            .get(&(inbound.qp(), inbound.class().0))
            .map_or(&[][..], Vec::as_slice);
        if subs.is_empty() && self.catch_all.is_empty() {
            self.stats.recv_unclaimed += 1;
            return;
        }
        // The last client takes the parsed MAD itself, the others a clone.
        let mut ids = subs.iter().chain(&self.catch_all).peekable();
        let mut inbound = Some(inbound);
        while let Some(id) = ids.next() {
            let Some(c) = self.clients.get_mut(*id) else {
                continue;
            };
            let m = if ids.peek().is_none() {
                inbound.take()
            } else {
                inbound.clone()
            };
            if let Some(m) = m {
                c.events.push_back(PortEvent::Received(m));
                self.stats.recv_delivered += 1;
            }
        }
    }

    /// Posts queued sends while the QPs have room.
    fn drain_overflow(&mut self) {
        if self.dead
            || self.reset.is_some()
            || self.recreate.is_some()
            || self.qps.iter().all(|q| q.overflow.is_empty())
        {
            return;
        }
        let depth = self.transport.send_queue_depth();
        for qp in [Qp::Qp0, Qp::Qp1] {
            if self.transport.qp_state(qp) != QpState::Rts {
                continue;
            }
            while self.qps[qp.index()].posted.len() < depth {
                let Some(r) = self.qps[qp.index()].overflow.pop_front() else {
                    break;
                };
                let posted = match r.wait {
                    Some(w) => self.transport.post_request(qp, &r.mad, &r.dest, w),
                    None => self.transport.post_send(qp, &r.mad, &r.dest),
                };
                match posted {
                    Ok(wr) => {
                        self.qps[qp.index()].posted.push_back((wr, r.meta));
                        self.stats.posted += 1;
                    }
                    Err(TransportError::QueueFull { .. } | TransportError::QpNotReady { .. }) => {
                        self.qps[qp.index()].overflow.push_front(r);
                        break;
                    }
                    Err(e @ TransportError::DeviceDead(_)) => {
                        self.qps[qp.index()].overflow.push_front(r);
                        self.failed(&e);
                        return;
                    }
                    Err(e) => {
                        self.transport_error(&e);
                        self.stats.post_failures += 1;
                        self.complete(r.meta, qp, WcStatus::LocQpOpErr, 0);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod memory_doc {
    /// The [Memory](super#memory) section's per-send figure: a queued send
    /// is its slot in the overflow queue plus one 256-byte buffer.
    #[test]
    fn a_queued_send_costs_what_the_memory_docs_say() {
        let slot = std::mem::size_of::<super::Queued>();
        eprintln!("overflow slot: {slot} bytes");
        assert!(slot < 128, "the docs say under 128 bytes, a slot is {slot}");
        assert!(slot + crate::wire::MAD_LEN <= 390, "the docs say about 380");
    }
}
