//! [`PortCore`]: a port's state with no transport — its clients, send
//! lists and overflow queues, the recovery and soft-reset state and its
//! counters. Whoever owns the transport drives it through a
//! [`Driver`](super::Driver).

use std::collections::VecDeque;
use std::time::Instant;

use crate::transport::{
    Address, PortAttrs, Qp, Received, SendCompletion, TransportError, WcStatus, WrId,
};

use super::clients::{ClientId, Clients};
use super::inbound::Inbound;
use super::types::{PortConfig, PortError, PortEvent, PortStats, SendToken};

/// Who a send belongs to.
#[derive(Debug, Clone, Copy)]
pub(super) struct Meta {
    pub(super) token: SendToken,
    pub(super) client: ClientId,
    pub(super) cookie: u64,
}

/// A send waiting on the overflow queue.
#[derive(Debug)]
pub(super) struct Queued {
    pub(super) meta: Meta,
    pub(super) mad: crate::MadBuf,
    pub(super) dest: Address,
    /// The answer's wait of a request, zero for none
    /// ([`super::Driver::post`]).
    pub(super) wait: std::time::Duration,
}

#[derive(Debug, Default)]
pub(super) struct QpQueues {
    /// The send list: posted, completion not yet seen; in post order.
    pub(super) posted: VecDeque<(WrId, Meta)>,
    /// Waiting for room, in order.
    pub(super) overflow: VecDeque<Queued>,
}

/// Why the queues must be recreated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Recreate {
    CqError,
    SoftReset,
}

#[derive(Debug)]
pub(super) struct ResetState {
    pub(super) deadline: Instant,
    pub(super) pending: Vec<ClientId>,
}

/// One port's QP0/QP1 state without its transport; see the [module
/// documentation](super). Every call only changes state: the transport
/// calls (posts, QP moves, queue recreation, attribute refreshes) are the
/// [`Driver`](super::Driver)'s, which reports what came of them here.
#[derive(Debug)]
pub struct PortCore {
    /// The device and port, for [`PortError::Dead`].
    pub(super) ca: String,
    pub(super) port_num: u8,
    pub(super) cfg: PortConfig,
    pub(super) clients: Clients,
    /// Clients that take every received MAD ([`PortCore::subscribe_all`]).
    pub(super) catch_all: Vec<ClientId>,
    pub(super) qps: [QpQueues; 2],
    pub(super) next_token: u64,
    pub(super) dead: bool,
    pub(super) reset: Option<ResetState>,
    /// Every client acknowledged (`Some(false)`) or the deadline passed
    /// (`Some(true)`): the driver resets the port at its next step.
    pub(super) reset_due: Option<bool>,
    pub(super) recreate: Option<Recreate>,
    pub(super) stats: PortStats,
    pub(super) last_error: Option<String>,
    #[cfg(debug_assertions)]
    pub(super) live: crate::hash::FastSet<SendToken>,
}

impl PortCore {
    /// The state of a port whose transport has attributes `attrs`.
    #[must_use]
    pub fn new(attrs: &PortAttrs, cfg: PortConfig) -> Self {
        Self {
            ca: attrs.ca_name.clone(),
            port_num: attrs.port_num,
            cfg,
            clients: Clients::default(),
            catch_all: Vec::new(),
            qps: [QpQueues::default(), QpQueues::default()],
            next_token: 1,
            dead: false,
            reset: None,
            reset_due: None,
            recreate: None,
            stats: PortStats::default(),
            last_error: None,
            #[cfg(debug_assertions)]
            live: crate::hash::FastSet::default(),
        }
    }

    // ----- getters -----

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

    /// True after a device-fatal error, until the port is reopened.
    #[must_use]
    pub fn is_dead(&self) -> bool {
        self.dead
    }

    /// True between a soft reset request and the reset itself.
    #[must_use]
    pub fn is_reset_pending(&self) -> bool {
        self.reset.is_some() || self.reset_due.is_some()
    }

    /// Clients that have not acknowledged the pending soft reset.
    #[must_use]
    pub fn reset_waiting_for(&self) -> Vec<ClientId> {
        self.reset
            .as_ref()
            .map(|r| r.pending.clone())
            .unwrap_or_default()
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

    /// The earliest time the port has timed work to do (the soft-reset
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

    /// Unregisters `client`: it no longer takes receives, its queued sends
    /// are dropped (returned as `(token, cookie)`; they never complete),
    /// and completions of its posted sends are discarded when they come.
    /// To see every send complete, wait until [`PortCore::outstanding`]
    /// is 0 first. If it was the last client a pending soft reset waited
    /// for, the reset is due.
    ///
    /// # Errors
    /// [`PortError::UnknownClient`].
    pub fn unregister(&mut self, client: ClientId) -> Result<Vec<(SendToken, u64)>, PortError> {
        if self.clients.remove(client).is_none() {
            return Err(PortError::UnknownClient(client));
        }
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
        self.acknowledged(client);
        Ok(dropped)
    }

    /// Delivers every received MAD, whatever its QP and class, to
    /// `client` (idempotent), after those that asked before it. The agent
    /// engine takes everything this way and dispatches on the parsed
    /// value (it must see, and answer, MADs of classes no agent
    /// registered); a client that did not ask gets no receives.
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

    /// The next event for `client`, in order.
    #[inline]
    pub fn poll_client(&mut self, client: ClientId) -> Option<PortEvent> {
        self.clients.get_mut(client)?.events.pop_front()
    }

    // ----- sends -----

    /// The checks of a post that need no transport: a known client and a
    /// live port (the MAD itself was checked once, when its
    /// [`OutMad`](crate::transport::OutMad) was made); then the send's
    /// token and owner.
    #[inline]
    pub(super) fn accept(&mut self, client: ClientId, cookie: u64) -> Result<Meta, PortError> {
        if !self.clients.contains(client) {
            return Err(PortError::UnknownClient(client));
        }
        if self.dead {
            return Err(self.dead_error());
        }
        Ok(Meta {
            token: SendToken(self.next_token),
            client,
            cookie,
        })
    }

    /// True if a send on `qp` may go to the transport now rather than
    /// wait: nothing is queued before it, no reset or recreation is under
    /// way, the send list is shorter than `depth` and the QP is in RTS
    /// (`rts`, the transport's word).
    pub(super) fn can_post_now(&self, qp: Qp, depth: usize, rts: bool) -> bool {
        let q = &self.qps[qp.index()];
        self.reset.is_none()
            && self.reset_due.is_none()
            && self.recreate.is_none()
            && q.overflow.is_empty()
            && q.posted.len() < depth
            && rts
    }

    /// Puts an accepted send on `qp`'s overflow queue.
    ///
    /// # Errors
    /// [`PortError::OverflowFull`] when [`PortConfig::overflow_limit`]
    /// sends already wait there (nothing is queued).
    pub(super) fn enqueue(&mut self, qp: Qp, q: Queued) -> Result<(), PortError> {
        let limit = self.cfg.overflow_limit;
        if self.qps[qp.index()].overflow.len() >= limit {
            self.stats.overflow_refused += 1;
            return Err(PortError::OverflowFull { qp, limit });
        }
        self.qps[qp.index()].overflow.push_back(q);
        self.stats.queued += 1;
        Ok(())
    }

    /// An accepted send is the port's now (posted or queued): its token
    /// is spent and it will complete exactly once.
    #[inline]
    pub(super) fn accepted(&mut self, meta: Meta) -> SendToken {
        self.next_token += 1;
        self.stats.accepted += 1;
        if let Some(c) = self.clients.get_mut(meta.client) {
            c.outstanding += 1;
        }
        #[cfg(debug_assertions)]
        {
            let fresh = self.live.insert(meta.token);
            debug_assert!(fresh, "send token {:?} issued twice", meta.token);
        }
        meta.token
    }

    /// The transport took work request `wr` of the send `meta` on `qp`.
    #[inline]
    pub(super) fn posted_wr(&mut self, qp: Qp, wr: WrId, meta: Meta) {
        self.qps[qp.index()].posted.push_back((wr, meta));
        self.stats.posted += 1;
    }

    pub(super) fn dead_error(&self) -> PortError {
        PortError::Dead {
            ca: self.ca.clone(),
            port: self.port_num,
        }
    }

    /// Finishes one send: the single place where a send completes.
    #[inline]
    pub(super) fn complete(&mut self, meta: Meta, qp: Qp, status: WcStatus, vendor_err: u32) {
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
    pub(super) fn flush_posted(&mut self, qp: Qp) {
        let posted = std::mem::take(&mut self.qps[qp.index()].posted);
        for (_, meta) in posted {
            self.complete(meta, qp, WcStatus::WrFlushErr, 0);
        }
    }

    pub(super) fn broadcast(&mut self, event: &PortEvent) {
        for c in self.clients.iter_mut() {
            c.events.push_back(event.clone());
        }
    }

    pub(super) fn transport_error(&mut self, e: &TransportError) {
        self.stats.transport_errors += 1;
        self.last_error = Some(e.to_string());
    }

    /// A transport call failed with `e`: device death kills the port.
    /// Returns true if the port is now dead.
    pub(super) fn failed(&mut self, e: &TransportError) -> bool {
        if let TransportError::DeviceDead(_) = e {
            self.go_dead();
            true
        } else {
            self.transport_error(e);
            false
        }
    }

    // ----- what the transport reports -----

    /// A work completion from the transport: the send it belongs to
    /// completes (one not on the send list is counted as stale).
    #[inline]
    pub fn handle_completion(&mut self, c: SendCompletion) {
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

    /// A MAD the transport received: parsed once ([`Inbound::parse`];
    /// one that is not a MAD of its QP is dropped and counted) and handed
    /// to the clients that take receives, in the order they asked.
    #[inline]
    pub fn handle_recv(&mut self, r: Received) {
        let Ok(inbound) = Inbound::parse(r) else {
            self.stats.recv_malformed += 1;
            return;
        };
        if self.catch_all.is_empty() {
            self.stats.recv_unclaimed += 1;
            return;
        }
        // The last client takes the parsed MAD itself, the others a clone.
        let mut ids = self.catch_all.iter().peekable();
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
}
