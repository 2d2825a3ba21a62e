//! The sans-IO agent engine of one port.
//!
//! # Design overview
//!
//! An [`Engine`] holds its port's state, a [`PortCore`], and is its only
//! client; it has no transport. Whoever owns the transport owns its
//! [`Driver`](mad_core::port::Driver) and hands it to the engine's calls
//! that post or pump, as an [`Io`] ([`Engine::send`], [`Engine::poll`],
//! [`Engine::handle_recv`]); [`crate::Stack`] is the two together, and
//! the [`crate::Runtime`] holds one. The engine never performs I/O of its
//! own and never reads a clock: every call that needs the time takes
//! `now`, so it runs the same under a virtual clock in tests and
//! benchmarks as under the runtime.
//!
//! - **getters**: [`Engine::stats`], [`Engine::agent_stats`],
//!   [`Engine::outstanding`], [`Engine::agent_state`], [`Engine::port`], ...
//! - **commands** (state only): [`Engine::register`],
//!   [`Engine::deregister`], [`Engine::cancel`], [`Engine::modify`],
//!   [`Engine::ack_reset`] (a soft reset that makes due runs at the next
//!   [`Engine::poll`], or at once with [`Engine::run_port_due`]);
//!   [`Engine::send`]`(io, ..)` posts its first work request at once, so
//!   that the port's refusal ([`SendError::Port`]) is the caller's error;
//! - **driving**: [`Engine::poll`]`(io, now)` when the transport's fd is
//!   readable, when [`Engine::poll_timeout`] has passed, or after commands;
//! - **output**: [`Engine::poll_event`] hands out `(agent, event)` pairs,
//!   one agent's events in order, agents served round-robin.
//!
//! # The life of a send (seed 003, AGENTS.md §3)
//!
//! A send holds **references**: one per work request it has posted and
//! not yet seen complete, one while a response is awaited, and (RMPP) one
//! while its transfer is not fully acknowledged. It completes to its agent
//! **exactly once**, when the count reaches zero, with one final
//! [`SendStatus`]: the first failure recorded, else success. The response
//! timer of a send starts only when its work requests have completed (the
//! kernel's `wait_for_response`); a response that beats the send
//! completion drops the response reference and the completion drops the
//! last one.
//!
//! Timeouts live in one list per agent ordered by deadline. On expiry a
//! send with retries left and before its absolute deadline is reposted
//! (the same MAD with the same TID, a new work request reference);
//! otherwise it fails with [`SendStatus::Timeout`]. The first
//! [`EngineConfig::linear_retries`] waits are the request's own timeout,
//! later ones double (up to [`EngineConfig::max_backoff`]), and no wait
//! runs past the absolute deadline, `(retries + 1) x timeout` after the
//! first post unless the request says otherwise.
//!
//! A work request the port flushes (`IBV_WC_WR_FLUSH_ERR`: it was posted
//! behind a failed one, or the QP/CQ was reset) is reposted once, as the
//! kernel's `mark_sends_for_retry` does; a second flush completes the send
//! as [`SendStatus::Flushed`]. Any other work-completion error completes
//! it with [`SendStatus::WcError`].
//!
//! A work-request error that arrives **after the response** (the response
//! beat the send completion) is reported, as the kernel reports it to the
//! send handler after the receive handler had the response: the
//! completion carries the error status ([`SendStatus::WcError`], or
//! [`SendStatus::Flushed`] for a second flush) *and* the response. A first
//! flush, which the kernel would repost and then normally complete with
//! success, is neither reposted (the answer is in) nor reported.
//!
//! # Flow control
//!
//! Like the 2025 kernel's solicited flow control (AGENTS.md §1), requests
//! that await a response (timeout > 0; not responses, not RMPP transfers,
//! which have their own window) hold a **slot** from their first post
//! until their response arrives or they fail, retries included. An agent
//! has at most [`EngineConfig::max_unanswered_per_agent`] slots and the
//! port at most [`EngineConfig::max_unanswered_per_port`] (by default 256
//! over a transport with a file descriptor: ibsim stops serving a client
//! with about 335 unanswered). A request sent while its agent or the port
//! is full — or while earlier requests still wait — is accepted
//! ([`Engine::send`] returns its id), gets its TID, and waits in its
//! agent's **backlog**; as slots free up, [`Engine::poll`] posts backlogged
//! requests in order, the agents with a backlog taking turns for port
//! slots. A backlogged request's response timer and absolute deadline
//! start at its first post; cancel, modify and deregistration work on it
//! as on any send (a cancel or deregistration completes it at once). A
//! response that names a backlogged request's TID is counted as unmatched
//! and dropped (it cannot answer what was not sent). Each step costs
//! O(log n) in the number of queued sends.
//!
//! # Dispatch (AGENTS.md §2)
//!
//! Responses (R bit, TrapRepress, BM with attribute-modifier bit 0) go by
//! TID and class to the waiting send ([`crate::tid`]); nobody waiting:
//! counted and dropped.
//!
//! ## Response matching
//!
//! A response (or an RMPP ACK / STOP / ABORT of an outbound transfer)
//! matches a send by its TID ([`crate::tid::match_key`]: every bit the
//! transports preserve) and management class **and its source**: except
//! for directed-route SMPs (whose path is not an address), a response must
//! come from the LID the request went to — or, if the request was sent
//! with a GRH, carry a GRH whose source GID is the request's destination
//! GID; a GRH on one side only does not match. A request to the
//! permissive LID accepts any source LID. A response that fails the check
//! is counted in [`EngineStats::wrong_source`] and dropped; the send keeps
//! waiting. ([`EngineConfig::check_response_source`] turns the check off.)
//! The kernel compares the remote LID only for received requests and
//! checks the local path bits for responses (AGENTS.md §2 step 8); this
//! layer sees no local path bits from every transport and checks the
//! remote side instead, which also catches a stray answer from another
//! node reusing the TID. Requests go by QP, class, class version, method
//! (and OUI for vendor range 2) to the owning agent; nobody: a Get or Set
//! is answered with GetResp status 0x000C (D bit set for directed route),
//! anything else is dropped, both counted. Received requests wait in a
//! per-agent queue of at most [`EngineConfig::recv_queue_bound`] MADs and
//! [`EngineConfig::recv_queue_bytes`] bytes; more are dropped and counted.
//!
//! # RMPP (issue 5, RMPP.md)
//!
//! For an agent registered with RMPP, a send longer than one MAD (or
//! whose RMPP header has the Active flag) is an RMPP transfer driven by a
//! [`mad_rmpp::Sender`]: each segment is a work request holding a
//! reference, and the transfer holds one until its last ACK. An RMPP
//! request whose response times out is retried like a single MAD, within
//! its retries and absolute deadline: the same message with the same TID
//! goes out as a new transfer from segment 1. (A receiver that still
//! remembers the finished transfer — the kernel's and
//! [`mad_rmpp::ReceiverTable`]'s 10 s linger — re-acknowledges it without
//! delivering it again.) An RMPP response starts with the window the
//! requester advertised in its DS ACK for a double-sided transfer
//! ([`mad_rmpp::ReceiverTable::response_window`], RMPP.md §6), else 1. Inbound
//! transfers are reassembled by the agent's [`ReceiverTable`]; a response
//! segment reaches it only when its TID and class match a waiting send of
//! the agent and it comes from the LID the request went to, so an
//! unsolicited response segment allocates nothing. Agents without RMPP
//! see raw segments.
//!
//! ## Peers, GRH and refused posts (issues 12 and 13)
//!
//! A peer is its GID when its MADs carry a GRH, else its LID, plus its QP
//! ([`mad_rmpp::Peer`]): on RoCE every peer is LID 0. Inbound transfers
//! are keyed by it, so two peers at LID 0 with different GIDs never share
//! a reassembly; outbound transfers are found by TID, class **and**
//! destination, so one TID may go to several peers at once (two
//! requesters that picked the same TID both get their RMPP responses).
//! Everything the engine sends because of a received MAD (RMPP ACK,
//! STOP, ABORT, DS ACK, the unsupported-method answer) goes to the
//! MAD's whole source address, GRH included
//! ([`mad_rmpp::reply_address`]), and a reassembled message keeps its
//! first segment's source address ([`Message::src`],
//! [`Message::reply_address`]).
//!
//! A post the port refuses is never silent: it counts in
//! [`EngineStats::post_failures`] (and the agent's
//! [`AgentStats::post_failures`]); when it belongs to a send (its MAD, an
//! RMPP segment, a retry) that send fails with the port's error and
//! completes once, when its posted work requests have completed.
//!
//! With [`EngineConfig::end_unacknowledged_answers`] (off by default, as
//! the kernel has no such rule), an answer whose receiver acknowledges
//! nothing (an RMPP transfer that expects no response, none of whose
//! segments was acknowledged when its first ACK timer expires) ends there, as [`SendStatus::Timeout`],
//! without resending and without an ABORT
//! ([`EngineStats::rmpp_unacknowledged_ended`]). Such a receiver does no
//! RMPP — a program under libumad2sim, which has no kernel to reassemble
//! for it, takes the first segment as the whole answer — or never got the
//! segment, and then its request times out and is asked again, which
//! starts a new transfer. The kernel resends (and its `ib_umad` refuses a
//! new answer with the same TID to that peer meanwhile): to a program
//! that exits and is followed at the same port by another that reuses its
//! TIDs, those resends arrive as answers to the newcomer's requests, and
//! its answers were refused. For the same reason a new answer to the
//! same peer with the TID of such an unacknowledged answer ends the old
//! one and goes out ([`EngineStats::rmpp_unacknowledged_replaced`]),
//! where an answer whose receiver has acknowledged a segment still
//! refuses it ([`SendError::DuplicateTid`]).
//!
//! An RMPP send never outlives its absolute deadline: its RMPP timer is
//! armed at the earlier of the sender's ACK timer and that deadline
//! ([`EngineStats::rmpp_deadline_expired`]). A request whose segments are
//! all acknowledged stays reachable by ACKs while it waits for its
//! response, so a repeated final ACK gets the DS ACK again; a STOP or
//! ABORT then goes to the response's reassembly and never fails the
//! request. Each agent's receiver enforces the memory bounds of
//! [`mad_rmpp::ReceiverConfig`] ([`Engine::rmpp_receiver_stats`]).
//!
//! # Memory of a port under a hostile fabric
//!
//! What peers can make one port's stack hold, whatever they send, with
//! the default settings (each bound configurable, each refusal counted):
//!
//! | what | bound | where |
//! |---|---|---|
//! | inbound RMPP reassembly, per RMPP agent | about 275 MiB (256 MiB of buffers, 16 MiB pool, records) | [`mad_rmpp::ReceiverConfig`], the `mad_rmpp` crate docs |
//! | received messages its owner has not taken, per agent | [`EngineConfig::recv_queue_bytes`] (64 MiB) plus one message, and [`EngineConfig::recv_queue_bound`] (1024) messages | this engine's queue, and a channel agent's channel |
//! | port events its owner has not taken, per agent | one of each distinct port event (about twenty: [`AgentEvent::is_port_event`]) | this engine's queue, and a channel agent's channel |
//! | sends waiting for room on the QPs | about 3 MiB | [`mad_core::port::PortConfig::overflow_limit`] |
//!
//! So a port with one RMPP agent (an SA client, say) holds at most about
//! 340 MiB because of its peers; outbound state (sends, RMPP senders) is
//! what the owner asked for and is not counted. The tests
//! `a_hostile_flood_stays_within_the_documented_worst_case` (mad-rmpp),
//! `messages_an_agent_does_not_take_are_bounded_in_bytes_not_just_in_count`
//! (tests/rmpp/main.rs), the port's overflow-bound tests and
//! tests/event_storm.rs drive floods against each row.
//!
//! Port events are **coalesced**, never dropped by age: a port event
//! equal to one still queued for the agent (not yet taken from the
//! engine, or not yet taken from its channel) replaces it — the older copy
//! is taken out and the new one appended, so the agent still sees the
//! latest occurrence of each event in order and learns the port's last
//! state — and each replacement is counted in
//! [`AgentStats::port_events_coalesced`] /
//! [`EngineStats::port_events_coalesced`]. Received MADs are bounded as
//! above; send completions are never dropped or coalesced (each send
//! completes exactly once; how many there are is the owner's doing).
//!
//! During such a storm a send may be refused with
//! [`mad_core::port::PortError::OverflowFull`] (its QP's send queue and
//! the bounded overflow queue are full because the thread that drives
//! the port is busy with the events): that is the intended back-pressure.
//! The refusal is immediate and counted, nothing accepted is lost, and
//! the caller decides whether to wait and send again; the alternative, an
//! unbounded queue of sends, is what the overflow bound exists to
//! prevent.
//!
//! # Deregistration
//!
//! [`Engine::deregister`] starts it: the agent loses its methods (no new
//! requests), every outstanding send that has not failed or been answered
//! is marked [`SendStatus::Flushed`] and loses its response reference
//! (sends waiting only for a response complete at once; those with work
//! requests in flight complete when the port completes them), queued
//! requests are dropped and RMPP reassemblies freed. The agent is gone —
//! [`Engine::agent_state`] returns `None` and its id is listed by
//! [`Engine::take_reaped`] — once every send has completed and every event
//! has been handed out. After that nothing of the agent is produced again.

use mad_core::hash::{FastMap, FastSet};
use mad_core::MadBuf;

use crate::timers::{Deadlines, Timer};
use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use mad_core::port::{
    ClientId, Inbound, InboundError, Io, PortConfig, PortCore, PortError, PortEvent, Post,
};
use mad_core::transport::{Address, Qp, Received, Unsendable, WcStatus, GSI_QKEY, PERMISSIVE_LID};
use mad_core::wire::rmpp::{RmppType, RmppView};
use mad_core::wire::smp::{DR_DIRECTION_BIT, DR_STATUS_MASK};
use mad_core::wire::{Mad, MadStatus, Method, MgmtClass, MAD_LEN};
use mad_rmpp::{ReceiverTable, Sender, SenderConfig};
use slab::Slab;

mod agents;
mod delivery;
mod events;
mod flow;
mod recv;
mod rmpp;
mod send;
mod state;
mod timeout;

use state::{must, Move, SendState};

use crate::spec::{AgentSpec, RegTable};
use crate::tid;
use crate::types::{
    AgentEvent, AgentId, AgentStats, Completion, EngineConfig, EngineStats, Message, RegisterError,
    SendError, SendId, SendRequest, SendStatus, TidChoice,
};

/// Cookie of the engine's own sends (unsupported answers, RMPP ACKs).
const INTERNAL: u64 = u64::MAX;

/// Where an agent is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentState {
    /// Registered.
    Active,
    /// Deregistering: waiting for its sends to complete and its events to
    /// be handed out.
    Closing,
}

struct AgentSlot {
    id: AgentId,
    spec: AgentSpec,
    hi: u16,
    closing: bool,
    /// This agent's sends: a list linked through [`SendSlot::prev`] /
    /// [`SendSlot::next`] (O(1) to add and drop, no hashing).
    sends: SendList,
    events: VecDeque<AgentEvent>,
    queued_recv: usize,
    /// Bytes of the received messages in `events`.
    queued_recv_bytes: usize,
    in_ready: bool,
    delivering: usize,
    rmpp_rx: Option<ReceiverTable>,
    stats: AgentStats,
    /// Requests of this agent on the wire awaiting a response (flow
    /// control).
    unanswered: usize,
    /// Requests waiting for a flow-control slot, in order: (sequence,
    /// send index).
    backlog: BTreeSet<(u64, usize)>,
    /// In the engine's queue of agents waiting for a port slot.
    fc_ready: bool,
}

struct RmppTx {
    sender: Sender,
    /// The sender's settings, to start the transfer again on a retry.
    cfg: SenderConfig,
}

/// Solicited flow control of the port (see the [module
/// documentation](self#flow-control)).
struct Flow {
    agent_limit: usize,
    port_limit: usize,
    /// Requests on the wire awaiting a response, over all agents.
    unanswered: usize,
    /// Agents with a backlog and room under their own limit, waiting for
    /// a port slot, served round-robin.
    ready: VecDeque<usize>,
    seq: u64,
}

struct SendSlot {
    id: SendId,
    agent: usize,
    key: (u64, u8),
    tid: u64,
    /// The MAD, checked once at [`Engine::send`]; `None` for an RMPP
    /// transfer (its sender holds the message).
    mad: Option<mad_core::transport::OutMadBuf>,
    dest: Address,
    timeout: Duration,
    retries_left: u32,
    /// Retries so far; also the attempt number (0 for the first), which
    /// sets the backoff ([`Engine::interval`]).
    retries_used: u32,
    abs_deadline: Option<Instant>,
    /// Its lifecycle: phase, references, outcome ([`state`]).
    state: SendState<Message>,
    rmpp: Option<Box<RmppTx>>,
    cookie: u64,
    /// The total timeout (from the first post), for a send still queued.
    total: Duration,
    /// Neighbours in the agent's [`SendList`] ([`NIL`] at an end).
    prev: usize,
    next: usize,
}

/// A work request the engine has made and not yet handed to the port:
/// every post of the engine (a send's MAD, an RMPP segment, a retry, the
/// engine's own answers) is queued as one of these and goes to the port,
/// in order, when the engine flushes its queue
/// ([`Engine::flush_transmits`]) before it returns to its caller or calls
/// the port; a refusal comes back to [`Engine::refused`].
enum Transmit {
    /// Send `idx`'s own MAD, read from its slot when posted (no copy).
    Send {
        idx: usize,
        id: SendId,
        wait: Duration,
        on_refusal: OnRefusal,
    },
    /// An RMPP segment (or ABORT / DS ACK) of send `idx`'s transfer.
    Segment {
        idx: usize,
        id: SendId,
        mad: MadBuf,
        wait: Duration,
        on_refusal: OnRefusal,
    },
    /// A MAD the engine sends on its own behalf (RMPP ACK / STOP / ABORT
    /// of a reassembly, the unsupported-method answer); a refusal counts
    /// against agent `agent` when known.
    Internal {
        agent: Option<usize>,
        qp: Qp,
        mad: MadBuf,
        dest: Address,
        /// An unsupported-method answer: counted once posted.
        unsupported: bool,
    },
}

/// What a refused post of a send does to it (beyond being counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnRefusal {
    /// Fails with the status the port's error stands for
    /// ([`port_failure`]).
    Fail,
    /// Fails as [`SendStatus::Flushed`] (the repost of a flushed work
    /// request).
    Flushed,
    /// Nothing more (a finished transfer's last ABORT or DS ACK).
    Count,
}

/// No send (the end of a [`SendList`]).
const NIL: usize = usize::MAX;

/// An agent's sends, linked through their slots.
#[derive(Debug, Clone, Copy)]
struct SendList {
    head: usize,
    len: usize,
}

impl Default for SendList {
    fn default() -> Self {
        Self { head: NIL, len: 0 }
    }
}

/// The agent layer of one port; see the [module documentation](self).
pub struct Engine {
    /// The port's state; its transport is the caller's ([`Io`]).
    port: PortCore,
    client: ClientId,
    cfg: EngineConfig,
    agents: Slab<AgentSlot>,
    generation: u32,
    by_hi: FastMap<u16, usize>,
    next_hi: u16,
    table: RegTable,
    sends: Slab<SendSlot>,
    waiting: FastMap<(u64, u8), usize>,
    /// Outbound RMPP transfers by TID and class; several may share them,
    /// each to a different peer (told apart by the control MAD's source).
    rmpp_out: FastMap<(u64, u8), Vec<usize>>,
    /// Every timer of the engine: responses, RMPP transfers and
    /// reassemblies ([`Timer`]).
    timers: Deadlines,
    next_low: u32,
    ready: VecDeque<usize>,
    reset_hold: Option<FastSet<usize>>,
    reaped: Vec<AgentId>,
    stats: EngineStats,
    /// The buffer the next RMPP segment is written into (256 bytes).
    seg: MadBuf,
    /// The engine acknowledged a soft reset to the port's state since
    /// the transport's side last ran what that made due
    /// ([`Engine::run_port_due`]).
    port_due: bool,
    /// Work requests not yet handed to the port, in order.
    out: Vec<Transmit>,
    flow: Flow,
}

/// A summary: the engine's tables can hold 100,000 sends, too many to
/// print.
impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("port", &self.port)
            .field("agents", &self.agents.len())
            .field("sends", &self.sends.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// The RMPP header of an outbound MAD whose Active flag is set, for a
/// class that uses RMPP (other classes' bytes there are no RMPP header:
/// an SMP's are its M_Key).
#[inline]
fn active_rmpp(mad: &[u8]) -> Option<RmppView<&[u8]>> {
    // A buffer too short for the class reads class 0, no RMPP class.
    if !Mad::new_unchecked(mad).mgmt_class().is_rmpp_class() {
        return None;
    }
    RmppView::new_checked(mad).ok().filter(RmppView::is_active)
}

impl Engine {
    /// An engine for the port `io` drives, with default port settings.
    /// It keeps no reference to `io`: the calls that post or pump take
    /// the transport's side again ([`Engine::send`], [`Engine::poll`],
    /// [`Engine::handle_recv`]).
    #[must_use]
    pub fn new(io: &impl Io, cfg: EngineConfig) -> Self {
        Self::with_port_config(io, PortConfig::default(), cfg)
    }

    /// An engine for the port `io` drives, whose state it holds as a
    /// [`PortCore`] with settings `port`. The engine registers itself as
    /// the core's client that takes every received MAD
    /// ([`PortCore::subscribe_all`]): it is the port's MAD dispatcher.
    #[must_use]
    pub fn with_port_config(io: &impl Io, port: PortConfig, cfg: EngineConfig) -> Self {
        let mut port = PortCore::new(io.attrs(), port);
        let client = port.register();
        let bounded = io.bounded_far_side();
        // Cannot fail: the client was registered just above.
        let _ = port.subscribe_all(client);
        Self {
            port,
            client,
            agents: Slab::new(),
            generation: 0,
            by_hi: FastMap::default(),
            next_hi: 1,
            table: RegTable::default(),
            sends: Slab::new(),
            waiting: FastMap::default(),
            rmpp_out: FastMap::default(),
            timers: Deadlines::default(),
            next_low: 1,
            ready: VecDeque::new(),
            reset_hold: None,
            reaped: Vec::new(),
            stats: EngineStats::default(),
            seg: MadBuf::for_overwrite(),
            port_due: false,
            out: Vec::new(),
            flow: Flow {
                agent_limit: cfg.max_unanswered_per_agent.resolve(bounded),
                port_limit: cfg.max_unanswered_per_port.resolve(bounded),
                unanswered: 0,
                ready: VecDeque::new(),
                seq: 0,
            },
            cfg,
        }
    }

    // ----- getters -----

    /// The port's state (its counters, send lists and overflow queues).
    #[must_use]
    pub fn port(&self) -> &PortCore {
        &self.port
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> EngineStats {
        EngineStats {
            malformed: self.stats.malformed + self.port.stats().recv_malformed,
            ..self.stats
        }
    }

    /// Sends not yet completed, over all agents (the send table's size).
    #[must_use]
    pub fn outstanding(&self) -> usize {
        self.sends.len()
    }

    /// Registered agents (active or closing).
    #[must_use]
    pub fn agent_count(&self) -> usize {
        self.agents.len()
    }

    /// Ids of the registered agents (active or closing).
    #[must_use]
    pub fn agent_ids(&self) -> Vec<AgentId> {
        self.agents.iter().map(|(_, a)| a.id).collect()
    }

    /// True if some agent has an event waiting to be handed out.
    #[must_use]
    pub fn has_events(&self) -> bool {
        self.agents.iter().any(|(_, a)| !a.events.is_empty())
    }

    #[inline]
    fn agent_idx(&self, id: AgentId) -> Option<usize> {
        let idx = id.index as usize;
        self.agents.get(idx).filter(|a| a.id == id).map(|_| idx)
    }

    #[inline]
    fn send_idx(&self, id: SendId) -> Option<usize> {
        let idx = id.index as usize;
        self.sends.get(idx).filter(|s| s.id == id).map(|_| idx)
    }

    /// Where `agent` is in its life; `None` once it is gone (or for an
    /// unknown id).
    #[must_use]
    pub fn agent_state(&self, agent: AgentId) -> Option<AgentState> {
        let a = &self.agents[self.agent_idx(agent)?];
        Some(if a.closing {
            AgentState::Closing
        } else {
            AgentState::Active
        })
    }

    /// Counters of `agent`.
    #[must_use]
    pub fn agent_stats(&self, agent: AgentId) -> Option<AgentStats> {
        self.agent_idx(agent).map(|i| self.agents[i].stats)
    }

    /// Sends of `agent` not yet completed.
    #[must_use]
    pub fn agent_outstanding(&self, agent: AgentId) -> usize {
        self.agent_idx(agent)
            .map_or(0, |i| self.agents[i].sends.len)
    }

    /// Hands a message `agent` received (or got as a response) back once
    /// its bytes are no longer needed: a reassembled RMPP message's buffer
    /// goes to the agent's reassembly pool, so the next large transfer is
    /// reassembled into memory that is already mapped instead of a fresh
    /// allocation (see [`mad_rmpp::ReceiverTable::recycle`]). Anything else
    /// (a single MAD, a message still shared, an agent without RMPP or
    /// gone) is just dropped.
    pub fn recycle(&mut self, agent: AgentId, message: Message) {
        let Some(i) = self.agent_idx(agent) else {
            return;
        };
        let Some(rx) = self.agents[i].rmpp_rx.as_mut() else {
            return;
        };
        if let Some(buf) = message.into_buffer() {
            rx.recycle(buf);
        }
    }

    /// The registration of `agent`.
    #[must_use]
    pub fn agent_spec(&self, agent: AgentId) -> Option<&AgentSpec> {
        self.agent_idx(agent).map(|i| &self.agents[i].spec)
    }

    /// The TID bits 47..32 of `agent`.
    #[must_use]
    pub fn agent_tid_bits(&self, agent: AgentId) -> Option<u16> {
        self.agent_idx(agent).map(|i| self.agents[i].hi)
    }

    /// True if `send` has not completed yet.
    #[must_use]
    pub fn is_outstanding(&self, send: SendId) -> bool {
        self.send_idx(send).is_some()
    }

    /// The TID `send` carries.
    #[must_use]
    pub fn send_tid(&self, send: SendId) -> Option<u64> {
        self.send_idx(send).map(|i| self.sends[i].tid)
    }

    /// The agent `send` belongs to.
    #[must_use]
    pub fn send_agent(&self, send: SendId) -> Option<AgentId> {
        self.send_idx(send)
            .map(|i| self.agents[self.sends[i].agent].id)
    }

    /// Received MADs and events waiting in `agent`'s queue.
    #[must_use]
    pub fn queued_events(&self, agent: AgentId) -> usize {
        self.agent_idx(agent)
            .map_or(0, |i| self.agents[i].events.len())
    }

    /// Inbound RMPP transfers `agent` holds (active or lingering).
    #[must_use]
    pub fn rmpp_reassemblies(&self, agent: AgentId) -> usize {
        self.agent_idx(agent)
            .and_then(|i| self.agents[i].rmpp_rx.as_ref())
            .map_or(0, ReceiverTable::len)
    }

    /// What `agent`'s RMPP receiver refused or dropped (byte budgets,
    /// lingering limits, busy table, malformed STOP / ABORT); `None` for
    /// an agent without RMPP or gone.
    #[must_use]
    pub fn rmpp_receiver_stats(&self, agent: AgentId) -> Option<mad_rmpp::ReceiverStats> {
        self.agent_idx(agent)
            .and_then(|i| self.agents[i].rmpp_rx.as_ref())
            .map(ReceiverTable::stats)
    }

    /// The earliest time [`Engine::poll`] has timed work: the first
    /// entry of the engine's timer table (response deadlines, RMPP
    /// transfers and reassemblies, of every agent) or the port's own
    /// deadline. Two lookups, whatever the number of agents and sends.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let t = self.timers.first().map(|(d, _)| d);
        match (t, self.port.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The final status of a send whose repost the port refused.
fn port_failure(e: &PortError) -> SendStatus {
    match e {
        PortError::Dead { .. } => SendStatus::Flushed,
        _ => SendStatus::WcError(WcStatus::LocQpOpErr),
    }
}

#[cfg(test)]
mod moves_tests;

#[cfg(test)]
mod active_rmpp_tests {
    use super::*;
    use mad_core::wire::rmpp::{RMPP_FLAG_ACTIVE, RMPP_FLAG_LAST};

    /// A MAD of `class` whose bytes 24-35 read as an active, last RMPP
    /// DATA segment.
    fn last_data_segment_bytes(class: MgmtClass) -> [u8; MAD_LEN] {
        let mut mad = [0u8; MAD_LEN];
        mad_testkit_wire::header::edit(&mut mad, |h| {
            h.base_version = 1;
            h.mgmt_class = class;
        });
        let mut v = RmppView::new_unchecked(&mut mad[..]);
        v.set_version(1);
        v.set_rmpp_type(RmppType::DATA);
        v.set_flags(RMPP_FLAG_ACTIVE | RMPP_FLAG_LAST);
        mad
    }

    #[test]
    fn an_smp_whose_m_key_looks_like_an_rmpp_header_has_none() {
        let smp = last_data_segment_bytes(MgmtClass::SUBN_DIRECTED_ROUTE);
        assert!(active_rmpp(&smp).is_none());
        let sa = last_data_segment_bytes(MgmtClass::SUBN_ADM);
        let h = active_rmpp(&sa).expect("an SA MAD's RMPP header");
        assert!(h.rmpp_type() == RmppType::DATA && h.is_last());
        assert!(active_rmpp(&[]).is_none());
    }
}
