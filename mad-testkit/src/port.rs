//! [`PortPair`]: a port's state and the driver of its transport together,
//! for the tests of the port layer (what `mad_core::port::Port` was
//! before the engine took the state and the runtime the driver).

use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use mad_core::port::{ClientId, Driver, PortConfig, PortCore, PortError, Post, SendToken};
use mad_core::transport::{Address, OutMad, Qp, QpState, Transport};

/// A [`PortCore`] and the [`Driver`] of its transport, whose calls run
/// what they make due at once, as a port's one owner does. It
/// dereferences to the core for everything that needs no transport;
/// the transport is the driver's (`pair.driver.transport_mut()`).
#[derive(Debug)]
pub struct PortPair<T: Transport> {
    /// The port's state.
    pub core: PortCore,
    /// The transport's pump.
    pub driver: Driver<T>,
}

impl<T: Transport> PortPair<T> {
    /// A port with `cfg` over `transport`.
    #[must_use]
    pub fn new(transport: T, cfg: PortConfig) -> Self {
        Self {
            core: PortCore::new(transport.port_attrs(), cfg),
            driver: Driver::new(transport),
        }
    }

    /// The transport's state of `qp`.
    #[must_use]
    pub fn qp_state(&self, qp: Qp) -> QpState {
        self.driver.transport().qp_state(qp)
    }

    /// Posts a send ([`Driver::post`]) with no answer wait.
    ///
    /// # Errors
    /// As [`Driver::post`].
    pub fn post(
        &mut self,
        client: ClientId,
        mad: OutMad<'_>,
        dest: &Address,
        cookie: u64,
    ) -> Result<SendToken, PortError> {
        let wr = Post {
            client,
            mad,
            dest,
            cookie,
            wait: Duration::ZERO,
        };
        self.driver.post(&mut self.core, wr)
    }

    /// Everything due at `now` ([`Driver::drive`]).
    pub fn poll(&mut self, now: Instant) {
        self.driver.drive(&mut self.core, now);
    }

    /// [`PortCore::unregister`], then a reset that waited only for the
    /// client runs.
    ///
    /// # Errors
    /// As [`PortCore::unregister`].
    pub fn unregister(&mut self, client: ClientId) -> Result<Vec<(SendToken, u64)>, PortError> {
        let r = self.core.unregister(client);
        self.driver.run_due(&mut self.core);
        r
    }

    /// [`PortCore::request_reset`], then what it made due runs.
    pub fn request_reset(&mut self, now: Instant) {
        self.core.request_reset(now);
        self.driver.run_due(&mut self.core);
    }

    /// [`PortCore::ack_reset`]; the last acknowledgement runs the reset.
    ///
    /// # Errors
    /// As [`PortCore::ack_reset`].
    pub fn ack_reset(&mut self, client: ClientId) -> Result<(), PortError> {
        self.core.ack_reset(client)?;
        self.driver.run_due(&mut self.core);
        Ok(())
    }

    /// A new transport under the port ([`Driver::reopen`]).
    pub fn reopen(&mut self, transport: T) {
        self.driver.reopen(&mut self.core, transport);
    }
}

impl<T: Transport> Deref for PortPair<T> {
    type Target = PortCore;
    fn deref(&self) -> &PortCore {
        &self.core
    }
}

impl<T: Transport> DerefMut for PortPair<T> {
    fn deref_mut(&mut self) -> &mut PortCore {
        &mut self.core
    }
}
