//! The per-port layer: one port's QP0 and QP1 shared by several clients,
//! with flow control and error recovery.
//!
//! # Design overview
//!
//! A port is two halves: a [`PortCore`], its state with no transport
//! (clients, send lists, overflow queues, recovery and soft-reset state,
//! counters; every call only changes state), and a [`Driver`], the one
//! pump that moves MADs, completions and events between a [`Transport`](crate::transport::Transport)
//! and a core and runs the recovery the core asks for. Whoever owns the
//! transport owns the driver (the agent runtime, through its
//! `mad_agents::Stack`); the agent engine holds the core and reaches the
//! driver only through the [`Io`] trait it is handed. Nothing here performs I/O
//! of its own or reads a clock: the caller drives it (sans-IO), passing
//! `now` in.
//!
//! - **getters**: [`PortCore::stats`], [`PortCore::posted`],
//!   [`PortCore::queued`], [`PortCore::outstanding`], ...
//! - **commands**: [`PortCore::register`], [`PortCore::subscribe_all`],
//!   [`Driver::post`], [`PortCore::ack_reset`], [`PortCore::request_reset`],
//!   [`PortCore::unregister`] (then [`Driver::run_due`]), [`Driver::reopen`];
//! - **driving**: [`Driver::drive`]`(core, now)` when the transport's fd is readable,
//!   when [`PortCore::next_deadline`] has passed, or simply after commands; it
//!   drains send completions, then receives, then async events, recovers,
//!   checks the soft-reset deadline and posts queued sends;
//! - **output**: [`PortCore::poll_client`]`(client)` hands each client its
//!   [`PortEvent`]s in order.
//!
//! # Send list and overflow queue (seed 003, AGENTS.md §3)
//!
//! Each QP has a *send list* of posted work requests, at most
//! [`Transport::send_queue_depth`](crate::transport::Transport::send_queue_depth) long, and an ordered *overflow queue*.
//! [`Driver::post`] posts at once when the QP is in RTS, has room and nothing
//! is queued before it; otherwise the send waits on the overflow queue.
//! Each completion is matched back to its request by [`WrId`](crate::transport::WrId) and reported
//! to the owner as [`PortEvent::SendComplete`]; queued sends are posted in
//! order as room appears. If the transport refuses a queued send when its
//! turn comes (not for lack of room), it completes with
//! `IBV_WC_LOC_QP_OP_ERR`, as the kernel does.
//!
//! The overflow queue is bounded: at most [`PortConfig::overflow_limit`]
//! sends wait on each QP (default [`DEFAULT_OVERFLOW_LIMIT`]); a post
//! that would queue one more is refused with [`PortError::OverflowFull`]
//! (nothing queued, no token, counted in [`PortStats::overflow_refused`]),
//! so a caller that keeps posting while the device is stalled gets an
//! error instead of growing the queue without end.
//!
//! **Every accepted send completes to its owner exactly once.** A request
//! lives in exactly one place (send list or overflow queue) and completing
//! it consumes it; debug builds also keep the set of live tokens and assert.
//! Completions for work requests not on the send list (e.g. after the port
//! flushed them itself) are ignored and counted as stale.
//!
//! # Memory
//!
//! What a port holds for sends is bounded by its configuration, whatever
//! its callers post while the device does not move:
//!
//! - each QP's send list: at most [`Transport::send_queue_depth`](crate::transport::Transport::send_queue_depth) entries
//!   of bookkeeping (the MADs themselves are in the transport);
//! - each QP's overflow queue: at most [`PortConfig::overflow_limit`]
//!   sends, each a copy of its MAD in a 256-byte pooled buffer plus a
//!   queue slot of under 128 bytes (destination address, owner, token,
//!   cookie, a request's answer wait) — about 380 bytes a send, allocator
//!   overhead aside.
//!
//! So the worst case for queued sends is about `2 × overflow_limit × 380`
//! bytes a port: about 3 MiB with the default limit of 4096, 30 MiB
//! with 40 960. (A queue's slots, once grown, stay allocated until the
//! port is dropped; the buffers go back to the thread's pool.) Received MADs are not queued here beyond each client's
//! event queue, which its owner drains.
//!
//! # Recovery
//!
//! | what | the port does |
//! |---|---|
//! | a work request completes in error | complete it in error to its owner; once the transport's completions are drained, complete every request still posted on that QP as `IBV_WC_WR_FLUSH_ERR` (those behind the failed one; the owner decides whether to resend), bring the QP back (ERR → RESET → INIT → RTR → RTS, or SQE → RTS) and go on with the queued sends |
//! | `IBV_EVENT_QP_FATAL` | the same for that QP (no completions come from a fatal QP) |
//! | `IBV_EVENT_CQ_ERR` (overflow) | complete every posted request on both QPs as flushed, `recreate_queues`, resume with the queued ones |
//! | `IBV_EVENT_DEVICE_FATAL`, or any call failing with `DeviceDead` | [`PortEvent::DeviceFatal`] to every client, complete everything posted and queued as flushed, mark the port dead: every later [`Driver::post`] fails at once with [`PortError::Dead`]; only [`Driver::reopen`] with a new transport revives it |
//! | port active / error, LID, P_Key, GID, SM change | `refresh_port_attrs`, then [`PortEvent::Async`] to every client, once |
//! | client reregister | [`PortEvent::Async`] to every client, once (no attribute changed) |
//! | soft reset request | two phases, below |
//!
//! A recovery step that fails for a reason other than device death is
//! retried at the next `poll`. Unlike Linux's `ib_mad`, which reposts the
//! flushed requests behind a failed one once (AGENTS.md §6), the port never
//! resends: as issue 3 and seed 003 ask, the owner decides.
//!
//! # Soft reset (seed 001)
//!
//! On [`AsyncEvent::SoftResetRequest`](crate::transport::AsyncEvent::SoftResetRequest) from the transport, or
//! [`PortCore::request_reset`] from a client: [`PortEvent::ResetPending`] goes to
//! every client, idle ones included, and the deadline `now +`
//! [`PortConfig::reset_ack_timeout`] is set. Sends posted meanwhile are
//! queued. When every client has called [`PortCore::ack_reset`] (a client that
//! unregisters counts as acknowledged), or at the deadline, the port resets:
//! sends the device already finished keep their status, everything still
//! posted completes as flushed, the queues are recreated,
//! [`PortEvent::ResetEnd`] goes to every client, and the queued sends go
//! out. A second request during a reset is folded into it. The transport's
//! own `SoftResetEnd` event is ignored: the port ends the reset itself.
//!
//! # Receives
//!
//! A received MAD is checked once, here, into an [`Inbound`] (the shared
//! bytes and source address, one pointer; its accessors read the common
//! header, the RMPP header for the classes that carry one and the vendor
//! OUI through the wire views); one that is shorter than a MAD header, has
//! a base version other than 1 or a class that does not belong on its QP
//! is dropped and counted ([`PortStats::recv_malformed`]). The
//! [`Inbound`] goes, as [`PortEvent::Received`], to every client that
//! takes receives ([`PortCore::subscribe_all`]), in the order they asked. The
//! port does not route by class: its one client in production is the
//! agent engine, which takes everything and does all the dispatch (TID,
//! QP, class, method, class version, OUI) on the parsed value, so there
//! is one routing stage, the engine's. A MAD nobody takes is dropped and
//! counted.
//!
//! Sharing one port among the services of a process is the runtime's
//! business (one engine, many agents), not the port's.

mod boxed;
mod clients;
mod driver;
mod inbound;
mod io;
mod recovery;
mod state;
mod types;

pub use clients::ClientId;
pub use driver::Driver;
pub use inbound::{Inbound, InboundError};
pub use io::{Io, Post};
pub use state::PortCore;
pub use types::{PortConfig, PortError, PortEvent, PortStats, SendToken, DEFAULT_OVERFLOW_LIMIT};

#[cfg(test)]
mod memory_doc {
    /// The [Memory](super#memory) section's per-send figure: a queued send
    /// is its slot in the overflow queue plus one 256-byte buffer.
    #[test]
    fn a_queued_send_costs_what_the_memory_docs_say() {
        let slot = std::mem::size_of::<super::state::Queued>();
        eprintln!("overflow slot: {slot} bytes");
        assert!(slot < 128, "the docs say under 128 bytes, a slot is {slot}");
        assert!(slot + crate::wire::MAD_LEN <= 390, "the docs say about 380");
    }
}
