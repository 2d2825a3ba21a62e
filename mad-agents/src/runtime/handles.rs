//! The handles callers hold: [`AgentRef`], [`Agent`], [`SendHandle`],
//! [`AgentReceiver`].

use std::sync::atomic::Ordering;
use std::sync::mpsc::TryRecvError;
use std::sync::{Arc, PoisonError, Weak};
use std::time::{Duration, Instant};

use mad_core::transport::PortAttrs;

use super::relay::Relay;
use super::shared::{ChannelLoad, Shared};
use crate::engine::{AgentState, Engine};
use crate::types::{AgentEvent, AgentId, AgentStats, Completion, SendError, SendId, SendRequest};

/// `f` on the engine under the runtime's lock, then a wake of the port's
/// loop (the call may have changed what it must post or deliver).
fn then_wake<R>(shared: &Shared, f: impl FnOnce(&mut Engine) -> R) -> R {
    let r = f(&mut shared.core().engine);
    shared.wake();
    r
}

/// A handle on the runtime's shared state naming one of its objects by
/// `id`: its `Debug` (the id only) and its `id` getter.
macro_rules! id_handle {
    ($handle:ident, $id:ty, $doc:literal) => {
        impl std::fmt::Debug for $handle {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($handle))
                    .field("id", &self.id)
                    .finish()
            }
        }

        impl $handle {
            #[doc = $doc]
            #[must_use]
            pub fn id(&self) -> $id {
                self.id
            }
        }
    };
}

/// A cloneable reference to a registered agent: sends, cancels, waits. It
/// does not keep the agent registered; use it inside callbacks.
#[derive(Clone)]
pub struct AgentRef {
    pub(super) shared: Arc<Shared>,
    pub(super) id: AgentId,
}

id_handle!(AgentRef, AgentId, "The agent's id.");

impl AgentRef {
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
        self.shared.nudge();
        Ok(SendHandle {
            shared: self.shared.clone(),
            id,
        })
    }

    /// [`AgentRef::send`] for a batch: every request of `reqs` under one
    /// lock of the engine, with at most one wake-up of the loop thread
    /// (none while callers drive the port). A request the engine refuses
    /// goes to `refused` with its cookie and why; the others complete as
    /// [`AgentRef::send`]'s do. Returns how many were sent.
    ///
    /// # Errors
    /// [`SendError::Stopped`]: nothing was sent.
    pub fn send_batch(
        &self,
        reqs: impl IntoIterator<Item = SendRequest>,
        mut refused: impl FnMut(u64, SendError),
    ) -> Result<usize, SendError> {
        let sent = {
            let mut core = self.shared.core();
            if core.stopped {
                return Err(SendError::Stopped);
            }
            let now = Instant::now();
            let mut sent = 0;
            for req in reqs {
                let cookie = req.cookie;
                match core.engine.send(self.id, req, now) {
                    Ok(_) => sent += 1,
                    Err(e) => refused(cookie, e),
                }
            }
            sent
        };
        if sent > 0 {
            self.shared.nudge();
        }
        Ok(sent)
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
        let (rx, send) =
            self.shared
                .begin_wait(&mut self.shared.core(), self.id, req, Instant::now())?;
        // The fast path: the port may have the answer already.
        let (taken, _) = super::caller::spin(|now| self.shared.caller_take(self.id, send, now));
        if let Some(c) = taken {
            return Ok(c);
        }
        let _watch = self.shared.relay.watch();
        self.shared.nudge();
        rx.recv().ok_or(SendError::Stopped)
    }

    /// Acknowledges a pending soft reset (for agents registered with
    /// `hold_reset`).
    ///
    /// # Errors
    /// [`SendError::UnknownAgent`] if the agent is gone.
    pub fn ack_reset(&self) -> Result<(), SendError> {
        then_wake(&self.shared, |e| e.ack_reset(self.id))
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
        self.shared.core().engine.attrs().clone()
    }
}

/// A registered agent. Dropping it deregisters it (synchronously; see the
/// [module documentation](crate::runtime#deregistration)). Dereferences to
/// [`AgentRef`].
pub struct Agent {
    pub(super) agent: AgentRef,
    pub(super) done: bool,
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
    /// documentation](crate::runtime#deregistration). The returned events are empty
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
    pub(super) shared: Arc<Shared>,
    pub(super) id: SendId,
}

id_handle!(SendHandle, SendId, "The send's id (as in its completion).");

impl SendHandle {
    /// Cancels it ([`Engine::cancel`]).
    ///
    /// # Errors
    /// As [`Engine::cancel`].
    pub fn cancel(&self) -> Result<(), SendError> {
        then_wake(&self.shared, |e| e.cancel(self.id))
    }

    /// Changes its response timeout ([`Engine::modify`]).
    ///
    /// # Errors
    /// As [`Engine::modify`].
    pub fn modify(&self, timeout: Duration) -> Result<(), SendError> {
        then_wake(&self.shared, |e| e.modify(self.id, timeout, Instant::now()))
    }
}

/// The receiving end of an agent registered with
/// [`crate::Runtime::register_channel`].
#[derive(Debug)]
pub struct AgentReceiver {
    pub(super) rx: super::channel::Receiver,
    pub(super) queued: Arc<ChannelLoad>,
    /// The runtime, to drive its port when the channel is empty (weak: a
    /// receiver does not keep the port open).
    pub(super) shared: Weak<Shared>,
    /// The runtime's relay, to say this receiver is active.
    pub(super) relay: Arc<Relay>,
    pub(super) agent: AgentId,
}

/// What [`AgentReceiver`] found when no event was there for it.
#[derive(Default)]
struct NoEvent {
    /// The channel is closed and empty.
    closed: bool,
    /// The runtime, to block on (`None` once it is gone).
    shared: Option<Arc<Shared>>,
    /// When this thread began to drive the port, if it did.
    began: Option<Instant>,
}

impl NoEvent {
    fn closed() -> Self {
        Self {
            closed: true,
            ..Self::default()
        }
    }
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

    /// The next event already in the channel; else this thread drives
    /// the port (the [fast path](super::caller)) and looks again — once,
    /// or with `spin` for a short while if more may come soon.
    fn take_or_drive(&self, spin: bool) -> Result<AgentEvent, NoEvent> {
        match self.rx.try_recv() {
            Ok(ev) => {
                self.relay.took();
                return Ok(self.took(ev));
            }
            Err(TryRecvError::Disconnected) => return Err(NoEvent::closed()),
            Err(TryRecvError::Empty) => {}
        }
        // A runtime already gone: blocking returns once its channel closes.
        let Some(sh) = self.shared.upgrade() else {
            return Err(NoEvent::default());
        };
        let mut closed = false;
        let (got, began) = super::caller::spin(|now| {
            let more = sh.caller_drive(self.agent, now);
            match self.rx.try_recv() {
                Ok(ev) => (Some(ev), false),
                Err(e) => {
                    closed = e == TryRecvError::Disconnected;
                    (None, more && spin && !closed)
                }
            }
        });
        match got {
            Some(ev) => Ok(self.took(ev)),
            None => Err(NoEvent {
                closed,
                shared: Some(sh),
                began: Some(began),
            }),
        }
    }

    /// Blocks on the channel (until `deadline`, if any) while the loop
    /// thread delivers.
    fn block(&self, shared: Option<&Arc<Shared>>, deadline: Option<Instant>) -> Option<AgentEvent> {
        let _watch = shared.map(|sh| sh.relay.watch());
        self.rx.recv_until(deadline).map(|e| self.took(e))
    }

    /// The next event, blocking; `None` once the agent is gone and every
    /// event has been taken.
    #[must_use]
    pub fn recv(&self) -> Option<AgentEvent> {
        match self.take_or_drive(true) {
            Ok(ev) => Some(ev),
            Err(e) if e.closed => None,
            Err(e) => self.block(e.shared.as_ref(), None),
        }
    }

    /// The next event within `timeout`.
    #[must_use]
    pub fn recv_timeout(&self, timeout: Duration) -> Option<AgentEvent> {
        // The clock is read only if nothing is waiting already: the
        // deadline counts from when this call began to drive, or from now.
        match self.take_or_drive(true) {
            Ok(ev) => Some(ev),
            Err(e) if e.closed => None,
            Err(e) => {
                // A timeout past the clock's end means none.
                let deadline = e.began.unwrap_or_else(Instant::now).checked_add(timeout);
                self.block(e.shared.as_ref(), deadline)
            }
        }
    }

    /// True once the channel is closed (the agent deregistered, or the
    /// runtime stopped) and every event in it has been taken: nothing
    /// more will come.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.rx.is_closed()
    }

    /// The next event if one is waiting (this thread drives the port once
    /// to see).
    #[must_use]
    pub fn try_recv(&self) -> Option<AgentEvent> {
        self.take_or_drive(false).ok()
    }
}
