//! `FaultInjector`: a seeded, repeatable [`Transport`] wrapper that makes
//! the wrapped transport fail in every way the port layer must survive.
//!
//! Every random choice comes from one xorshift64* generator seeded by the
//! caller and is drawn in a fixed order per call, so the same seed and the
//! same sequence of calls give the same faults.
//!
//! # What it injects, and how it looks from above
//!
//! Modelled on what verbs hardware does (seeds 000 and 002):
//!
//! - **Work-request error** ([`FaultConfig::wr_error`], or
//!   [`FaultInjector::fail_next_send`]): that send is not passed down; it
//!   completes with the chosen status (`IBV_WC_GENERAL_ERR`,
//!   `IBV_WC_LOC_QP_OP_ERR`, `IBV_WC_FATAL_ERR`, ...). Completions stay in
//!   post order, so it completes after every send posted before it. When
//!   its completion is handed out, the QP is in ERR (or SQE, see
//!   [`FaultConfig::wr_error_state`]). Every send posted behind it, and
//!   every send posted while the QP is in ERR/SQE, is not passed down and
//!   completes with `IBV_WC_WR_FLUSH_ERR`. Recovery is the verbs one: RESET
//!   → INIT → RTR → RTS (or SQE → RTS).
//! - **CQ error** ([`FaultConfig::cq_error`], [`AsyncEvent::CqError`]):
//!   `IBV_EVENT_CQ_ERR` then `IBV_EVENT_QP_FATAL` for both QPs, as seed 002
//!   describes. No completion of any outstanding send is ever produced ("no
//!   guarantees that completions from the CQ can be pulled"): the consumer
//!   must flush them itself. Both QPs report ERR, posts are accepted and
//!   lost, and `modify_qp` is refused until
//!   [`Transport::recreate_queues`].
//! - **QP fatal** ([`AsyncEvent::QpFatal`]): that QP goes to ERR, its
//!   outstanding sends produce no completion, later posts are flushed.
//! - **Device fatal** ([`FaultConfig::device_fatal`],
//!   [`AsyncEvent::DeviceFatal`]): the event is queued, nothing outstanding
//!   ever completes, and every later call except `poll_event`,
//!   `port_attrs`, `send_queue_depth`, `qp_state` and `raw_fd` fails with
//!   [`TransportError::DeviceDead`]. Only a new transport helps.
//! - **Soft reset request** ([`FaultConfig::soft_reset`]) and any other
//!   [`AsyncEvent`] ([`FaultInjector::inject_event`]).
//! - For the layers above: **drop** (the send completes with success but
//!   never reaches the wire; a received MAD vanishes), **duplicate** (the
//!   MAD goes out twice; a received MAD arrives twice) and **delay** (a send
//!   is held back for some polls, so later sends overtake it on the wire
//!   while completions stay in order; a received MAD is held back for some
//!   polls and so arrives after later ones). A "poll" is one call of
//!   `poll_send_completions`, which the port layer makes once per
//!   `poll(now)`.
//!
//! Triggers ([`Trigger`]) count the sends accepted by `post`
//! (1-based) across both QPs. A send that is flushed anyway (posted behind
//! an error) is counted but never chosen for a work-request error.
//!
//! Duplicating sends needs a spare slot below: while
//! [`FaultConfig::send_duplicate`] is non-zero the injector reports a send
//! queue one shorter than the wrapped one and keeps at most one duplicate
//! outstanding.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use super::loopback::check_qp_transition;
use super::{
    Address, AsyncEvent, OutMad, Posted, Qp, QpState, Received, SendCompletion, Transport,
    TransportError, WcStatus, WrId,
};

/// When a fault fires, counted in accepted sends.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Trigger {
    /// Never.
    #[default]
    Never,
    /// Once, at the n-th accepted send (1-based).
    Nth(u64),
    /// At each accepted send with this probability (0.0 ..= 1.0).
    Probability(f64),
}

/// What to inject. `Default` injects nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultConfig {
    /// Work-request errors.
    pub wr_error: Trigger,
    /// Status of an injected work-request error.
    pub wr_error_status: WcStatus,
    /// State the QP is in after a work-request error: [`QpState::Err`]
    /// (default) or [`QpState::Sqe`] (a UD send-queue error).
    pub wr_error_state: QpState,
    /// CQ errors (after the triggering send was posted).
    pub cq_error: Trigger,
    /// Device-fatal errors (after the triggering send was posted).
    pub device_fatal: Trigger,
    /// Soft reset requests (after the triggering send was posted).
    pub soft_reset: Trigger,
    /// Probability that a send completes with success but is not sent.
    pub send_drop: f64,
    /// Probability that a send goes out twice.
    pub send_duplicate: f64,
    /// Probability that a send is held back.
    pub send_delay: f64,
    /// For how many polls a delayed send is held (at least 1).
    pub send_delay_polls: u32,
    /// Probability that a received MAD is dropped.
    pub recv_drop: f64,
    /// Probability that a received MAD is delivered twice.
    pub recv_duplicate: f64,
    /// Probability that a received MAD is held back.
    pub recv_delay: f64,
    /// For how many polls a delayed receive is held (at least 1).
    pub recv_delay_polls: u32,
}

impl Default for FaultConfig {
    fn default() -> Self {
        Self {
            wr_error: Trigger::Never,
            wr_error_status: WcStatus::GeneralErr,
            wr_error_state: QpState::Err,
            cq_error: Trigger::Never,
            device_fatal: Trigger::Never,
            soft_reset: Trigger::Never,
            send_drop: 0.0,
            send_duplicate: 0.0,
            send_delay: 0.0,
            send_delay_polls: 1,
            recv_drop: 0.0,
            recv_duplicate: 0.0,
            recv_delay: 0.0,
            recv_delay_polls: 1,
        }
    }
}

/// Counters of what a [`FaultInjector`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Sends accepted by `post`.
    pub sends: u64,
    /// Work-request errors injected.
    pub wr_errors: u64,
    /// Completions with `IBV_WC_WR_FLUSH_ERR` handed out.
    pub flushed: u64,
    /// Completions handed out in total.
    pub completions: u64,
    /// Sends whose completion was lost (CQ error, QP fatal, device fatal,
    /// posted into a broken CQ).
    pub lost: u64,
    /// CQ errors injected.
    pub cq_errors: u64,
    /// Device-fatal errors injected.
    pub device_fatals: u64,
    /// Asynchronous events injected (all kinds).
    pub events: u64,
    /// Sends dropped.
    pub sends_dropped: u64,
    /// Sends duplicated.
    pub sends_duplicated: u64,
    /// Sends delayed.
    pub sends_delayed: u64,
    /// Receives dropped.
    pub recvs_dropped: u64,
    /// Receives duplicated.
    pub recvs_duplicated: u64,
    /// Receives delayed.
    pub recvs_delayed: u64,
    /// Calls of `refresh_port_attrs`.
    pub refreshes: u64,
    /// Calls of `recreate_queues`.
    pub recreates: u64,
    /// QP transitions to RESET.
    pub qp_resets: u64,
    /// Completions from below for work requests no longer tracked.
    pub stale: u64,
}

/// A small seeded, repeatable RNG: xorshift64* (Vigna) seeded through
/// splitmix64, never zero. Shared by every fault injector of the project
/// (this transport wrapper and the simulated fabric's links), so the same
/// seed gives the same faults everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (splitmix64 of it, so that small seeds differ
    /// a lot).
    #[must_use]
    pub fn new(seed: u64) -> Self {
        // splitmix64 of the seed, so that small seeds differ a lot.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Self(if z == 0 { 0x2545_f491_4f6c_dd1d } else { z })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// True with probability `p`; draws nothing when `p` is 0 or 1.
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        #[allow(clippy::cast_precision_loss)]
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        u < p
    }
}

impl Trigger {
    fn fires(self, n: u64, rng: &mut Rng) -> bool {
        match self {
            Trigger::Never => false,
            Trigger::Nth(k) => k == n,
            Trigger::Probability(p) => rng.chance(p),
        }
    }
}

#[derive(Debug)]
struct Held {
    mad: Vec<u8>,
    dest: Address,
    /// The wait it was posted with, for the post below.
    wait: Duration,
    polls: u32,
}

/// One outstanding send as seen from above, in post order.
#[derive(Debug)]
struct Slot {
    id: WrId,
    status: Option<WcStatus>,
    vendor_err: u32,
    /// The QP state this completion puts the QP in when handed out.
    sets_state: Option<QpState>,
    held: Option<Held>,
}

#[derive(Debug, Clone, Copy)]
enum Below {
    Main(Qp, WrId),
    Duplicate,
}

#[derive(Debug, Default)]
struct QpFault {
    slots: VecDeque<Slot>,
    /// State presented instead of the wrapped transport's.
    state: Option<QpState>,
    /// An error was injected: everything posted from now on is flushed.
    doomed: bool,
}

/// The fault-injecting wrapper; see the [module documentation](self).
pub struct FaultInjector<T> {
    inner: T,
    cfg: FaultConfig,
    rng: Rng,
    qps: [QpFault; 2],
    below: HashMap<WrId, Below>,
    duplicates: usize,
    events: VecDeque<AsyncEvent>,
    rx_dup: VecDeque<Received>,
    rx_held: Vec<(u32, Received)>,
    next_id: u64,
    armed: Option<WcStatus>,
    cq_broken: bool,
    dead: bool,
    stats: FaultStats,
    scratch: Vec<SendCompletion>,
}

impl<T: std::fmt::Debug> std::fmt::Debug for FaultInjector<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultInjector")
            .field("inner", &self.inner)
            .field("cfg", &self.cfg)
            .field("cq_broken", &self.cq_broken)
            .field("dead", &self.dead)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<T: Transport> FaultInjector<T> {
    /// Wraps `inner`; injects nothing until configured.
    #[must_use]
    pub fn new(inner: T, seed: u64) -> Self {
        Self::with_config(inner, seed, FaultConfig::default())
    }

    /// Wraps `inner` with `cfg`.
    #[must_use]
    pub fn with_config(inner: T, seed: u64, cfg: FaultConfig) -> Self {
        Self {
            inner,
            cfg,
            rng: Rng::new(seed),
            qps: [QpFault::default(), QpFault::default()],
            below: HashMap::new(),
            duplicates: 0,
            events: VecDeque::new(),
            rx_dup: VecDeque::new(),
            rx_held: Vec::new(),
            next_id: 1,
            armed: None,
            cq_broken: false,
            dead: false,
            stats: FaultStats::default(),
            scratch: Vec::new(),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// The configuration, to change while running.
    pub fn config_mut(&mut self) -> &mut FaultConfig {
        &mut self.cfg
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> FaultStats {
        self.stats
    }

    /// The wrapped transport.
    #[must_use]
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The wrapped transport, mutably (e.g. to stall a [`Loopback`]).
    ///
    /// [`Loopback`]: super::loopback::Loopback
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps.
    #[must_use]
    pub fn into_inner(self) -> T {
        self.inner
    }

    /// The next send that is not flushed anyway fails with `status`.
    pub fn fail_next_send(&mut self, status: WcStatus) {
        self.armed = Some(status);
    }

    /// Sends currently outstanding (posted, completion not yet handed out)
    /// on `qp`.
    #[must_use]
    pub fn outstanding(&self, qp: Qp) -> usize {
        self.qps[qp.index()].slots.len()
    }

    /// Injects an asynchronous event with its effect: [`AsyncEvent::CqError`]
    /// breaks the CQ, [`AsyncEvent::QpFatal`] puts the QP in ERR,
    /// [`AsyncEvent::DeviceFatal`] kills the device; every other event is
    /// only reported.
    pub fn inject_event(&mut self, event: AsyncEvent) {
        if self.dead {
            return;
        }
        self.stats.events += 1;
        match event {
            AsyncEvent::CqError => {
                self.stats.cq_errors += 1;
                self.cq_broken = true;
                self.lose_all();
                self.events.push_back(AsyncEvent::CqError);
                self.events.push_back(AsyncEvent::QpFatal(Qp::Qp0));
                self.events.push_back(AsyncEvent::QpFatal(Qp::Qp1));
            }
            AsyncEvent::QpFatal(qp) => {
                self.lose_qp(qp);
                let q = &mut self.qps[qp.index()];
                q.state = Some(QpState::Err);
                q.doomed = true;
                self.events.push_back(event);
            }
            AsyncEvent::DeviceFatal => {
                self.stats.device_fatals += 1;
                self.dead = true;
                self.lose_all();
                self.events.push_back(event);
            }
            _ => self.events.push_back(event),
        }
    }

    /// A CQ error (overflow) now.
    pub fn inject_cq_error(&mut self) {
        self.inject_event(AsyncEvent::CqError);
    }

    /// A device-fatal error now.
    pub fn inject_device_fatal(&mut self) {
        self.inject_event(AsyncEvent::DeviceFatal);
    }

    /// An HCA soft reset request now.
    pub fn request_soft_reset(&mut self) {
        self.inject_event(AsyncEvent::SoftResetRequest);
    }

    fn dead_error(&self) -> TransportError {
        TransportError::DeviceDead(self.inner.port_attrs().ca_name.clone())
    }

    fn alloc(&mut self) -> WrId {
        let id = WrId(self.next_id);
        self.next_id += 1;
        id
    }

    /// Forgets every outstanding send of `qp` without a completion.
    fn lose_qp(&mut self, qp: Qp) {
        let n = self.qps[qp.index()].slots.len() as u64;
        self.stats.lost += n;
        self.qps[qp.index()].slots.clear();
        self.below
            .retain(|_, b| !matches!(b, Below::Main(q, _) if *q == qp));
    }

    fn lose_all(&mut self) {
        self.lose_qp(Qp::Qp0);
        self.lose_qp(Qp::Qp1);
        self.below.clear();
        self.duplicates = 0;
    }

    /// Slot `idx` of `qp` fails with `status`; everything behind it is
    /// flushed.
    fn fail_at(&mut self, qp: Qp, idx: usize, status: WcStatus) {
        self.stats.wr_errors += 1;
        let err_state = self.cfg.wr_error_state;
        let q = &mut self.qps[qp.index()];
        q.doomed = true;
        for (i, s) in q.slots.iter_mut().enumerate().skip(idx) {
            s.held = None;
            if i == idx {
                s.status = Some(status);
                s.sets_state = Some(err_state);
            } else {
                s.status = Some(WcStatus::WrFlushErr);
            }
        }
    }

    fn flushed_slot(id: WrId) -> Slot {
        Slot {
            id,
            status: Some(WcStatus::WrFlushErr),
            vendor_err: 0,
            sets_state: None,
            held: None,
        }
    }

    /// Releases delayed sends whose time has come.
    fn tick_sends(&mut self) -> Result<(), TransportError> {
        for qp in [Qp::Qp0, Qp::Qp1] {
            let mut idx = 0;
            while idx < self.qps[qp.index()].slots.len() {
                let due = match &mut self.qps[qp.index()].slots[idx].held {
                    Some(h) => {
                        h.polls = h.polls.saturating_sub(1);
                        h.polls == 0
                    }
                    None => false,
                };
                if due {
                    let slot = &mut self.qps[qp.index()].slots[idx];
                    let id = slot.id;
                    if let Some(h) = slot.held.take() {
                        // A copy of a MAD checked when first posted.
                        let mad = super::OutMad::requeued(&h.mad, qp);
                        match self.inner.post(mad, &h.dest, h.wait) {
                            Ok(w) => {
                                self.below.insert(w, Below::Main(qp, id));
                            }
                            Err(TransportError::DeviceDead(s)) => {
                                return Err(TransportError::DeviceDead(s));
                            }
                            Err(_) => self.fail_at(qp, idx, WcStatus::LocQpOpErr),
                        }
                    }
                }
                idx += 1;
            }
        }
        for (polls, _) in &mut self.rx_held {
            *polls = polls.saturating_sub(1);
        }
        Ok(())
    }
}

crate::transport_layer!([T: Transport] FaultInjector<T>, inner: T);

impl<T: Transport> Transport for FaultInjector<T> {
    crate::forward_transport!(
        port_attrs,
        raw_fd,
        watch_fd,
        bounded_far_side,
        register_requests
    );

    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        if self.dead {
            return Err(self.dead_error());
        }
        self.stats.refreshes += 1;
        self.inner.refresh_port_attrs()
    }

    fn send_queue_depth(&self) -> usize {
        let d = self.inner.send_queue_depth();
        if self.cfg.send_duplicate > 0.0 && d >= 2 {
            d - 1
        } else {
            d
        }
    }

    fn post(&mut self, out: OutMad<'_>, dest: &Address, wait: Duration) -> Posted {
        let (qp, mad) = (out.qp(), out.bytes());
        if self.dead {
            return Err(self.dead_error());
        }
        if self.cq_broken {
            // The QP is attached to a broken CQ: accepted, never completed.
            self.stats.sends += 1;
            self.stats.lost += 1;
            return Ok(self.alloc());
        }
        let depth = self.send_queue_depth();
        if self.qps[qp.index()].slots.len() >= depth {
            return Err(TransportError::QueueFull { qp, depth });
        }
        let state = self.qp_state(qp);
        if matches!(state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err(TransportError::QpNotReady { qp, state });
        }
        let n = self.stats.sends + 1;
        let id = self.alloc();
        let doomed = self.qps[qp.index()].doomed || state != QpState::Rts;
        let slot = if doomed {
            Self::flushed_slot(WrId(0))
        } else {
            let failure = match self.armed.take() {
                Some(s) => Some(s),
                None => self
                    .cfg
                    .wr_error
                    .fires(n, &mut self.rng)
                    .then_some(self.cfg.wr_error_status),
            };
            if let Some(status) = failure {
                self.stats.wr_errors += 1;
                self.qps[qp.index()].doomed = true;
                Slot {
                    id: WrId(0),
                    status: Some(status),
                    vendor_err: 0,
                    sets_state: Some(self.cfg.wr_error_state),
                    held: None,
                }
            } else if self.rng.chance(self.cfg.send_drop) {
                self.stats.sends_dropped += 1;
                Slot {
                    status: Some(WcStatus::Success),
                    ..Self::flushed_slot(WrId(0))
                }
            } else if self.rng.chance(self.cfg.send_delay) {
                self.stats.sends_delayed += 1;
                Slot {
                    status: None,
                    held: Some(Held {
                        mad: mad.to_vec(),
                        dest: *dest,
                        wait,
                        polls: self.cfg.send_delay_polls.max(1),
                    }),
                    ..Self::flushed_slot(WrId(0))
                }
            } else {
                let w = self.inner.post(out, dest, wait)?;
                let dup = self.rng.chance(self.cfg.send_duplicate);
                let slot = Slot {
                    status: None,
                    ..Self::flushed_slot(WrId(0))
                };
                self.below.insert(w, Below::Main(qp, id));
                if dup && self.duplicates == 0 && self.below.len() < self.inner.send_queue_depth() {
                    if let Ok(w2) = self.inner.post(out, dest, wait) {
                        self.below.insert(w2, Below::Duplicate);
                        self.duplicates += 1;
                        self.stats.sends_duplicated += 1;
                    }
                }
                slot
            }
        };
        self.stats.sends = n;
        self.qps[qp.index()].slots.push_back(Slot { id, ..slot });
        if self.cfg.cq_error.fires(n, &mut self.rng) {
            self.inject_cq_error();
        }
        if self.cfg.device_fatal.fires(n, &mut self.rng) {
            self.inject_device_fatal();
        }
        if self.cfg.soft_reset.fires(n, &mut self.rng) {
            self.request_soft_reset();
        }
        Ok(id)
    }

    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError> {
        if self.dead {
            return Err(self.dead_error());
        }
        self.tick_sends()?;
        let mut below = std::mem::take(&mut self.scratch);
        below.clear();
        let polled = self.inner.poll_send_completions(&mut below);
        for c in &below {
            match self.below.remove(&c.wr_id) {
                None => self.stats.stale += 1,
                Some(Below::Duplicate) => self.duplicates = self.duplicates.saturating_sub(1),
                Some(Below::Main(qp, id)) => {
                    let slots = &mut self.qps[qp.index()].slots;
                    match slots.binary_search_by_key(&id, |s| s.id) {
                        Ok(i) if slots[i].status.is_none() => {
                            slots[i].status = Some(c.status);
                            slots[i].vendor_err = c.vendor_err;
                        }
                        Ok(_) => {}
                        Err(_) => self.stats.stale += 1,
                    }
                }
            }
        }
        self.scratch = below;
        polled?;
        let mut n = 0;
        for qp in [Qp::Qp0, Qp::Qp1] {
            let q = &mut self.qps[qp.index()];
            while q.slots.front().is_some_and(|s| s.status.is_some()) {
                let Some(s) = q.slots.pop_front() else { break };
                let Some(status) = s.status else { break };
                if let Some(st) = s.sets_state {
                    q.state = Some(st);
                }
                if status == WcStatus::WrFlushErr {
                    self.stats.flushed += 1;
                }
                self.stats.completions += 1;
                out.push(SendCompletion {
                    wr_id: s.id,
                    qp,
                    status,
                    vendor_err: s.vendor_err,
                });
                n += 1;
            }
        }
        Ok(n)
    }

    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        if self.dead {
            return Err(self.dead_error());
        }
        if let Some(r) = self.rx_dup.pop_front() {
            return Ok(Some(r));
        }
        if let Some(pos) = self.rx_held.iter().position(|(p, _)| *p == 0) {
            return Ok(Some(self.rx_held.remove(pos).1));
        }
        loop {
            let Some(r) = self.inner.poll_recv()? else {
                return Ok(None);
            };
            if self.rng.chance(self.cfg.recv_drop) {
                self.stats.recvs_dropped += 1;
                continue;
            }
            if self.rng.chance(self.cfg.recv_delay) {
                self.stats.recvs_delayed += 1;
                self.rx_held.push((self.cfg.recv_delay_polls.max(1), r));
                continue;
            }
            if self.rng.chance(self.cfg.recv_duplicate) {
                self.stats.recvs_duplicated += 1;
                self.rx_dup.push_back(r.clone());
            }
            return Ok(Some(r));
        }
    }

    fn poll_event(&mut self) -> Option<AsyncEvent> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        if self.dead {
            return None;
        }
        self.inner.poll_event()
    }

    fn qp_state(&self, qp: Qp) -> QpState {
        if self.dead || self.cq_broken {
            return QpState::Err;
        }
        self.qps[qp.index()]
            .state
            .unwrap_or_else(|| self.inner.qp_state(qp))
    }

    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
        if self.dead {
            return Err(self.dead_error());
        }
        if self.cq_broken {
            return Err(TransportError::QpNotReady {
                qp,
                state: QpState::Err,
            });
        }
        let from = self.qp_state(qp);
        check_qp_transition(qp, from, to)?;
        self.inner.modify_qp(qp, to)?;
        match to {
            QpState::Reset => {
                self.stats.qp_resets += 1;
                // Discarded without completions, as the verbs do.
                let n = self.qps[qp.index()].slots.len() as u64;
                self.stats.lost += n;
                self.qps[qp.index()].slots.clear();
                self.below
                    .retain(|_, b| !matches!(b, Below::Main(q, _) if *q == qp));
                let q = &mut self.qps[qp.index()];
                q.state = None;
                q.doomed = false;
            }
            QpState::Err => {
                let q = &mut self.qps[qp.index()];
                for s in &mut q.slots {
                    if s.status.is_none() && s.held.take().is_some() {
                        s.status = Some(WcStatus::WrFlushErr);
                    }
                }
                q.state = Some(QpState::Err);
                q.doomed = true;
            }
            QpState::Rts if from == QpState::Sqe => {
                let q = &mut self.qps[qp.index()];
                q.state = None;
                q.doomed = false;
            }
            _ => {}
        }
        Ok(())
    }

    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        if self.dead {
            return Err(self.dead_error());
        }
        self.inner.recreate_queues()?;
        self.stats.recreates += 1;
        self.lose_all();
        for q in &mut self.qps {
            q.state = None;
            q.doomed = false;
        }
        self.cq_broken = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
