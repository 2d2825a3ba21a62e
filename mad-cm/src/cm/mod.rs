//! [`Cm`]: every connection of one port. The state owner is split by
//! concern into sibling modules: the user's calls here, received MADs in
//! `recv`, deadlines and the helpers every transition uses in `timers`,
//! message building in `msgs`.

mod msgs;
mod recv;
mod timers;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::Instant;

use mad_core::wire::cm::{timeout_duration, CmMessage, MsgRef, RejectReason};
use rand::rngs::{StdRng, SysRng};
use rand::{Rng, SeedableRng};

use crate::conn::{Conn, PeerKey, Side, State};
use crate::types::{
    AcceptParams, CmConfig, CmError, CmEvent, ConnId, ConnInfo, ConnectParams, ListenId, Transmit,
};

/// Counters of what the CM has seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CmStats {
    /// CM MADs that could not be parsed (or were of another class).
    pub malformed: u64,
    /// Repeated REQ / REP / DREQ answered from state.
    pub duplicates: u64,
    /// REQs or REPs refused as stale connections.
    pub stale: u64,
    /// Messages for no known connection (both Communication IDs must
    /// match; neither is a wildcard).
    pub unknown: u64,
    /// REQs refused before any state was made: LocalCommID 0, the table
    /// or the peer's share of it full (REJ(NoResources)).
    pub refused: u64,
    /// Connections dropped because their user did not answer in time.
    pub user_timeouts: u64,
}

/// How many entries each of the CM's tables holds: every one is bounded
/// by [`CmConfig::max_connections`] (the peers' by the connections they
/// made), whatever peers send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CmTables {
    /// Connections (timewait included).
    pub connections: usize,
    /// Connections filed by the peer's (CA GUID, Communication ID).
    pub by_remote_id: usize,
    /// Connections filed by the peer's (CA GUID, QPN).
    pub by_remote_qpn: usize,
    /// Peers holding connections their REQs made.
    pub peers: usize,
    /// Pending deadlines.
    pub timers: usize,
}

/// The connection manager of one port (sans-IO).
#[derive(Debug)]
pub struct Cm {
    cfg: CmConfig,
    conns: HashMap<ConnId, Conn>,
    /// (remote CA GUID, remote Communication ID) → connection.
    by_remote: HashMap<(u64, u32), ConnId>,
    /// (remote CA GUID, remote QPN) → connection, while it holds the QPN
    /// (until timewait ends): how stale connections are found.
    by_qpn: HashMap<(u64, u32), ConnId>,
    listeners: HashMap<u64, ListenId>,
    timers: BTreeSet<(Instant, ConnId)>,
    transmits: VecDeque<Transmit>,
    events: VecDeque<(ConnId, CmEvent)>,
    /// Connections each peer's REQs made, held until they are removed.
    per_peer: HashMap<PeerKey, usize>,
    /// Where local Communication IDs come from.
    rng: StdRng,
    next_tid: u32,
    stats: CmStats,
}

impl Cm {
    /// A CM with no connections.
    #[must_use]
    pub fn new(cfg: CmConfig) -> Self {
        let rng = match cfg.comm_id_seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            // The OS failing to give entropy is next to impossible; the
            // clock still makes the IDs differ between runs then.
            None => StdRng::try_from_rng(&mut SysRng).unwrap_or_else(|_| {
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                StdRng::seed_from_u64(t.as_nanos() as u64 ^ u64::from(std::process::id()))
            }),
        };
        Self {
            rng,
            per_peer: HashMap::new(),
            cfg,
            conns: HashMap::new(),
            by_remote: HashMap::new(),
            by_qpn: HashMap::new(),
            listeners: HashMap::new(),
            timers: BTreeSet::new(),
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            next_tid: 1,
            stats: CmStats::default(),
        }
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &CmConfig {
        &self.cfg
    }

    /// What the CM has counted.
    #[must_use]
    pub fn stats(&self) -> CmStats {
        self.stats
    }

    /// Listens for REQs to `service_id`.
    ///
    /// # Errors
    /// [`CmError::AlreadyListening`].
    pub fn listen(&mut self, service_id: u64) -> Result<ListenId, CmError> {
        if self.listeners.contains_key(&service_id) {
            return Err(CmError::AlreadyListening(service_id));
        }
        let l = ListenId(service_id);
        self.listeners.insert(service_id, l);
        Ok(l)
    }

    /// Stops listening (connections already made stay).
    pub fn unlisten(&mut self, l: ListenId) {
        self.listeners.remove(&l.0);
    }

    /// Starts a connection: sends a REQ along `params.path`.
    ///
    /// # Errors
    /// Private data over 92 bytes, a value too wide for its field (the
    /// packet lifetime over 63 included: [`CmError::OutOfRange`]), or too
    /// many connections.
    pub fn connect(&mut self, now: Instant, params: ConnectParams) -> Result<ConnId, CmError> {
        if params.path.packet_life_time > 63 {
            return Err(CmError::OutOfRange {
                what: "packet_life_time",
                value: params.path.packet_life_time.into(),
                max: 63,
            });
        }
        self.check_room()?;
        // Checked before an ID is taken, so that a refused call leaves the
        // sequence of IDs as it was.
        msgs::req(&self.cfg, ConnId(1), &params)?;
        let id = self.alloc_id();
        let req = msgs::req(&self.cfg, id, &params)?;
        let path = params.path;
        let conn = Conn {
            id,
            side: Side::Active,
            state: State::ReqSent,
            peer: path.gsi_address(),
            info: ConnInfo {
                service_id: params.service_id,
                local_qpn: params.qpn,
                local_psn: params.starting_psn,
                retry_count: params.retry_count,
                rnr_retry_count: params.rnr_retry_count,
                path,
                ack_timeout: path.ack_timeout(),
                ..ConnInfo::default()
            },
            retry: None,
            last_reply: None,
            deadline: None,
            answer_wait: path.packet_life() * 2
                + timeout_duration(params.remote_cm_response_timeout),
            max_retries: params.max_cm_retries,
            timewait: timeout_duration(path.ack_timeout()),
            auto_rtu: params.auto_rtu,
            user_wait: self.cfg.max_user_wait,
            mra_wait: None,
            remote_key: None,
            qpn_key: None,
            peer_key: None,
        };
        self.conns.insert(id, conn);
        self.send_retried(now, id, &req)?;
        Ok(id)
    }

    /// Passive side: accepts a connection request with a REP.
    ///
    /// # Errors
    /// Unknown connection, a state other than REQ received, private data
    /// over 196 bytes or a value too wide for its field.
    pub fn accept(&mut self, now: Instant, id: ConnId, p: AcceptParams) -> Result<(), CmError> {
        let c = self.conn_in(id, &[State::ReqRcvd, State::MraReqSent], "accept")?;
        let rep = msgs::rep(&self.cfg, c, &p)?;
        let c = self.conn_mut(id)?;
        c.info.local_qpn = p.qpn;
        c.info.local_psn = p.starting_psn;
        c.state = State::RepSent;
        self.send_retried(now, id, &rep)
    }

    /// Rejects a REQ (passive side) or a REP (active side, without
    /// `auto_rtu`) with `reason`.
    ///
    /// # Errors
    /// Unknown connection, a state with nothing to reject, private data over
    /// 148 bytes.
    pub fn reject(
        &mut self,
        now: Instant,
        id: ConnId,
        reason: RejectReason,
        private_data: &[u8],
    ) -> Result<(), CmError> {
        let states = [
            State::ReqRcvd,
            State::MraReqSent,
            State::RepRcvd,
            State::MraRepSent,
        ];
        let c = self.conn_in(id, &states, "reject")?;
        let of = if matches!(c.state, State::ReqRcvd | State::MraReqSent) {
            MsgRef::REQ
        } else {
            MsgRef::REP
        };
        let rej = msgs::rej(id.0, c.info.remote_comm_id, of, reason, &[], private_data)?;
        if of == MsgRef::REQ {
            let c = self.conn_reply(id, &rej)?;
            let deadline = now + c.timewait;
            c.state = State::RejSent;
            // The peer's QP never got connected: a new REQ from it is a
            // new request, not a stale one (only a repeat of this REQ is
            // answered with this REJ).
            self.unindex_qpn(id);
            self.arm(id, Some(deadline));
        } else {
            let to = c.peer;
            self.send(to, &rej)?;
            self.enter_timewait(now, id);
        }
        Ok(())
    }

    /// Sends an MRA for the REQ (passive) or REP (active) being considered:
    /// the peer waits `4.096 µs × 2^service_timeout` longer, and so may
    /// the user (within [`CmConfig::max_user_wait`]).
    ///
    /// # Errors
    /// Unknown connection, no REQ / REP to acknowledge, a service timeout
    /// over 31.
    pub fn delay(&mut self, now: Instant, id: ConnId, service_timeout: u8) -> Result<(), CmError> {
        let c = self.conn_in(id, &[State::ReqRcvd, State::RepRcvd], "send an MRA")?;
        let (of, next) = if c.state == State::ReqRcvd {
            (MsgRef::REQ, State::MraReqSent)
        } else {
            (MsgRef::REP, State::MraRepSent)
        };
        let mra = msgs::mra(id.0, c.info.remote_comm_id, of, service_timeout)?;
        let c = self.conn_reply(id, &mra)?;
        c.state = next;
        c.mra_wait = Some(timeout_duration(service_timeout) + c.info.path.packet_life());
        self.arm_user_wait(now, id);
        Ok(())
    }

    /// Active side (without `auto_rtu`): the QP is ready, send the RTU.
    /// Passive side: the QP saw its first packet before the RTU (the
    /// verbs COMM_EST event): the connection is established.
    ///
    /// # Errors
    /// Unknown connection, or nothing to establish.
    pub fn establish(&mut self, _now: Instant, id: ConnId) -> Result<(), CmError> {
        let states = [
            State::RepRcvd,
            State::MraRepSent,
            State::RepSent,
            State::MraRepRcvd,
        ];
        let c = self.conn_in(id, &states, "establish")?;
        if c.side == Side::Active {
            let rtu = msgs::rtu(id.0, c.info.remote_comm_id, &[])?;
            self.conn_reply(id, &rtu)?;
        }
        self.established(id);
        Ok(())
    }

    /// Disconnects an established connection with a DREQ.
    ///
    /// # Errors
    /// Unknown connection, not established, private data over 220 bytes.
    pub fn disconnect(
        &mut self,
        now: Instant,
        id: ConnId,
        private_data: &[u8],
    ) -> Result<(), CmError> {
        let c = self.conn_in(id, &[State::Established], "disconnect")?;
        let dreq = msgs::dreq(id.0, c.info.remote_comm_id, c.info.remote_qpn, private_data)?;
        self.conn_mut(id)?.state = State::DreqSent;
        self.send_retried(now, id, &dreq)
    }

    /// The port went away: every connection gets `DeviceRemoval`, every
    /// listener `ListenerRemoved`, and all are forgotten (rdma_cm delivers
    /// DEVICE_REMOVAL to every ID on the device, listening ones included).
    pub fn device_removed(&mut self) {
        let mut ids: Vec<ConnId> = self.conns.keys().copied().collect();
        ids.sort();
        for id in ids {
            self.events.push_back((id, CmEvent::DeviceRemoval));
        }
        let mut listeners: Vec<ListenId> = self.listeners.drain().map(|(_, l)| l).collect();
        listeners.sort();
        for listener in listeners {
            self.events
                .push_back((ConnId::NONE, CmEvent::ListenerRemoved { listener }));
        }
        self.conns.clear();
        self.by_remote.clear();
        self.by_qpn.clear();
        self.per_peer.clear();
        self.timers.clear();
        self.transmits.clear();
    }

    /// The state of connection `id`, if it exists.
    #[must_use]
    pub fn state(&self, id: ConnId) -> Option<State> {
        self.conns.get(&id).map(|c| c.state)
    }

    /// What connection `id` is known to be.
    #[must_use]
    pub fn info(&self, id: ConnId) -> Option<&ConnInfo> {
        self.conns.get(&id).map(|c| &c.info)
    }

    /// The sizes of the CM's tables.
    #[must_use]
    pub fn tables(&self) -> CmTables {
        CmTables {
            connections: self.conns.len(),
            by_remote_id: self.by_remote.len(),
            by_remote_qpn: self.by_qpn.len(),
            peers: self.per_peer.len(),
            timers: self.timers.len(),
        }
    }

    /// Number of connections held (timewait included).
    #[must_use]
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// True when no connection is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// The next MAD to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<(ConnId, CmEvent)> {
        self.events.pop_front()
    }

    /// When [`Cm::handle_timeout`] is next due.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.first().map(|(t, _)| *t)
    }

    // ---------------------------------------------------------- helpers

    fn check_room(&self) -> Result<(), CmError> {
        if self.conns.len() >= self.cfg.max_connections {
            return Err(CmError::TooManyConnections(self.conns.len()));
        }
        Ok(())
    }

    /// A new local Communication ID: random (the kernel XORs its
    /// counter with a random number for the same reason: a peer must not
    /// guess the IDs of others' connections), never 0, not in use.
    fn alloc_id(&mut self) -> ConnId {
        loop {
            let id = ConnId(self.rng.next_u32());
            if id != ConnId::NONE && !self.conns.contains_key(&id) {
                return id;
            }
        }
    }

    fn conn_mut(&mut self, id: ConnId) -> Result<&mut Conn, CmError> {
        self.conns
            .get_mut(&id)
            .ok_or(CmError::UnknownConnection(id))
    }

    /// Connection `id`, if it is in one of `states`.
    fn conn_in(&self, id: ConnId, states: &[State], what: &'static str) -> Result<&Conn, CmError> {
        let c = self.conns.get(&id).ok_or(CmError::UnknownConnection(id))?;
        if !states.contains(&c.state) {
            return Err(CmError::InvalidState {
                id,
                state: c.state.name(),
                what,
            });
        }
        Ok(c)
    }

    fn message_tid(&mut self) -> u64 {
        self.next_tid = self.next_tid.wrapping_add(1);
        u64::from(self.next_tid)
    }

    /// Queues `msg` to connection `id`'s peer as the reply to the peer's
    /// last message (what a repeat of that message gets again); the
    /// connection, to move on.
    fn conn_reply(&mut self, id: ConnId, msg: &CmMessage) -> Result<&mut Conn, CmError> {
        let to = self.conn_mut(id)?.peer;
        let mad = self.send(to, msg)?;
        let c = self.conn_mut(id)?;
        c.last_reply = Some(mad);
        Ok(c)
    }

    /// Queues `msg` to `to` and returns the MAD.
    fn send(
        &mut self,
        to: mad_core::transport::Address,
        msg: &CmMessage,
    ) -> Result<[u8; 256], CmError> {
        let tid = self.message_tid();
        let mad = msg.to_mad(tid)?;
        self.transmits.push_back(Transmit { to, mad });
        Ok(mad)
    }
}

#[cfg(test)]
mod tests;
