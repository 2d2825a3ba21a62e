//! The runtime: an [`Engine`](crate::Engine) driven by a mio event loop on its own thread.
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
//! A thread that waits for its own events — in [`AgentReceiver::recv`]
//! (and `recv_timeout`, `try_recv`) or [`AgentRef::send_and_wait`] —
//! first drives the port itself, under the same lock, and takes what is
//! its own; only if nothing comes within a few microseconds does it block
//! and leave the port to the loop thread. While callers drive (or take
//! from their channels), the loop thread parks instead of waiting on the
//! transport, half a millisecond at a time, unless a caller is blocked on
//! it; it goes round again once callers have been idle for that long (the
//! bound on how late a timer or an unsolicited MAD is seen when no caller
//! drives). The fast path is in `runtime/caller.rs`.
//!
//! # Waking up
//!
//! How the loop learns that the transport has something is fixed at start
//! and reported by [`Runtime::wakeup`]:
//! - [`Wakeup::Fd`]: the transport's descriptor is registered with epoll
//!   and the loop sleeps until it is readable (or a command or deadline
//!   comes); while work requests are posted it also polls every [`TICK`],
//!   because ibsim and umad complete sends inside the transport without
//!   the descriptor becoming readable. While the loop parks (callers
//!   drive the port) it tells the transport that nobody watches the
//!   descriptor ([`Transport::watch_fd`]), and that it does again before
//!   it waits in epoll: the built-in fabric then writes nothing to its
//!   notification socket on the callers' round trips.
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
//! Every event of an agent is delivered once, in order, either to the
//! agent's callback ([`Runtime::register`]) — always on the loop thread,
//! one at a time — or into its channel ([`Runtime::register_channel`]) —
//! by the loop thread, or by the thread receiving from the channel when it
//! drives the port itself (a batch under one lock; the receiver takes all
//! that is queued at once, `runtime/channel.rs`); a completion of a [`AgentRef::send_and_wait`]
//! goes to the waiting thread instead (taken by that thread itself, or
//! handed to it by the loop). A
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
//!   [`AgentRef::send_and_wait`] gets [`crate::SendError::Stopped`], deregistering
//!   threads and drops of [`Agent`]s return (their sends are abandoned
//!   with the loop), channels close ([`AgentReceiver::recv`] returns
//!   `None` once the events already in it are taken), and later
//!   registrations and sends are refused.
//!
//! The protocol is written as locked steps (the loop's `next_delivery`,
//! `hand_over`, `drive`; deregistration's `begin_deregister`,
//! `deregistered`, `inline_begin`, `inline_step`; the callers' fast path
//! `caller_drive`, `caller_take`) so that a model test
//! (`runtime::model`, under `cargo test`) can run every interleaving of
//! them between the loop thread, a deregistering thread, a sending thread,
//! callers driving the port and the device, and check the guarantees
//! above in each.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use mad_core::port::PortConfig;
use mad_core::transport::{PortAttrs, Transport};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Waker};

use crate::spec::AgentSpec;
use crate::stack::Stack;
mod caller;
mod channel;
mod handles;
#[cfg(test)]
mod model;
mod port;
mod relay;
mod reset;
mod shared;
mod waiter;

pub use handles::{Agent, AgentReceiver, AgentRef, SendHandle};
pub use port::{PortAgent, PortWatch, SharedPort};
pub use reset::{ResetHold, ResetHoldStats, ResetPhase, ResetWork};
pub use shared::{Callback, RuntimeStats, Wakeup, IDLE, TICK};
use shared::{ChannelLoad, Deviation, Pending, Shared, Sink, Step, MIN_TICK, TRANSPORT, WAKER};
use waiter::lock;

use crate::types::{AgentEvent, EngineConfig, EngineStats, RegisterError};

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
        Self::start_with_port(transport, PortConfig::default(), cfg)
    }

    /// Starts a runtime over `transport` whose port has settings `port`.
    ///
    /// # Errors
    /// As [`Runtime::start`].
    pub fn start_with_port(
        transport: impl Transport + 'static,
        port: PortConfig,
        cfg: EngineConfig,
    ) -> std::io::Result<Self> {
        let t: Box<dyn Transport> = Box::new(transport);
        let tick = cfg.fallback_tick.max(MIN_TICK);
        let stack = Stack::with_port_config(t, port, cfg);
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        // A descriptor epoll refuses (libumad2sim hands out fake ones)
        // means ticking instead.
        let wakeup = match stack.transport().raw_fd() {
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
        let shared = Arc::new(Shared::new(stack, Some(waker), wakeup, Deviation::None));
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
    /// As [`Engine::register`](crate::Engine::register), or [`RegisterError::Stopped`].
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
    /// As [`Engine::register`](crate::Engine::register), or [`RegisterError::Stopped`].
    pub fn register_channel(
        &self,
        spec: AgentSpec,
    ) -> Result<(Agent, AgentReceiver), RegisterError> {
        let (tx, rx) = channel::channel();
        let queued = Arc::new(ChannelLoad::default());
        let agent = self.register_sink(
            spec,
            Sink::Channel {
                tx,
                queued: queued.clone(),
            },
        )?;
        let receiver = AgentReceiver {
            rx,
            queued,
            shared: Arc::downgrade(&self.shared),
            relay: self.shared.relay.clone(),
            agent: agent.id(),
        };
        Ok((agent, receiver))
    }

    /// Runs `f` on the engine and the driver of its transport (locked).
    pub fn with_engine<R>(&self, f: impl FnOnce(&mut Stack) -> R) -> R {
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
        (s.caller_drives, s.caller_blocks, s.loop_parks) = self.shared.relay.counts();
        s
    }

    /// The port's attributes.
    #[must_use]
    pub fn port_attrs(&self) -> PortAttrs {
        self.shared.core().engine.attrs().clone()
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
    shared.relay.set_loop_thread();
    // Callers' drives seen when the loop last waited.
    let mut driven = 0;
    let mut events = Events::with_capacity(16);
    // The event delivered last, to finish under the next lock.
    let mut pending: Option<Pending> = None;
    // Whether the transport keeps its descriptor readable for this
    // thread: not while it parks (callers poll the port), so that a
    // transport whose descriptor costs system calls (the built-in
    // fabric's) makes none on the callers' round trips.
    let mut watched = true;
    // Wake-ups by the transport's descriptor not yet added to the stats.
    let mut transport_wakes = 0;
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
        let step = {
            let mut core = shared.core();
            core.stats.transport_wakes += std::mem::take(&mut transport_wakes);
            shared.drive(&mut core, Instant::now())
        };
        shared.bury();
        match step {
            Step::Again => {}
            Step::Stop => return,
            Step::Wait(timeout) => {
                // Callers drive the port: out of their way.
                let unwatch = || shared.watch_fd(&mut watched, false);
                if shared.relay.park(&mut driven, timeout, unwatch) {
                    continue;
                }
                shared.watch_fd(&mut watched, true);
                if let Err(e) = poll.poll(&mut events, Some(timeout)) {
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        std::thread::sleep(TICK);
                    }
                }
                if events.iter().any(|e| e.token() == TRANSPORT) {
                    transport_wakes += 1;
                }
            }
        }
    }
}
