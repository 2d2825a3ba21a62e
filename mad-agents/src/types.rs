//! The agent layer's value types: ids, messages, send requests, completion
//! statuses, events, configuration, errors and counters.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mad_core::port::PortError;
use mad_core::transport::{Address, AsyncEvent, Qp, Received, Unsendable, WcStatus};
use mad_core::wire::{Mad, MgmtClass};
use mad_core::MadBuf;
use mad_rmpp::{ReceiverConfig, RmppStatus};

/// An agent registered on an engine: a slab index plus a generation, so an
/// id of an agent that has gone never reaches a later agent reusing its
/// slot (h2's `Key { index, stream_id }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentId {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "agent {}.{}", self.index, self.generation)
    }
}

/// One send, from [`crate::Engine::send`] until its completion (same
/// scheme as [`AgentId`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SendId {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl SendId {
    /// The id as one number (unique among live sends).
    #[must_use]
    pub fn as_u64(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }
    pub(crate) fn from_u64(v: u64) -> Self {
        Self {
            index: (v & 0xFFFF_FFFF) as u32,
            generation: (v >> 32) as u32,
        }
    }
}

impl fmt::Display for SendId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "send {}.{}", self.index, self.generation)
    }
}

/// A received MAD (or a reassembled RMPP message) and where it came from.
/// Cloning shares the buffer.
#[derive(Clone, PartialEq, Eq)]
pub struct Message {
    inner: Arc<Received>,
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bytes();
        f.debug_struct("Message")
            .field("qp", &self.inner.qp)
            .field("src_lid", &self.inner.src.lid)
            .field("len", &b.len())
            .field("header", &b.get(..24.min(b.len())))
            .finish()
    }
}

impl Message {
    pub(crate) fn new(inner: Arc<Received>) -> Self {
        Self { inner }
    }

    /// A message made of `bytes` received on `qp` from `src` (tests,
    /// responders).
    #[must_use]
    pub fn from_parts(qp: Qp, src: Address, bytes: Vec<u8>) -> Self {
        Self {
            inner: Arc::new(Received {
                qp,
                src,
                mad: bytes.into(),
            }),
        }
    }

    /// The QP it arrived on.
    #[must_use]
    pub fn qp(&self) -> Qp {
        self.inner.qp
    }

    /// Its source address.
    #[must_use]
    pub fn src(&self) -> &Address {
        &self.inner.src
    }

    /// Where to answer it: its whole source address, GRH included (the
    /// received GRH's GID is the peer's, the destination GID of the
    /// answer), with the Q_Key of the peer's QP (0 for QP0, the GSI Q_Key
    /// otherwise). A reassembled RMPP message carries its first segment's
    /// source address.
    #[must_use]
    pub fn reply_address(&self) -> Address {
        mad_rmpp::reply_address(&self.inner.src)
    }

    /// The bytes: one MAD, or an RMPP message's header once followed by
    /// all of its data.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.inner.mad
    }

    /// A view of the common header. Messages are at least a header long
    /// (shorter MADs are dropped before dispatch).
    #[must_use]
    pub fn mad(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.bytes())
    }

    /// The TID.
    #[must_use]
    pub fn tid(&self) -> u64 {
        self.mad().tid()
    }

    /// The buffer of a reassembled RMPP message, if this was the last
    /// reference to it and it is heap-held (a single MAD gives `None`):
    /// what [`crate::Engine::recycle`] hands back for reuse.
    #[must_use]
    pub fn into_buffer(self) -> Option<Vec<u8>> {
        Arc::try_unwrap(self.inner).ok()?.mad.into_heap()
    }
}

/// How a send ended: exactly one of these per send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SendStatus {
    /// Sent, and (if one was expected) the response arrived; an RMPP
    /// transfer was fully acknowledged.
    Success,
    /// No response (or RMPP ACK) within the retries and the absolute
    /// deadline (`IB_WC_RESP_TIMEOUT_ERR`).
    Timeout,
    /// Canceled by its owner (cancel, or modify to a zero timeout).
    Canceled,
    /// Flushed: the agent deregistered while the send was outstanding, or
    /// the port flushed its work request (QP error, CQ error, reset,
    /// device death) and the one repost failed too (`IB_WC_WR_FLUSH_ERR`).
    Flushed,
    /// The work request failed with this completion status.
    WcError(WcStatus),
    /// The RMPP transfer was stopped or aborted with this RMPP status
    /// (`IB_WC_REM_ABORT_ERR` with the status as vendor error).
    RmppAbort(RmppStatus),
}

impl fmt::Display for SendStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Success => f.write_str("success"),
            Self::Timeout => f.write_str("response timeout"),
            Self::Canceled => f.write_str("canceled"),
            Self::Flushed => f.write_str("flushed"),
            Self::WcError(s) => write!(f, "work request failed: {s}"),
            Self::RmppAbort(s) => write!(f, "RMPP transfer aborted with status {} ({s})", s.0),
        }
    }
}

/// How an RMPP transfer's outcome ends the send it carries: every
/// segment acknowledged is [`SendStatus::Success`], an abort or stop is
/// [`SendStatus::RmppAbort`] with its RMPP status, no ACK in time is
/// [`SendStatus::Timeout`], and a transfer the engine canceled (because
/// the send had already failed or been answered) is
/// [`SendStatus::Canceled`]. The engine's two consumers of RMPP outcomes
/// (an outbound transfer's sender, an inbound response's reassembly)
/// both go through this one mapping; [`SendStatus::is_failure`] tells
/// which of them end the send.
impl From<mad_rmpp::Outcome> for SendStatus {
    fn from(outcome: mad_rmpp::Outcome) -> Self {
        match outcome {
            mad_rmpp::Outcome::Success => Self::Success,
            mad_rmpp::Outcome::Aborted(st) => Self::RmppAbort(st),
            mad_rmpp::Outcome::TimedOut => Self::Timeout,
            mad_rmpp::Outcome::Canceled => Self::Canceled,
        }
    }
}

impl SendStatus {
    /// True for a status that fails a send still open: everything except
    /// [`SendStatus::Success`] and [`SendStatus::Canceled`] (a cancel is
    /// recorded by [`crate::Engine::cancel`] itself, never by a transfer).
    #[must_use]
    pub fn is_failure(self) -> bool {
        !matches!(self, Self::Success | Self::Canceled)
    }
}

/// The single completion of a send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// Which send.
    pub send: SendId,
    /// Its TID as sent.
    pub tid: u64,
    /// How it ended.
    pub status: SendStatus,
    /// The response, when one was expected and arrived — also when a
    /// work-request error reported after it makes `status` an error (see
    /// [`crate::engine`#the-life-of-a-send-seed-003-agentsmd-3]).
    pub response: Option<Message>,
    /// Retries used (reposts after a response timeout).
    pub retries: u32,
    /// The caller's cookie from [`SendRequest::cookie`].
    pub cookie: u64,
}

/// What an agent is told.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// An unsolicited request (or, for a user-handled class, any MAD)
    /// dispatched to this agent by class / version / method (and OUI).
    Received(Message),
    /// A send of this agent finished, exactly once per send.
    SendDone(Completion),
    /// A port event (port active / error, LID, P_Key, GID or SM change,
    /// client reregister).
    Async(AsyncEvent),
    /// Soft reset phase 1: release what you hold; an agent registered with
    /// `hold_reset` then acknowledges with `ack_reset`.
    ResetPending,
    /// Soft reset phase 2: the port has reset and work resumes.
    ResetEnd,
    /// The device had a fatal error: every send fails until the port is
    /// reopened.
    DeviceFatal,
    /// The port got a new transport.
    Reopened,
    /// The agent's callback panicked on the event before this one (only
    /// for [`crate::Runtime::register`] callbacks): the runtime caught the
    /// panic, counted it in [`crate::RuntimeStats::callback_panics`] and
    /// carries on; the agent stays registered.
    CallbackPanicked {
        /// The panic's message (its `&str` or `String` payload, or a
        /// placeholder for any other payload).
        message: String,
    },
}

impl AgentEvent {
    /// A port event: [`AgentEvent::Async`], [`AgentEvent::ResetPending`],
    /// [`AgentEvent::ResetEnd`], [`AgentEvent::DeviceFatal`] or
    /// [`AgentEvent::Reopened`]. An agent's queue holds at most one of
    /// each: an equal one still queued is folded into the newer one
    /// ([`AgentStats::port_events_coalesced`]).
    #[must_use]
    pub fn is_port_event(&self) -> bool {
        matches!(
            self,
            Self::Async(_)
                | Self::ResetPending
                | Self::ResetEnd
                | Self::DeviceFatal
                | Self::Reopened
        )
    }
}

/// Makes room in `queue` for the port event `ev`, about to be appended:
/// an equal port event still queued is taken out (the new one stands
/// for both; the order of the latest occurrences is kept, so an agent
/// still learns the last state of the port). Returns true if one was
/// taken out. So a queue never holds two equal port events: an agent
/// that does not read holds at most one of each (there are about twenty
/// distinct ones), however many the port reports. Received MADs and send
/// completions are never touched.
pub(crate) fn coalesce_port_event(queue: &mut VecDeque<AgentEvent>, ev: &AgentEvent) -> bool {
    if !ev.is_port_event() {
        return false;
    }
    match queue.iter().rposition(|e| e == ev) {
        Some(pos) => queue.remove(pos).is_some(),
        None => false,
    }
}

/// Where the low 32 bits of a request's TID come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TidChoice {
    /// From the port's counter (unique among outstanding requests).
    #[default]
    Allocate,
    /// The caller's value (refused if another outstanding send of the
    /// agent already uses it with the same class).
    Low(u32),
}

/// One MAD (or RMPP message) to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendRequest {
    /// The MAD: 24..=256 bytes, or longer for an RMPP transfer of an RMPP
    /// agent (class header once, then the data). For a request the agent
    /// layer writes the TID (see [`crate::tid`]); a response keeps the TID
    /// it carries. One MAD is held in a pooled fixed-size buffer, a longer
    /// message in a `Vec`.
    pub mad: MadBuf,
    /// Where it goes.
    pub dest: Address,
    /// Response timeout; zero when no response is expected.
    pub timeout: Duration,
    /// Reposts of the same MAD with the same TID after a response timeout.
    pub retries: u32,
    /// Absolute limit from the first post; default `(retries + 1) x
    /// timeout`.
    pub total_timeout: Option<Duration>,
    /// The low 32 TID bits.
    pub tid: TidChoice,
    /// Returned in the completion.
    pub cookie: u64,
}

impl SendRequest {
    /// A MAD to `dest`, expecting no response. `mad` is a `Vec` (kept
    /// as it is), a byte array or slice (copied into a pooled buffer when it fits one
    /// MAD), or a [`MadBuf`].
    #[must_use]
    pub fn new(mad: impl Into<MadBuf>, dest: Address) -> Self {
        Self {
            mad: mad.into(),
            dest,
            timeout: Duration::ZERO,
            retries: 0,
            total_timeout: None,
            tid: TidChoice::Allocate,
            cookie: 0,
        }
    }

    /// Expects a response within `timeout`, retrying `retries` times.
    #[must_use]
    pub fn expect_response(mut self, timeout: Duration, retries: u32) -> Self {
        self.timeout = timeout;
        self.retries = retries;
        self
    }

    /// Sets the absolute deadline (from the first post).
    #[must_use]
    pub fn total_timeout(mut self, total: Duration) -> Self {
        self.total_timeout = Some(total);
        self
    }

    /// Uses the caller's low TID bits.
    #[must_use]
    pub fn low_tid(mut self, low: u32) -> Self {
        self.tid = TidChoice::Low(low);
        self
    }

    /// Sets the cookie.
    #[must_use]
    pub fn cookie(mut self, cookie: u64) -> Self {
        self.cookie = cookie;
        self
    }

    /// The management class of the MAD (0 if it is too short).
    #[must_use]
    pub fn class(&self) -> MgmtClass {
        Mad::new_unchecked(&self.mad[..]).mgmt_class()
    }
}

/// A limit on requests awaiting a response (solicited flow control).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowLimit {
    /// No limit.
    Unlimited,
    /// At most this many (0 counts as 1).
    Max(usize),
    /// [`DEFAULT_PORT_UNANSWERED`] over a transport whose far side has
    /// finite queues ([`Transport::bounded_far_side`]: a device under
    /// umad, ibsim's socket, a simulated fabric); no limit over one whose
    /// far side has none (the in-memory Loopback, whose far side is a
    /// closure).
    ///
    /// [`Transport::bounded_far_side`]: mad_core::transport::Transport::bounded_far_side
    Auto,
}

impl FlowLimit {
    /// The limit as a number (`usize::MAX` for none), for a transport
    /// whose far side is (`bounded`) or is not bounded.
    #[must_use]
    pub fn resolve(self, bounded: bool) -> usize {
        match self {
            Self::Unlimited => usize::MAX,
            Self::Max(n) => n.max(1),
            Self::Auto if bounded => DEFAULT_PORT_UNANSWERED,
            Self::Auto => usize::MAX,
        }
    }
}

/// The default cap on one port's requests awaiting a response: ibsim
/// stops serving a client with about 335 unanswered (its socket queue
/// fills), so one client stays at 256.
pub const DEFAULT_PORT_UNANSWERED: usize = 256;

/// Engine settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Received MADs waiting for delivery per agent; past this they are
    /// dropped and counted.
    pub recv_queue_bound: usize,
    /// Bytes of received MADs and reassembled RMPP messages waiting for
    /// delivery per agent (the engine's queue, and a channel agent's
    /// channel); past this they are dropped and counted, except that one
    /// message is always taken into an empty queue. With the reassembly
    /// budgets this bounds what a hostile peer can make an agent hold
    /// when its owner does not keep up.
    pub recv_queue_bytes: usize,
    /// Timeouts that repeat the request's own timeout before the interval
    /// starts doubling.
    pub linear_retries: u32,
    /// The longest interval the backoff grows to.
    pub max_backoff: Duration,
    /// Answer unclaimed GSI/SMI Get and Set requests with status 0x000C,
    /// as the kernel does.
    pub answer_unmatched: bool,
    /// RMPP reassembly bounds for RMPP agents.
    pub rmpp_receiver: ReceiverConfig,
    /// Most requests awaiting a response one agent may have on the wire;
    /// more wait in the agent's backlog (see
    /// [`crate::engine`#flow-control]).
    pub max_unanswered_per_agent: FlowLimit,
    /// Most requests awaiting a response all agents of the port together
    /// may have on the wire.
    pub max_unanswered_per_port: FlowLimit,
    /// Drop a response whose source is not where its request went
    /// (AGENTS.md §2 step 8); see [`crate::engine`#response-matching].
    pub check_response_source: bool,
    /// How often the [`crate::Runtime`] polls a transport whose file
    /// descriptor it cannot wait on (none, or one epoll refuses, as
    /// under libumad2sim) while nothing is outstanding.
    pub fallback_tick: Duration,
    /// End an RMPP answer whose receiver acknowledged nothing at its
    /// first ACK timeout, and let a new answer with its TID to that peer
    /// replace it (see [`crate::engine`#rmpp]). Off by default: the
    /// kernel resends such an answer and refuses the duplicate TID. On
    /// for ports whose clients may do no RMPP at all (programs under
    /// libumad2sim on ibsim, which have no kernel to reassemble for
    /// them): `mad --ibsim sm`'s SA.
    pub end_unacknowledged_answers: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            recv_queue_bound: 1024,
            recv_queue_bytes: 64 << 20,
            linear_retries: 3,
            max_backoff: Duration::from_secs(60),
            answer_unmatched: true,
            rmpp_receiver: ReceiverConfig::default(),
            max_unanswered_per_agent: FlowLimit::Unlimited,
            max_unanswered_per_port: FlowLimit::Auto,
            check_response_source: true,
            fallback_tick: Duration::from_millis(1),
            end_unacknowledged_answers: false,
        }
    }
}

/// Why a registration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The specification breaks one of the kernel's rules.
    #[error("invalid agent registration: {0}")]
    Invalid(String),
    /// A method of the slot is owned by another agent.
    #[error("method {method:#04x} of class {class} version {class_version} is already owned by {owner} ({owner_name:?})")]
    MethodInUse {
        /// The class.
        class: MgmtClass,
        /// The class version.
        class_version: u8,
        /// The first conflicting method.
        method: u8,
        /// Its owner.
        owner: AgentId,
        /// The owner's registered name.
        owner_name: String,
    },
    /// Every 16-bit agent id of the port is in use.
    #[error("no free agent id on this port (65536 agents registered)")]
    NoAgentIds,
    /// The layer below the transport (the kernel under umad) refused to
    /// deliver the agent's requests.
    #[error("the transport refused to deliver these requests: {0}")]
    Transport(String),
    /// The engine is shutting down.
    #[error("the runtime has stopped")]
    Stopped,
}

/// Why a send, cancel or modify was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The agent is not registered (or is deregistering).
    #[error("{0} is not registered")]
    UnknownAgent(AgentId),
    /// The send is finished (or never existed).
    #[error("{0} is not outstanding")]
    UnknownSend(SendId),
    /// The send can no longer be canceled or modified (already failed,
    /// canceled or answered).
    #[error("{0} has already ended or been answered")]
    NotActive(SendId),
    /// Modify on a send that expects no response.
    #[error("{0} expects no response; its timeout cannot be changed")]
    NotWaiting(SendId),
    /// The MAD cannot be sent: the cause.
    #[error("bad send: {0}")]
    BadSend(Unsendable),
    /// An RMPP agent's message that cannot be cut into segments (shorter
    /// than its class header, or longer than RMPP numbers).
    #[error("bad send: the message cannot be segmented for RMPP: {0}")]
    Segmentation(mad_rmpp::Error),
    /// Another outstanding request uses this TID and class (for an RMPP
    /// transfer: another transfer with this TID and class to the same
    /// peer; transfers to different peers may share a TID).
    #[error("TID {tid:#018x} is already outstanding for class {class}")]
    DuplicateTid {
        /// The TID.
        tid: u64,
        /// The class.
        class: MgmtClass,
    },
    /// The port refused it.
    #[error(transparent)]
    Port(#[from] PortError),
    /// The runtime has stopped.
    #[error("the runtime has stopped")]
    Stopped,
    /// `send_and_wait` or deregistration would wait for itself.
    #[error("{0}")]
    WouldDeadlock(&'static str),
}

/// Counters of one agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentStats {
    /// Sends accepted.
    pub sends: u64,
    /// Sends completed (each exactly once).
    pub completed: u64,
    /// Completed with a response or fully sent.
    pub succeeded: u64,
    /// Completed with [`SendStatus::Timeout`].
    pub timed_out: u64,
    /// Completed canceled or flushed.
    pub canceled: u64,
    /// Completed with a work-request error or an RMPP abort.
    pub failed: u64,
    /// Reposts after a response timeout.
    pub retries: u64,
    /// Requests delivered.
    pub received: u64,
    /// Requests dropped because the receive queue was full.
    pub recv_dropped: u64,
    /// Port events folded into a later equal one while still queued for
    /// this agent (its engine queue or its channel): see
    /// [`AgentEvent::is_port_event`].
    pub port_events_coalesced: u64,
    /// RMPP messages reassembled for this agent.
    pub rmpp_reassembled: u64,
    /// Requests that waited in the agent's backlog for the flow-control
    /// limit.
    pub backlogged: u64,
    /// Posts of this agent the port refused: its sends' MADs and RMPP
    /// segments (the send then completes with an error status) and the
    /// engine's RMPP ACK / STOP / ABORT for its transfers.
    pub post_failures: u64,
}

/// Counters of an engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Agents registered over time.
    pub registrations: u64,
    /// Registrations refused.
    pub refused: u64,
    /// Sends accepted.
    pub sends: u64,
    /// Sends completed.
    pub completions: u64,
    /// Work requests posted (including retries and RMPP segments).
    pub posted: u64,
    /// Reposts after a response timeout.
    pub retries: u64,
    /// Reposts of a work request the port flushed.
    pub flush_reposts: u64,
    /// Responses that matched a waiting send.
    pub responses_matched: u64,
    /// Responses nobody waited for (late, duplicate, unknown): dropped.
    pub unmatched_responses: u64,
    /// Responses (and RMPP ACKs) whose TID and class matched a waiting
    /// send but whose source was not where the request went: dropped.
    pub wrong_source: u64,
    /// Requests that waited in a backlog for the flow-control limit.
    pub backlogged: u64,
    /// Work-request errors reported after the response had arrived.
    pub late_wc_errors: u64,
    /// Requests no agent owns.
    pub unclaimed_requests: u64,
    /// Of those, Get/Set answered with status 0x000C.
    pub unsupported_answered: u64,
    /// Requests dropped because an agent's queue was full.
    pub recv_dropped: u64,
    /// Port events folded into a later equal one while still queued
    /// (all agents; [`AgentStats::port_events_coalesced`]).
    pub port_events_coalesced: u64,
    /// MADs dropped as malformed (short, bad base version, class on the
    /// wrong QP): those the port refused to parse
    /// ([`mad_core::port::PortStats::recv_malformed`]) and those handed to
    /// [`crate::Engine::handle_recv`] that did not parse.
    pub malformed: u64,
    /// Completions of the engine's own sends (answers, RMPP ACKs).
    pub internal_completions: u64,
    /// Of those, completions with an error status.
    pub internal_errors: u64,
    /// Posts the port refused, of any kind: a send's MAD, RMPP segment or
    /// retry (that send completes with an error status), or one of the
    /// engine's own MADs (RMPP ACK / STOP / ABORT, unsupported-method
    /// answer). Before this counter such refusals went unseen.
    pub post_failures: u64,
    /// RMPP sends that failed with [`SendStatus::Timeout`] because their
    /// absolute deadline passed while the transfer was still going.
    pub rmpp_deadline_expired: u64,
    /// RMPP transfers that expect no response (answers) ended at their
    /// first ACK timeout because the receiver had acknowledged nothing
    /// (see the [engine documentation](crate::Engine)).
    pub rmpp_unacknowledged_ended: u64,
    /// Such unacknowledged answers ended because their peer asked again
    /// with the same TID and the new answer took their place.
    pub rmpp_unacknowledged_replaced: u64,
    /// Sends ended as [`SendStatus::Flushed`] when the port's device died
    /// ([`AgentEvent::DeviceFatal`]): every send without an outcome, at
    /// once, not at its next resend or deadline.
    pub ended_by_device_fatal: u64,
    /// Events delivered.
    pub events: u64,
    /// State moves of a send that its phase refused where the engine's
    /// own bookkeeping said they were legal: each one a bug of the engine
    /// (a debug build stops at it with an assertion; a release build
    /// counts it here and leaves the send's state as it was). Zero in a
    /// healthy engine.
    pub refused_moves: u64,
}

#[cfg(test)]
mod tests {
    use super::SendStatus;
    use mad_rmpp::{Outcome, RmppStatus};

    #[test]
    fn rmpp_outcomes_map_to_one_send_status_each() {
        let abort = RmppStatus(118);
        let cases = [
            (Outcome::Success, SendStatus::Success, false),
            (Outcome::Canceled, SendStatus::Canceled, false),
            (Outcome::TimedOut, SendStatus::Timeout, true),
            (Outcome::Aborted(abort), SendStatus::RmppAbort(abort), true),
        ];
        for (outcome, status, fails) in cases {
            assert_eq!(SendStatus::from(outcome), status, "{outcome}");
            assert_eq!(status.is_failure(), fails, "{outcome}");
        }
        assert!(SendStatus::Flushed.is_failure());
    }
}
