//! Sends: accepting a request, posting it, its references, failure,
//! completion, cancel and modify (see the [engine documentation](super#the-life-of-a-send-seed-003-agentsmd-3)).

use super::*;
use mad_core::transport::OutMadBuf;
use std::collections::hash_map::Entry;

/// What a send hands down, once checked in [`Engine::send`]: one MAD,
/// checked for its QP, or a message longer than one MAD for the RMPP
/// sender.
enum Outgoing {
    One(OutMadBuf),
    Message(MadBuf),
}

impl Outgoing {
    #[inline]
    fn bytes(&self) -> &[u8] {
        match self {
            Outgoing::One(m) => m.as_out().bytes(),
            Outgoing::Message(m) => m,
        }
    }

    #[inline]
    fn set_tid(&mut self, tid: u64) {
        match self {
            Outgoing::One(m) => m.set_tid(tid),
            Outgoing::Message(m) => Mad::new_unchecked(&mut m[..]).set_tid(tid),
        }
    }

    #[inline]
    fn into_message(self) -> MadBuf {
        match self {
            Outgoing::One(m) => m.into_buf(),
            Outgoing::Message(m) => m,
        }
    }

    #[inline]
    fn into_one(self) -> Option<OutMadBuf> {
        match self {
            Outgoing::One(m) => Some(m),
            Outgoing::Message(_) => None,
        }
    }
}

impl Engine {
    /// Sends `req` for `agent` (see [`SendRequest`]). A request gets its
    /// TID here: bits 47..32 the agent's id, bits 31..0 allocated or the
    /// caller's ([`crate::tid`]). The send completes later, exactly once,
    /// as [`AgentEvent::SendDone`]. A request awaiting a response that the
    /// flow-control limits hold back waits in the agent's backlog (see
    /// [Flow control](crate::engine#flow-control)). Its first work
    /// request (and whatever the engine had queued before it) goes to the
    /// transport's side `io` before this returns.
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
        io: &mut impl Io,
        agent: AgentId,
        req: SendRequest,
        now: Instant,
    ) -> Result<SendId, SendError> {
        let aidx = self
            .agent_idx(agent)
            .filter(|&i| !self.agents[i].closing)
            .ok_or(SendError::UnknownAgent(agent))?;
        let SendRequest {
            mad,
            dest,
            timeout,
            retries,
            total_timeout,
            tid: tid_choice,
            cookie,
        } = req;
        let (qp, hi, rmpp_agent) = {
            let a = &self.agents[aidx];
            (a.spec.qp, a.hi, a.spec.rmpp)
        };
        // The send's checks, once. One MAD passes `check_post` (its
        // header, at most 256 bytes, its class on the agent's QP) and is
        // kept checked: its posts and retries hand that to the port, and
        // neither the port nor the transport checks again. A longer
        // message (RMPP) has its header and class checked here; each of
        // its segments is checked once, when handed to the port.
        let (mut mad, class) = if mad.len() <= MAD_LEN {
            let m = OutMadBuf::check(mad, qp).map_err(SendError::BadSend)?;
            let class = m.class();
            (Outgoing::One(m), class)
        } else {
            let class = Mad::new_unchecked(&mad[..]).mgmt_class();
            if class.is_smp() != (qp == Qp::Qp0) {
                return Err(SendError::BadSend(Unsendable::WrongQp { class, qp }));
            }
            (Outgoing::Message(mad), class)
        };
        if rmpp_agent && !class.is_rmpp_class() {
            return Err(SendError::BadSend(Unsendable::NotRmppClass { class }));
        }
        let rmpp_transfer = rmpp_agent
            && (matches!(mad, Outgoing::Message(_)) || active_rmpp(mad.bytes()).is_some());
        if let (false, Outgoing::Message(m)) = (rmpp_transfer, &mad) {
            return Err(SendError::BadSend(Unsendable::NeedsRmpp { len: m.len() }));
        }
        let header = Mad::new_unchecked(mad.bytes());
        let (is_response, their_tid) = (header.is_response(), header.tid());
        // An allocated TID is one no waiting send has (checked below once).
        let allocated = !is_response && matches!(tid_choice, TidChoice::Allocate);
        let tid = if is_response {
            their_tid
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
            mad.set_tid(t);
            t
        };
        let key = tid::match_key(tid, class.0);
        if (!timeout.is_zero() && !allocated && self.waiting.contains_key(&key))
            || (rmpp_transfer
                && self.rmpp_out_conflict(key, &dest)
                && !(is_response
                    && self.cfg.end_unacknowledged_answers
                    && self.replace_unacknowledged(key, &dest, now)))
        {
            return Err(SendError::DuplicateTid { tid, class });
        }
        let (rmpp, mad) = if rmpp_transfer {
            let initial_window = if is_response {
                self.response_window(aidx, mad.bytes(), &dest)
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
            let message = mad.into_message().into_vec();
            let sender = Sender::from_message(message, class.data_offset(), cfg, now)
                .map_err(SendError::Segmentation)?;
            (Some(Box::new(RmppTx { sender, cfg })), None)
        } else {
            (None, mad.into_one())
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
            // None for an RMPP transfer: its sender holds the message.
            mad,
            dest,
            timeout,
            retries_left: retries,
            retries_used: 0,
            abs_deadline,
            state: if queue {
                SendState::queued(self.flow.seq + 1)
            } else {
                SendState::open(!timeout.is_zero(), rmpp_transfer)
            },
            rmpp,
            cookie,
            total,
            prev: NIL,
            next: NIL,
        });
        if queue {
            self.flow.seq += 1;
            let seq = self.flow.seq;
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
            self.flush_transmits(io, now);
            return Ok(id);
        }
        // The first work request goes to the port at once, behind what
        // is queued and without a stop in the queue: its refusal is the
        // caller's error and nothing completes.
        self.flush_transmits(io, now);
        let first = if rmpp_transfer {
            self.next_segment(idx, now, OnRefusal::Fail)
                .map_or(Ok(()), |t| self.submit(io, t))
        } else {
            self.post_first(io, idx)
        };
        if let Err(e) = first {
            self.sends.remove(idx);
            return Err(SendError::Port(e));
        }
        if rmpp_transfer {
            self.route_rmpp(idx);
        }
        if !timeout.is_zero() {
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
        self.flush_transmits(io, now);
        Ok(id)
    }

    /// How long the layer below should hold request `idx` for its answer
    /// ([`mad_core::transport::Transport::post_request`]): this attempt's
    /// timeout, for a request that expects a response; zero otherwise.
    ///
    /// An RMPP request's last DATA segment is held longer (twice the
    /// timeout and 5 s more): the answer comes only after the final ACK,
    /// the receiver's ACKs each take one of the transfer's waiting
    /// segments below umad (the earliest-expiring first), and the answer
    /// must find one still waiting (seen against the real kernel: a 1 MiB
    /// transfer's GetResp arrived after every segment's wait had ended).
    #[inline]
    pub(super) fn answer_wait(&self, idx: usize, mad: &[u8]) -> Duration {
        let s = &self.sends[idx];
        if s.timeout.is_zero() || !Mad::new_checked(mad).is_ok_and(|m| !m.is_response()) {
            return Duration::ZERO;
        }
        let wait = self.interval(s);
        let last_segment =
            active_rmpp(mad).is_some_and(|h| h.rmpp_type() == RmppType::DATA && h.is_last());
        if last_segment {
            wait.saturating_mul(2) + Duration::from_secs(5)
        } else {
            wait
        }
    }

    /// Posts send `idx`'s MAD to `io` at once, as its first work request
    /// (nothing is queued before it): no [`Transmit`] is made. Once
    /// posted, the send holds the work request's reference; a refusal is
    /// counted and returned (the caller's error).
    fn post_first(&mut self, io: &mut impl Io, idx: usize) -> Result<(), PortError> {
        let s = &self.sends[idx];
        // A single MAD's send keeps its checked MAD (an RMPP transfer
        // posts segments only).
        let Some(m) = s.mad.as_ref() else {
            debug_assert!(false, "the first post of an RMPP transfer");
            return Ok(());
        };
        let mad = m.as_out();
        let wait = self.answer_wait(idx, mad.bytes());
        let r = io.post(
            &mut self.port,
            Post {
                client: self.client,
                mad,
                dest: &s.dest,
                cookie: s.id.as_u64(),
                wait,
            },
        );
        if let Err(e) = r {
            self.count_post_failure(Some(s.agent));
            return Err(e);
        }
        self.took_wr(idx);
        self.stats.posted += 1;
        Ok(())
    }

    /// Queues send `idx`'s MAD for the port (a refusal does
    /// `on_refusal`).
    pub(super) fn post(&mut self, idx: usize, on_refusal: OnRefusal) {
        let t = self.send_wr(idx, on_refusal);
        self.out.push(t);
    }

    /// Send `idx`'s MAD as a work request, with its answer wait
    /// ([`Engine::answer_wait`]); the MAD stays in the send's slot.
    pub(super) fn send_wr(&mut self, idx: usize, on_refusal: OnRefusal) -> Transmit {
        let s = &self.sends[idx];
        let t = Transmit::Send {
            idx,
            id: s.id,
            wait: self.answer_wait(idx, s.mad.as_ref().map_or(&[], |m| m.as_out().bytes())),
            on_refusal,
        };
        self.took_wr(idx);
        t
    }

    /// Send `idx` holds the reference of a work request it made, from
    /// here until the port completes it; a refusal gives it back
    /// ([`Engine::refused`]).
    #[inline]
    pub(super) fn took_wr(&mut self, idx: usize) {
        // A queued send is dequeued before its post.
        let r = self.sends[idx].state.wr_posted();
        must(&mut self.stats, Move::WrPosted, r);
    }

    /// Hands every queued work request to the port `io` drives, in order.
    /// A send whose post is refused does what its [`OnRefusal`] says, and
    /// its later work requests of this flush are dropped with it (as a
    /// refused post stopped the transfer's pump before).
    #[inline]
    pub(super) fn flush_transmits(&mut self, io: &mut impl Io, now: Instant) {
        if self.out.is_empty() {
            return;
        }
        self.flush_queued(io, now);
    }

    /// [`Engine::flush_transmits`] with something queued.
    fn flush_queued(&mut self, io: &mut impl Io, now: Instant) {
        let mut out = std::mem::take(&mut self.out);
        let mut refused: Option<SendId> = None;
        for t in out.drain(..) {
            let of = match &t {
                Transmit::Send { id, .. } | Transmit::Segment { id, .. } => Some(*id),
                Transmit::Internal { .. } => None,
            };
            if of.is_some() && of == refused {
                self.refused(t, None, now);
                continue;
            }
            if let Err(e) = self.submit_ref(io, &t) {
                refused = of;
                self.refused(t, Some(&e), now);
            }
        }
        // Refusals queue nothing, so `self.out` is still empty: keep the
        // allocation.
        debug_assert!(self.out.is_empty());
        self.out = out;
    }

    /// Posts one work request; a refusal is counted and returned (the
    /// first post of a send, whose refusal is its caller's error).
    pub(super) fn submit(&mut self, io: &mut impl Io, t: Transmit) -> Result<(), PortError> {
        self.submit_ref(io, &t).inspect_err(|_| {
            if let Transmit::Send { idx, id, .. } | Transmit::Segment { idx, id, .. } = t {
                if let Some(s) = self.sends.get_mut(idx).filter(|s| s.id == id) {
                    let r = s.state.wr_completed();
                    must(&mut self.stats, Move::WrCompleted, r);
                }
            }
        })
    }

    /// Posts one work request to the port; counts a refusal.
    fn submit_ref(&mut self, io: &mut impl Io, t: &Transmit) -> Result<(), PortError> {
        let (r, agent) = match t {
            Transmit::Send { idx, id, wait, .. } | Transmit::Segment { idx, id, wait, .. } => {
                // A queued work request holds its send's reference, so the
                // send is still there.
                let Some(s) = self.sends.get(*idx).filter(|s| s.id == *id) else {
                    debug_assert!(false, "a queued work request of a finished send");
                    return Ok(());
                };
                // A send's own MAD was checked once, at `send`; a segment
                // (or the transfer's ABORT / DS ACK) is checked once, here.
                let mad = match (t, &s.mad) {
                    (Transmit::Segment { mad, .. }, _) => {
                        // The transfer's QP is its agent's.
                        Unsendable::check_post(mad, self.agents[s.agent].spec.qp)
                    }
                    (_, Some(m)) => Ok(m.as_out()),
                    (_, None) => {
                        debug_assert!(false, "an RMPP transfer posts segments only");
                        return Ok(());
                    }
                };
                let r = mad.map_err(PortError::BadSend).and_then(|mad| {
                    let wr = Post {
                        client: self.client,
                        mad,
                        dest: &s.dest,
                        cookie: id.as_u64(),
                        wait: *wait,
                    };
                    io.post(&mut self.port, wr)
                });
                (r, Some(s.agent))
            }
            Transmit::Internal {
                agent,
                qp,
                mad,
                dest,
                unsupported,
            } => {
                // The engine's own answer, checked once, here.
                let r = Unsendable::check_post(mad, *qp)
                    .map_err(PortError::BadSend)
                    .and_then(|mad| {
                        let wr = Post {
                            client: self.client,
                            mad,
                            dest,
                            cookie: INTERNAL,
                            wait: Duration::ZERO,
                        };
                        io.post(&mut self.port, wr)
                    });
                if r.is_ok() && *unsupported {
                    self.stats.unsupported_answered += 1;
                }
                (r, *agent)
            }
        };
        match r {
            Ok(_) => {
                if !matches!(t, Transmit::Internal { .. }) {
                    self.stats.posted += 1;
                }
                Ok(())
            }
            Err(e) => {
                self.count_post_failure(agent);
                Err(e)
            }
        }
    }

    /// A work request of a send did not go out (refused with `e`, or
    /// dropped behind a refused one of the same send when `None`): the
    /// send gives its reference back and, when refused, does what the
    /// work request's [`OnRefusal`] says.
    fn refused(&mut self, t: Transmit, e: Option<&PortError>, now: Instant) {
        let (idx, id, on_refusal) = match t {
            Transmit::Send {
                idx,
                id,
                on_refusal,
                ..
            }
            | Transmit::Segment {
                idx,
                id,
                on_refusal,
                ..
            } => (idx, id, on_refusal),
            Transmit::Internal { .. } => return,
        };
        if self.send_idx(id) != Some(idx) {
            debug_assert!(false, "a refused work request of a finished send");
            return;
        }
        let r = self.sends[idx].state.wr_completed();
        must(&mut self.stats, Move::WrCompleted, r);
        match (e, on_refusal) {
            (Some(e), OnRefusal::Fail) => self.fail(idx, port_failure(e)),
            (Some(_), OnRefusal::Flushed) => self.fail(idx, SendStatus::Flushed),
            _ => {}
        }
        self.settle(idx, Some(now));
    }

    /// Records the send's final failure (the first one wins) and drops
    /// its response and RMPP references.
    pub(super) fn fail(&mut self, idx: usize, status: SendStatus) {
        // Refused once the send has its outcome: the first one stands,
        // and it has given up its slot and backlog place already.
        let released = self.sends[idx].state.fail(status).unwrap_or_default();
        self.stop_waiting(idx, released);
    }

    /// Send `idx` has failed or been answered: it gives back its
    /// flow-control slot, leaves the table of sends waiting for an answer
    /// and its timeout list, and its RMPP transfer (active, or fully
    /// acknowledged and still routed for repeated final ACKs) ends.
    pub(super) fn stop_waiting(&mut self, idx: usize, released: state::Released) {
        let aidx = self.sends[idx].agent;
        if let Some(seq) = released.queued {
            self.agents[aidx].backlog.remove(&(seq, idx));
        }
        if released.slot {
            self.free_flow_slot(aidx);
        }
        let s = &mut self.sends[idx];
        // Only a send holding the response reference is in the table:
        // one lookup, and none for a send that awaited nothing.
        if released.awaited {
            if let Entry::Occupied(e) = self.waiting.entry(s.key) {
                if *e.get() == idx {
                    e.remove();
                }
            }
        }
        self.timers.remove(Timer::Response(idx).key());
        if let Some(tx) = s.rmpp.as_mut() {
            tx.sender.cancel();
            while tx.sender.poll_event().is_some() {}
            self.end_rmpp(idx);
            self.rearm_rmpp(idx);
        }
    }

    /// Completes the send if no reference is left; otherwise starts its
    /// response timer when only the response reference is left.
    pub(super) fn settle(&mut self, idx: usize, now: Option<Instant>) {
        let Some(s) = self.sends.get(idx) else {
            return;
        };
        if s.state.is_released() {
            self.finish(idx);
            return;
        }
        if let Some(now) = now {
            if s.state.ready_to_wait() && !self.timers.contains(Timer::Response(idx).key()) {
                self.start_wait(idx, now);
            }
        }
    }
    /// Puts send `idx` at the head of agent `aidx`'s list.
    pub(super) fn link_send(&mut self, aidx: usize, idx: usize) {
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
    pub(super) fn unlink_send(&mut self, aidx: usize, prev: usize, next: usize) {
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
    pub(super) fn agent_sends(&self, aidx: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.agents[aidx].sends.len);
        let mut i = self.agents[aidx].sends.head;
        while i != NIL {
            out.push(i);
            i = self.sends[i].next;
        }
        out
    }

    pub(super) fn finish(&mut self, idx: usize) {
        self.release_flow_slot(idx);
        let s = self.sends.remove(idx);
        // Released, so it gave up its response reference, and with it its
        // place in the table of sends waiting for an answer
        // (`stop_waiting`).
        debug_assert!(self.waiting.get(&s.key) != Some(&idx));
        // Only an RMPP transfer is routed by `rmpp_out`.
        if s.rmpp.is_some() {
            self.unroute_rmpp(s.key, idx);
            self.timers.remove(Timer::RmppSend(idx).key());
        }
        self.timers.remove(Timer::Response(idx).key());
        let (status, response) = s.state.into_outcome();
        let aidx = s.agent;
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
            response,
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
        if !self.sends[idx].state.is_active() {
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
        if !s.state.is_active() {
            return Err(SendError::NotActive(send));
        }
        if !s.state.awaits_response() {
            return Err(SendError::NotWaiting(send));
        }
        s.timeout = timeout;
        let timer = Timer::Response(idx).key();
        if !self.timers.contains(timer) {
            // Queued or still in flight: the new timeout counts from the
            // first post or the completion. Refused only for a send with
            // an outcome, as checked above.
            return s
                .state
                .mark_extend()
                .map_err(|state::Refused| SendError::NotActive(send));
        }
        let cover = now + timeout.saturating_mul(s.retries_left.saturating_add(1));
        s.abs_deadline = Some(s.abs_deadline.map_or(cover, |a| a.max(cover)));
        self.timers.insert(now + timeout, timer);
        Ok(())
    }

    #[inline]
    pub(super) fn on_wc(&mut self, send: SendId, status: WcStatus, now: Instant) {
        let Some(idx) = self.send_idx(send) else {
            return;
        };
        let s = &mut self.sends[idx];
        // The port completes each work request once, and only those it
        // was given: a completion with none in flight is a bug (it is
        // still judged by its status).
        let r = s.state.wr_completed();
        must(&mut self.stats, Move::WrCompleted, r);
        if status != WcStatus::Success
            && s.state.failure().is_none()
            && s.state.response().is_some()
        {
            // The response beat this completion. The kernel records the
            // error and reports it to the send handler after the receive
            // handler has had the response; so does this: the completion
            // carries the error status and the response. A flush the
            // kernel would repost once (and then normally report success)
            // is not reposted: the answer is in.
            let repostable =
                status == WcStatus::WrFlushErr && !s.state.flush_reposted() && s.rmpp.is_none();
            if !repostable {
                let late = if status == WcStatus::WrFlushErr {
                    SendStatus::Flushed
                } else {
                    SendStatus::WcError(status)
                };
                if s.state.late_error(late).is_ok() {
                    self.stats.late_wc_errors += 1;
                }
            }
        } else if status != WcStatus::Success && s.state.failure().is_none() {
            let closing = self.agents[s.agent].closing;
            if status == WcStatus::WrFlushErr
                && !closing
                && s.rmpp.is_none()
                && s.state.flush_repost().is_ok()
            {
                self.stats.flush_reposts += 1;
                self.post(idx, OnRefusal::Flushed);
                return;
            } else if status == WcStatus::WrFlushErr {
                self.fail(idx, SendStatus::Flushed);
            } else {
                self.fail(idx, SendStatus::WcError(status));
            }
        }
        self.settle(idx, Some(now));
    }
}
