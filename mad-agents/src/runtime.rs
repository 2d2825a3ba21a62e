//! The runtime: an [`Engine`] driven by a mio event loop on its own thread.
//!
//! # Threads
//!
//! [`Runtime::start`] moves the transport into an engine behind a mutex
//! and starts one thread per port running a mio loop: it waits on the
//! transport's fd (a [`mio::unix::SourceFd`], when the transport has one),
//! on a [`mio::Waker`] that commands from other threads ring, and on the
//! engine's next deadline; without an fd it ticks every
//! [`TICK`] while work is outstanding. Registrations, sends, cancels,
//! modifies and deregistrations may come from any thread: they lock the
//! engine, act, and wake the loop.
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

use std::cell::Cell;
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

/// How often the loop polls a transport without an fd while work is
/// outstanding (also the longest a transport with an fd sleeps while work
/// requests are posted).
pub const TICK: Duration = Duration::from_micros(200);
/// The longest the loop sleeps with nothing outstanding (a safety net for
/// a missed edge).
const IDLE: Duration = Duration::from_millis(100);

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
        queued: Arc<AtomicUsize>,
    },
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
}

struct Core {
    engine: Engine,
    sinks: HashMap<AgentId, Arc<Mutex<Sink>>>,
    waiters: HashMap<SendId, mpsc::Sender<Completion>>,
    stats: RuntimeStats,
    stopping: bool,
    stopped: bool,
}

struct Shared {
    id: u64,
    core: Mutex<Core>,
    cond: Condvar,
    waker: Waker,
    loop_thread: Mutex<Option<ThreadId>>,
    recv_bound: usize,
    has_fd: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, Core> {
        lock(&self.core)
    }

    fn wake(&self) {
        let _ = self.waker.wake();
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
                f(ev);
                IN_CALLBACK.with(|c| c.set(prev));
                (false, true)
            }
            Sink::Channel { tx, queued } => {
                if matches!(ev, AgentEvent::Received(_)) {
                    if queued.load(Ordering::Acquire) >= self.recv_bound {
                        return (true, false);
                    }
                    queued.fetch_add(1, Ordering::AcqRel);
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
        // A descriptor epoll refuses (libumad2sim hands out fake ones)
        // means ticking instead.
        let fd: Option<RawFd> = port.transport().raw_fd().filter(|fd| {
            poll.registry()
                .register(&mut SourceFd(fd), TRANSPORT, Interest::READABLE)
                .is_ok()
        });
        let recv_bound = cfg.recv_queue_bound;
        let shared = Arc::new(Shared {
            id: NEXT_RUNTIME.fetch_add(1, Ordering::Relaxed),
            core: Mutex::new(Core {
                engine: Engine::with_port(port, cfg),
                sinks: HashMap::new(),
                waiters: HashMap::new(),
                stats: RuntimeStats::default(),
                stopping: false,
                stopped: false,
            }),
            cond: Condvar::new(),
            waker,
            loop_thread: Mutex::new(None),
            recv_bound,
            has_fd: fd.is_some(),
        });
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
        let mut core = self.shared.core();
        if core.stopping {
            return Err(RegisterError::Stopped);
        }
        let id = core.engine.register(spec)?;
        core.sinks.insert(id, Arc::new(Mutex::new(sink)));
        drop(core);
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
        let queued = Arc::new(AtomicUsize::new(0));
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
        self.shared.core().stats
    }

    /// The port's attributes.
    #[must_use]
    pub fn port_attrs(&self) -> PortAttrs {
        self.shared.core().engine.port().attrs().clone()
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

fn run(shared: &Arc<Shared>, mut poll: Poll) {
    let mut events = Events::with_capacity(16);
    // The event delivered last, to finish under the next lock.
    let mut pending: Option<(AgentId, bool, bool)> = None;
    loop {
        // Deliver queued events one at a time, each under its own lock
        // cycle, so that a deregistration in between is seen at once.
        let next = {
            let mut core = shared.core();
            if let Some((agent, dropped, cb)) = pending.take() {
                finish_delivery(shared, &mut core, agent, dropped, cb);
            }
            core.engine.begin_delivery().map(|(agent, ev)| {
                let route = match &ev {
                    AgentEvent::SendDone(c) => core.waiters.remove(&c.send).map(Route::Waiter),
                    _ => None,
                }
                .or_else(|| core.sinks.get(&agent).cloned().map(Route::Sink))
                .unwrap_or(Route::Nowhere);
                (agent, ev, route)
            })
        };
        if let Some((agent, ev, route)) = next {
            let (dropped, cb) = match (route, ev) {
                (Route::Waiter(tx), AgentEvent::SendDone(c)) => {
                    let _ = tx.send(c);
                    (false, false)
                }
                (Route::Sink(sink), ev) => shared.deliver(agent, &sink, ev),
                _ => (false, false),
            };
            pending = Some((agent, dropped, cb));
            continue;
        }
        // Nothing to deliver: drive the engine, then wait.
        let timeout = {
            let mut core = shared.core();
            let now = Instant::now();
            if core.stopping {
                for a in core.engine.agent_ids() {
                    let _ = core.engine.deregister(a);
                }
            }
            let progress = core.engine.poll(now);
            reap(shared, &mut core);
            if core.stopping && core.engine.agent_count() == 0 && !core.engine.has_events() {
                core.stopped = true;
                core.waiters.clear();
                shared.cond.notify_all();
                return;
            }
            if progress || core.engine.has_events() {
                continue;
            }
            // Work requests still posted may complete without the fd
            // becoming readable (ibsim and umad complete sends inside the
            // transport); without an fd, responses too arrive only by
            // polling.
            let posted = core.engine.port().posted(mad_core::transport::Qp::Qp0)
                + core.engine.port().posted(mad_core::transport::Qp::Qp1)
                > 0;
            let busy = posted || (!shared.has_fd && core.engine.outstanding() > 0);
            let mut t = if busy { TICK } else { IDLE };
            if let Some(d) = core.engine.poll_timeout() {
                t = t.min(d.saturating_duration_since(now));
            }
            core.stats.waits += 1;
            t
        };
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                std::thread::sleep(TICK);
            }
        }
    }
}

fn finish_delivery(shared: &Shared, core: &mut Core, agent: AgentId, dropped: bool, cb: bool) {
    if dropped {
        core.engine.count_recv_drop(agent);
    }
    if cb {
        core.stats.callbacks += 1;
    } else {
        core.stats.channel_events += 1;
    }
    core.engine.end_delivery(agent);
    reap(shared, core);
}

fn reap(shared: &Shared, core: &mut Core) {
    let gone = core.engine.take_reaped();
    if !gone.is_empty() {
        for a in gone {
            core.sinks.remove(&a);
        }
        shared.cond.notify_all();
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
        let rx = {
            let mut core = self.shared.core();
            if core.stopped {
                return Err(SendError::Stopped);
            }
            let send = core.engine.send(self.id, req, Instant::now())?;
            let (tx, rx) = mpsc::channel();
            core.waiters.insert(send, tx);
            rx
        };
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
            let own = sh.current_callback() == Some(id);
            let _ = sh.core().engine.deregister(id);
            let sink = sh.core().sinks.get(&id).cloned();
            let mut kept = Vec::new();
            loop {
                let (evs, done) = {
                    let mut core = sh.core();
                    core.engine.poll(Instant::now());
                    let evs = core.engine.take_events(id);
                    let done = core.engine.agent_outstanding(id) == 0
                        && core.engine.queued_events(id) == 0;
                    if done {
                        reap(sh, &mut core);
                    }
                    (evs, done)
                };
                // Deliver to another agent right here (engine unlocked);
                // an agent whose callback is running further up this
                // stack cannot be called again: keep its events.
                let guard = if own {
                    None
                } else {
                    sink.as_ref().and_then(|s| s.try_lock().ok())
                };
                match guard {
                    Some(mut g) => {
                        for ev in evs {
                            let _ = sh.deliver_to(id, &mut g, ev);
                        }
                    }
                    None => kept.extend(evs),
                }
                if done {
                    break;
                }
                std::thread::sleep(Duration::from_micros(50));
            }
            return kept;
        }
        let mut core = sh.core();
        let _ = core.engine.deregister(id);
        sh.wake();
        while core.engine.agent_state(id).is_some() {
            core = sh.cond.wait(core).unwrap_or_else(PoisonError::into_inner);
        }
        core.sinks.remove(&id);
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
    queued: Arc<AtomicUsize>,
}

impl AgentReceiver {
    fn took(&self, ev: AgentEvent) -> AgentEvent {
        if matches!(ev, AgentEvent::Received(_)) {
            self.queued.fetch_sub(1, Ordering::AcqRel);
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
