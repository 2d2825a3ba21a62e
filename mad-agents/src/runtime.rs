//! The runtime: an [`Engine`] driven by a mio event loop on its own thread.
//!
//! # Threads
//!
//! [`Runtime::start`] moves the transport into an engine behind a mutex
//! and starts one thread per port running a mio loop: it waits on the
//! transport's fd (a [`mio::unix::SourceFd`]), on a [`mio::Waker`] that
//! commands from other threads ring, and on the engine's next deadline.
//! Registrations, sends, cancels, modifies and deregistrations may come
//! from any thread: they lock the engine, act, and wake the loop.
//!
//! # Waking up
//!
//! How the loop learns that the transport has something is fixed at start
//! and reported by [`Runtime::wakeup`]:
//! - [`Wakeup::Fd`]: the transport's descriptor is registered with epoll
//!   and the loop sleeps until it is readable (or a command or deadline
//!   comes); while work requests are posted it also polls every [`TICK`],
//!   because ibsim and umad complete sends inside the transport without
//!   the descriptor becoming readable.
//! - [`Wakeup::NoFd`]: the transport has no descriptor (the in-memory
//!   Loopback): the loop polls every [`TICK`] while anything is
//!   outstanding and every [`EngineConfig::fallback_tick`] otherwise, so
//!   an unsolicited request is noticed within that bound.
//! - [`Wakeup::Refused`]: the transport has a descriptor but epoll refuses
//!   it — libumad2sim hands out fake umad descriptors that only its own
//!   `read`/`poll` wrappers understand (epoll_ctl: EBADF) — and the loop
//!   ticks as for [`Wakeup::NoFd`].
//!
//! # Delivery
//!
//! Every event of an agent is delivered on the loop thread, one at a time
//! and in order, either to the agent's callback ([`Runtime::register`]) or
//! into its channel ([`Runtime::register_channel`]); a completion of a
//! [`AgentRef::send_and_wait`] goes to the waiting thread instead. A
//! channel holds at most [`EngineConfig::recv_queue_bound`] received MADs
//! not yet taken; past that new ones are dropped and counted (completions
//! are never dropped).
//!
//! # Deregistration
//!
//! [`Agent::deregister`] (or dropping the [`Agent`]) is synchronous: it
//! cancels the agent's awaited responses, then waits until every send of
//! the agent has completed — its completion delivered — and no callback
//! of the agent is running. After it returns no callback of the agent runs
//! again and nothing more enters its channel.
//!
//! Called on the loop thread — from inside a callback, its own or another
//! agent's — it cannot wait for the loop, which is the caller's own stack.
//! It then drives the engine itself until the agent's work requests have
//! completed, so it neither deadlocks nor returns early:
//! - deregistering **another** agent delivers that agent's remaining events
//!   to it right there (its callback runs nested, or its channel fills);
//! - deregistering the agent **whose callback is running** (or one whose
//!   callback is running further up the same stack) cannot call that
//!   callback again: the remaining events (the last completions of its
//!   sends, exactly once each) are **returned** by [`Agent::deregister`]
//!   instead. The callback in progress finishes, and
//!   nothing of the agent runs after it. (Dropping the handle there
//!   discards them; they are counted in [`RuntimeStats::discarded`].)
//!
//! [`AgentRef::send_and_wait`] on the loop thread likewise drives the
//! engine itself until its send completes.
//!
//! A thread waiting in [`AgentRef::send_and_wait`] gets its completion
//! however the agent goes: deregistered from another thread, from another
//! agent's callback, or from its own (the completion then goes to the
//! waiting thread, not into the events [`Agent::deregister`] returns).
//!
//! # Callers that misbehave
//!
//! - A callback that **panics** does not take the loop thread down: the
//!   panic is caught on the loop thread, counted in
//!   [`RuntimeStats::callback_panics`], and reported to the agent by
//!   calling its callback once more, right away, with
//!   [`AgentEvent::CallbackPanicked`] — unless the callback deregistered
//!   its own agent before panicking (nothing of an agent runs after its
//!   deregistration returned). The agent stays registered; the event it
//!   panicked on counts as delivered (a completion is not delivered
//!   twice).
//! - A callback may own an [`Agent`] — its own (a reference cycle) or
//!   another's: when its agent goes, the callback is dropped only after
//!   the runtime's lock is released, so the owned agent's deregistration
//!   (on drop) runs like any other, from the loop thread or the
//!   deregistering one, instead of deadlocking on that lock.
//! - If the loop thread ends anyway (a panic outside any callback, such as
//!   in the transport), the runtime stops as if shut down: every thread in
//!   [`AgentRef::send_and_wait`] gets [`SendError::Stopped`], deregistering
//!   threads and drops of [`Agent`]s return (their sends are abandoned
//!   with the loop), channels close ([`AgentReceiver::recv`] returns
//!   `None` once the events already in it are taken), and later
//!   registrations and sends are refused.
//!
//! The protocol is written as locked steps (the loop's `next_delivery`,
//! `hand_over`, `drive`; deregistration's `begin_deregister`,
//! `deregistered`, `inline_begin`, `inline_step`) so that a model test
//! (`runtime::model`, under `cargo test`) can run every interleaving of
//! them between the loop thread, a deregistering thread, a sending thread
//! and the device, and check the guarantees above in each.

use std::cell::Cell;
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use mad_core::port::Port;
use mad_core::transport::{PortAttrs, Transport};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::engine::{AgentState, Engine};
use crate::spec::AgentSpec;
use crate::types::{
    AgentEvent, AgentId, AgentStats, Completion, EngineConfig, EngineStats, RegisterError,
    SendError, SendId, SendRequest,
};

/// How often the loop polls a transport without a usable fd while work is
/// outstanding (also the longest a transport with an fd sleeps while work
/// requests are posted).
pub const TICK: Duration = Duration::from_micros(200);
/// The longest the loop sleeps with nothing outstanding when it waits on
/// the transport's fd (a safety net for a missed edge).
const IDLE: Duration = Duration::from_millis(100);
/// The shortest idle poll interval [`EngineConfig::fallback_tick`] may set.
const MIN_TICK: Duration = Duration::from_micros(50);

const WAKER: Token = Token(0);
const TRANSPORT: Token = Token(1);

static NEXT_RUNTIME: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (runtime id, agent) whose callback runs on this thread.
    static IN_CALLBACK: Cell<Option<(u64, AgentId)>> = const { Cell::new(None) };
}

/// An agent's callback.
pub type Callback = Box<dyn FnMut(AgentEvent) + Send + 'static>;

enum Sink {
    Callback(Callback),
    Channel {
        tx: mpsc::Sender<AgentEvent>,
        queued: Arc<ChannelLoad>,
    },
}

/// Received messages sitting in a channel agent's channel: how many, and
/// their bytes ([`EngineConfig::recv_queue_bound`] /
/// [`EngineConfig::recv_queue_bytes`] bound both).
#[derive(Debug, Default)]
struct ChannelLoad {
    count: AtomicUsize,
    bytes: AtomicUsize,
}

/// Counters of the runtime itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Loop iterations that waited in `mio::Poll::poll`.
    pub waits: u64,
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
}

/// How the loop learns that the transport has something (see [Waking
/// up](self#waking-up)).
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

/// What the loop does after a turn of driving the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Something happened: deliver and drive again.
    Again,
    /// Nothing to do: wait this long at most.
    Wait(Duration),
    /// Stopped.
    Stop,
}

/// A delivery handed over, to finish under the next lock.
#[derive(Debug, Clone, Copy)]
struct Pending {
    agent: AgentId,
    dropped: bool,
    callback: bool,
}

struct Core {
    engine: Engine,
    sinks: HashMap<AgentId, Arc<Mutex<Sink>>>,
    waiters: HashMap<SendId, mpsc::Sender<Completion>>,
    stats: RuntimeStats,
    stopping: bool,
    stopped: bool,
    /// Times `cond` was notified (a model test waits on it).
    notifies: u64,
    /// Sinks of agents that have gone, to be dropped once the lock is
    /// released ([`Shared::bury`]): a callback may own an [`Agent`] (its
    /// own or another's), whose drop deregisters it and takes this lock.
    graveyard: Vec<Arc<Mutex<Sink>>>,
}

struct Shared {
    id: u64,
    core: Mutex<Core>,
    cond: Condvar,
    /// `None` only in the model test, which runs no loop thread.
    waker: Option<Waker>,
    loop_thread: Mutex<Option<ThreadId>>,
    recv_bound: usize,
    /// [`EngineConfig::recv_queue_bytes`], for channel sinks.
    recv_bytes: usize,
    wakeup: Wakeup,
    /// Callbacks that panicked (counted without the core lock: a callback
    /// runs unlocked).
    panics: AtomicU64,
    /// `Core::graveyard` is not empty (read without the lock).
    has_dead: AtomicBool,
    /// A deliberate bug, for the model test to prove it finds bugs.
    #[cfg(test)]
    mutation: std::sync::atomic::AtomicU8,
}

/// Deliberate bugs the model test injects (see `model`).
#[cfg(test)]
mod mutation {
    pub const NONE: u8 = 0;
    /// Deregistered agents are reaped without waking the waiting thread.
    pub const NO_NOTIFY: u8 = 1;
    /// A deregistration from another thread returns as soon as it started.
    pub const EARLY_RETURN: u8 = 2;
    /// A deregistration on the loop thread waits until the agent is gone,
    /// which needs its own running callback to return.
    pub const INLINE_WAITS_FOR_REAP: u8 = 3;
    /// A deregistration on the loop thread hands a `send_and_wait`
    /// completion to the agent instead of the waiting thread.
    pub const INLINE_IGNORES_WAITERS: u8 = 4;
    /// A loop thread that dies leaves its waiters waiting.
    pub const DEATH_UNNOTICED: u8 = 5;
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, Core> {
        lock(&self.core)
    }

    fn wake(&self) {
        if let Some(w) = &self.waker {
            let _ = w.wake();
        }
    }

    fn new(port: Port, cfg: EngineConfig, waker: Option<Waker>, wakeup: Wakeup) -> Self {
        let recv_bound = cfg.recv_queue_bound;
        let recv_bytes = cfg.recv_queue_bytes;
        Self {
            id: NEXT_RUNTIME.fetch_add(1, Ordering::Relaxed),
            core: Mutex::new(Core {
                engine: Engine::with_port(port, cfg),
                sinks: HashMap::new(),
                waiters: HashMap::new(),
                stats: RuntimeStats::default(),
                stopping: false,
                stopped: false,
                notifies: 0,
                graveyard: Vec::new(),
            }),
            cond: Condvar::new(),
            waker,
            loop_thread: Mutex::new(None),
            recv_bound,
            recv_bytes,
            wakeup,
            panics: AtomicU64::new(0),
            has_dead: AtomicBool::new(false),
            #[cfg(test)]
            mutation: std::sync::atomic::AtomicU8::new(mutation::NONE),
        }
    }

    #[cfg(test)]
    fn mutated(&self, m: u8) -> bool {
        self.mutation.load(Ordering::Relaxed) == m
    }

    fn register_sink(&self, spec: AgentSpec, sink: Sink) -> Result<AgentId, RegisterError> {
        let mut core = self.core();
        if core.stopping {
            return Err(RegisterError::Stopped);
        }
        let id = core.engine.register(spec)?;
        core.sinks.insert(id, Arc::new(Mutex::new(sink)));
        Ok(id)
    }

    fn notify(&self, core: &mut Core) {
        #[cfg(test)]
        if self.mutated(mutation::NO_NOTIFY) {
            return;
        }
        core.notifies += 1;
        self.cond.notify_all();
    }

    /// Forgets the sinks of agents that have gone and wakes deregistering
    /// threads.
    fn reap(&self, core: &mut Core) {
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
    fn next_delivery(
        &self,
        core: &mut Core,
        pending: Option<Pending>,
    ) -> Option<(AgentId, AgentEvent, Route)> {
        if let Some(p) = pending {
            if p.dropped {
                core.engine.count_recv_drop(p.agent);
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
    fn hand_over(&self, agent: AgentId, ev: AgentEvent, route: Route) -> Pending {
        let (dropped, callback) = match (route, ev) {
            (Route::Waiter(tx), AgentEvent::SendDone(c)) => {
                let _ = tx.send(c);
                (false, false)
            }
            (Route::Sink(sink), ev) => self.deliver(agent, &sink, ev),
            _ => (false, false),
        };
        Pending {
            agent,
            dropped,
            callback,
        }
    }

    /// Loop step 3 (locked), when nothing is left to deliver: drives the
    /// engine and says what next.
    fn drive(&self, core: &mut Core, now: Instant) -> Step {
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
        Step::Wait(t)
    }

    // ----- deregistration's steps -----

    /// From another thread (locked): starts deregistering `id`.
    fn begin_deregister(&self, core: &mut Core, id: AgentId) {
        let _ = core.engine.deregister(id);
    }

    /// From another thread (locked): true once `id` is gone — every send
    /// completed and delivered, no callback of it running; then its sink
    /// is forgotten.
    fn deregistered(&self, core: &mut Core, id: AgentId) -> bool {
        #[cfg(test)]
        let early = self.mutated(mutation::EARLY_RETURN);
        #[cfg(not(test))]
        let early = false;
        // A stopped loop (or a dead one) delivers nothing more: waiting on
        // would be for ever.
        if core.engine.agent_state(id).is_some() && !core.stopped && !early {
            return false;
        }
        self.forget_sink(core, id);
        true
    }

    /// (Locked) Forgets `id`'s sink; it is dropped later, unlocked.
    fn forget_sink(&self, core: &mut Core, id: AgentId) {
        if let Some(sink) = core.sinks.remove(&id) {
            core.graveyard.push(sink);
            self.has_dead.store(true, Ordering::Release);
        }
    }

    /// (Unlocked) Drops the sinks of agents that have gone. A callback
    /// that owns an [`Agent`] deregisters it here, so this must never run
    /// under the core lock.
    fn bury(&self) {
        if self.has_dead.swap(false, Ordering::AcqRel) {
            let dead = std::mem::take(&mut self.core().graveyard);
            drop(dead);
        }
    }

    /// On the loop thread (locked): starts deregistering `id` and returns
    /// its sink.
    fn inline_begin(&self, id: AgentId) -> Option<Arc<Mutex<Sink>>> {
        let mut core = self.core();
        let _ = core.engine.deregister(id);
        core.sinks.get(&id).cloned()
    }

    /// On the loop thread: one turn of driving the engine for a
    /// deregistration in progress. The agent's events go to its sink right
    /// here (engine unlocked), or into `kept` when its callback is running
    /// further up this stack (`own`, or its sink is busy). True when every
    /// send of the agent has completed and its events are out.
    fn inline_step(
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
            #[cfg(test)]
            let to_waiters = !self.mutated(mutation::INLINE_IGNORES_WAITERS);
            #[cfg(not(test))]
            let to_waiters = true;
            if to_waiters {
                self.complete_waiters(&mut core, &mut evs);
            }
            #[cfg(test)]
            let done = if self.mutated(mutation::INLINE_WAITS_FOR_REAP) {
                core.engine.agent_state(id).is_none()
            } else {
                core.engine.agent_outstanding(id) == 0 && core.engine.queued_events(id) == 0
            };
            #[cfg(not(test))]
            let done = core.engine.agent_outstanding(id) == 0 && core.engine.queued_events(id) == 0;
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
    fn complete_waiters(&self, core: &mut Core, evs: &mut Vec<AgentEvent>) {
        if core.waiters.is_empty() {
            return;
        }
        evs.retain(|ev| {
            let AgentEvent::SendDone(c) = ev else {
                return true;
            };
            match core.waiters.remove(&c.send) {
                Some(tx) => {
                    let _ = tx.send(c.clone());
                    core.stats.waiter_completions += 1;
                    false
                }
                None => true,
            }
        });
    }

    /// (Locked) `id` starts a [`AgentRef::send_and_wait`] from a thread
    /// other than the loop's: the send, and the channel its completion
    /// will come through.
    fn begin_wait(
        &self,
        core: &mut Core,
        id: AgentId,
        req: SendRequest,
        now: Instant,
    ) -> Result<mpsc::Receiver<Completion>, SendError> {
        if core.stopped {
            return Err(SendError::Stopped);
        }
        let send = core.engine.send(id, req, now)?;
        let (tx, rx) = mpsc::channel();
        core.waiters.insert(send, tx);
        Ok(rx)
    }

    /// (Locked) The loop thread has ended — stopped, or died of a panic
    /// outside any callback: nothing will be delivered any more, so no
    /// caller may wait. Waiting `send_and_wait` callers get
    /// [`SendError::Stopped`] (their channels close), deregistering
    /// threads return, and later registrations and sends are refused.
    fn loop_ended(&self, core: &mut Core) {
        #[cfg(test)]
        if self.mutated(mutation::DEATH_UNNOTICED) {
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

    fn on_loop_thread(&self) -> bool {
        *lock(&self.loop_thread) == Some(std::thread::current().id())
    }

    fn current_callback(&self) -> Option<AgentId> {
        IN_CALLBACK
            .with(Cell::get)
            .filter(|(rt, _)| *rt == self.id)
            .map(|(_, a)| a)
    }

    /// Hands one event to `sink` (no lock held). Returns true if a
    /// received MAD was dropped for a full channel.
    fn deliver(&self, agent: AgentId, sink: &Mutex<Sink>, ev: AgentEvent) -> (bool, bool) {
        self.deliver_to(agent, &mut lock(sink), ev)
    }

    fn deliver_to(&self, agent: AgentId, sink: &mut Sink, ev: AgentEvent) -> (bool, bool) {
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
                (false, true)
            }
            Sink::Channel { tx, queued } => {
                if let AgentEvent::Received(m) = &ev {
                    let len = m.bytes().len();
                    let count = queued.count.load(Ordering::Acquire);
                    let bytes = queued.bytes.load(Ordering::Acquire);
                    if count >= self.recv_bound
                        || (count > 0 && bytes.saturating_add(len) > self.recv_bytes)
                    {
                        return (true, false);
                    }
                    queued.count.fetch_add(1, Ordering::AcqRel);
                    queued.bytes.fetch_add(len, Ordering::AcqRel);
                }
                let _ = tx.send(ev);
                (false, false)
            }
        }
    }

    /// Drives the engine on the loop thread until `step` returns a value.
    fn drive_inline<R>(&self, mut step: impl FnMut(&mut Core) -> Option<R>) -> R {
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
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_owned()
    }
}

/// A port's engine running on its own thread; see the [module
/// documentation](self).
pub struct Runtime {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("id", &self.shared.id)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts a runtime over `transport`.
    ///
    /// # Errors
    /// When mio cannot create its poll instance or waker. (A transport fd
    /// that epoll refuses makes the loop tick instead.)
    pub fn start(transport: impl Transport + 'static, cfg: EngineConfig) -> std::io::Result<Self> {
        let t: Box<dyn Transport> = Box::new(transport);
        Self::start_with_port(Port::new(t, mad_core::port::PortConfig::default()), cfg)
    }

    /// Starts a runtime over an existing port layer.
    ///
    /// # Errors
    /// As [`Runtime::start`].
    pub fn start_with_port(port: Port, cfg: EngineConfig) -> std::io::Result<Self> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        let tick = cfg.fallback_tick.max(MIN_TICK);
        // A descriptor epoll refuses (libumad2sim hands out fake ones)
        // means ticking instead.
        let wakeup = match port.transport().raw_fd() {
            None => Wakeup::NoFd { tick },
            Some(fd) => {
                match poll
                    .registry()
                    .register(&mut SourceFd(&fd), TRANSPORT, Interest::READABLE)
                {
                    Ok(()) => Wakeup::Fd(fd),
                    Err(e) => Wakeup::Refused {
                        fd,
                        errno: e.raw_os_error(),
                        tick,
                    },
                }
            }
        };
        let shared = Arc::new(Shared::new(port, cfg, Some(waker), wakeup));
        let s2 = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("mad-agents-{}", shared.id))
            .spawn(move || run(&s2, poll))?;
        *lock(&shared.loop_thread) = Some(thread.thread().id());
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    fn register_sink(&self, spec: AgentSpec, sink: Sink) -> Result<Agent, RegisterError> {
        let id = self.shared.register_sink(spec, sink)?;
        Ok(Agent {
            agent: AgentRef {
                shared: self.shared.clone(),
                id,
            },
            done: false,
        })
    }

    /// Registers an agent whose events go to `callback`, called on the
    /// loop thread, one event at a time.
    ///
    /// # Errors
    /// As [`Engine::register`], or [`RegisterError::Stopped`].
    pub fn register(
        &self,
        spec: AgentSpec,
        callback: impl FnMut(AgentEvent) + Send + 'static,
    ) -> Result<Agent, RegisterError> {
        self.register_sink(spec, Sink::Callback(Box::new(callback)))
    }

    /// Registers an agent whose events go into a channel.
    ///
    /// # Errors
    /// As [`Engine::register`], or [`RegisterError::Stopped`].
    pub fn register_channel(
        &self,
        spec: AgentSpec,
    ) -> Result<(Agent, AgentReceiver), RegisterError> {
        let (tx, rx) = mpsc::channel();
        let queued = Arc::new(ChannelLoad::default());
        let agent = self.register_sink(
            spec,
            Sink::Channel {
                tx,
                queued: queued.clone(),
            },
        )?;
        Ok((agent, AgentReceiver { rx, queued }))
    }

    /// Runs `f` on the engine (locked).
    pub fn with_engine<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        let r = f(&mut self.shared.core().engine);
        self.shared.wake();
        r
    }

    /// The engine's counters.
    #[must_use]
    pub fn engine_stats(&self) -> EngineStats {
        self.shared.core().engine.stats()
    }

    /// The runtime's counters.
    #[must_use]
    pub fn stats(&self) -> RuntimeStats {
        let mut s = self.shared.core().stats;
        s.callback_panics = self.shared.panics.load(Ordering::Relaxed);
        s
    }

    /// The port's attributes.
    #[must_use]
    pub fn port_attrs(&self) -> PortAttrs {
        self.shared.core().engine.port().attrs().clone()
    }

    /// How the loop learns that the transport has something (see [Waking
    /// up](self#waking-up)).
    #[must_use]
    pub fn wakeup(&self) -> Wakeup {
        self.shared.wakeup
    }

    /// Stops the loop: every agent still registered is deregistered (its
    /// sends complete as flushed and are delivered), then the thread ends.
    /// Called on the loop thread itself it only asks the loop to stop.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.core().stopping = true;
        self.shared.wake();
        if let Some(t) = self.thread.take() {
            if self.shared.on_loop_thread() {
                return;
            }
            let _ = t.join();
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where a popped event goes.
enum Route {
    Sink(Arc<Mutex<Sink>>),
    Waiter(mpsc::Sender<Completion>),
    Nowhere,
}

/// Ends the loop's life, however the loop thread ends (its `Drop` runs on
/// a panic's unwinding too).
struct LoopEnd<'a>(&'a Shared);

impl Drop for LoopEnd<'_> {
    fn drop(&mut self) {
        self.0.loop_ended(&mut self.0.core());
        self.0.bury();
    }
}

fn run(shared: &Arc<Shared>, mut poll: Poll) {
    let _end = LoopEnd(shared);
    let mut events = Events::with_capacity(16);
    // The event delivered last, to finish under the next lock.
    let mut pending: Option<Pending> = None;
    loop {
        // Deliver queued events one at a time, each under its own lock
        // cycle, so that a deregistration in between is seen at once.
        let next = shared.next_delivery(&mut shared.core(), pending.take());
        shared.bury();
        if let Some((agent, ev, route)) = next {
            pending = Some(shared.hand_over(agent, ev, route));
            continue;
        }
        // Nothing to deliver: drive the engine, then wait.
        let step = shared.drive(&mut shared.core(), Instant::now());
        shared.bury();
        match step {
            Step::Again => {}
            Step::Stop => return,
            Step::Wait(timeout) => {
                if let Err(e) = poll.poll(&mut events, Some(timeout)) {
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        std::thread::sleep(TICK);
                    }
                }
            }
        }
    }
}

/// A cloneable reference to a registered agent: sends, cancels, waits. It
/// does not keep the agent registered; use it inside callbacks.
#[derive(Clone)]
pub struct AgentRef {
    shared: Arc<Shared>,
    id: AgentId,
}

impl std::fmt::Debug for AgentRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRef").field("id", &self.id).finish()
    }
}

impl AgentRef {
    /// The agent's id.
    #[must_use]
    pub fn id(&self) -> AgentId {
        self.id
    }

    /// Sends `req` (see [`Engine::send`]); the completion is delivered
    /// to the agent's callback or channel.
    ///
    /// # Errors
    /// As [`Engine::send`], or [`SendError::Stopped`].
    pub fn send(&self, req: SendRequest) -> Result<SendHandle, SendError> {
        let id = {
            let mut core = self.shared.core();
            if core.stopped {
                return Err(SendError::Stopped);
            }
            core.engine.send(self.id, req, Instant::now())?
        };
        self.shared.wake();
        Ok(SendHandle {
            shared: self.shared.clone(),
            id,
        })
    }

    /// Hands back a message this agent got, once its bytes are no longer
    /// needed, for its buffer to be reused ([`Engine::recycle`]).
    pub fn recycle(&self, message: crate::Message) {
        self.shared.core().engine.recycle(self.id, message);
    }

    /// Sends `req` and blocks until it completes; the completion comes
    /// back here instead of to the callback or channel.
    ///
    /// # Errors
    /// As [`AgentRef::send`]; [`SendError::Stopped`] if the runtime stops
    /// first.
    pub fn send_and_wait(&self, req: SendRequest) -> Result<Completion, SendError> {
        if self.shared.on_loop_thread() {
            let send = {
                let mut core = self.shared.core();
                core.engine.send(self.id, req, Instant::now())?
            };
            let agent = self.id;
            return Ok(self
                .shared
                .drive_inline(|core| core.engine.take_completion(agent, send)));
        }
        let rx = self
            .shared
            .begin_wait(&mut self.shared.core(), self.id, req, Instant::now())?;
        self.shared.wake();
        rx.recv().map_err(|_| SendError::Stopped)
    }

    /// Acknowledges a pending soft reset (for agents registered with
    /// `hold_reset`).
    ///
    /// # Errors
    /// [`SendError::UnknownAgent`] if the agent is gone.
    pub fn ack_reset(&self) -> Result<(), SendError> {
        let r = self.shared.core().engine.ack_reset(self.id);
        self.shared.wake();
        r
    }

    /// The agent's counters (`None` once it is gone).
    #[must_use]
    pub fn stats(&self) -> Option<AgentStats> {
        self.shared.core().engine.agent_stats(self.id)
    }

    /// Sends of the agent not yet completed.
    #[must_use]
    pub fn outstanding(&self) -> usize {
        self.shared.core().engine.agent_outstanding(self.id)
    }

    /// Where the agent is in its life (`None` once it is gone).
    #[must_use]
    pub fn state(&self) -> Option<AgentState> {
        self.shared.core().engine.agent_state(self.id)
    }

    /// The port's attributes.
    #[must_use]
    pub fn port_attrs(&self) -> PortAttrs {
        self.shared.core().engine.port().attrs().clone()
    }
}

/// A registered agent. Dropping it deregisters it (synchronously; see the
/// [module documentation](self#deregistration)). Dereferences to
/// [`AgentRef`].
pub struct Agent {
    agent: AgentRef,
    done: bool,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("id", &self.agent.id).finish()
    }
}

impl std::ops::Deref for Agent {
    type Target = AgentRef;
    fn deref(&self) -> &AgentRef {
        &self.agent
    }
}

impl Agent {
    /// A cloneable reference for use in callbacks.
    #[must_use]
    pub fn handle(&self) -> AgentRef {
        self.agent.clone()
    }

    /// Deregisters the agent and returns once its sends have all completed
    /// and no callback of it runs; see the [module
    /// documentation](self#deregistration). The returned events are empty
    /// except when called from the agent's own callback: then they are the
    /// agent's remaining events (completions), which can no longer go to
    /// its callback.
    #[must_use = "events returned from inside the agent's own callback are its last completions"]
    pub fn deregister(mut self) -> Vec<AgentEvent> {
        self.done = true;
        self.deregister_inner()
    }

    fn deregister_inner(&self) -> Vec<AgentEvent> {
        let sh = &self.agent.shared;
        let id = self.agent.id;
        if sh.on_loop_thread() {
            if sh.core().stopped {
                // The loop is ending (a callback dropped with its agent
                // owned this one): nothing of this runtime runs any more.
                let _ = sh.core().engine.deregister(id);
                return Vec::new();
            }
            let own = sh.current_callback() == Some(id);
            let sink = sh.inline_begin(id);
            let mut kept = Vec::new();
            while !sh.inline_step(id, own, sink.as_ref(), &mut kept, Instant::now()) {
                std::thread::sleep(Duration::from_micros(50));
            }
            return kept;
        }
        let mut core = sh.core();
        sh.begin_deregister(&mut core, id);
        sh.wake();
        while !sh.deregistered(&mut core, id) {
            core = sh.cond.wait(core).unwrap_or_else(PoisonError::into_inner);
        }
        drop(core);
        sh.bury();
        Vec::new()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if !self.done {
            let left = self.deregister_inner();
            if !left.is_empty() {
                self.agent.shared.core().stats.discarded += left.len() as u64;
            }
        }
    }
}

/// An outstanding send of a runtime agent.
pub struct SendHandle {
    shared: Arc<Shared>,
    id: SendId,
}

impl std::fmt::Debug for SendHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendHandle").field("id", &self.id).finish()
    }
}

impl SendHandle {
    /// The send's id (as in its completion).
    #[must_use]
    pub fn id(&self) -> SendId {
        self.id
    }

    /// Cancels it ([`Engine::cancel`]).
    ///
    /// # Errors
    /// As [`Engine::cancel`].
    pub fn cancel(&self) -> Result<(), SendError> {
        let r = self.shared.core().engine.cancel(self.id);
        self.shared.wake();
        r
    }

    /// Changes its response timeout ([`Engine::modify`]).
    ///
    /// # Errors
    /// As [`Engine::modify`].
    pub fn modify(&self, timeout: Duration) -> Result<(), SendError> {
        let r = self
            .shared
            .core()
            .engine
            .modify(self.id, timeout, Instant::now());
        self.shared.wake();
        r
    }
}

/// The receiving end of an agent registered with
/// [`Runtime::register_channel`].
#[derive(Debug)]
pub struct AgentReceiver {
    rx: mpsc::Receiver<AgentEvent>,
    queued: Arc<ChannelLoad>,
}

impl AgentReceiver {
    fn took(&self, ev: AgentEvent) -> AgentEvent {
        if let AgentEvent::Received(m) = &ev {
            self.queued.count.fetch_sub(1, Ordering::AcqRel);
            self.queued
                .bytes
                .fetch_sub(m.bytes().len(), Ordering::AcqRel);
        }
        ev
    }

    /// The next event, blocking; `None` once the agent is gone and every
    /// event has been taken.
    #[must_use]
    pub fn recv(&self) -> Option<AgentEvent> {
        self.rx.recv().ok().map(|e| self.took(e))
    }

    /// The next event within `timeout`.
    #[must_use]
    pub fn recv_timeout(&self, timeout: Duration) -> Option<AgentEvent> {
        self.rx.recv_timeout(timeout).ok().map(|e| self.took(e))
    }

    /// The next event if one is waiting.
    #[must_use]
    pub fn try_recv(&self) -> Option<AgentEvent> {
        self.rx.try_recv().ok().map(|e| self.took(e))
    }
}

/// An exhaustive interleaving test of the runtime's deregistration
/// protocol (issue 4: "use loom or a model test for the deregistration
/// wait").
///
/// The runtime's threads only meet under the core lock, so each step below
/// is one locked section of the real code (`next_delivery`, `drive`,
/// `begin_deregister`, `deregistered`, `inline_begin`, `inline_step`,
/// `AgentRef::send`) or one unlocked section (a callback, from its start
/// to its return). Actors: the loop thread, a thread deregistering from
/// outside (blocked on the condition variable until notified), the device
/// (completes the posted work requests; a request arrives), and a thread
/// sending through an `AgentRef`, a thread blocked in `send_and_wait`
/// (`begin_wait`, then its channel), and the loop thread's death (a panic
/// outside any callback: `loop_ended`). Every interleaving of their steps is
/// run (depth-first, each schedule replayed from scratch on a real engine
/// over a Loopback), and after each: deregistration returned only when
/// every send of the agent had completed — its work requests out of the
/// device, each completion delivered exactly once — and no callback of
/// it was running (but the one that called it); no callback of the agent
/// started after it returned; and no schedule ended with a thread waiting
/// for ever (lost wake-up, or a deregistration from the agent's own
/// callback waiting for that callback, or a `send_and_wait` whose
/// completion went elsewhere or whose loop died). Each property is shown to be
/// checked by injecting a bug that breaks it: the model must then fail.
#[cfg(test)]
mod model {
    #![allow(clippy::unwrap_used, clippy::too_many_lines)]

    use super::*;
    use mad_core::transport::loopback::Loopback;
    use mad_core::transport::{
        Address, AsyncEvent, Qp, QpState, Received, SendCompletion, TransportError, WrId,
    };
    use mad_core::wire::{Method, MgmtClass};
    use std::collections::HashSet;

    /// The device, reachable from outside the engine.
    struct Dev(Arc<Mutex<Loopback>>, PortAttrs);

    impl Transport for Dev {
        fn port_attrs(&self) -> &PortAttrs {
            &self.1
        }
        fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
            Ok(())
        }
        fn send_queue_depth(&self) -> usize {
            lock(&self.0).send_queue_depth()
        }
        fn post_send(
            &mut self,
            qp: Qp,
            mad: &[u8],
            dest: &Address,
        ) -> Result<WrId, TransportError> {
            lock(&self.0).post_send(qp, mad, dest)
        }
        fn poll_send_completions(
            &mut self,
            out: &mut Vec<SendCompletion>,
        ) -> Result<usize, TransportError> {
            lock(&self.0).poll_send_completions(out)
        }
        fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
            lock(&self.0).poll_recv()
        }
        fn poll_event(&mut self) -> Option<AsyncEvent> {
            lock(&self.0).poll_event()
        }
        fn qp_state(&self, qp: Qp) -> QpState {
            lock(&self.0).qp_state(qp)
        }
        fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
            lock(&self.0).modify_qp(qp, to)
        }
        fn recreate_queues(&mut self) -> Result<(), TransportError> {
            lock(&self.0).recreate_queues()
        }
        fn raw_fd(&self) -> Option<RawFd> {
            None
        }
    }

    #[derive(Default)]
    struct Log {
        /// What each agent's callback was given, by name.
        events: HashMap<&'static str, Vec<AgentEvent>>,
        /// Agents whose deregistration has returned.
        returned: HashSet<&'static str>,
        violations: Vec<String>,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Scenario {
        /// "a" (two sends in the device) is deregistered by another thread.
        OtherThread,
        /// "a" deregisters itself from its callback while another thread
        /// sends on it.
        OwnCallback,
        /// "a"'s callback deregisters "b" while another thread deregisters
        /// "b" too.
        OtherAgentFromCallback,
        /// "a" deregisters itself from its callback while another thread
        /// waits in `send_and_wait` on it.
        WaiterOwnCallback,
        /// Another thread deregisters "a" while a third waits in
        /// `send_and_wait` on it, and the loop thread may die at any point
        /// between two of its steps.
        LoopDies,
    }

    enum L {
        Take,
        Call(AgentId, AgentEvent, Route),
        Ret(AgentId),
        Drive,
        Idle,
        /// A callback of `caller` deregistering `target` on the loop
        /// thread, one `inline_step` at a time.
        Inline {
            caller: AgentId,
            target: AgentId,
            own: bool,
            sink: Option<Arc<Mutex<Sink>>>,
            begun: bool,
            /// The last step changed nothing, at this version of the
            /// others' state: spinning again is pointless until they act.
            idle_at: Option<u64>,
        },
        Done,
    }

    enum D {
        Idle,
        Begin(AgentId),
        Check(AgentId),
        Wait(AgentId, u64),
        Returned,
    }

    #[derive(Clone, Copy)]
    enum W {
        /// The device completes the posted work requests.
        Unstall,
        /// A Set request for "a" arrives.
        Request,
    }

    const L_ACTOR: usize = 0;
    const D_ACTOR: usize = 1;
    const T_ACTOR: usize = 2;
    const X_ACTOR: usize = 3;
    const W_ACTOR: usize = 4;

    struct World {
        sc: Scenario,
        sh: Arc<Shared>,
        dev: Arc<Mutex<Loopback>>,
        log: Arc<Mutex<Log>>,
        names: HashMap<AgentId, &'static str>,
        ids: HashMap<&'static str, AgentId>,
        /// Sends each agent made; each must complete exactly once.
        sends: HashMap<&'static str, Vec<SendId>>,
        now: Instant,
        woken: bool,
        version: u64,
        l: L,
        d: D,
        t: bool,
        w: Vec<Option<W>>,
        running: HashSet<AgentId>,
        pending: Option<Pending>,
        kept: Vec<AgentEvent>,
        triggered: bool,
        /// The channel of the thread blocked in `send_and_wait`.
        waiter: Option<mpsc::Receiver<Completion>>,
        /// What that thread got.
        waited: Vec<SendId>,
        /// The loop thread may still die.
        may_die: bool,
        /// It died.
        dead: bool,
    }

    fn perf(method: Method) -> Vec<u8> {
        let mut m = vec![0u8; 256];
        m[..4].copy_from_slice(&[1, MgmtClass::PERF_MGT.0, 1, method.0]);
        m
    }

    impl World {
        fn new(sc: Scenario, mutation: u8) -> Self {
            let mut lb = Loopback::new(Loopback::attrs("model", 1, 5), 64);
            lb.set_stalled(true);
            let attrs = lb.port_attrs().clone();
            let dev = Arc::new(Mutex::new(lb));
            let port = Port::new(
                Box::new(Dev(dev.clone(), attrs)) as Box<dyn Transport>,
                mad_core::port::PortConfig::default(),
            );
            let sh = Arc::new(Shared::new(
                port,
                EngineConfig::default(),
                None,
                Wakeup::NoFd { tick: TICK },
            ));
            sh.mutation.store(mutation, Ordering::Relaxed);
            let log: Arc<Mutex<Log>> = Arc::default();
            let mut w = World {
                sc,
                sh,
                dev,
                log,
                names: HashMap::new(),
                ids: HashMap::new(),
                sends: HashMap::new(),
                now: Instant::now(),
                woken: false,
                version: 0,
                l: L::Take,
                d: D::Idle,
                t: false,
                w: Vec::new(),
                running: HashSet::new(),
                pending: None,
                kept: Vec::new(),
                triggered: false,
                waiter: None,
                waited: Vec::new(),
                may_die: false,
                dead: false,
            };
            let owner = AgentSpec::requests("a", MgmtClass::PERF_MGT, 1, &[Method::SET]);
            match sc {
                Scenario::OtherThread => {
                    let a = w.agent("a", AgentSpec::send_only("a", Qp::Qp1));
                    w.send(a, true);
                    w.send(a, false);
                    w.d = D::Begin(a);
                    w.w = vec![Some(W::Unstall)];
                }
                Scenario::OwnCallback => {
                    let a = w.agent("a", owner);
                    w.send(a, true);
                    w.t = true;
                    w.w = vec![Some(W::Request), Some(W::Unstall)];
                }
                Scenario::OtherAgentFromCallback => {
                    w.agent("a", owner);
                    let b = w.agent("b", AgentSpec::send_only("b", Qp::Qp1));
                    w.send(b, true);
                    w.send(b, false);
                    w.d = D::Begin(b);
                    // The request that makes "a"'s callback deregister "b"
                    // is there from the start.
                    w.step_device(W::Request);
                    w.w = vec![Some(W::Unstall)];
                }
                Scenario::WaiterOwnCallback => {
                    let a = w.agent("a", owner);
                    w.wait(a);
                    w.w = vec![Some(W::Request), Some(W::Unstall)];
                }
                Scenario::LoopDies => {
                    let a = w.agent("a", AgentSpec::send_only("a", Qp::Qp1));
                    w.wait(a);
                    w.send(a, false);
                    w.d = D::Begin(a);
                    w.w = vec![Some(W::Unstall)];
                    w.may_die = true;
                }
            }
            w
        }

        /// Another thread sends on `agent` (awaiting a response) and blocks
        /// in `send_and_wait`.
        fn wait(&mut self, agent: AgentId) {
            let req = SendRequest::new(perf(Method::GET), Address::gsi(7))
                .expect_response(Duration::from_secs(3600), 0);
            let rx = self
                .sh
                .begin_wait(&mut self.sh.core(), agent, req, self.now)
                .unwrap();
            let send = *self.sh.core().waiters.keys().next().unwrap();
            self.sends.get_mut(self.names[&agent]).unwrap().push(send);
            self.waiter = Some(rx);
        }

        /// Takes what the waiting thread has been given; false if it still
        /// waits.
        fn waiter_woken(&mut self) -> bool {
            let Some(rx) = &self.waiter else {
                return true;
            };
            loop {
                match rx.try_recv() {
                    Ok(c) => self.waited.push(c.send),
                    Err(mpsc::TryRecvError::Empty) => return !self.waited.is_empty(),
                    Err(mpsc::TryRecvError::Disconnected) => return true,
                }
            }
        }

        fn agent(&mut self, name: &'static str, spec: AgentSpec) -> AgentId {
            let log = self.log.clone();
            let cb: Callback = Box::new(move |ev| {
                let mut l = lock(&log);
                if l.returned.contains(name) {
                    l.violations.push(format!(
                        "{name}'s callback ran after its deregistration returned: {ev:?}"
                    ));
                }
                l.events.entry(name).or_default().push(ev);
            });
            let id = self.sh.register_sink(spec, Sink::Callback(cb)).unwrap();
            self.names.insert(id, name);
            self.ids.insert(name, id);
            self.sends.insert(name, Vec::new());
            id
        }

        fn send(&mut self, agent: AgentId, response: bool) {
            let mut req = SendRequest::new(perf(Method::GET), Address::gsi(7));
            if response {
                req = req.expect_response(Duration::from_secs(3600), 0);
            }
            let id = self.sh.core().engine.send(agent, req, self.now).unwrap();
            self.sends.get_mut(self.names[&agent]).unwrap().push(id);
        }

        fn violation(&self, what: String) {
            lock(&self.log).violations.push(what);
        }

        fn enabled(&self) -> Vec<usize> {
            let mut v = Vec::new();
            let l = match &self.l {
                L::Idle => self.woken,
                L::Done => false,
                L::Inline { begun, idle_at, .. } => !*begun || *idle_at != Some(self.version),
                _ => true,
            };
            if l {
                v.push(L_ACTOR);
            }
            let d = match self.d {
                D::Begin(_) | D::Check(_) => true,
                D::Wait(_, seen) => self.sh.core().notifies > seen,
                D::Idle | D::Returned => false,
            };
            if d {
                v.push(D_ACTOR);
            }
            if self.t {
                v.push(T_ACTOR);
            }
            if self.may_die && matches!(self.l, L::Take | L::Drive | L::Idle) {
                v.push(X_ACTOR);
            }
            for (i, w) in self.w.iter().enumerate() {
                if w.is_some() {
                    v.push(W_ACTOR + i);
                }
            }
            v
        }

        /// What the callback does with this event: deregister someone
        /// (target, own) or just record it.
        fn trigger(&self, agent: AgentId, ev: &AgentEvent) -> Option<(AgentId, bool)> {
            if self.triggered || self.names[&agent] != "a" || !matches!(ev, AgentEvent::Received(_))
            {
                return None;
            }
            match self.sc {
                Scenario::OtherThread | Scenario::LoopDies => None,
                Scenario::OwnCallback | Scenario::WaiterOwnCallback => Some((agent, true)),
                Scenario::OtherAgentFromCallback => Some((self.ids["b"], false)),
            }
        }

        fn step(&mut self, actor: usize) {
            if actor != L_ACTOR {
                self.version += 1;
            }
            match actor {
                L_ACTOR => self.step_loop(),
                D_ACTOR => self.step_deregistering_thread(),
                T_ACTOR => {
                    self.t = false;
                    let a = self.ids["a"];
                    let r = AgentRef {
                        shared: self.sh.clone(),
                        id: a,
                    };
                    match r.send(SendRequest::new(perf(Method::GET), Address::gsi(7))) {
                        Ok(h) => self.sends.get_mut("a").unwrap().push(h.id()),
                        Err(SendError::UnknownAgent(_)) => {
                            if self.sh.core().engine.agent_state(a) == Some(AgentState::Active) {
                                self.violation("a send to an active agent was refused".into());
                            }
                        }
                        Err(e) => self.violation(format!("send failed: {e}")),
                    }
                    self.woken = true;
                }
                X_ACTOR => {
                    // The loop thread panics between two steps: `run`'s
                    // guard ends the loop on the way out.
                    self.may_die = false;
                    self.dead = true;
                    self.l = L::Done;
                    self.sh.loop_ended(&mut self.sh.core());
                }
                _ => {
                    if let Some(w) = self.w[actor - W_ACTOR].take() {
                        self.step_device(w);
                    }
                }
            }
        }

        fn step_device(&mut self, w: W) {
            match w {
                W::Unstall => lock(&self.dev).set_stalled(false),
                W::Request => lock(&self.dev).push_recv(Received {
                    qp: Qp::Qp1,
                    src: Address::gsi(9),
                    mad: perf(Method::SET).into(),
                }),
            }
            self.woken = true;
        }

        fn step_loop(&mut self) {
            let l = std::mem::replace(&mut self.l, L::Done);
            self.l = match l {
                L::Take => {
                    let next = self
                        .sh
                        .next_delivery(&mut self.sh.core(), self.pending.take());
                    match next {
                        Some((agent, ev, route)) => L::Call(agent, ev, route),
                        None => L::Drive,
                    }
                }
                L::Call(agent, ev, route) => {
                    self.running.insert(agent);
                    match self.trigger(agent, &ev) {
                        Some((target, own)) => {
                            // The callback gets the event and deregisters.
                            self.triggered = true;
                            let name = self.names[&agent];
                            {
                                let mut log = lock(&self.log);
                                if log.returned.contains(name) {
                                    log.violations.push(format!("{name} called after return"));
                                }
                                log.events.entry(name).or_default().push(ev);
                            }
                            self.pending = Some(Pending {
                                agent,
                                dropped: false,
                                callback: true,
                            });
                            L::Inline {
                                caller: agent,
                                target,
                                own,
                                sink: None,
                                begun: false,
                                idle_at: None,
                            }
                        }
                        None => {
                            self.pending = Some(self.sh.hand_over(agent, ev, route));
                            L::Ret(agent)
                        }
                    }
                }
                L::Ret(agent) => {
                    self.running.remove(&agent);
                    L::Take
                }
                L::Drive => match self.sh.drive(&mut self.sh.core(), self.now) {
                    Step::Again => L::Take,
                    Step::Wait(_) => L::Idle,
                    Step::Stop => L::Done,
                },
                L::Idle => {
                    self.woken = false;
                    L::Take
                }
                L::Inline {
                    caller,
                    target,
                    own,
                    begun: false,
                    ..
                } => L::Inline {
                    caller,
                    target,
                    own,
                    sink: self.sh.inline_begin(target),
                    begun: true,
                    idle_at: None,
                },
                L::Inline {
                    caller,
                    target,
                    own,
                    sink,
                    ..
                } => {
                    let before = (self.sh.core().engine.stats(), self.kept.len());
                    let mut kept = std::mem::take(&mut self.kept);
                    let done = self
                        .sh
                        .inline_step(target, own, sink.as_ref(), &mut kept, self.now);
                    self.kept = kept;
                    let after = (self.sh.core().engine.stats(), self.kept.len());
                    if done {
                        self.returned(target, own.then_some(caller));
                        L::Ret(caller)
                    } else {
                        L::Inline {
                            caller,
                            target,
                            own,
                            sink,
                            begun: true,
                            idle_at: (before == after).then_some(self.version),
                        }
                    }
                }
                L::Done => L::Done,
            };
        }

        fn step_deregistering_thread(&mut self) {
            self.d = match self.d {
                D::Begin(x) => {
                    self.sh.begin_deregister(&mut self.sh.core(), x);
                    self.woken = true;
                    D::Check(x)
                }
                D::Check(x) | D::Wait(x, _) => {
                    let mut core = self.sh.core();
                    if self.sh.deregistered(&mut core, x) {
                        drop(core);
                        self.returned(x, None);
                        D::Returned
                    } else {
                        D::Wait(x, core.notifies)
                    }
                }
                D::Idle => D::Idle,
                D::Returned => D::Returned,
            };
        }

        /// Deregistration of `x` returned (from its own callback when
        /// `caller` is given).
        fn returned(&mut self, x: AgentId, caller: Option<AgentId>) {
            let name = self.names[&x];
            if self.running.contains(&x) && caller != Some(x) {
                self.violation(format!(
                    "{name}'s deregistration returned while its callback ran"
                ));
            }
            if self.dead {
                // Its sends are abandoned with the loop; returning at all
                // is what counts (checked at the end).
                lock(&self.log).returned.insert(name);
                return;
            }
            {
                let core = self.sh.core();
                if core.engine.agent_outstanding(x) != 0 {
                    self.violation(format!(
                        "{name}'s deregistration returned with sends outstanding"
                    ));
                }
            }
            let queued = {
                let d = lock(&self.dev);
                d.queued(Qp::Qp0) + d.queued(Qp::Qp1)
            };
            if queued != 0 {
                self.violation(format!(
                    "{name}'s deregistration returned with {queued} work requests in the device"
                ));
            }
            self.check_completions(name, caller == Some(x));
            lock(&self.log).returned.insert(name);
        }

        /// Every send of `name` completed exactly once (through its
        /// callback, or — deregistering itself — in the returned events).
        fn check_completions(&mut self, name: &'static str, with_kept: bool) {
            self.waiter_woken();
            let log = lock(&self.log);
            let mut done: Vec<SendId> = log
                .events
                .get(name)
                .into_iter()
                .flatten()
                .chain(self.kept.iter().filter(|_| with_kept))
                .filter_map(|e| match e {
                    AgentEvent::SendDone(c) => Some(c.send),
                    _ => None,
                })
                .chain(self.waited.iter().copied())
                .collect();
            drop(log);
            done.sort();
            let mut want = self.sends[name].clone();
            want.sort();
            if done != want {
                self.violation(format!("{name}: completions {done:?}, sends {want:?}"));
            }
        }

        /// At the end of a schedule (no step enabled).
        fn finish(&mut self) {
            if !self.waiter_woken() {
                self.violation("a thread waits for ever in send_and_wait".into());
            }
            if !matches!(self.d, D::Idle | D::Returned) {
                self.violation("a deregistering thread waits for ever".into());
            }
            if matches!(self.l, L::Inline { .. }) {
                self.violation("a deregistration from a callback spins for ever".into());
            }
            if self.t || self.w.iter().any(Option::is_some) {
                self.violation("stopped with steps left".into());
            }
        }
    }

    /// Runs every schedule of `sc`; returns how many and the first
    /// violation.
    fn explore(sc: Scenario, mutation: u8) -> (usize, Option<String>) {
        let mut stack: Vec<Vec<usize>> = vec![Vec::new()];
        let mut schedules = 0;
        while let Some(prefix) = stack.pop() {
            let mut w = World::new(sc, mutation);
            for &c in &prefix {
                w.step(c);
            }
            let mut path = prefix;
            loop {
                let en = w.enabled();
                let Some((&first, rest)) = en.split_first() else {
                    w.finish();
                    break;
                };
                for &alt in rest {
                    let mut p = path.clone();
                    p.push(alt);
                    stack.push(p);
                }
                w.step(first);
                path.push(first);
                if path.len() > 300 {
                    w.violation("a schedule does not end (livelock)".into());
                    break;
                }
            }
            schedules += 1;
            let v = lock(&w.log).violations.first().cloned();
            if let Some(v) = v {
                return (schedules, Some(format!("{v}; schedule {path:?}")));
            }
        }
        (schedules, None)
    }

    const SCENARIOS: [Scenario; 5] = [
        Scenario::OtherThread,
        Scenario::OwnCallback,
        Scenario::OtherAgentFromCallback,
        Scenario::WaiterOwnCallback,
        Scenario::LoopDies,
    ];

    #[test]
    fn in_every_interleaving_deregistration_waits_for_sends_and_callbacks_and_never_deadlocks() {
        for sc in SCENARIOS {
            let t = Instant::now();
            let (n, v) = explore(sc, mutation::NONE);
            eprintln!("{sc:?}: {n} schedules in {:?}", t.elapsed());
            assert_eq!(v, None, "{sc:?} after {n} schedules");
            assert!(n > 20, "{sc:?}: only {n} schedules explored");
        }
    }

    #[test]
    fn the_model_finds_a_lost_wakeup() {
        let (_, v) = explore(Scenario::OtherThread, mutation::NO_NOTIFY);
        assert!(
            v.as_deref().is_some_and(|v| v.contains("waits for ever")),
            "{v:?}"
        );
    }

    #[test]
    fn the_model_finds_a_deregistration_that_returns_early() {
        let (_, v) = explore(Scenario::OtherThread, mutation::EARLY_RETURN);
        assert!(
            v.as_deref().is_some_and(|v| v.contains("returned")),
            "{v:?}"
        );
    }

    #[test]
    fn the_model_finds_a_deregistration_from_its_own_callback_that_waits_for_itself() {
        let (_, v) = explore(Scenario::OwnCallback, mutation::INLINE_WAITS_FOR_REAP);
        assert!(
            v.as_deref().is_some_and(|v| v.contains("spins for ever")),
            "{v:?}"
        );
    }

    #[test]
    fn the_model_finds_a_waiter_whose_completion_a_callbacks_deregistration_takes() {
        let (_, v) = explore(
            Scenario::WaiterOwnCallback,
            mutation::INLINE_IGNORES_WAITERS,
        );
        assert!(
            v.as_deref()
                .is_some_and(|v| v.contains("waits for ever in send_and_wait")),
            "{v:?}"
        );
    }

    #[test]
    fn the_model_finds_waiters_left_behind_by_a_dead_loop() {
        let (_, v) = explore(Scenario::LoopDies, mutation::DEATH_UNNOTICED);
        assert!(
            v.as_deref().is_some_and(|v| v.contains("for ever")),
            "{v:?}"
        );
    }
}
