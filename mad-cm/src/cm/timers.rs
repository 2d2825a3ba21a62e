//! Deadlines (retries, MRA waits, the user's answer, timewait), the
//! lookup tables, and the transitions every handler shares.

use std::time::Instant;

use mad_core::wire::cm::{CmMessage, MsgRef, RejectReason};

use super::{msgs, Cm};
use crate::conn::{Retry, State};
use crate::types::{CmError, CmEvent, ConnId, DisconnectCause};

impl Cm {
    /// Handles every deadline at or before `now`: resends a message whose
    /// answer is late while retries last, then gives up on it; drops a
    /// connection whose user did not answer in time; ends timewait.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(at, id)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.remove(&(at, id));
            if let Some(c) = self.conns.get_mut(&id) {
                c.deadline = None;
                self.expire(now, id);
            }
        }
    }

    fn expire(&mut self, now: Instant, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        match c.state {
            State::Timewait => {
                self.events.push_back((id, CmEvent::TimewaitExit));
                self.remove(id);
            }
            State::RejSent => self.remove(id),
            State::ReqRcvd | State::MraReqSent | State::RepRcvd | State::MraRepSent => {
                self.user_timeout(now, id);
            }
            State::ReqSent
            | State::MraReqRcvd
            | State::RepSent
            | State::MraRepRcvd
            | State::DreqSent => {
                // An MRA's wait is over: back to waiting for the answer.
                c.state = match c.state {
                    State::MraReqRcvd => State::ReqSent,
                    State::MraRepRcvd => State::RepSent,
                    s => s,
                };
                match c.retry.as_mut() {
                    Some(r) if r.left > 0 => {
                        r.left -= 1;
                        let (mad, wait, to) = (r.mad, r.wait, c.peer);
                        self.transmits.push_back(crate::types::Transmit { to, mad });
                        self.arm(id, Some(now + wait));
                    }
                    _ => self.give_up(now, id),
                }
            }
            _ => {}
        }
    }

    /// The user did not answer the peer's REQ (passive) or REP (active)
    /// in time: the peer is told with a REJ(ConsumerReject), what the
    /// kernel sends for an ID destroyed in those states, and the user
    /// with a `ConnectError`. The passive side forgets the connection
    /// (it never had a QP connected); the active side keeps its QP in
    /// timewait.
    fn user_timeout(&mut self, now: Instant, id: ConnId) {
        let Some(c) = self.conns.get(&id) else {
            return;
        };
        self.stats.user_timeouts += 1;
        let passive = matches!(c.state, State::ReqRcvd | State::MraReqSent);
        let of = if passive { MsgRef::REQ } else { MsgRef::REP };
        let (remote, to) = (c.info.remote_comm_id, c.peer);
        if let Ok(rej) = msgs::rej(id.0, remote, of, RejectReason::CONSUMER_DEFINED, &[], &[]) {
            let _ = self.send(to, &rej);
        }
        let why = if passive {
            "the REQ was not answered in time"
        } else {
            "the connection was not established in time after the REP"
        };
        self.events.push_back((id, CmEvent::ConnectError { why }));
        if passive {
            self.remove(id);
        } else {
            self.enter_timewait(now, id);
        }
    }

    /// Arms the deadline of the user's answer to connection `id`: what the
    /// peer waits (after the last MRA this side sent, if any), at most
    /// [`CmConfig::max_user_wait`](crate::CmConfig::max_user_wait).
    pub(super) fn arm_user_wait(&mut self, now: Instant, id: ConnId) {
        let Some(c) = self.conns.get(&id) else {
            return;
        };
        let wait = (c.user_wait + c.mra_wait.unwrap_or_default()).min(self.cfg.max_user_wait);
        self.arm(id, Some(now + wait));
    }

    /// The message being retried got no answer at all.
    fn give_up(&mut self, now: Instant, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.retry = None;
        match c.state {
            State::ReqSent => {
                // Tell the peer (it may hold the REQ), as the kernel does
                // when it destroys an ID whose REQ went unanswered: its
                // REJ(Timeout) names this CA in the ARI, by which the peer
                // finds the connection without knowing this side's ID.
                let guid = self.cfg.ca_guid.to_be_bytes();
                let to = c.peer;
                if let Ok(rej) =
                    msgs::rej(id.0, 0, MsgRef::OTHER, RejectReason::TIMEOUT, &guid, &[])
                {
                    let _ = self.send(to, &rej);
                }
                self.events.push_back((id, CmEvent::Unreachable));
                self.remove(id);
            }
            State::RepSent => {
                // Tell the peer, as the kernel does when it destroys an ID
                // whose REP was never answered.
                let guid = self.cfg.ca_guid.to_be_bytes();
                let (remote, to) = (c.info.remote_comm_id, c.peer);
                if let Ok(rej) =
                    msgs::rej(id.0, remote, MsgRef::REP, RejectReason::TIMEOUT, &guid, &[])
                {
                    let _ = self.send(to, &rej);
                }
                self.events.push_back((
                    id,
                    CmEvent::ConnectError {
                        why: "no RTU came for the REP",
                    },
                ));
                self.enter_timewait(now, id);
            }
            State::DreqSent => {
                self.events.push_back((
                    id,
                    CmEvent::Disconnected {
                        private_data: Vec::new(),
                        cause: DisconnectCause::DreqUnanswered,
                    },
                ));
                self.enter_timewait(now, id);
            }
            _ => {}
        }
    }

    /// Sends `msg` for connection `id` and waits for its answer, resending
    /// up to the connection's retry count.
    pub(super) fn send_retried(
        &mut self,
        now: Instant,
        id: ConnId,
        msg: &CmMessage,
    ) -> Result<(), CmError> {
        let c = self.conn_mut(id)?;
        let (to, wait, left) = (c.peer, c.answer_wait, c.max_retries);
        let mad = self.send(to, msg)?;
        self.conn_mut(id)?.retry = Some(Retry { mad, left, wait });
        self.arm(id, Some(now + wait));
        Ok(())
    }

    /// Sets (or clears) the deadline of connection `id`.
    pub(super) fn arm(&mut self, id: ConnId, deadline: Option<Instant>) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        if let Some(old) = c.deadline.take() {
            self.timers.remove(&(old, id));
        }
        if let Some(at) = deadline {
            c.deadline = Some(at);
            self.timers.insert((at, id));
        }
    }

    /// The connection is over: its QP stays quarantined for timewait.
    pub(super) fn enter_timewait(&mut self, now: Instant, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.state = State::Timewait;
        c.retry = None;
        let at = now + c.timewait;
        self.arm(id, Some(at));
    }

    /// The connection becomes established: the event, and no more waits.
    pub(super) fn established(&mut self, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.state = State::Established;
        c.retry = None;
        let info = c.info.clone();
        self.arm(id, None);
        self.events.push_back((id, CmEvent::Established { info }));
    }

    /// Forgets connection `id`, its index entries and its count against
    /// its peer's cap.
    pub(super) fn remove(&mut self, id: ConnId) {
        self.arm(id, None);
        self.unindex_qpn(id);
        if let Some(c) = self.conns.remove(&id) {
            if let Some(k) = c.remote_key {
                if self.by_remote.get(&k) == Some(&id) {
                    self.by_remote.remove(&k);
                }
            }
            if let Some(p) = c.peer_key {
                if let Some(n) = self.per_peer.get_mut(&p) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        self.per_peer.remove(&p);
                    }
                }
            }
        }
    }

    /// Files connection `id` under the peer's (CA GUID, Communication ID).
    pub(super) fn index_remote(&mut self, id: ConnId, key: (u64, u32)) {
        if let Some(c) = self.conns.get_mut(&id) {
            if let Some(old) = c.remote_key.replace(key) {
                if old != key && self.by_remote.get(&old) == Some(&id) {
                    self.by_remote.remove(&old);
                }
            }
            self.by_remote.insert(key, id);
        }
    }

    /// Files connection `id` under the peer's (CA GUID, QPN), unless the
    /// QPN is 0 (no RC QP is): what finds stale connections.
    pub(super) fn index_qpn(&mut self, id: ConnId, key: (u64, u32)) {
        if key.1 == 0 {
            return;
        }
        self.unindex_qpn(id);
        if let Some(c) = self.conns.get_mut(&id) {
            c.qpn_key = Some(key);
            self.by_qpn.insert(key, id);
        }
    }

    /// Takes connection `id` out of the (CA GUID, QPN) index.
    pub(super) fn unindex_qpn(&mut self, id: ConnId) {
        if let Some(k) = self.conns.get_mut(&id).and_then(|c| c.qpn_key.take()) {
            if self.by_qpn.get(&k) == Some(&id) {
                self.by_qpn.remove(&k);
            }
        }
    }
}
