//! The sans-IO agent engine of one port.
//!
//! # Design overview
//!
//! An [`Engine`] owns a [`Port`] (and through it a transport) and is its
//! only client. It never performs I/O of its own and never reads a clock:
//! every call that needs the time takes `now`, so it runs the same under a
//! virtual clock in tests and benchmarks as under the [`crate::Runtime`].
//!
//! - **getters**: [`Engine::stats`], [`Engine::agent_stats`],
//!   [`Engine::outstanding`], [`Engine::agent_state`], [`Engine::port`], ...
//! - **commands**: [`Engine::register`], [`Engine::deregister`],
//!   [`Engine::send`], [`Engine::cancel`], [`Engine::modify`],
//!   [`Engine::ack_reset`];
//! - **driving**: [`Engine::poll`]`(now)` when the transport's fd is
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
//! | sends waiting for room on the QPs | about 3 MiB | [`mad_core::port::PortConfig::overflow_limit`] |
//!
//! So a port with one RMPP agent (an SA client, say) holds at most about
//! 340 MiB because of its peers; outbound state (sends, RMPP senders) is
//! what the owner asked for and is not counted. The tests
//! `a_hostile_flood_stays_within_the_documented_worst_case` (mad-rmpp),
//! `messages_an_agent_does_not_take_are_bounded_in_bytes_not_just_in_count`
//! (tests/rmpp.rs) and the port's overflow-bound tests drive floods
//! against each row.
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

use crate::timers::Deadlines;
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mad_core::port::{ClientId, Port, PortConfig, PortError, PortEvent};
use mad_core::transport::{Address, Qp, Received, Transport, WcStatus, GSI_QKEY, PERMISSIVE_LID};
use mad_core::wire::rmpp::{RmppType, RMPP_FLAG_ACTIVE};
use mad_core::wire::smp::{DR_DIRECTION_BIT, DR_STATUS_MASK};
use mad_core::wire::{Mad, MadStatus, Method, MgmtClass, MAD_HEADER_LEN, MAD_LEN, RMPP_HEADER_END};
use mad_rmpp::{ReceiverTable, Sender, SenderConfig};
use slab::Slab;

mod rmpp;

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
    timeouts: Deadlines,
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
    deadline: Option<Instant>,
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
    qp: Qp,
    mad: MadBuf,
    dest: Address,
    timeout: Duration,
    retries_left: u32,
    retries_used: u32,
    attempt: u32,
    abs_deadline: Option<Instant>,
    /// Work requests posted and not yet completed.
    wr: u32,
    /// Holds the response reference.
    awaiting: bool,
    /// Holds the RMPP transfer reference.
    rmpp_active: bool,
    /// In the agent's timeout list.
    deadline: Option<Instant>,
    failed: Option<SendStatus>,
    response: Option<Message>,
    flush_reposted: bool,
    /// A modify made while the work request was in flight: the absolute
    /// deadline is extended when the wait starts.
    extend_abs: bool,
    rmpp: Option<Box<RmppTx>>,
    cookie: u64,
    /// Waiting in the agent's backlog (its sequence number there).
    queued: Option<u64>,
    /// Holds a flow-control slot.
    counted: bool,
    /// The total timeout (from the first post), for a send still queued.
    total: Duration,
    /// Neighbours in the agent's [`SendList`] ([`NIL`] at an end).
    prev: usize,
    next: usize,
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

impl SendSlot {
    fn refs(&self) -> u32 {
        self.wr + u32::from(self.awaiting) + u32::from(self.rmpp_active)
    }
}

/// The agent layer of one port; see the [module documentation](self).
pub struct Engine<T: Transport = Box<dyn Transport>> {
    port: Port<T>,
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
    rmpp_timers: Deadlines,
    next_low: u32,
    ready: VecDeque<usize>,
    reset_hold: Option<FastSet<usize>>,
    reaped: Vec<AgentId>,
    stats: EngineStats,
    seg: Vec<u8>,
    flow: Flow,
}

impl<T: Transport> std::fmt::Debug for Engine<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("port", &self.port)
            .field("agents", &self.agents.len())
            .field("sends", &self.sends.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

fn is_rmpp_active(mad: &[u8]) -> bool {
    mad.len() >= RMPP_HEADER_END && mad[26] & RMPP_FLAG_ACTIVE != 0
}

fn rmpp_type(mad: &[u8]) -> RmppType {
    RmppType(mad.get(25).copied().unwrap_or(0))
}

impl<T: Transport> Engine<T> {
    /// An engine over `transport` with default port settings.
    #[must_use]
    pub fn new(transport: T, cfg: EngineConfig) -> Self {
        Self::with_port(Port::new(transport, PortConfig::default()), cfg)
    }

    /// An engine over an existing port layer. The engine registers itself
    /// as a client of the port and subscribes to every class (SMP classes
    /// on QP0, the others on QP1): it is the port's MAD dispatcher.
    #[must_use]
    pub fn with_port(mut port: Port<T>, cfg: EngineConfig) -> Self {
        let client = port.register();
        let bounded = port.transport().bounded_far_side();
        for class in 0..=u8::MAX {
            let c = MgmtClass(class);
            let qp = if c.is_smp() { Qp::Qp0 } else { Qp::Qp1 };
            // Cannot fail: the client was registered just above.
            let _ = port.subscribe(client, qp, c);
        }
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
            rmpp_timers: Deadlines::default(),
            next_low: 1,
            ready: VecDeque::new(),
            reset_hold: None,
            reaped: Vec::new(),
            stats: EngineStats::default(),
            seg: vec![0u8; MAD_LEN],
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

    /// The port layer.
    #[must_use]
    pub fn port(&self) -> &Port<T> {
        &self.port
    }

    /// The port layer, mutably (tests reach a fault injector this way).
    pub fn port_mut(&mut self) -> &mut Port<T> {
        &mut self.port
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> EngineStats {
        self.stats
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

    fn agent_idx(&self, id: AgentId) -> Option<usize> {
        let idx = id.index as usize;
        self.agents.get(idx).filter(|a| a.id == id).map(|_| idx)
    }

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

    /// The earliest time [`Engine::poll`] has timed work: the response
    /// deadlines of every agent, RMPP timers, and the port's own.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.port.next_deadline();
        let mut take = |d: Option<Instant>| {
            if let Some(d) = d {
                t = Some(t.map_or(d, |x: Instant| x.min(d)));
            }
        };
        take(self.rmpp_timers.first().map(|(d, _)| d));
        for (_, a) in &self.agents {
            take(a.timeouts.first().map(|(d, _)| d));
            take(a.rmpp_rx.as_ref().and_then(ReceiverTable::poll_timeout));
        }
        t
    }

    // ----- registration -----

    /// Registers an agent, with the kernel's checks and conflict rules
    /// (AGENTS.md §1).
    ///
    /// # Errors
    /// [`RegisterError::Invalid`] for a specification the kernel refuses;
    /// [`RegisterError::MethodInUse`] naming the owner when another agent
    /// owns one of the methods in the same (QP, class, version, OUI) slot;
    /// [`RegisterError::NoAgentIds`].
    pub fn register(&mut self, spec: AgentSpec) -> Result<AgentId, RegisterError> {
        if let Err(e) = spec.validate() {
            self.stats.refused += 1;
            return Err(e);
        }
        if self.by_hi.len() > usize::from(u16::MAX) {
            self.stats.refused += 1;
            return Err(RegisterError::NoAgentIds);
        }
        let mut hi = self.next_hi;
        while self.by_hi.contains_key(&hi) {
            hi = hi.wrapping_add(1);
        }
        self.generation = self.generation.wrapping_add(1);
        let entry = self.agents.vacant_entry();
        let id = AgentId {
            index: u32::try_from(entry.key()).unwrap_or(u32::MAX),
            generation: self.generation,
        };
        if let Some(filter) = &spec.requests {
            let agents = &self.agents;
            let name_of = |a: AgentId| {
                agents
                    .get(a.index as usize)
                    .map(|s| s.spec.name.clone())
                    .unwrap_or_default()
            };
            if let Err(e) = self.table.insert(spec.qp, filter, id, name_of) {
                self.stats.refused += 1;
                return Err(e);
            }
            // Below umad the kernel only passes on requests some agent of
            // this process registered for: ask for them.
            let oui = filter.class.is_vendor_range2().then(|| {
                let b = filter.oui.to_be_bytes();
                [b[1], b[2], b[3]]
            });
            if let Err(e) = self.port.transport_mut().register_requests(
                filter.class,
                filter.class_version,
                filter.methods.0,
                oui,
            ) {
                self.table.remove(id);
                self.stats.refused += 1;
                return Err(RegisterError::Transport(e.to_string()));
            }
        }
        let rmpp_rx = spec
            .rmpp
            .then(|| ReceiverTable::new(self.cfg.rmpp_receiver));
        let idx = self.agents.insert(AgentSlot {
            id,
            spec,
            hi,
            closing: false,
            sends: SendList::default(),
            timeouts: Deadlines::default(),
            events: VecDeque::new(),
            queued_recv: 0,
            queued_recv_bytes: 0,
            in_ready: false,
            delivering: 0,
            rmpp_rx,
            stats: AgentStats::default(),
            unanswered: 0,
            backlog: BTreeSet::new(),
            fc_ready: false,
        });
        debug_assert_eq!(idx, id.index as usize);
        self.by_hi.insert(hi, idx);
        self.next_hi = hi.wrapping_add(1);
        self.stats.registrations += 1;
        Ok(id)
    }

    /// Starts deregistering `agent` (see the [module
    /// documentation](self#deregistration)); idempotent. The agent may be
    /// gone when this returns (nothing was outstanding).
    ///
    /// # Errors
    /// [`SendError::UnknownAgent`] if it is already gone.
    pub fn deregister(&mut self, agent: AgentId) -> Result<(), SendError> {
        let idx = self
            .agent_idx(agent)
            .ok_or(SendError::UnknownAgent(agent))?;
        if self.agents[idx].closing {
            return Ok(());
        }
        self.table.remove(agent);
        let a = &mut self.agents[idx];
        a.closing = true;
        let before = a.events.len();
        a.events.retain(|e| !matches!(e, AgentEvent::Received(_)));
        a.stats.recv_dropped += (before - a.events.len()) as u64;
        a.queued_recv = 0;
        a.queued_recv_bytes = 0;
        if let Some(rx) = &mut a.rmpp_rx {
            rx.clear();
            while rx.poll_output().is_some() {}
        }
        let sends = self.agent_sends(idx);
        for s in sends {
            if self.sends[s].failed.is_none() && self.sends[s].response.is_none() {
                self.fail(s, SendStatus::Flushed);
            }
            self.settle(s, None);
        }
        self.release_reset_hold(idx);
        self.try_reap(idx);
        Ok(())
    }

    /// Agents that have gone since the last call.
    pub fn take_reaped(&mut self) -> Vec<AgentId> {
        std::mem::take(&mut self.reaped)
    }

    fn try_reap(&mut self, idx: usize) {
        let Some(a) = self.agents.get(idx) else {
            return;
        };
        if a.closing && a.sends.len == 0 && a.events.is_empty() && a.delivering == 0 {
            let a = self.agents.remove(idx);
            self.by_hi.remove(&a.hi);
            self.reaped.push(a.id);
            self.release_reset_hold(idx);
        }
    }

    // ----- soft reset -----

    /// `agent` has released what it holds for the pending soft reset.
    /// When every agent registered with `hold_reset` has acknowledged (or
    /// deregistered), the port is told. Harmless without a reset pending.
    ///
    /// # Errors
    /// [`SendError::UnknownAgent`].
    pub fn ack_reset(&mut self, agent: AgentId) -> Result<(), SendError> {
        let idx = self
            .agent_idx(agent)
            .ok_or(SendError::UnknownAgent(agent))?;
        self.release_reset_hold(idx);
        Ok(())
    }

    fn release_reset_hold(&mut self, idx: usize) {
        if let Some(hold) = &mut self.reset_hold {
            hold.remove(&idx);
            if hold.is_empty() {
                self.reset_hold = None;
                let _ = self.port.ack_reset(self.client);
            }
        }
    }

    // ----- sends -----

    /// Sends `req` for `agent` (see [`SendRequest`]). A request gets its
    /// TID here: bits 47..32 the agent's id, bits 31..0 allocated or the
    /// caller's ([`crate::tid`]). The send completes later, exactly once,
    /// as [`AgentEvent::SendDone`]. A request awaiting a response that the
    /// flow-control limits hold back waits in the agent's backlog (see
    /// [Flow control](self#flow-control)).
    ///
    /// # Errors
    /// Unknown or deregistering agent; a MAD that is too short, longer
    /// than one MAD without RMPP, of a class that does not belong on the
    /// agent's QP, or of a non-RMPP class on an RMPP agent; a TID already
    /// outstanding (for an RMPP transfer: to the same peer); the port
    /// refusing the first work request (then nothing will complete; the
    /// refusal counts in [`EngineStats::post_failures`]).
    pub fn send(
        &mut self,
        agent: AgentId,
        req: SendRequest,
        now: Instant,
    ) -> Result<SendId, SendError> {
        let aidx = self
            .agent_idx(agent)
            .filter(|&i| !self.agents[i].closing)
            .ok_or(SendError::UnknownAgent(agent))?;
        let SendRequest {
            mut mad,
            dest,
            timeout,
            retries,
            total_timeout,
            tid: tid_choice,
            cookie,
        } = req;
        if mad.len() < MAD_HEADER_LEN {
            return Err(SendError::BadSend(format!(
                "a MAD has at least {MAD_HEADER_LEN} bytes, not {}",
                mad.len()
            )));
        }
        let (qp, hi, rmpp_agent) = {
            let a = &self.agents[aidx];
            (a.spec.qp, a.hi, a.spec.rmpp)
        };
        let class = MgmtClass(mad[1]);
        if class.is_smp() != (qp == Qp::Qp0) {
            return Err(SendError::BadSend(format!(
                "class {:#04x} does not belong on {qp:?}",
                class.0
            )));
        }
        if rmpp_agent && !class.is_rmpp_class() {
            return Err(SendError::BadSend(format!(
                "an RMPP agent cannot send class {:#04x}, which does not use RMPP",
                class.0
            )));
        }
        let rmpp_transfer = rmpp_agent && (mad.len() > MAD_LEN || is_rmpp_active(&mad));
        if !rmpp_transfer && mad.len() > MAD_LEN {
            return Err(SendError::BadSend(format!(
                "{} bytes do not fit one MAD; register the agent with RMPP",
                mad.len()
            )));
        }
        let is_response = Mad::new_unchecked(&mad[..]).is_response();
        let tid = if is_response {
            Mad::new_unchecked(&mad[..]).tid()
        } else {
            let low = match tid_choice {
                TidChoice::Low(l) => l,
                TidChoice::Allocate => {
                    let mut l = self.next_low;
                    while self
                        .waiting
                        .contains_key(&tid::match_key(tid::compose(hi, l), class.0))
                    {
                        l = l.wrapping_add(1);
                    }
                    self.next_low = l.wrapping_add(1);
                    l
                }
            };
            let t = tid::compose(hi, low);
            Mad::new_unchecked(&mut mad[..]).set_tid(t);
            t
        };
        let key = tid::match_key(tid, class.0);
        if (!timeout.is_zero() && self.waiting.contains_key(&key))
            || (rmpp_transfer && self.rmpp_out_conflict(key, &dest))
        {
            return Err(SendError::DuplicateTid { tid, class });
        }
        let rmpp = if rmpp_transfer {
            let initial_window = if is_response {
                self.response_window(aidx, &mad, &dest)
            } else {
                1
            };
            let cfg = SenderConfig {
                ack_timeout: SenderConfig::kernel_ack_timeout(timeout),
                retries: retries.max(SenderConfig::default().retries),
                initial_window,
                expects_response: !timeout.is_zero(),
                resp_time: mad_core::wire::rmpp::RMPP_NO_RESP_TIME,
            };
            // The sender owns the message (no copy: a long message is
            // already a Vec); a retry starts again from its bytes.
            let message = std::mem::take(&mut mad).into_vec();
            let sender = Sender::from_message(message, class.data_offset(), cfg, now)
                .map_err(|e| SendError::BadSend(e.to_string()))?;
            Some(Box::new(RmppTx {
                sender,
                deadline: None,
                cfg,
            }))
        } else {
            None
        };
        // Solicited flow control: a request awaiting a response waits in
        // the backlog while its agent or the port is at its limit, or
        // while earlier requests wait there.
        let solicited = !timeout.is_zero() && !is_response && !rmpp_transfer;
        let queue = solicited && !self.has_flow_room(aidx);
        self.generation = self.generation.wrapping_add(1);
        let entry = self.sends.vacant_entry();
        let idx = entry.key();
        let id = SendId {
            index: u32::try_from(idx).unwrap_or(u32::MAX),
            generation: self.generation,
        };
        let total =
            total_timeout.unwrap_or_else(|| timeout.saturating_mul(retries.saturating_add(1)));
        // An RMPP transfer with no response expected still honours a
        // total timeout the caller gave.
        let bounded = !timeout.is_zero() || (rmpp_transfer && total_timeout.is_some());
        let abs_deadline = (bounded && !queue).then(|| now + total);
        entry.insert(SendSlot {
            id,
            agent: aidx,
            key,
            tid,
            qp,
            // Empty for an RMPP transfer: its sender holds the message.
            mad,
            dest,
            timeout,
            retries_left: retries,
            retries_used: 0,
            attempt: 0,
            abs_deadline,
            wr: 0,
            awaiting: false,
            rmpp_active: rmpp_transfer,
            deadline: None,
            failed: None,
            response: None,
            flush_reposted: false,
            extend_abs: false,
            rmpp,
            cookie,
            queued: None,
            counted: false,
            total,
            prev: NIL,
            next: NIL,
        });
        if queue {
            self.flow.seq += 1;
            let seq = self.flow.seq;
            let s = &mut self.sends[idx];
            s.queued = Some(seq);
            s.awaiting = true;
            self.waiting.insert(key, idx);
            let a = &mut self.agents[aidx];
            a.backlog.insert((seq, idx));
            a.stats.sends += 1;
            a.stats.backlogged += 1;
            self.link_send(aidx, idx);
            self.stats.sends += 1;
            self.stats.backlogged += 1;
            self.mark_flow_ready(aidx);
            self.pump_backlog(now);
            return Ok(id);
        }
        // The first work request: its failure is the caller's error and
        // nothing completes.
        let first = if rmpp_transfer {
            self.post_next_segment(idx, now).map(|_| ())
        } else {
            self.post(idx)
        };
        if let Err(e) = first {
            self.sends.remove(idx);
            return Err(SendError::Port(e));
        }
        if rmpp_transfer {
            self.route_rmpp(idx);
        }
        if !timeout.is_zero() {
            self.sends[idx].awaiting = true;
            self.waiting.insert(key, idx);
        }
        if solicited {
            self.take_flow_slot(idx);
        }
        self.agents[aidx].stats.sends += 1;
        self.link_send(aidx, idx);
        self.stats.sends += 1;
        if rmpp_transfer {
            self.pump_rmpp(idx, now);
        }
        Ok(id)
    }

    // ----- flow control -----

    /// True if a new request of agent `aidx` may go on the wire now.
    fn has_flow_room(&self, aidx: usize) -> bool {
        let a = &self.agents[aidx];
        a.backlog.is_empty()
            && a.unanswered < self.flow.agent_limit
            && self.flow.unanswered < self.flow.port_limit
            && self.flow.ready.is_empty()
    }

    fn take_flow_slot(&mut self, idx: usize) {
        let s = &mut self.sends[idx];
        if !s.counted {
            s.counted = true;
            self.agents[s.agent].unanswered += 1;
            self.flow.unanswered += 1;
        }
    }

    /// The send no longer awaits a response on the wire: its slot goes to
    /// the backlog (posted by the next [`Engine::pump_backlog`]).
    fn release_flow_slot(&mut self, idx: usize) {
        let s = &mut self.sends[idx];
        if s.counted {
            s.counted = false;
            let aidx = s.agent;
            let a = &mut self.agents[aidx];
            a.unanswered = a.unanswered.saturating_sub(1);
            self.flow.unanswered = self.flow.unanswered.saturating_sub(1);
            self.mark_flow_ready(aidx);
        }
    }

    /// Queues agent `aidx` for a port slot if it has a backlog and room
    /// under its own limit.
    fn mark_flow_ready(&mut self, aidx: usize) {
        let limit = self.flow.agent_limit;
        let a = &mut self.agents[aidx];
        if !a.fc_ready && !a.closing && !a.backlog.is_empty() && a.unanswered < limit {
            a.fc_ready = true;
            self.flow.ready.push_back(aidx);
        }
    }

    /// Posts backlogged requests while the port has room, one per agent
    /// in turn. O(log n) per request posted.
    fn pump_backlog(&mut self, now: Instant) {
        while self.flow.unanswered < self.flow.port_limit {
            let Some(aidx) = self.flow.ready.pop_front() else {
                break;
            };
            let limit = self.flow.agent_limit;
            let Some(a) = self.agents.get_mut(aidx) else {
                continue;
            };
            if !a.fc_ready {
                continue;
            }
            a.fc_ready = false;
            if a.closing || a.unanswered >= limit {
                continue;
            }
            let Some((_, sidx)) = a.backlog.pop_first() else {
                continue;
            };
            self.post_queued(sidx, now);
            if self.agents.contains(aidx) {
                self.mark_flow_ready(aidx);
            }
        }
    }

    /// First post of a request that waited in the backlog.
    fn post_queued(&mut self, idx: usize, now: Instant) {
        let s = &mut self.sends[idx];
        s.queued = None;
        if s.extend_abs {
            // A modify while queued: the total follows the new timeout.
            s.extend_abs = false;
            s.total = s
                .total
                .max(s.timeout.saturating_mul(s.retries_left.saturating_add(1)));
        }
        s.abs_deadline = Some(now + s.total);
        match self.post(idx) {
            Ok(()) => self.take_flow_slot(idx),
            Err(e) => {
                let st = port_failure(&e);
                self.fail(idx, st);
                self.settle(idx, Some(now));
            }
        }
    }

    /// Requests of `agent` on the wire awaiting a response (they hold a
    /// flow-control slot).
    #[must_use]
    pub fn agent_unanswered(&self, agent: AgentId) -> usize {
        self.agent_idx(agent)
            .map_or(0, |i| self.agents[i].unanswered)
    }

    /// Requests of `agent` waiting in its backlog for a flow-control slot.
    #[must_use]
    pub fn agent_backlog(&self, agent: AgentId) -> usize {
        self.agent_idx(agent)
            .map_or(0, |i| self.agents[i].backlog.len())
    }

    /// Requests on the wire awaiting a response, over all agents.
    #[must_use]
    pub fn unanswered(&self) -> usize {
        self.flow.unanswered
    }

    /// The flow-control limits in force: (per agent, per port);
    /// `usize::MAX` means none.
    #[must_use]
    pub fn flow_limits(&self) -> (usize, usize) {
        (self.flow.agent_limit, self.flow.port_limit)
    }

    /// Posts the send's MAD once more (first post, retry, flush repost).
    /// How long the layer below should hold request `idx` for its answer
    /// ([`mad_core::transport::Transport::post_request`]): this attempt's
    /// timeout, for a request that expects a response; `None` otherwise.
    ///
    /// An RMPP request's last DATA segment is held longer (twice the
    /// timeout and 5 s more): the answer comes only after the final ACK,
    /// the receiver's ACKs each take one of the transfer's waiting
    /// segments below umad (the earliest-expiring first), and the answer
    /// must find one still waiting (seen against the real kernel: a 1 MiB
    /// transfer's GetResp arrived after every segment's wait had ended).
    pub(super) fn answer_wait(&self, idx: usize, mad: &[u8]) -> Option<Duration> {
        let s = &self.sends[idx];
        let request = mad.get(3).is_some_and(|m| m & 0x80 == 0);
        if !request || s.timeout.is_zero() {
            return None;
        }
        let wait = self.interval(s);
        let last_segment = is_rmpp_active(mad)
            && rmpp_type(mad) == RmppType::DATA
            && mad
                .get(26)
                .is_some_and(|f| f & mad_core::wire::rmpp::RMPP_FLAG_LAST != 0);
        Some(if last_segment {
            wait.saturating_mul(2) + Duration::from_secs(5)
        } else {
            wait
        })
    }

    /// A refused post is counted ([`EngineStats::post_failures`]).
    fn post(&mut self, idx: usize) -> Result<(), PortError> {
        self.post_wr(idx, false)
    }

    /// Posts send `idx`'s MAD, or the RMPP segment in `self.seg` when
    /// `segment`, with its answer wait ([`Engine::answer_wait`]); a refused
    /// post is counted.
    pub(super) fn post_wr(&mut self, idx: usize, segment: bool) -> Result<(), PortError> {
        let s = &self.sends[idx];
        let mad: &[u8] = if segment { &self.seg } else { &s.mad };
        let wait = self.answer_wait(idx, mad);
        let agent = s.agent;
        if let Err(e) = self
            .port
            .post_waiting(self.client, s.qp, mad, &s.dest, s.id.as_u64(), wait)
        {
            self.count_post_failure(Some(agent));
            return Err(e);
        }
        self.sends[idx].wr += 1;
        self.stats.posted += 1;
        Ok(())
    }

    /// Records the send's final failure (the first one wins) and drops
    /// its response and RMPP references.
    fn fail(&mut self, idx: usize, status: SendStatus) {
        self.release_flow_slot(idx);
        let s = &mut self.sends[idx];
        if s.failed.is_none() && s.response.is_none() {
            s.failed = Some(status);
        }
        if s.awaiting {
            s.awaiting = false;
            if self.waiting.get(&s.key) == Some(&idx) {
                self.waiting.remove(&s.key);
            }
        }
        if s.deadline.take().is_some() {
            self.agents[s.agent].timeouts.remove(idx);
        }
        if let Some(tx) = s.rmpp.as_mut() {
            tx.sender.cancel();
            while tx.sender.poll_event().is_some() {}
        }
        self.end_rmpp(idx);
        self.rearm_rmpp(idx);
    }

    /// Completes the send if no reference is left; otherwise starts its
    /// response timer when only the response reference is left.
    fn settle(&mut self, idx: usize, now: Option<Instant>) {
        let Some(s) = self.sends.get(idx) else {
            return;
        };
        if s.refs() == 0 {
            self.finish(idx);
            return;
        }
        if let Some(now) = now {
            if s.wr == 0
                && s.queued.is_none()
                && s.awaiting
                && !s.rmpp_active
                && s.deadline.is_none()
                && s.failed.is_none()
            {
                self.start_wait(idx, now);
            }
        }
    }

    fn interval(&self, s: &SendSlot) -> Duration {
        let linear = self.cfg.linear_retries;
        if s.attempt < linear {
            s.timeout
        } else {
            let shift = (s.attempt - linear + 1).min(20);
            s.timeout
                .saturating_mul(1u32 << shift)
                .min(self.cfg.max_backoff.max(s.timeout))
        }
    }

    fn start_wait(&mut self, idx: usize, now: Instant) {
        let interval = self.interval(&self.sends[idx]);
        let s = &mut self.sends[idx];
        if std::mem::take(&mut s.extend_abs) {
            let cover = now + s.timeout.saturating_mul(s.retries_left.saturating_add(1));
            s.abs_deadline = Some(s.abs_deadline.map_or(cover, |a| a.max(cover)));
        }
        let mut d = now + interval;
        if let Some(a) = s.abs_deadline {
            d = d.min(a);
        }
        s.deadline = Some(d);
        self.agents[s.agent].timeouts.insert(d, idx);
    }

    /// Puts send `idx` at the head of agent `aidx`'s list.
    fn link_send(&mut self, aidx: usize, idx: usize) {
        let a = &mut self.agents[aidx];
        let old = a.sends.head;
        a.sends.head = idx;
        a.sends.len += 1;
        let s = &mut self.sends[idx];
        s.prev = NIL;
        s.next = old;
        if old != NIL {
            self.sends[old].prev = idx;
        }
    }

    /// Takes a send whose slot is already gone (its neighbours were
    /// `prev` and `next`) out of agent `aidx`'s list.
    fn unlink_send(&mut self, aidx: usize, prev: usize, next: usize) {
        let a = &mut self.agents[aidx];
        a.sends.len = a.sends.len.saturating_sub(1);
        if prev == NIL {
            a.sends.head = next;
        } else {
            self.sends[prev].next = next;
        }
        if next != NIL {
            self.sends[next].prev = prev;
        }
    }

    /// The send indexes of agent `aidx`, newest first.
    fn agent_sends(&self, aidx: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.agents[aidx].sends.len);
        let mut i = self.agents[aidx].sends.head;
        while i != NIL {
            out.push(i);
            i = self.sends[i].next;
        }
        out
    }

    fn finish(&mut self, idx: usize) {
        self.release_flow_slot(idx);
        let s = self.sends.remove(idx);
        if let Some(seq) = s.queued {
            self.agents[s.agent].backlog.remove(&(seq, idx));
        }
        if s.awaiting && self.waiting.get(&s.key) == Some(&idx) {
            self.waiting.remove(&s.key);
        }
        if let Some(list) = self.rmpp_out.get_mut(&s.key) {
            list.retain(|&i| i != idx);
            if list.is_empty() {
                self.rmpp_out.remove(&s.key);
            }
        }
        if let Some(tx) = &s.rmpp {
            if tx.deadline.is_some() {
                self.rmpp_timers.remove(idx);
            }
        }
        let status = s.failed.unwrap_or(SendStatus::Success);
        let aidx = s.agent;
        let a = &mut self.agents[aidx];
        if s.deadline.is_some() {
            a.timeouts.remove(idx);
        }
        self.unlink_send(aidx, s.prev, s.next);
        let a = &mut self.agents[aidx];
        a.stats.completed += 1;
        match status {
            SendStatus::Success => a.stats.succeeded += 1,
            SendStatus::Timeout => a.stats.timed_out += 1,
            SendStatus::Canceled | SendStatus::Flushed => a.stats.canceled += 1,
            _ => a.stats.failed += 1,
        }
        self.stats.completions += 1;
        let c = Completion {
            send: s.id,
            tid: s.tid,
            status,
            // Also kept when a work-request error came after it.
            response: s.response,
            retries: s.retries_used,
            cookie: s.cookie,
        };
        self.push_event(aidx, AgentEvent::SendDone(c));
    }

    /// Cancels `send`: it completes (asynchronously, through its agent's
    /// events) with [`SendStatus::Canceled`], at once if it was only
    /// waiting for a response, else when its work requests complete. A
    /// response arriving later no longer matches.
    ///
    /// # Errors
    /// [`SendError::UnknownSend`] if it completed already;
    /// [`SendError::NotActive`] if it already failed, was canceled or was
    /// answered.
    pub fn cancel(&mut self, send: SendId) -> Result<(), SendError> {
        let idx = self.send_idx(send).ok_or(SendError::UnknownSend(send))?;
        let s = &self.sends[idx];
        if s.failed.is_some() || s.response.is_some() {
            return Err(SendError::NotActive(send));
        }
        self.fail(idx, SendStatus::Canceled);
        self.settle(idx, None);
        Ok(())
    }

    /// Changes the response timeout of `send` (the kernel's
    /// `ib_modify_mad`); zero cancels. If the send is waiting for its
    /// response the new deadline is `now + timeout`; if its work request
    /// is still in flight the new timeout applies when it completes. The
    /// absolute deadline grows to cover the new timeout for the retries
    /// left.
    ///
    /// # Errors
    /// As [`Engine::cancel`], and [`SendError::NotWaiting`] for a send
    /// that expects no response.
    pub fn modify(
        &mut self,
        send: SendId,
        timeout: Duration,
        now: Instant,
    ) -> Result<(), SendError> {
        if timeout.is_zero() {
            return self.cancel(send);
        }
        let idx = self.send_idx(send).ok_or(SendError::UnknownSend(send))?;
        let s = &mut self.sends[idx];
        if s.failed.is_some() || s.response.is_some() {
            return Err(SendError::NotActive(send));
        }
        if !s.awaiting {
            return Err(SendError::NotWaiting(send));
        }
        s.timeout = timeout;
        if s.deadline.is_none() {
            // Still in flight: the new timeout counts from the completion.
            s.extend_abs = true;
            return Ok(());
        }
        let cover = now + timeout.saturating_mul(s.retries_left.saturating_add(1));
        s.abs_deadline = Some(s.abs_deadline.map_or(cover, |a| a.max(cover)));
        if s.deadline.take().is_some() {
            let a = s.agent;
            self.agents[a].timeouts.remove(idx);
            let nd = now + timeout;
            self.sends[idx].deadline = Some(nd);
            self.agents[a].timeouts.insert(nd, idx);
        }
        Ok(())
    }

    // ----- events -----

    fn push_event(&mut self, aidx: usize, ev: AgentEvent) {
        let a = &mut self.agents[aidx];
        a.events.push_back(ev);
        if !a.in_ready {
            a.in_ready = true;
            self.ready.push_back(aidx);
        }
    }

    fn deliver_recv(&mut self, aidx: usize, msg: Message) {
        let bound = self.cfg.recv_queue_bound;
        let len = msg.bytes().len();
        let a = &mut self.agents[aidx];
        let over_bytes = a.queued_recv > 0
            && a.queued_recv_bytes.saturating_add(len) > self.cfg.recv_queue_bytes;
        if a.queued_recv >= bound || over_bytes {
            a.stats.recv_dropped += 1;
            self.stats.recv_dropped += 1;
            return;
        }
        a.queued_recv += 1;
        a.queued_recv_bytes += len;
        a.stats.received += 1;
        self.push_event(aidx, AgentEvent::Received(msg));
    }

    fn broadcast(&mut self, ev: &AgentEvent) {
        let idxs: Vec<usize> = self
            .agents
            .iter()
            .filter(|(_, a)| !a.closing)
            .map(|(i, _)| i)
            .collect();
        for i in idxs {
            self.push_event(i, ev.clone());
        }
    }

    fn pop_event(&mut self, delivering: bool) -> Option<(AgentId, AgentEvent)> {
        while let Some(idx) = self.ready.pop_front() {
            let Some(a) = self.agents.get_mut(idx) else {
                continue;
            };
            a.in_ready = false;
            let Some(ev) = a.events.pop_front() else {
                continue;
            };
            if let AgentEvent::Received(m) = &ev {
                a.queued_recv = a.queued_recv.saturating_sub(1);
                a.queued_recv_bytes = a.queued_recv_bytes.saturating_sub(m.bytes().len());
            }
            if !a.events.is_empty() {
                a.in_ready = true;
                self.ready.push_back(idx);
            }
            if delivering {
                a.delivering += 1;
            }
            let id = a.id;
            self.stats.events += 1;
            self.try_reap(idx);
            return Some((id, ev));
        }
        None
    }

    /// The next event of some agent (one agent's events stay in order;
    /// agents take turns). A closing agent whose last event this is goes
    /// away with it.
    pub fn poll_event(&mut self) -> Option<(AgentId, AgentEvent)> {
        self.pop_event(false)
    }

    /// As [`Engine::poll_event`], but the agent stays registered (closing
    /// or not) until [`Engine::end_delivery`] says the event has been
    /// handled: a runtime uses this so that deregistration waits for a
    /// callback in progress.
    pub fn begin_delivery(&mut self) -> Option<(AgentId, AgentEvent)> {
        self.pop_event(true)
    }

    /// The event taken by [`Engine::begin_delivery`] for `agent` has been
    /// handled.
    pub fn end_delivery(&mut self, agent: AgentId) {
        if let Some(idx) = self.agent_idx(agent) {
            let a = &mut self.agents[idx];
            a.delivering = a.delivering.saturating_sub(1);
            self.try_reap(idx);
        }
    }

    /// Counts a received MAD that a runtime dropped because `agent`'s
    /// delivery channel was full.
    pub fn count_recv_drop(&mut self, agent: AgentId) {
        self.stats.recv_dropped += 1;
        if let Some(idx) = self.agent_idx(agent) {
            self.agents[idx].stats.recv_dropped += 1;
        }
    }

    /// Takes every queued event of `agent` out of the queue (in order).
    pub fn take_events(&mut self, agent: AgentId) -> Vec<AgentEvent> {
        let Some(idx) = self.agent_idx(agent) else {
            return Vec::new();
        };
        let a = &mut self.agents[idx];
        a.queued_recv = 0;
        a.queued_recv_bytes = 0;
        let v: Vec<AgentEvent> = a.events.drain(..).collect();
        self.stats.events += v.len() as u64;
        self.try_reap(idx);
        v
    }

    /// Takes the completion of `send` out of `agent`'s queue, if it is
    /// there.
    pub fn take_completion(&mut self, agent: AgentId, send: SendId) -> Option<Completion> {
        let idx = self.agent_idx(agent)?;
        let a = &mut self.agents[idx];
        let pos = a
            .events
            .iter()
            .position(|e| matches!(e, AgentEvent::SendDone(c) if c.send == send))?;
        let ev = a.events.remove(pos);
        self.stats.events += 1;
        self.try_reap(idx);
        match ev {
            Some(AgentEvent::SendDone(c)) => Some(c),
            _ => None,
        }
    }

    // ----- driving -----

    /// Does everything due at `now`: polls the port (completions,
    /// receives, async events, recovery), dispatches what it reports,
    /// handles expired response, RMPP and reassembly timers, and posts
    /// backlogged requests that flow control now lets go. Returns true if
    /// anything happened.
    pub fn poll(&mut self, now: Instant) -> bool {
        // Timers first, so that the port posts what they resend in the
        // same call; then whatever the port reports; then the timers its
        // reports made due (a wait whose absolute deadline has passed).
        let mut progress = self.handle_timeouts(now);
        self.port.poll(now);
        while let Some(ev) = self.port.poll_client(self.client) {
            progress = true;
            self.on_port_event(ev, now);
        }
        progress |= self.handle_timeouts(now);
        let unanswered = self.flow.unanswered;
        self.pump_backlog(now);
        progress |= self.flow.unanswered != unanswered;
        progress
    }

    fn on_port_event(&mut self, ev: PortEvent, now: Instant) {
        match ev {
            PortEvent::SendComplete { cookie, status, .. } => {
                if cookie == INTERNAL {
                    self.stats.internal_completions += 1;
                    if status != WcStatus::Success {
                        self.stats.internal_errors += 1;
                    }
                } else {
                    self.on_wc(SendId::from_u64(cookie), status, now);
                }
            }
            PortEvent::Received(r) => self.on_recv(r, now),
            PortEvent::Async(e) => self.broadcast(&AgentEvent::Async(e)),
            PortEvent::ResetPending => {
                self.broadcast(&AgentEvent::ResetPending);
                let hold: FastSet<usize> = self
                    .agents
                    .iter()
                    .filter(|(_, a)| a.spec.hold_reset && !a.closing)
                    .map(|(i, _)| i)
                    .collect();
                if hold.is_empty() {
                    let _ = self.port.ack_reset(self.client);
                } else {
                    self.reset_hold = Some(hold);
                }
            }
            PortEvent::ResetEnd => {
                self.reset_hold = None;
                self.broadcast(&AgentEvent::ResetEnd);
            }
            PortEvent::DeviceFatal => self.broadcast(&AgentEvent::DeviceFatal),
            PortEvent::Reopened => self.broadcast(&AgentEvent::Reopened),
            _ => {}
        }
    }

    fn on_wc(&mut self, send: SendId, status: WcStatus, now: Instant) {
        let Some(idx) = self.send_idx(send) else {
            return;
        };
        let s = &mut self.sends[idx];
        s.wr = s.wr.saturating_sub(1);
        if status != WcStatus::Success && s.failed.is_none() && s.response.is_some() {
            // The response beat this completion. The kernel records the
            // error and reports it to the send handler after the receive
            // handler has had the response; so does this: the completion
            // carries the error status and the response. A flush the
            // kernel would repost once (and then normally report success)
            // is not reposted: the answer is in.
            let repostable =
                status == WcStatus::WrFlushErr && !s.flush_reposted && s.rmpp.is_none();
            if !repostable {
                s.failed = Some(if status == WcStatus::WrFlushErr {
                    SendStatus::Flushed
                } else {
                    SendStatus::WcError(status)
                });
                self.stats.late_wc_errors += 1;
            }
        } else if status != WcStatus::Success && s.failed.is_none() {
            let closing = self.agents[s.agent].closing;
            if status == WcStatus::WrFlushErr && !s.flush_reposted && !closing && s.rmpp.is_none() {
                s.flush_reposted = true;
                self.stats.flush_reposts += 1;
                if self.post(idx).is_ok() {
                    return;
                }
                self.fail(idx, SendStatus::Flushed);
            } else if status == WcStatus::WrFlushErr {
                self.fail(idx, SendStatus::Flushed);
            } else {
                self.fail(idx, SendStatus::WcError(status));
            }
        }
        self.settle(idx, Some(now));
    }

    fn handle_timeouts(&mut self, now: Instant) -> bool {
        let mut progress = false;
        let due: Vec<usize> = self
            .agents
            .iter()
            .filter(|(_, a)| a.timeouts.first().is_some_and(|(d, _)| d <= now))
            .map(|(i, _)| i)
            .collect();
        for aidx in due {
            while let Some((d, sidx)) = self.agents[aidx].timeouts.first() {
                if d > now {
                    break;
                }
                self.agents[aidx].timeouts.remove(sidx);
                self.sends[sidx].deadline = None;
                self.on_response_timeout(sidx, now);
                progress = true;
            }
        }
        while let Some((d, sidx)) = self.rmpp_timers.first() {
            if d > now {
                break;
            }
            self.rmpp_timers.remove(sidx);
            self.on_rmpp_timer(sidx, now);
            progress = true;
        }
        let rx_due: Vec<usize> = self
            .agents
            .iter()
            .filter(|(_, a)| {
                a.rmpp_rx
                    .as_ref()
                    .and_then(ReceiverTable::poll_timeout)
                    .is_some_and(|d| d <= now)
            })
            .map(|(i, _)| i)
            .collect();
        for aidx in rx_due {
            if let Some(rx) = self.agents[aidx].rmpp_rx.as_mut() {
                rx.handle_timeout(now);
            }
            self.drain_rx(aidx, now);
            progress = true;
        }
        progress
    }

    /// True while the answer to send `idx` is being reassembled by its
    /// agent's RMPP receiver.
    fn answer_arriving(&self, idx: usize) -> bool {
        let s = &self.sends[idx];
        self.agents[s.agent].rmpp_rx.as_ref().is_some_and(|rx| {
            rx.is_receiving(
                s.key.0,
                tid::TID_MATCH_MASK,
                s.key.1,
                &mad_rmpp::Peer::of(&s.dest),
            )
        })
    }

    fn on_response_timeout(&mut self, idx: usize, now: Instant) {
        let s = &self.sends[idx];
        if !s.awaiting || s.failed.is_some() {
            self.settle(idx, Some(now));
            return;
        }
        let within = s.abs_deadline.is_none_or(|a| now < a);
        if within && !self.agents[s.agent].closing && self.answer_arriving(idx) {
            // The answer is arriving as an RMPP transfer: no retry (it would
            // restart the responder's transfer); wait on, up to the absolute
            // deadline, while the transfer's own timers govern it.
            self.start_wait(idx, now);
            return;
        }
        let s = &self.sends[idx];
        let retry = s.retries_left > 0 && within && !self.agents[s.agent].closing;
        if retry {
            let s = &mut self.sends[idx];
            s.retries_left -= 1;
            s.retries_used += 1;
            s.attempt += 1;
            s.flush_reposted = false;
            let aidx = s.agent;
            self.agents[aidx].stats.retries += 1;
            self.stats.retries += 1;
            if self.sends[idx].rmpp.is_some() {
                // An RMPP request: the same message with the same TID as a
                // new transfer.
                self.restart_rmpp(idx, now);
            } else if let Err(e) = self.post(idx) {
                let st = port_failure(&e);
                self.fail(idx, st);
            }
        } else {
            self.fail(idx, SendStatus::Timeout);
        }
        self.settle(idx, Some(now));
    }

    fn on_recv(&mut self, r: Arc<Received>, now: Instant) {
        let mad = &r.mad[..];
        if mad.len() < MAD_HEADER_LEN || mad[0] != 1 {
            self.stats.malformed += 1;
            return;
        }
        let class = MgmtClass(mad[1]);
        if class.is_smp() != (r.qp == Qp::Qp0) {
            self.stats.malformed += 1;
            return;
        }
        let view = Mad::new_unchecked(mad);
        let key = tid::match_key(view.tid(), class.0);
        // ACK / STOP / ABORT for one of our outbound transfers.
        if class.is_rmpp_class()
            && is_rmpp_active(mad)
            && rmpp_type(mad) != RmppType::DATA
            && self.on_rmpp_control(key, &r, now)
        {
            return;
        }
        if view.is_response() {
            let Some(&idx) = self.waiting.get(&key) else {
                self.stats.unmatched_responses += 1;
                return;
            };
            if self.sends[idx].queued.is_some() {
                // Still in the backlog: not sent, so not answered (a stale
                // answer to an earlier send with the same TID).
                self.stats.unmatched_responses += 1;
                return;
            }
            if !self.answers_from_destination(idx, &r.src) {
                self.stats.wrong_source += 1;
                return;
            }
            let aidx = self.sends[idx].agent;
            if self.agents[aidx].spec.rmpp && class.is_rmpp_class() && is_rmpp_active(mad) {
                if let Some(rx) = self.agents[aidx].rmpp_rx.as_mut() {
                    rx.handle(mad, &r.src, now);
                }
                self.drain_rx(aidx, now);
                return;
            }
            self.stats.responses_matched += 1;
            self.on_response(idx, Message::new(r), now);
            return;
        }
        let oui = if class.is_vendor_range2() && mad.len() >= 40 {
            u32::from_be_bytes([0, mad[37], mad[38], mad[39]])
        } else {
            0
        };
        let owner = self
            .table
            .lookup(r.qp, class.0, mad[2], mad[3], oui)
            .and_then(|a| self.agent_idx(a))
            .filter(|&i| !self.agents[i].closing);
        match owner {
            Some(aidx) => {
                if self.agents[aidx].spec.rmpp && class.is_rmpp_class() && is_rmpp_active(mad) {
                    if let Some(rx) = self.agents[aidx].rmpp_rx.as_mut() {
                        // A DS ACK (the requester's copy of our final ACK,
                        // carrying the request's method) records the
                        // window for our response there.
                        rx.handle(mad, &r.src, now);
                    }
                    self.drain_rx(aidx, now);
                } else {
                    self.deliver_recv(aidx, Message::new(r));
                }
            }
            None => {
                self.stats.unclaimed_requests += 1;
                let m = view.method();
                if self.cfg.answer_unmatched && (m == Method::GET || m == Method::SET) {
                    self.answer_unsupported(&r);
                }
            }
        }
    }

    /// True if a MAD from `src` may answer send `idx` (the kernel's
    /// `rcv_has_same_gid` as AGENTS.md §2 step 8 / MAD.md §5 restate it for
    /// this layer; see the [module documentation](self#response-matching)).
    fn answers_from_destination(&self, idx: usize, src: &Address) -> bool {
        if !self.cfg.check_response_source {
            return true;
        }
        let s = &self.sends[idx];
        if s.key.1 == MgmtClass::SUBN_DIRECTED_ROUTE.0 {
            return true;
        }
        match (&s.dest.grh, &src.grh) {
            (Some(d), Some(g)) => d.gid == g.gid,
            (None, None) => s.dest.lid == PERMISSIVE_LID || s.dest.lid == src.lid,
            _ => false,
        }
    }

    /// The kernel's `generate_unmatched_resp`: GetResp with status 0x000C
    /// (method/attribute unsupported), the D bit set for directed route.
    fn answer_unsupported(&mut self, r: &Received) {
        let mut resp = r.mad.clone();
        resp.truncate(MAD_LEN);
        let class = MgmtClass(resp[1]);
        {
            let mut m = Mad::new_unchecked(&mut resp[..]);
            m.set_method(Method::GET, true);
            let mut status = MadStatus::METHOD_ATTR_UNSUPPORTED.0;
            if class == MgmtClass::SUBN_DIRECTED_ROUTE {
                status = (status & DR_STATUS_MASK) | DR_DIRECTION_BIT;
            }
            m.set_status(MadStatus(status));
        }
        let mut dest = r.src;
        if r.qp == Qp::Qp1 {
            dest.qkey = GSI_QKEY;
        } else {
            dest.qkey = 0;
        }
        if class == MgmtClass::SUBN_DIRECTED_ROUTE {
            dest.lid = PERMISSIVE_LID;
        }
        if self.post_internal(None, r.qp, &resp, &dest) {
            self.stats.unsupported_answered += 1;
        }
    }

    fn on_response(&mut self, idx: usize, msg: Message, now: Instant) {
        self.release_flow_slot(idx);
        let s = &mut self.sends[idx];
        s.response = Some(msg);
        s.awaiting = false;
        if self.waiting.get(&s.key) == Some(&idx) {
            self.waiting.remove(&s.key);
        }
        if s.deadline.take().is_some() {
            self.agents[s.agent].timeouts.remove(idx);
        }
        if let Some(tx) = s.rmpp.as_mut() {
            // Answered: the request's transfer (active, or fully
            // acknowledged and still routed for repeated final ACKs) ends.
            tx.sender.cancel();
            while tx.sender.poll_event().is_some() {}
            self.end_rmpp(idx);
            self.rearm_rmpp(idx);
        }
        self.settle(idx, Some(now));
    }
}

/// The final status of a send whose repost the port refused.
fn port_failure(e: &PortError) -> SendStatus {
    match e {
        PortError::Dead { .. } => SendStatus::Flushed,
        _ => SendStatus::WcError(WcStatus::LocQpOpErr),
    }
}
