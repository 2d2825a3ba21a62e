//! The port layer's public value types: tokens, events, configuration,
//! errors and counters.

use std::time::Duration;

use crate::transport::{AsyncEvent, Qp, TransportError, WcStatus};

use super::ClientId;

/// Identifies one accepted send for its whole life. Tokens are never
/// reused within a [`PortCore`](super::PortCore) (not even across `reopen`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SendToken(pub u64);

/// What a port tells one of its clients.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PortEvent {
    /// A send of this client is finished, exactly once per accepted send.
    /// `status` is the work completion's (`IBV_WC_SUCCESS`, the error of a
    /// failed work request, `IBV_WC_WR_FLUSH_ERR` for a send that was
    /// flushed by an error, a CQ error, a reset or device death, or
    /// `IBV_WC_LOC_QP_OP_ERR` for a queued send the transport refused).
    SendComplete {
        /// The token `post` returned.
        token: SendToken,
        /// The caller's cookie given to `post`.
        cookie: u64,
        /// The QP it was posted on.
        qp: Qp,
        /// Outcome.
        status: WcStatus,
        /// Vendor syndrome from the transport (0 if none).
        vendor_err: u32,
    },
    /// A MAD arrived (for a client that takes receives), parsed at the
    /// port boundary. Every such client gets the same shared buffer.
    Received(super::Inbound),
    /// An asynchronous port event (port active / error, LID, P_Key, GID or
    /// SM change, client reregister). The port's cached attributes have
    /// already been refreshed where the event says they changed.
    Async(AsyncEvent),
    /// Soft reset phase 1: release what you hold, then call
    /// [`PortCore::ack_reset`](super::PortCore::ack_reset). Sends posted from now
    /// until [`PortEvent::ResetEnd`] are queued, not lost.
    ResetPending,
    /// Soft reset phase 2: the port has reset (everything that was posted
    /// completed as flushed) and work resumes.
    ResetEnd,
    /// The device had a fatal error: every send of this client has been
    /// (or is, right after this event) completed as flushed, and every
    /// later post fails until the port is reopened.
    DeviceFatal,
    /// The port got a new transport after [`Driver::reopen`](super::Driver::reopen).
    Reopened,
}

/// The default [`PortConfig::overflow_limit`]: sends that may wait on one
/// QP's overflow queue. With the 256-byte buffer and the queue slot of
/// each (about 380 bytes a send), a full queue holds about 1.5 MiB, both
/// QPs of a port about 3 MiB (see [Memory](super#memory)).
pub const DEFAULT_OVERFLOW_LIMIT: usize = 4096;

/// Port layer settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConfig {
    /// How long clients have to acknowledge a soft reset before the port
    /// resets anyway.
    pub reset_ack_timeout: Duration,
    /// The most sends that may wait on one QP's overflow queue (while its
    /// send queue is full, stalled, not in RTS, or a reset or recreate is
    /// in progress); a [`Driver::post`](super::Driver::post) that would queue
    /// one more is refused with [`PortError::OverflowFull`] and counted in
    /// [`PortStats::overflow_refused`]. 0 refuses every send that cannot be
    /// posted at once. Default [`DEFAULT_OVERFLOW_LIMIT`].
    pub overflow_limit: usize,
}

impl Default for PortConfig {
    fn default() -> Self {
        Self {
            reset_ack_timeout: Duration::from_secs(2),
            overflow_limit: DEFAULT_OVERFLOW_LIMIT,
        }
    }
}

/// Why a port call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PortError {
    /// The port's device had a fatal error.
    #[error("port {ca}/{port} is dead after a device-fatal error; reopen it explicitly")]
    Dead {
        /// CA name.
        ca: String,
        /// Port number.
        port: u8,
    },
    /// The client id is not (or no longer) registered with this port.
    #[error("{0} is not registered with this port")]
    UnknownClient(ClientId),
    /// The MAD cannot be sent: the cause. The port itself takes only
    /// checked MADs ([`OutMad`](crate::transport::OutMad)); a caller that
    /// makes the `OutMad` on its way to the port (the agent engine, for
    /// an RMPP segment or its own answer) reports a refusal of that check
    /// this way.
    #[error("bad send: {0}")]
    BadSend(crate::transport::Unsendable),
    /// `ack_reset` without a soft reset in progress.
    #[error("no soft reset is pending")]
    NoResetPending,
    /// The send would wait, and the QP's overflow queue already holds
    /// [`PortConfig::overflow_limit`] sends: it is refused (nothing is
    /// queued, no token exists). Retry once sends have completed.
    #[error("the overflow queue of QP{} is full ({limit} sends wait for the send queue; PortConfig::overflow_limit); send refused", qp.qpn())]
    OverflowFull {
        /// The QP.
        qp: Qp,
        /// The limit in force.
        limit: usize,
    },
    /// The transport refused the send for a reason of its own.
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// Counters of a port; see the field docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Sends accepted by `post` (each got a token).
    pub accepted: u64,
    /// Sends completed to their owner (or to nobody, if it unregistered).
    pub completed: u64,
    /// Queued sends dropped because their client unregistered.
    pub dropped_on_unregister: u64,
    /// Work requests handed to the transport.
    pub posted: u64,
    /// Sends that had to wait on the overflow queue.
    pub queued: u64,
    /// Sends refused because the overflow queue was full
    /// ([`PortError::OverflowFull`]).
    pub overflow_refused: u64,
    /// Completions with success.
    pub succeeded: u64,
    /// Completions with an error other than a flush (work-request errors).
    pub wr_errors: u64,
    /// Completions with `IBV_WC_WR_FLUSH_ERR` (from the transport or
    /// made by the port when it flushed).
    pub flushed: u64,
    /// Queued sends the transport refused when their turn came
    /// (completed with `IBV_WC_LOC_QP_OP_ERR`).
    pub post_failures: u64,
    /// Completions whose client had unregistered.
    pub orphaned: u64,
    /// Transport completions for no work request on the send list.
    pub stale_completions: u64,
    /// QPs brought back to RTS.
    pub qp_recoveries: u64,
    /// CQ errors handled.
    pub cq_errors: u64,
    /// `IBV_EVENT_QP_FATAL` seen.
    pub qp_fatal: u64,
    /// Successful `recreate_queues`.
    pub recreates: u64,
    /// Successful `refresh_port_attrs`.
    pub refreshes: u64,
    /// Async events fanned out (each counted once, not per client).
    pub events: u64,
    /// Soft resets started.
    pub reset_requests: u64,
    /// Soft resets finished (`ResetEnd` sent).
    pub soft_resets: u64,
    /// Soft resets forced by the deadline.
    pub forced_resets: u64,
    /// Device-fatal errors.
    pub device_fatal: u64,
    /// `reopen` calls.
    pub reopens: u64,
    /// Received MADs handed to clients (counted per client).
    pub recv_delivered: u64,
    /// Received MADs no client took (none takes receives).
    pub recv_unclaimed: u64,
    /// Received MADs that are not MADs of their QP (too short for a
    /// header, base version other than 1, class on the wrong QP).
    pub recv_malformed: u64,
    /// Transport calls that failed with something other than device death.
    pub transport_errors: u64,
}
