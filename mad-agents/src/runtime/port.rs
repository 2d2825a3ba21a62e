//! One port shared by the services of a process (seed 004):
//! [`SharedPort`].
//!
//! A [`Runtime`] belongs to whoever started it: dropping it deregisters
//! every agent on the port and ends its thread, whoever else still uses
//! them. A `SharedPort` is a reference-counted handle on one runtime (the
//! transport, its engine and its thread): every service opened on it —
//! [`SaClient::open`](crate::sa::SaClient::open),
//! `mad_cm::CmService::open`, the exporter's reader, the SA responder,
//! a user's own agents ([`SharedPort::register`]) — keeps a clone, and the
//! port lives while any clone does. Dropping the handle of the one that
//! created it stops nothing the others use; the last drop shuts the
//! runtime down: every agent still registered is deregistered (its sends
//! complete as flushed) and the loop thread is joined.
//!
//! # Who owns what, and the order of drops
//! - The runtime (transport, engine, loop thread) is owned by the handles
//!   together; it goes with the last one.
//! - Each service owns its agent and a handle. It drops its agent first
//!   (synchronous deregistration: its sends complete, its callback runs no
//!   more) and its handle after, so that the last service to go finds the
//!   port still running while it deregisters.
//! - A [`PortWatch`] owns nothing: it tells how many handles are alive and
//!   whether the runtime is gone (its thread joined, nothing of it left).
//! - The last handle dropped on the loop thread itself (from inside a
//!   callback) cannot join that thread: the loop is told to stop and ends
//!   by itself, unjoined ([`PortWatch::joined`] stays false).
//!
//! Every service on a shared port takes part in the two-phase soft reset
//! ([`super::ResetHold`]): it holds the reset while its work in flight
//! drains, then resumes.

use std::any::Any;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use mad_core::transport::Transport;

use super::handles::{Agent, AgentReceiver};
use super::shared::Shared;
use super::Runtime;
use crate::spec::AgentSpec;
use crate::types::{AgentEvent, EngineConfig, RegisterError};

struct Inner {
    /// `Option` so that `Drop` can shut it down and say so.
    rt: Option<Runtime>,
    joined: Arc<AtomicBool>,
    /// What the transport needs beyond itself (the built-in fabric a
    /// simulated port is attached to), dropped after the runtime.
    kept: Mutex<Vec<Box<dyn Any + Send>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            let on_loop = rt.shared.on_loop_thread();
            // Deregisters every agent still there, then joins the loop
            // thread (only asks it to stop on the loop thread itself).
            drop(rt);
            if !on_loop {
                self.joined.store(true, Ordering::Release);
            }
        }
        drop(std::mem::take(
            self.kept.get_mut().unwrap_or_else(PoisonError::into_inner),
        ));
    }
}

/// A handle on a port shared by refcount (ARCHITECTURE.md, "One port,
/// many services"). Cloning it adds a holder; it dereferences to the
/// [`Runtime`] for everything else.
#[derive(Clone)]
pub struct SharedPort {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SharedPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedPort")
            .field("holders", &self.holders())
            .field("runtime", &self.inner.rt)
            .finish()
    }
}

impl Deref for SharedPort {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        self.runtime()
    }
}

impl From<Runtime> for SharedPort {
    fn from(rt: Runtime) -> Self {
        Self::from_runtime(rt)
    }
}

impl SharedPort {
    /// Starts a runtime over `transport` ([`Runtime::start`]) and returns
    /// the first handle on it.
    ///
    /// # Errors
    /// As [`Runtime::start`].
    pub fn start(transport: impl Transport + 'static, cfg: EngineConfig) -> std::io::Result<Self> {
        Runtime::start(transport, cfg).map(Self::from_runtime)
    }

    /// Shares a running runtime: from now on it lives while a handle does.
    #[must_use]
    pub fn from_runtime(rt: Runtime) -> Self {
        Self {
            inner: Arc::new(Inner {
                rt: Some(rt),
                joined: Arc::new(AtomicBool::new(false)),
                kept: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The runtime.
    #[must_use]
    pub fn runtime(&self) -> &Runtime {
        match &self.inner.rt {
            Some(rt) => rt,
            // Taken only by the last handle's drop.
            None => unreachable!("a live SharedPort always holds its runtime"),
        }
    }

    /// Keeps `value` alive as long as the port: it is dropped after the
    /// runtime, when the last handle goes. For what the transport needs
    /// beyond itself, such as the built-in fabric (its SM and SA) a
    /// simulated port is attached to, when the one that created both lets
    /// go of its handle first.
    pub fn keep_alive(&self, value: impl Any + Send) {
        self.inner
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Box::new(value));
    }

    /// How many handles are alive (this one included).
    #[must_use]
    pub fn holders(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// A watch on the port that does not keep it alive.
    #[must_use]
    pub fn watch(&self) -> PortWatch {
        PortWatch {
            handles: Arc::downgrade(&self.inner),
            runtime: Arc::downgrade(&self.runtime().shared),
            joined: self.inner.joined.clone(),
        }
    }

    /// Registers an agent of the user's whose events go to `callback`
    /// ([`Runtime::register`]); the returned [`PortAgent`] keeps the port
    /// alive until it is dropped.
    ///
    /// # Errors
    /// As [`Runtime::register`].
    pub fn register(
        &self,
        spec: AgentSpec,
        callback: impl FnMut(AgentEvent) + Send + 'static,
    ) -> Result<PortAgent, RegisterError> {
        let agent = self.runtime().register(spec, callback)?;
        Ok(PortAgent {
            agent: Some(agent),
            _port: self.clone(),
        })
    }

    /// Registers an agent of the user's whose events go into a channel
    /// ([`Runtime::register_channel`]); the returned [`PortAgent`] keeps
    /// the port alive until it is dropped (the receiver does not).
    ///
    /// # Errors
    /// As [`Runtime::register_channel`].
    pub fn register_channel(
        &self,
        spec: AgentSpec,
    ) -> Result<(PortAgent, AgentReceiver), RegisterError> {
        let (agent, rx) = self.runtime().register_channel(spec)?;
        Ok((
            PortAgent {
                agent: Some(agent),
                _port: self.clone(),
            },
            rx,
        ))
    }
}

/// An agent registered through a [`SharedPort`], holding the port: it
/// dereferences to its [`Agent`]; dropping it deregisters the agent, then
/// lets go of the port (the last holder's drop shuts the port down).
#[derive(Debug)]
pub struct PortAgent {
    /// `Option` so that [`PortAgent::deregister`] can take it.
    agent: Option<Agent>,
    _port: SharedPort,
}

impl Deref for PortAgent {
    type Target = Agent;
    fn deref(&self) -> &Agent {
        match &self.agent {
            Some(a) => a,
            None => unreachable!("taken only by deregister, which consumes it"),
        }
    }
}

impl PortAgent {
    /// [`Agent::deregister`], then lets go of the port.
    #[must_use = "events returned from inside the agent's own callback are its last completions"]
    pub fn deregister(mut self) -> Vec<AgentEvent> {
        self.agent.take().map(Agent::deregister).unwrap_or_default()
    }
}

impl Drop for PortAgent {
    fn drop(&mut self) {
        // The agent goes before the handle (field order says so too).
        drop(self.agent.take());
    }
}

/// A watch on a [`SharedPort`] that keeps nothing alive.
#[derive(Debug, Clone)]
pub struct PortWatch {
    handles: Weak<Inner>,
    runtime: Weak<Shared>,
    joined: Arc<AtomicBool>,
}

impl PortWatch {
    /// Handles alive (0 once the last is dropped).
    #[must_use]
    pub fn holders(&self) -> usize {
        self.handles.strong_count()
    }

    /// True once the last handle's drop shut the runtime down and joined
    /// its loop thread.
    #[must_use]
    pub fn joined(&self) -> bool {
        self.joined.load(Ordering::Acquire)
    }

    /// True once nothing of the runtime is left: no handle, no loop
    /// thread, no [`Agent`] or [`crate::AgentRef`] of it (an agent handle
    /// kept past the last port handle keeps the runtime's state, though
    /// not its thread).
    #[must_use]
    pub fn is_gone(&self) -> bool {
        self.holders() == 0 && self.runtime.strong_count() == 0
    }
}
