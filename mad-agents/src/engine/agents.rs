//! Registering and deregistering agents, and the soft-reset hold.

use super::*;

impl Engine {
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

    /// Takes back the registration of `agent`, just accepted by
    /// [`Engine::register`], because the transport refused to deliver its
    /// requests (`Transport::register_requests`, which the transport's
    /// owner asks after the engine accepted the agent, so that a conflict
    /// the engine refuses never reaches the kernel): the agent is gone as
    /// if never registered, and the registration counts as refused. Does
    /// nothing for an agent that is unknown or has sent anything.
    pub fn undo_register(&mut self, agent: AgentId) {
        let Some(idx) = self.agent_idx(agent) else {
            return;
        };
        let a = &self.agents[idx];
        if a.sends.len != 0 || a.stats.sends != 0 {
            return;
        }
        self.table.remove(agent);
        let a = self.agents.remove(idx);
        self.by_hi.remove(&a.hi);
        self.stats.registrations = self.stats.registrations.saturating_sub(1);
        self.stats.refused += 1;
    }

    /// Starts deregistering `agent` (see the [module
    /// documentation](crate::engine#deregistration)); idempotent. The agent may be
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
        self.arm_rx(idx);
        let sends = self.agent_sends(idx);
        self.end_as_flushed(sends);
        self.release_reset_hold(idx);
        self.try_reap(idx);
        Ok(())
    }

    /// The port's device died: every send without an outcome (queued in a
    /// backlog, awaiting its response, mid RMPP transfer) fails as
    /// [`SendStatus::Flushed`] now, as deregistration fails an agent's,
    /// instead of at its next resend (which the dead port would refuse)
    /// or its deadline. Work requests still posted complete as the port
    /// flushes them; each send completes once, when its last reference
    /// goes.
    pub(super) fn end_sends_of_dead_port(&mut self) {
        let all = self.sends.iter().map(|(i, _)| i).collect();
        self.stats.ended_by_device_fatal += self.end_as_flushed(all);
    }

    /// Fails each of `sends` that has no outcome yet as
    /// [`SendStatus::Flushed`] and settles it (it completes once its
    /// posted work requests have); returns how many it failed.
    fn end_as_flushed(&mut self, sends: Vec<usize>) -> u64 {
        let mut failed = 0;
        for s in sends {
            if self.sends[s].state.is_active() {
                self.fail(s, SendStatus::Flushed);
                failed += 1;
            }
            self.settle(s, None);
        }
        failed
    }

    /// Agents that have gone since the last call.
    pub fn take_reaped(&mut self) -> Vec<AgentId> {
        std::mem::take(&mut self.reaped)
    }

    #[inline]
    pub(super) fn try_reap(&mut self, idx: usize) {
        let Some(a) = self.agents.get(idx) else {
            return;
        };
        if a.closing && a.sends.len == 0 && a.events.is_empty() && a.delivering == 0 {
            let a = self.agents.remove(idx);
            self.timers.remove(Timer::RmppRecv(idx).key());
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

    pub(super) fn release_reset_hold(&mut self, idx: usize) {
        if let Some(hold) = &mut self.reset_hold {
            hold.remove(&idx);
            if hold.is_empty() {
                self.reset_hold = None;
                self.ack_port_reset();
            }
        }
    }

    /// Acknowledges the pending soft reset to the port's state; what that
    /// makes due runs when the transport's side next gets the chance
    /// ([`Engine::run_port_due`], [`Engine::poll`]).
    pub(super) fn ack_port_reset(&mut self) {
        if self.port.ack_reset(self.client).is_ok() {
            self.port_due = true;
        }
    }

    /// Runs, on the transport `io`, a soft reset the engine's
    /// acknowledgement made due (every client acknowledged): after
    /// [`Engine::ack_reset`], [`Engine::deregister`] or
    /// [`Engine::poll_event`] (an agent that went). [`Engine::poll`] does
    /// it too; the transport's owner calls this to run it at once.
    #[inline]
    pub fn run_port_due(&mut self, io: &mut impl Io) {
        if std::mem::take(&mut self.port_due) {
            io.run_due(&mut self.port);
        }
    }
}
