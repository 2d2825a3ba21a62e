//! [`Io`]: what a transport-less owner of a [`PortCore`] (the agent
//! engine) asks of the one that owns the transport, implemented by
//! [`Driver`](super::Driver).

use std::time::{Duration, Instant};

use crate::transport::{Address, OutMad, PortAttrs, Transport};

use super::{ClientId, Driver, PortCore, PortError, SendToken};

/// One work request for [`Io::post`]: `client`'s checked MAD to `dest`,
/// completed later as [`PortEvent::SendComplete`](super::PortEvent::SendComplete)
/// with `cookie`. `wait`: the answer wait of a request
/// ([`Transport::post_request`]), `None` for [`Transport::post_send`].
#[derive(Debug, Clone, Copy)]
pub struct Post<'a> {
    /// The port client it belongs to.
    pub client: ClientId,
    /// The MAD, checked once ([`OutMad`]).
    pub mad: OutMad<'a>,
    /// Where it goes.
    pub dest: &'a Address,
    /// Handed back with its completion.
    pub cookie: u64,
    /// How long the layer below holds a request for its answer; zero for
    /// a MAD that awaits none ([`crate::transport::Transport::post`]).
    pub wait: Duration,
}

/// The transport side of a port, as a [`PortCore`]'s owner sees it: it
/// posts, pumps and answers for the transport, and the core it works on
/// is passed in. [`Driver`] implements it; the engine takes it
/// generically (`&mut impl Io`), so its hot path stays monomorphic.
pub trait Io {
    /// Accepts one send ([`Post`]) into `core` and posts it: to the
    /// transport at once when the QP has room and nothing waits before
    /// it (the MAD is not copied), else a copy onto the core's overflow
    /// queue.
    ///
    /// # Errors
    /// Unknown client; a dead port (at once, nothing is queued); a MAD
    /// the port or the transport refuses; [`PortError::OverflowFull`]
    /// when it would have to wait and [`PortConfig::overflow_limit`](super::PortConfig::overflow_limit)
    /// sends already wait on the QP. On error no token exists and nothing
    /// will complete.
    fn post(&mut self, core: &mut PortCore, wr: Post<'_>) -> Result<SendToken, PortError>;

    /// Does everything due at `now` ([`Driver::drive`]).
    fn drive(&mut self, core: &mut PortCore, now: Instant);

    /// Runs a soft reset `core` has made due ([`Driver::run_due`]).
    fn run_due(&mut self, core: &mut PortCore);

    /// The port's attributes.
    fn attrs(&self) -> &PortAttrs;

    /// [`Transport::bounded_far_side`].
    fn bounded_far_side(&self) -> bool;
}

impl<T: Transport> Io for Driver<T> {
    #[inline]
    fn post(&mut self, core: &mut PortCore, wr: Post<'_>) -> Result<SendToken, PortError> {
        Driver::post(self, core, wr)
    }

    fn drive(&mut self, core: &mut PortCore, now: Instant) {
        Driver::drive(self, core, now);
    }

    fn run_due(&mut self, core: &mut PortCore) {
        Driver::run_due(self, core);
    }

    fn attrs(&self) -> &PortAttrs {
        self.transport().port_attrs()
    }

    fn bounded_far_side(&self) -> bool {
        self.transport().bounded_far_side()
    }
}
