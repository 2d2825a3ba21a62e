//! Driving the engine and the receive path: port events, dispatch of
//! received MADs to waiting sends and owning agents, the
//! unsupported-method answer.

use super::*;

impl Engine {
    // ----- driving -----

    /// Does everything due at `now`: polls the port (completions,
    /// receives, async events, recovery), dispatches what it reports,
    /// handles expired response, RMPP and reassembly timers, and posts
    /// backlogged requests that flow control now lets go. Returns true if
    /// anything happened.
    pub fn poll(&mut self, io: &mut impl Io, now: Instant) -> bool {
        // Timers first, so that the port posts what they resend in the
        // same call; then whatever the port reports; then the timers its
        // reports made due (a wait whose absolute deadline has passed).
        let mut progress = self.handle_timeouts(now);
        self.flush_transmits(io, now);
        self.run_port_due(io);
        io.drive(&mut self.port, now);
        loop {
            while let Some(ev) = self.port.poll_client(self.client) {
                progress = true;
                self.on_port_event(ev, now);
            }
            // An acknowledged reset runs now, and what it reports is
            // handled in this call.
            if !self.port_due {
                break;
            }
            self.run_port_due(io);
        }
        progress |= self.handle_timeouts(now);
        let unanswered = self.flow.unanswered;
        self.pump_backlog(now);
        self.flush_transmits(io, now);
        progress |= self.flow.unanswered != unanswered;
        progress
    }

    #[inline]
    pub(super) fn on_port_event(&mut self, ev: PortEvent, now: Instant) {
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
                    self.ack_port_reset();
                } else {
                    self.reset_hold = Some(hold);
                }
            }
            PortEvent::ResetEnd => {
                self.reset_hold = None;
                self.broadcast(&AgentEvent::ResetEnd);
            }
            PortEvent::DeviceFatal => {
                self.broadcast(&AgentEvent::DeviceFatal);
                self.end_sends_of_dead_port();
            }
            PortEvent::Reopened => self.broadcast(&AgentEvent::Reopened),
            _ => {}
        }
    }

    /// Injects a received MAD as if the port had received it at `now`:
    /// it is parsed as the port parses what its transport delivers
    /// ([`Inbound::parse`]) and dispatched at once, without reaching
    /// through the port into the transport. (A fuzzer, a test or a layer
    /// that receives MADs some other way drives the engine with this,
    /// [`Engine::poll`] and [`Engine::poll_timeout`].)
    ///
    /// # Errors
    /// [`InboundError`] for bytes that are not a MAD of their QP; they
    /// count in [`EngineStats::malformed`].
    pub fn handle_recv(
        &mut self,
        io: &mut impl Io,
        now: Instant,
        received: Received,
    ) -> Result<(), InboundError> {
        match Inbound::parse(received) {
            Ok(m) => {
                self.on_recv(m, now);
                self.flush_transmits(io, now);
                Ok(())
            }
            Err(e) => {
                self.stats.malformed += 1;
                Err(e)
            }
        }
    }

    /// Dispatches a parsed MAD: an RMPP ACK / STOP / ABORT to its
    /// outbound transfer, a response to the send waiting for its TID, a
    /// request to the agent that owns its method (see the [engine
    /// documentation](super#dispatch-agentsmd-2)).
    #[inline]
    pub(super) fn on_recv(&mut self, m: Inbound, now: Instant) {
        let class = m.class();
        let key = tid::match_key(m.tid(), class.0);
        let rmpp = m.rmpp_active();
        // ACK / STOP / ABORT for one of our outbound transfers.
        if rmpp.is_some_and(|t| t != RmppType::DATA) && self.on_rmpp_control(key, &m, now) {
            return;
        }
        if m.is_response() {
            let Some(&idx) = self.waiting.get(&key) else {
                self.stats.unmatched_responses += 1;
                return;
            };
            if self.sends[idx].state.is_queued() {
                // Still in the backlog: not sent, so not answered (a stale
                // answer to an earlier send with the same TID).
                self.stats.unmatched_responses += 1;
                return;
            }
            if !self.answers_from_destination(idx, m.src()) {
                self.stats.wrong_source += 1;
                return;
            }
            let aidx = self.sends[idx].agent;
            if self.agents[aidx].spec.rmpp && rmpp.is_some() {
                self.reassemble(aidx, &m, now);
                return;
            }
            self.stats.responses_matched += 1;
            self.on_response(idx, Message::new(m.into_received()), now);
            return;
        }
        let owner = self
            .table
            .lookup(
                m.qp(),
                class.0,
                m.class_version(),
                m.method_byte(),
                m.oui().unwrap_or(0),
            )
            .and_then(|a| self.agent_idx(a))
            .filter(|&i| !self.agents[i].closing);
        match owner {
            // A DS ACK (the requester's copy of our final ACK, carrying
            // the request's method) records the window for our response
            // in the reassembly.
            Some(aidx) if self.agents[aidx].spec.rmpp && rmpp.is_some() => {
                self.reassemble(aidx, &m, now);
            }
            Some(aidx) => self.deliver_recv(aidx, Message::new(m.into_received())),
            None => {
                self.stats.unclaimed_requests += 1;
                let method = m.method();
                if self.cfg.answer_unmatched && (method == Method::GET || method == Method::SET) {
                    self.answer_unsupported(&m);
                }
            }
        }
    }

    /// Hands an RMPP segment (or DS ACK) to agent `aidx`'s reassembly.
    fn reassemble(&mut self, aidx: usize, m: &Inbound, now: Instant) {
        if let (Some(rx), Some(h)) = (self.agents[aidx].rmpp_rx.as_mut(), m.rmpp()) {
            rx.handle_parsed(m.bytes(), &h, m.src(), now);
        }
        self.drain_rx(aidx, now);
    }

    /// True if a MAD from `src` may answer send `idx` (the kernel's
    /// `rcv_has_same_gid` as AGENTS.md §2 step 8 / MAD.md §5 restate it for
    /// this layer; see the [module documentation](self#response-matching)).
    #[inline]
    pub(super) fn answers_from_destination(&self, idx: usize, src: &Address) -> bool {
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
    pub(super) fn answer_unsupported(&mut self, r: &Inbound) {
        let mut resp = r.received().mad.clone();
        resp.truncate(MAD_LEN);
        let class = r.class();
        {
            let mut m = Mad::new_unchecked(&mut resp[..]);
            m.set_method(Method::GET, true);
            let mut status = MadStatus::METHOD_ATTR_UNSUPPORTED.0;
            if class == MgmtClass::SUBN_DIRECTED_ROUTE {
                status = (status & DR_STATUS_MASK) | DR_DIRECTION_BIT;
            }
            m.set_status(MadStatus(status));
        }
        let mut dest = *r.src();
        if r.qp() == Qp::Qp1 {
            dest.qkey = GSI_QKEY;
        } else {
            dest.qkey = 0;
        }
        if class == MgmtClass::SUBN_DIRECTED_ROUTE {
            dest.lid = PERMISSIVE_LID;
        }
        self.post_internal(None, r.qp(), &resp, &dest, true);
    }

    /// Send `idx` is answered by `msg`: it stops waiting (its slot, timer
    /// and RMPP transfer end) and completes once its work requests have.
    pub(super) fn on_response(&mut self, idx: usize, msg: Message, now: Instant) {
        // Refused for a send that is not open and awaiting (it is then not
        // in the table of sends waiting for an answer).
        let Ok(released) = self.sends[idx].state.answer(msg) else {
            return;
        };
        self.stop_waiting(idx, released);
        self.settle(idx, Some(now));
    }
}
