//! Deadlines (retries, MRA waits, timewait) and the transitions every
//! handler shares.

use std::time::Instant;

use mad_core::wire::cm::{CmMessage, MsgRef, RejectReason};

use super::{msgs, Cm};
use crate::conn::{Retry, State};
use crate::types::{CmError, CmEvent, ConnId, DisconnectCause};

impl Cm {
    /// Handles every deadline at or before `now`: resends a message whose
    /// answer is late while retries last, then gives up on it; ends
    /// timewait.
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

    /// The message being retried got no answer at all.
    fn give_up(&mut self, now: Instant, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.retry = None;
        match c.state {
            State::ReqSent => {
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

    /// Forgets connection `id` and its index entries.
    pub(super) fn remove(&mut self, id: ConnId) {
        self.arm(id, None);
        if let Some(c) = self.conns.remove(&id) {
            if let Some(k) = c.remote_key() {
                if self.by_remote.get(&k) == Some(&id) {
                    self.by_remote.remove(&k);
                }
            }
            if let Some(k) = c.qpn_key() {
                if self.by_qpn.get(&k) == Some(&id) {
                    self.by_qpn.remove(&k);
                }
            }
        }
    }
}
