//! The engine's RMPP plumbing: outbound transfers (segments, ACK routing
//! by TID, class **and destination**, the absolute deadline), inbound
//! reassembly output (ACKs and answers to the transfer's full source
//! address, GRH included), and the posts the engine makes on its own
//! behalf. See the [engine documentation](super#rmpp-issue-5-rmppmd).

use std::time::Instant;

use mad_core::port::Inbound;
use mad_core::transport::{Address, Qp};
use mad_core::wire::rmpp::RmppType;
use mad_core::wire::{Method, MgmtClass, METHOD_RESPONSE_BIT};
use mad_core::MadBuf;
use mad_rmpp::{Output, Peer, ReceiverTable, SendEvent, Sender, TransferKey};

use super::state::{must, Move};
use super::{Engine, OnRefusal, Transmit};
use crate::tid;
use crate::timers::Timer;
use crate::types::{Message, SendStatus};

impl Engine {
    /// The window a double-sided requester advertised (in its DS ACK) for
    /// the response `mad` to `dest`, or 1 (RMPP.md §6, the kernel's
    /// `init_newwin`): the agent's completed inbound request with the
    /// same TID, class and version from the response's destination (its
    /// GID when the destination has a GRH, else its LID).
    pub(super) fn response_window(&self, aidx: usize, mad: &[u8], dest: &Address) -> u32 {
        let Some(rx) = self.agents[aidx].rmpp_rx.as_ref() else {
            return 1;
        };
        let Some(mut key) = TransferKey::of(mad, Peer::of(dest)) else {
            return 1;
        };
        let resp = key.method;
        // The request's method: the response's without the R bit; GetResp
        // also answers Set.
        let mut methods = vec![resp & 0x7F];
        if resp == Method::GET.0 | METHOD_RESPONSE_BIT {
            methods.push(Method::SET.0);
        }
        methods
            .into_iter()
            .find_map(|m| {
                key.method = m;
                rx.response_window(&key)
            })
            .unwrap_or(1)
    }

    // ----- routing of ACK / STOP / ABORT to outbound transfers -----

    /// True if an outbound transfer with `key` already goes to the peer of
    /// `dest` (the same TID may go to different peers at once).
    pub(super) fn rmpp_out_conflict(&self, key: (u64, u8), dest: &Address) -> bool {
        let peer = Peer::of(dest);
        self.rmpp_out
            .get(&key)
            .is_some_and(|l| l.iter().any(|&i| Peer::of(&self.sends[i].dest) == peer))
    }

    /// Routes control MADs with the send's TID and class to it.
    pub(super) fn route_rmpp(&mut self, idx: usize) {
        let key = self.sends[idx].key;
        let list = self.rmpp_out.entry(key).or_default();
        if !list.contains(&idx) {
            list.push(idx);
        }
    }

    /// Stops routing control MADs to send `idx`, whose key is `key`.
    pub(super) fn unroute_rmpp(&mut self, key: (u64, u8), idx: usize) {
        if let Some(list) = self.rmpp_out.get_mut(&key) {
            list.retain(|&i| i != idx);
            if list.is_empty() {
                self.rmpp_out.remove(&key);
            }
        }
    }

    /// An ACK / STOP / ABORT received with `key` (TID, class): for the
    /// outbound transfer to its source, if there is one. Returns true if
    /// the MAD was consumed here (taken by a transfer, or dropped as from
    /// the wrong source).
    ///
    /// A request whose segments are all acknowledged stays routed while
    /// it waits for its response, so that a repeated final ACK gets the DS
    /// ACK again (RMPP.md §4 step 5); a STOP or ABORT then concerns the
    /// response's reassembly (the requester's sender ignores it), so it
    /// goes on to the receive path. So does a STOP or ABORT with the
    /// method of a response being reassembled while the request is still
    /// being sent: the receiver answers one with a status that is not an
    /// abort status with ABORT(BAD_STATUS), its method the received one's
    /// with the response bit flipped (the kernel's `nack_recv`), and the
    /// waiting send fails with that status; the request's sender sends
    /// nothing for it (the kernel's `abort_send` only ends the send).
    pub(super) fn on_rmpp_control(&mut self, key: (u64, u8), m: &Inbound, now: Instant) -> bool {
        let Some(list) = self.rmpp_out.get(&key) else {
            return false;
        };
        let Some(idx) = list
            .iter()
            .copied()
            .find(|&i| self.answers_from_destination(i, m.src()))
        else {
            self.stats.wrong_source += 1;
            return true;
        };
        let Some(tx) = self.sends[idx].rmpp.as_mut() else {
            return false;
        };
        if tx.sender.is_all_acked() && m.rmpp_active() != Some(RmppType::ACK) {
            return false;
        }
        let aidx = self.sends[idx].agent;
        if matches!(m.rmpp_active(), Some(RmppType::STOP | RmppType::ABORT))
            && self.agents[aidx]
                .rmpp_rx
                .as_ref()
                .is_some_and(|rx| rx.receives(m.bytes(), m.src()))
        {
            return false;
        }
        let Some(tx) = self.sends[idx].rmpp.as_mut() else {
            return false;
        };
        tx.sender.handle_reply(m.bytes(), now);
        self.pump_rmpp(idx, now);
        true
    }

    // ----- outbound transfers -----

    /// Queues one due RMPP segment, if any ([`Engine::next_segment`]);
    /// false when none was due.
    pub(super) fn post_next_segment(
        &mut self,
        idx: usize,
        now: Instant,
        on_refusal: OnRefusal,
    ) -> bool {
        let Some(t) = self.next_segment(idx, now, on_refusal) else {
            return false;
        };
        self.out.push(t);
        true
    }

    /// The next due RMPP segment (or control MAD) of send `idx`, as a
    /// work request whose reference the send holds from here; `None`
    /// when none is due. The sender writes it straight into the buffer
    /// the work request carries (the engine's spare, replaced by another
    /// pooled buffer only when a segment was written).
    pub(super) fn next_segment(
        &mut self,
        idx: usize,
        now: Instant,
        on_refusal: OnRefusal,
    ) -> Option<Transmit> {
        let s = &mut self.sends[idx];
        let tx = s.rmpp.as_mut()?;
        tx.sender.poll_transmit_into(now, &mut self.seg)?;
        let mad = std::mem::replace(&mut self.seg, MadBuf::for_overwrite());
        let t = Transmit::Segment {
            idx,
            id: s.id,
            wait: self.answer_wait(idx, &mad),
            mad,
            on_refusal,
        };
        self.took_wr(idx);
        Some(t)
    }

    /// Sends what the RMPP sender has due, takes its events and re-arms its
    /// timer. A segment the port refuses ends the send with the port's
    /// error (it completes once its posted segments have completed).
    pub(super) fn pump_rmpp(&mut self, idx: usize, now: Instant) {
        while self.post_next_segment(idx, now, OnRefusal::Fail) {}
        let mut events = Vec::new();
        if let Some(tx) = self.sends[idx].rmpp.as_mut() {
            while let Some(ev) = tx.sender.poll_event() {
                events.push(ev);
            }
        }
        for ev in events {
            match ev {
                SendEvent::AllAcked => self.end_rmpp(idx),
                SendEvent::Finished(outcome) => match SendStatus::from(outcome) {
                    st if st.is_failure() => self.fail(idx, st),
                    _ => self.end_rmpp(idx),
                },
            }
        }
        // A finished (or fully acknowledged) sender may still have an
        // ABORT or a DS ACK to send.
        if self.sends[idx].rmpp.is_some() {
            while self.post_next_segment(idx, now, OnRefusal::Count) {}
        }
        self.rearm_rmpp(idx);
        self.settle(idx, Some(now));
    }

    /// Starts the RMPP transfer of send `idx` again from segment 1 (a
    /// retry after a response timeout).
    pub(super) fn restart_rmpp(&mut self, idx: usize, now: Instant) {
        let s = &mut self.sends[idx];
        let Some(tx) = s.rmpp.as_mut() else {
            return;
        };
        let hdr_len = MgmtClass(s.key.1).data_offset();
        match Sender::from_message(tx.sender.message().to_vec(), hdr_len, tx.cfg, now) {
            Ok(sender) => {
                tx.sender = sender;
                // Only an open send is retried.
                let r = s.state.restart_transfer();
                must(&mut self.stats, Move::RestartTransfer, r);
                self.route_rmpp(idx);
                self.pump_rmpp(idx, now);
            }
            // It was accepted once, so it cannot fail now; if it did, the
            // send ends as a timeout.
            Err(_) => self.fail(idx, SendStatus::Timeout),
        }
    }

    /// Arms the send's RMPP timer: the sender's ACK timer, but never past
    /// the send's absolute deadline, so a transfer whose peer keeps it
    /// going never outlives the send's deadline.
    pub(super) fn rearm_rmpp(&mut self, idx: usize) {
        let s = &self.sends[idx];
        let key = Timer::RmppSend(idx).key();
        let due = match s.rmpp.as_ref() {
            Some(tx) if s.state.rmpp_active() => match (tx.sender.poll_timeout(), s.abs_deadline) {
                (Some(d), Some(a)) => Some(d.min(a)),
                (d, a) => d.or(a),
            },
            _ => None,
        };
        match due {
            Some(d) => self.timers.insert(d, key),
            None => {
                self.timers.remove(key);
            }
        }
    }

    /// The RMPP timer of send `idx` expired at `now`: past the send's
    /// absolute deadline the send fails with [`SendStatus::Timeout`],
    /// else the sender handles its ACK timeout.
    pub(super) fn on_rmpp_timer(&mut self, idx: usize, now: Instant) {
        let Some(s) = self.sends.get_mut(idx) else {
            return;
        };
        let past_deadline = s.state.rmpp_active() && s.abs_deadline.is_some_and(|a| a <= now);
        let Some(tx) = s.rmpp.as_mut() else {
            return;
        };
        if past_deadline {
            self.stats.rmpp_deadline_expired += 1;
            self.fail(idx, SendStatus::Timeout);
            self.settle(idx, Some(now));
            return;
        }
        if self.cfg.end_unacknowledged_answers
            && !tx.cfg.expects_response
            && tx.sender.last_ack() == 0
            && tx.sender.poll_timeout().is_some_and(|d| d <= now)
        {
            // An answer whose receiver acknowledged nothing: it ends here,
            // not resent (see the engine documentation).
            self.stats.rmpp_unacknowledged_ended += 1;
            tx.sender.give_up();
        } else {
            tx.sender.handle_timeout(now);
        }
        self.pump_rmpp(idx, now);
    }

    /// Ends the unacknowledged answers (RMPP transfers that expect no
    /// response, none of whose segments was acknowledged) with `key` to
    /// the peer of `dest`, so that a new answer with that TID can go
    /// there. True if no transfer with `key` to that peer is left.
    pub(super) fn replace_unacknowledged(
        &mut self,
        key: (u64, u8),
        dest: &Address,
        now: Instant,
    ) -> bool {
        let peer = Peer::of(dest);
        let same: Vec<usize> = self
            .rmpp_out
            .get(&key)
            .map(|l| {
                l.iter()
                    .copied()
                    .filter(|&i| Peer::of(&self.sends[i].dest) == peer)
                    .collect()
            })
            .unwrap_or_default();
        let unacked = |e: &Self, i: usize| {
            e.sends[i]
                .rmpp
                .as_ref()
                .is_some_and(|tx| !tx.cfg.expects_response && tx.sender.last_ack() == 0)
        };
        if !same.iter().all(|&i| unacked(self, i)) {
            return false;
        }
        for i in same {
            self.stats.rmpp_unacknowledged_replaced += 1;
            if let Some(tx) = self.sends[i].rmpp.as_mut() {
                tx.sender.give_up();
            }
            self.pump_rmpp(i, now);
        }
        !self.rmpp_out_conflict(key, dest)
    }

    /// The RMPP transfer no longer holds the send. It stays routed while
    /// its sender waits for a response (repeated final ACKs).
    pub(super) fn end_rmpp(&mut self, idx: usize) {
        let s = &mut self.sends[idx];
        s.state.end_transfer();
        let waits = s.state.failure().is_none()
            && s.rmpp.as_ref().is_some_and(|tx| !tx.sender.is_finished());
        if !waits {
            self.unroute_rmpp(self.sends[idx].key, idx);
        }
    }

    // ----- the engine's own posts -----

    /// Counts a post the port refused (of agent `aidx`, if known).
    pub(super) fn count_post_failure(&mut self, aidx: Option<usize>) {
        self.stats.post_failures += 1;
        if let Some(a) = aidx.and_then(|i| self.agents.get_mut(i)) {
            a.stats.post_failures += 1;
        }
    }

    /// Queues a MAD the engine sends on its own behalf (RMPP ACK / STOP /
    /// ABORT, unsupported-method answer) to `dest` on `qp`; a refusal is
    /// counted, for agent `aidx` too when given.
    pub(super) fn post_internal(
        &mut self,
        aidx: Option<usize>,
        qp: Qp,
        mad: &[u8],
        dest: &Address,
        unsupported: bool,
    ) {
        self.out.push(Transmit::Internal {
            agent: aidx,
            qp,
            mad: MadBuf::from_slice(mad),
            dest: *dest,
            unsupported,
        });
    }

    // ----- inbound transfers -----

    /// Acts on what an agent's RMPP receiver produced: ACKs and answers go
    /// to the transfer's source address as received (GRH included), and a
    /// reassembled message carries that address as its source.
    /// Sets agent `aidx`'s reassembly timer in the engine's table to its
    /// receiver's earliest deadline (after anything that may move it:
    /// segments, timeouts, a deregistration's clear).
    pub(super) fn arm_rx(&mut self, aidx: usize) {
        let key = Timer::RmppRecv(aidx).key();
        let due = self
            .agents
            .get(aidx)
            .and_then(|a| a.rmpp_rx.as_ref())
            .and_then(ReceiverTable::poll_timeout);
        if self.timers.get(key) == due {
            return;
        }
        match due {
            Some(d) => self.timers.insert(d, key),
            None => {
                self.timers.remove(key);
            }
        }
    }

    pub(super) fn drain_rx(&mut self, aidx: usize, now: Instant) {
        let qp = self.agents[aidx].spec.qp;
        while let Some(out) = self.agents[aidx]
            .rmpp_rx
            .as_mut()
            .and_then(ReceiverTable::poll_output)
        {
            match out {
                Output::Send { to, mad, .. } => {
                    self.post_internal(Some(aidx), qp, &mad, &to, false);
                }
                Output::Delivered { key, src, message } => {
                    self.agents[aidx].stats.rmpp_reassembled += 1;
                    let msg = Message::from_parts(qp, src, message);
                    if key.method & METHOD_RESPONSE_BIT != 0 {
                        match self.waiting.get(&tid::match_key(key.tid, key.class)) {
                            // A backlogged request was not sent: not answered.
                            Some(&idx)
                                if self.sends[idx].agent == aidx
                                    && !self.sends[idx].state.is_queued() =>
                            {
                                self.stats.responses_matched += 1;
                                self.on_response(idx, msg, now);
                            }
                            _ => self.stats.unmatched_responses += 1,
                        }
                    } else if !self.agents[aidx].closing {
                        self.deliver_recv(aidx, msg);
                    }
                }
                Output::Ended { key, outcome } => {
                    if key.method & METHOD_RESPONSE_BIT == 0 {
                        continue;
                    }
                    let Some(&idx) = self.waiting.get(&tid::match_key(key.tid, key.class)) else {
                        continue;
                    };
                    let st = SendStatus::from(outcome);
                    if !st.is_failure() {
                        continue;
                    }
                    self.fail(idx, st);
                    self.settle(idx, Some(now));
                }
            }
        }
        self.arm_rx(aidx);
    }
}
