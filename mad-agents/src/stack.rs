//! [`Stack`]: one [`Engine`] and the [`Driver`] of its transport, for
//! callers that own both and drive them by hand (the [`Runtime`](crate::Runtime),
//! benchmarks, fuzzers, tests).
//!
//! The engine holds the port's state ([`mad_core::port::PortCore`]) and
//! no transport; the driver owns the transport and pumps it. The calls
//! that post or pump ([`Stack::send`], [`Stack::poll`],
//! [`Stack::handle_recv`]) hand the engine the driver as its
//! [`Io`](mad_core::port::Io); [`Stack::register`] registers the agent's
//! requests with the transport after the engine accepted it. Everything
//! else is the engine's: a `Stack` dereferences to its [`Engine`].

use std::ops::{Deref, DerefMut};
use std::time::Instant;

use mad_core::port::{Driver, InboundError, PortConfig};
use mad_core::transport::{PortAttrs, Received, Transport};

use crate::engine::Engine;
use crate::spec::AgentSpec;
use crate::types::{AgentId, EngineConfig, RegisterError, SendError, SendId, SendRequest};

/// An engine and the driver of its transport; see the [module
/// documentation](self).
pub struct Stack<T: Transport = Box<dyn Transport>> {
    engine: Engine,
    driver: Driver<T>,
}

impl<T: Transport> std::fmt::Debug for Stack<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

impl<T: Transport> Stack<T> {
    /// An engine over `transport` with default port settings.
    #[must_use]
    pub fn new(transport: T, cfg: EngineConfig) -> Self {
        Self::with_port_config(transport, PortConfig::default(), cfg)
    }

    /// An engine over `transport` whose port has settings `port`.
    #[must_use]
    pub fn with_port_config(transport: T, port: PortConfig, cfg: EngineConfig) -> Self {
        let driver = Driver::new(transport);
        Self {
            engine: Engine::with_port_config(&driver, port, cfg),
            driver,
        }
    }

    // ----- the parts -----

    /// The engine.
    #[must_use]
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The engine, mutably (for its calls that need the transport,
    /// [`Stack::parts_mut`] gives the driver alongside).
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// The driver of the transport.
    #[must_use]
    pub fn driver(&self) -> &Driver<T> {
        &self.driver
    }

    /// The engine and the driver, apart (to call an engine method that
    /// takes the driver as its [`Io`](mad_core::port::Io)).
    pub fn parts_mut(&mut self) -> (&mut Engine, &mut Driver<T>) {
        (&mut self.engine, &mut self.driver)
    }

    /// The transport.
    #[must_use]
    pub fn transport(&self) -> &T {
        self.driver.transport()
    }

    /// The transport, mutably: for what only its owner may do (a
    /// simulated transport's fault knobs, `watch_fd`). Received MADs go
    /// in through [`Stack::handle_recv`], not the transport.
    pub fn transport_mut(&mut self) -> &mut T {
        self.driver.transport_mut()
    }

    /// The port's attributes, as the transport has them.
    #[must_use]
    pub fn attrs(&self) -> &PortAttrs {
        self.driver.transport().port_attrs()
    }

    // ----- the engine's calls, with the driver -----

    /// Registers an agent ([`Engine::register`]); then, for an agent that
    /// takes requests, asks the transport to deliver them
    /// ([`Transport::register_requests`]: below umad the kernel passes on
    /// only the requests some agent of this process registered for). The
    /// engine decides first, so a conflict it refuses never reaches the
    /// kernel; if the transport refuses, the engine's registration is
    /// undone ([`Engine::undo_register`]).
    ///
    /// # Errors
    /// As [`Engine::register`]; [`RegisterError::Transport`] when the
    /// transport refuses.
    pub fn register(&mut self, spec: AgentSpec) -> Result<AgentId, RegisterError> {
        let ask = spec.requests.as_ref().map(|f| {
            let oui = f.class.is_vendor_range2().then(|| {
                let b = f.oui.to_be_bytes();
                [b[1], b[2], b[3]]
            });
            (f.class, f.class_version, f.methods.0, oui)
        });
        let id = self.engine.register(spec)?;
        if let Some((class, version, methods, oui)) = ask {
            if let Err(e) = self
                .driver
                .transport_mut()
                .register_requests(class, version, methods, oui)
            {
                self.engine.undo_register(id);
                return Err(RegisterError::Transport(e.to_string()));
            }
        }
        Ok(id)
    }

    /// [`Engine::send`] on this transport.
    ///
    /// # Errors
    /// As [`Engine::send`].
    #[inline]
    pub fn send(
        &mut self,
        agent: AgentId,
        req: SendRequest,
        now: Instant,
    ) -> Result<SendId, SendError> {
        self.engine.send(&mut self.driver, agent, req, now)
    }

    /// [`Engine::poll`] on this transport.
    #[inline]
    pub fn poll(&mut self, now: Instant) -> bool {
        self.engine.poll(&mut self.driver, now)
    }

    /// [`Engine::handle_recv`]: injects a received MAD.
    ///
    /// # Errors
    /// As [`Engine::handle_recv`].
    pub fn handle_recv(&mut self, now: Instant, received: Received) -> Result<(), InboundError> {
        self.engine.handle_recv(&mut self.driver, now, received)
    }

    /// [`Engine::deregister`]; a soft reset that waited only for the
    /// agent runs at once.
    ///
    /// # Errors
    /// As [`Engine::deregister`].
    pub fn deregister(&mut self, agent: AgentId) -> Result<(), SendError> {
        let r = self.engine.deregister(agent);
        self.engine.run_port_due(&mut self.driver);
        r
    }

    /// [`Engine::ack_reset`]; when it was the last acknowledgement, the
    /// reset runs at once.
    ///
    /// # Errors
    /// As [`Engine::ack_reset`].
    pub fn ack_reset(&mut self, agent: AgentId) -> Result<(), SendError> {
        let r = self.engine.ack_reset(agent);
        self.engine.run_port_due(&mut self.driver);
        r
    }
}

/// A stack is used as its engine for everything that does not need the
/// transport (getters, `poll_event`, `cancel`, `modify`, `take_reaped`,
/// ...). A soft reset that the departure of an agent made due while its
/// events were taken runs at the next [`Stack::poll`] (or at once with
/// [`Engine::run_port_due`] on [`Stack::parts_mut`]).
impl<T: Transport> Deref for Stack<T> {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl<T: Transport> DerefMut for Stack<T> {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }
}
