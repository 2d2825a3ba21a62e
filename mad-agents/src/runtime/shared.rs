//! The runtime's state shared between the loop thread and the callers'
//! threads ([`Shared`], its [`Core`] under one lock), and the protocol's
//! locked steps (see the [runtime documentation](super)).

use std::cell::Cell;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use mad_core::hash::FastMap;
use mio::{Token, Waker};

use super::waiter::{lock, WaitSlot, Waiter};
use crate::engine::AgentState;
use crate::spec::AgentSpec;
use crate::stack::Stack;
use crate::types::{AgentEvent, AgentId, RegisterError, SendError, SendId, SendRequest};

/// How often the loop polls a transport without a usable fd while work is
/// outstanding (also the longest a transport with an fd sleeps while work
/// requests are posted).
pub const TICK: Duration = Duration::from_micros(200);
/// The longest the loop sleeps with nothing outstanding when it waits on
/// the transport's fd (a safety net for a missed edge).
pub const IDLE: Duration = Duration::from_millis(100);
/// The shortest idle poll interval [`EngineConfig::fallback_tick`](crate::EngineConfig::fallback_tick) may set.
pub(super) const MIN_TICK: Duration = Duration::from_micros(50);

pub(super) const WAKER: Token = Token(0);
pub(super) const TRANSPORT: Token = Token(1);

pub(super) static NEXT_RUNTIME: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (runtime id, agent) whose callback runs on this thread.
    pub(super) static IN_CALLBACK: Cell<Option<(u64, AgentId)>> = const { Cell::new(None) };
}

/// An agent's callback.
pub type Callback = Box<dyn FnMut(AgentEvent) + Send + 'static>;

pub(super) enum Sink {
    Callback(Callback),
    Channel {
        tx: super::channel::Sender,
        queued: Arc<ChannelLoad>,
    },
}

/// Received messages sitting in a channel agent's channel: how many, and
/// their bytes ([`EngineConfig::recv_queue_bound`](crate::EngineConfig::recv_queue_bound) /
/// [`EngineConfig::recv_queue_bytes`](crate::EngineConfig::recv_queue_bytes) bound both).
#[derive(Debug, Default)]
pub(super) struct ChannelLoad {
    pub(super) count: AtomicUsize,
    pub(super) bytes: AtomicUsize,
}

/// Counters of the runtime itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Loop iterations that waited in `mio::Poll::poll`.
    pub waits: u64,
    /// Waits that ended because the transport's descriptor became
    /// readable (event-driven wake-ups; 0 without a usable descriptor).
    pub transport_wakes: u64,
    /// The longest the loop was prepared to sleep at its latest wait: the
    /// tick without a usable descriptor, the idle safety net with one,
    /// shorter while work is posted or a deadline is near.
    pub last_wait: Duration,
    /// Events delivered to callbacks.
    pub callbacks: u64,
    /// Events put into channels.
    pub channel_events: u64,
    /// Completions handed to `send_and_wait` callers.
    pub waiter_completions: u64,
    /// Events left undelivered because an agent dropped its own handle in
    /// its own callback.
    pub discarded: u64,
    /// Callbacks that panicked; each panic was caught on the loop thread
    /// and reported to its agent as [`AgentEvent::CallbackPanicked`].
    pub callback_panics: u64,
    /// Times a caller's thread drove the port itself (the fast path of
    /// [`super::AgentReceiver`] and [`super::AgentRef::send_and_wait`]).
    pub caller_drives: u64,
    /// Times a caller's thread, having found nothing by driving, blocked
    /// until the loop thread delivered.
    pub caller_blocks: u64,
    /// Times the loop thread parked to leave the port to driving callers.
    pub loop_parks: u64,
}

/// How the loop learns that the transport has something (see [Waking
/// up](super#waking-up)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakeup {
    /// Event-driven: epoll waits on this descriptor.
    Fd(RawFd),
    /// The transport has no descriptor: the loop polls every `tick` while
    /// idle.
    NoFd {
        /// The idle poll interval.
        tick: Duration,
    },
    /// epoll refused the transport's descriptor: the loop polls every
    /// `tick` while idle.
    Refused {
        /// The descriptor.
        fd: RawFd,
        /// The errno epoll gave (EBADF for libumad2sim's).
        errno: Option<i32>,
        /// The idle poll interval.
        tick: Duration,
    },
}

impl Wakeup {
    /// True if the loop waits on the descriptor.
    #[must_use]
    pub fn is_event_driven(&self) -> bool {
        matches!(self, Self::Fd(_))
    }
}

/// Where a popped event goes.
pub(super) enum Route {
    Sink(Arc<Mutex<Sink>>),
    Waiter(Waiter),
    Nowhere,
}

/// What the loop does after a turn of driving the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Something happened: deliver and drive again.
    Again,
    /// Nothing to do: wait this long at most.
    Wait(Duration),
    /// Stopped.
    Stop,
}

/// A delivery handed over, to finish under the next lock.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pending {
    pub(super) agent: AgentId,
    pub(super) dropped: bool,
    /// A port event folded into this one in the agent's channel.
    pub(super) coalesced: bool,
    pub(super) callback: bool,
}

pub(super) struct Core {
    /// The engine and the driver of the transport (the runtime owns the
    /// transport and pumps it through this stack).
    pub(super) engine: Stack,
    /// The agents' sinks (foldhash: looked up on every caller's drive;
    /// as many as agents registered here).
    pub(super) sinks: FastMap<AgentId, Arc<Mutex<Sink>>>,
    /// Threads in `send_and_wait` (at most one per outstanding send).
    pub(super) waiters: FastMap<SendId, Waiter>,
    pub(super) stats: RuntimeStats,
    pub(super) stopping: bool,
    pub(super) stopped: bool,
    /// Times `cond` was notified (a model test waits on it).
    pub(super) notifies: u64,
    /// Sinks of agents that have gone, to be dropped once the lock is
    /// released ([`Shared::bury`]): a callback may own an [`Agent`] (its
    /// own or another's), whose drop deregisters it and takes this lock.
    pub(super) graveyard: Vec<Arc<Mutex<Sink>>>,
    /// Events a caller's drive takes for its channel, reused (empty
    /// between turns).
    pub(super) scratch: Vec<AgentEvent>,
}

pub(super) struct Shared {
    pub(super) id: u64,
    pub(super) core: Mutex<Core>,
    pub(super) cond: Condvar,
    /// `None` only in the model test, which runs no loop thread.
    pub(super) waker: Option<Waker>,
    pub(super) loop_thread: Mutex<Option<ThreadId>>,
    pub(super) recv_bound: usize,
    /// [`EngineConfig::recv_queue_bytes`](crate::EngineConfig::recv_queue_bytes), for channel sinks.
    pub(super) recv_bytes: usize,
    pub(super) wakeup: Wakeup,
    /// Callbacks that panicked (counted without the core lock: a callback
    /// runs unlocked).
    pub(super) panics: AtomicU64,
    /// `Core::graveyard` is not empty (read without the lock).
    pub(super) has_dead: AtomicBool,
    /// The protocol this runtime follows: always [`Deviation::None`] but
    /// in the model test, which proves it catches each deviation.
    pub(super) deviation: Deviation,
    /// Callers' threads driving the port themselves (see
    /// [`super::caller`]).
    pub(super) relay: Arc<super::relay::Relay>,
}

/// A deliberate departure from the deregistration protocol. A runtime
/// started by [`super::Runtime::start`] never deviates; the model test
/// (`runtime::model`) builds its [`Shared`] with each of these in turn and
/// must find the broken guarantee, which proves that it checks that
/// guarantee at all. The protocol's steps consult it at the six points
/// where a plausible bug would go (and the channel's receiver at one:
/// [`Deviation::QueueBeforeTaken`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(not(test), allow(dead_code))]
pub(super) enum Deviation {
    /// The protocol as documented.
    #[default]
    None,
    /// Deregistered agents are reaped without waking the waiting thread.
    NoNotify,
    /// A deregistration from another thread returns as soon as it started.
    EarlyReturn,
    /// A deregistration on the loop thread waits until the agent is gone,
    /// which needs its own running callback to return.
    InlineWaitsForReap,
    /// A deregistration on the loop thread hands a `send_and_wait`
    /// completion to the agent instead of the waiting thread.
    InlineIgnoresWaiters,
    /// A loop thread that dies leaves its waiters waiting.
    DeathUnnoticed,
    /// A caller driving the port takes its agent's events while the loop
    /// thread is handing an earlier one over.
    TakeOutOfTurn,
    /// A channel's receiver hands out events that entered the channel
    /// after those it already took out of it, first.
    QueueBeforeTaken,
}

impl Shared {
    pub(super) fn core(&self) -> MutexGuard<'_, Core> {
        lock(&self.core)
    }

    /// Wakes the loop thread: out of [`super::relay::Relay::park`] if
    /// it is parked there, else out of `mio::Poll::poll`.
    pub(super) fn wake(&self) {
        if self.relay.wake() {
            return;
        }
        if let Some(w) = &self.waker {
            let _ = w.wake();
        }
    }

    pub(super) fn new(
        engine: Stack,
        waker: Option<Waker>,
        wakeup: Wakeup,
        deviation: Deviation,
    ) -> Self {
        let recv_bound = engine.config().recv_queue_bound;
        let recv_bytes = engine.config().recv_queue_bytes;
        Self {
            id: NEXT_RUNTIME.fetch_add(1, Ordering::Relaxed),
            core: Mutex::new(Core {
                engine,
                sinks: FastMap::default(),
                waiters: FastMap::default(),
                stats: RuntimeStats::default(),
                stopping: false,
                stopped: false,
                notifies: 0,
                graveyard: Vec::new(),
                scratch: Vec::new(),
            }),
            cond: Condvar::new(),
            waker,
            loop_thread: Mutex::new(None),
            recv_bound,
            recv_bytes,
            wakeup,
            panics: AtomicU64::new(0),
            has_dead: AtomicBool::new(false),
            deviation,
            relay: Arc::default(),
        }
    }

    fn deviates(&self, d: Deviation) -> bool {
        self.deviation == d
    }

    pub(super) fn register_sink(
        &self,
        spec: AgentSpec,
        sink: Sink,
    ) -> Result<AgentId, RegisterError> {
        let mut core = self.core();
        if core.stopping {
            return Err(RegisterError::Stopped);
        }
        let id = core.engine.register(spec)?;
        core.sinks.insert(id, Arc::new(Mutex::new(sink)));
        Ok(id)
    }

    pub(super) fn notify(&self, core: &mut Core) {
        if self.deviates(Deviation::NoNotify) {
            return;
        }
        core.notifies += 1;
        self.cond.notify_all();
    }

    /// Forgets the sinks of agents that have gone and wakes deregistering
    /// threads.
    pub(super) fn reap(&self, core: &mut Core) {
        let gone = core.engine.take_reaped();
        if !gone.is_empty() {
            for a in gone {
                self.forget_sink(core, a);
            }
            self.notify(core);
        }
    }

    // ----- the loop's steps (each under one lock, or none) -----

    /// Loop step 1 (locked): finishes the delivery handed over last and
    /// takes the next event with where it goes.
    pub(super) fn next_delivery(
        &self,
        core: &mut Core,
        pending: Option<Pending>,
    ) -> Option<(AgentId, AgentEvent, Route)> {
        if let Some(p) = pending {
            if p.dropped {
                core.engine.count_recv_drop(p.agent);
            }
            if p.coalesced {
                core.engine.count_port_event_coalesced(p.agent);
            }
            if p.callback {
                core.stats.callbacks += 1;
            } else {
                core.stats.channel_events += 1;
            }
            core.engine.end_delivery(p.agent);
            self.reap(core);
        }
        let (agent, ev) = core.engine.begin_delivery()?;
        let route = match &ev {
            AgentEvent::SendDone(c) => core.waiters.remove(&c.send).map(Route::Waiter),
            _ => None,
        }
        .or_else(|| core.sinks.get(&agent).cloned().map(Route::Sink))
        .unwrap_or(Route::Nowhere);
        Some((agent, ev, route))
    }

    /// Loop step 2 (unlocked): hands the event over — the callback runs
    /// here.
    pub(super) fn hand_over(&self, agent: AgentId, ev: AgentEvent, route: Route) -> Pending {
        let (dropped, coalesced, callback) = match (route, ev) {
            (Route::Waiter(tx), AgentEvent::SendDone(c)) => {
                tx.send(c);
                (false, false, false)
            }
            (Route::Sink(sink), ev) => self.deliver(agent, &sink, ev),
            _ => (false, false, false),
        };
        Pending {
            agent,
            dropped,
            coalesced,
            callback,
        }
    }

    /// Loop step 3 (locked), when nothing is left to deliver: drives the
    /// engine and says what next.
    pub(super) fn drive(&self, core: &mut Core, now: Instant) -> Step {
        // Ended by a caller's drive whose transport panicked: the engine
        // is not polled again.
        if core.stopped {
            return Step::Stop;
        }
        if core.stopping {
            for a in core.engine.agent_ids() {
                let _ = core.engine.deregister(a);
            }
        }
        let progress = core.engine.poll(now);
        self.reap(core);
        if core.stopping && core.engine.agent_count() == 0 && !core.engine.has_events() {
            self.loop_ended(core);
            return Step::Stop;
        }
        if progress || core.engine.has_events() {
            return Step::Again;
        }
        let posted = core.engine.port().posted(mad_core::transport::Qp::Qp0)
            + core.engine.port().posted(mad_core::transport::Qp::Qp1)
            > 0;
        let mut t = match self.wakeup {
            // Work requests still posted may complete without the fd
            // becoming readable (ibsim and umad complete sends inside the
            // transport).
            Wakeup::Fd(_) if posted => TICK,
            Wakeup::Fd(_) => IDLE,
            // Without a usable fd, responses too arrive only by polling.
            Wakeup::NoFd { tick } | Wakeup::Refused { tick, .. } => {
                if posted || core.engine.outstanding() > 0 {
                    TICK.min(tick)
                } else {
                    tick
                }
            }
        };
        if let Some(d) = core.engine.poll_timeout() {
            t = t.min(d.saturating_duration_since(now));
        }
        core.stats.waits += 1;
        core.stats.last_wait = t;
        Step::Wait(t)
    }

    /// On the loop thread: tells the transport whether this thread is
    /// about to wait on its descriptor ([`mad_core::transport::Transport::watch_fd`]),
    /// if that changes what `watched` says it was told last. Watched
    /// again, a descriptor is readable at once if anything is queued, so
    /// the wait that follows misses nothing.
    pub(super) fn watch_fd(&self, watched: &mut bool, on: bool) {
        if *watched == on || !self.wakeup.is_event_driven() {
            return;
        }
        self.core().engine.transport_mut().watch_fd(on);
        *watched = on;
    }

    // ----- deregistration's steps -----

    /// From another thread (locked): starts deregistering `id`.
    pub(super) fn begin_deregister(&self, core: &mut Core, id: AgentId) {
        let _ = core.engine.deregister(id);
    }

    /// From another thread (locked): true once `id` is gone — every send
    /// completed and delivered, no callback of it running; then its sink
    /// is forgotten.
    pub(super) fn deregistered(&self, core: &mut Core, id: AgentId) -> bool {
        let early = self.deviates(Deviation::EarlyReturn);
        // A stopped loop (or a dead one) delivers nothing more: waiting on
        // would be for ever.
        if core.engine.agent_state(id).is_some() && !core.stopped && !early {
            return false;
        }
        self.forget_sink(core, id);
        true
    }

    /// (Locked) Forgets `id`'s sink; it is dropped later, unlocked.
    pub(super) fn forget_sink(&self, core: &mut Core, id: AgentId) {
        if let Some(sink) = core.sinks.remove(&id) {
            core.graveyard.push(sink);
            self.has_dead.store(true, Ordering::Release);
        }
    }

    /// (Unlocked) Drops the sinks of agents that have gone. A callback
    /// that owns an [`Agent`] deregisters it here, so this must never run
    /// under the core lock.
    pub(super) fn bury(&self) {
        // A plain load first: no read-modify-write on every turn.
        if self.has_dead.load(Ordering::Acquire) && self.has_dead.swap(false, Ordering::AcqRel) {
            let dead = std::mem::take(&mut self.core().graveyard);
            drop(dead);
        }
    }

    /// On the loop thread (locked): starts deregistering `id` and returns
    /// its sink.
    pub(super) fn inline_begin(&self, id: AgentId) -> Option<Arc<Mutex<Sink>>> {
        let mut core = self.core();
        let _ = core.engine.deregister(id);
        core.sinks.get(&id).cloned()
    }

    /// On the loop thread: one turn of driving the engine for a
    /// deregistration in progress. The agent's events go to its sink right
    /// here (engine unlocked), or into `kept` when its callback is running
    /// further up this stack (`own`, or its sink is busy). True when every
    /// send of the agent has completed and its events are out.
    pub(super) fn inline_step(
        &self,
        id: AgentId,
        own: bool,
        sink: Option<&Arc<Mutex<Sink>>>,
        kept: &mut Vec<AgentEvent>,
        now: Instant,
    ) -> bool {
        let (evs, done) = {
            let mut core = self.core();
            core.engine.poll(now);
            let mut evs = core.engine.take_events(id);
            if !self.deviates(Deviation::InlineIgnoresWaiters) {
                self.complete_waiters(&mut core, &mut evs);
            }
            let done = if self.deviates(Deviation::InlineWaitsForReap) {
                core.engine.agent_state(id).is_none()
            } else {
                core.engine.agent_outstanding(id) == 0 && core.engine.queued_events(id) == 0
            };
            if done {
                self.reap(&mut core);
            }
            (evs, done)
        };
        self.bury();
        let guard = if own {
            None
        } else {
            sink.and_then(|s| s.try_lock().ok())
        };
        match guard {
            Some(mut g) => {
                for ev in evs {
                    let _ = self.deliver_to(id, &mut g, ev);
                }
            }
            None => kept.extend(evs),
        }
        done
    }

    /// (Locked) Hands the completions in `evs` that a thread waits for in
    /// [`AgentRef::send_and_wait`] to that thread, leaving the rest.
    pub(super) fn complete_waiters(&self, core: &mut Core, evs: &mut Vec<AgentEvent>) {
        if core.waiters.is_empty() {
            return;
        }
        evs.retain(|ev| {
            let AgentEvent::SendDone(c) = ev else {
                return true;
            };
            match core.waiters.remove(&c.send) {
                Some(tx) => {
                    tx.send(c.clone());
                    core.stats.waiter_completions += 1;
                    false
                }
                None => true,
            }
        });
    }

    /// (Locked) `id` starts a [`AgentRef::send_and_wait`] from a thread
    /// other than the loop's: the send, and the channel its completion
    /// will come through (this thread's reused slot), and the send's id.
    pub(super) fn begin_wait(
        &self,
        core: &mut Core,
        id: AgentId,
        req: SendRequest,
        now: Instant,
    ) -> Result<(WaitSlot, SendId), SendError> {
        if core.stopped {
            return Err(SendError::Stopped);
        }
        let send = core.engine.send(id, req, now)?;
        let (rx, tx) = super::waiter::wait();
        core.waiters.insert(send, tx);
        Ok((rx, send))
    }

    /// (Locked) The loop thread has ended — stopped, or died of a panic
    /// outside any callback: nothing will be delivered any more, so no
    /// caller may wait. Waiting `send_and_wait` callers get
    /// [`SendError::Stopped`] (their channels close), deregistering
    /// threads return, and later registrations and sends are refused.
    pub(super) fn loop_ended(&self, core: &mut Core) {
        if self.deviates(Deviation::DeathUnnoticed) {
            return;
        }
        core.stopping = true;
        core.stopped = true;
        core.waiters.clear();
        // Channels close, so that their receivers see the end. (Callbacks
        // stay: dropping one runs the caller's code, which may be what
        // just panicked.)
        core.sinks.retain(|_, s| {
            s.try_lock()
                .map_or(true, |g| matches!(*g, Sink::Callback(_)))
        });
        self.notify(core);
    }

    pub(super) fn on_loop_thread(&self) -> bool {
        *lock(&self.loop_thread) == Some(std::thread::current().id())
    }

    pub(super) fn current_callback(&self) -> Option<AgentId> {
        IN_CALLBACK
            .with(Cell::get)
            .filter(|(rt, _)| *rt == self.id)
            .map(|(_, a)| a)
    }

    /// Hands one event to `sink` (no lock held). Returns whether a
    /// received MAD was dropped for a full channel, whether an equal port
    /// event still in the channel was folded into this one, and whether a
    /// callback ran.
    pub(super) fn deliver(
        &self,
        agent: AgentId,
        sink: &Mutex<Sink>,
        ev: AgentEvent,
    ) -> (bool, bool, bool) {
        self.deliver_to(agent, &mut lock(sink), ev)
    }

    pub(super) fn deliver_to(
        &self,
        agent: AgentId,
        sink: &mut Sink,
        ev: AgentEvent,
    ) -> (bool, bool, bool) {
        match sink {
            Sink::Callback(f) => {
                let prev = IN_CALLBACK.with(|c| c.replace(Some((self.id, agent))));
                let call = |f: &mut Callback, ev| {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(ev)))
                };
                if let Err(payload) = call(f, ev) {
                    self.panics.fetch_add(1, Ordering::Relaxed);
                    let message = panic_message(payload.as_ref());
                    // The callback may have deregistered its agent before it
                    // panicked: then nothing of it may run any more.
                    let active = self.core().engine.agent_state(agent) == Some(AgentState::Active);
                    if active {
                        let report = AgentEvent::CallbackPanicked { message };
                        if call(f, report).is_err() {
                            self.panics.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                IN_CALLBACK.with(|c| c.set(prev));
                (false, false, true)
            }
            Sink::Channel { tx, queued } => {
                if !self.admit(queued, &ev) {
                    return (true, false, false);
                }
                (false, tx.send(ev), false)
            }
        }
    }

    /// Whether `ev` may enter a channel holding `queued`: a received MAD
    /// past [`EngineConfig::recv_queue_bound`](crate::EngineConfig::recv_queue_bound) or
    /// [`EngineConfig::recv_queue_bytes`](crate::EngineConfig::recv_queue_bytes) is dropped (false); anything
    /// else goes in, and a received MAD is counted.
    pub(super) fn admit(&self, queued: &ChannelLoad, ev: &AgentEvent) -> bool {
        if let AgentEvent::Received(m) = ev {
            let len = m.bytes().len();
            let count = queued.count.load(Ordering::Acquire);
            let bytes = queued.bytes.load(Ordering::Acquire);
            if count >= self.recv_bound
                || (count > 0 && bytes.saturating_add(len) > self.recv_bytes)
            {
                return false;
            }
            queued.count.fetch_add(1, Ordering::AcqRel);
            queued.bytes.fetch_add(len, Ordering::AcqRel);
        }
        true
    }

    /// Drives the engine on the loop thread until `step` returns a value.
    pub(super) fn drive_inline<R>(&self, mut step: impl FnMut(&mut Core) -> Option<R>) -> R {
        loop {
            {
                let mut core = self.core();
                core.engine.poll(Instant::now());
                if let Some(r) = step(&mut core) {
                    return r;
                }
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// The message of a caught panic.
pub(super) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_owned()
    }
}
