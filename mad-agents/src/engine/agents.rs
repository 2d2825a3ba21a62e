//! Registering and deregistering agents, and the soft-reset hold.

use super::*;

impl<T: Transport> Engine<T> {
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
        for s in sends {
            if self.sends[s].state.is_active() {
                self.fail(s, SendStatus::Flushed);
            }
            self.settle(s, None);
        }
        self.release_reset_hold(idx);
        self.try_reap(idx);
        Ok(())
    }

    /// The port's device died: every send without an outcome (queued in a
    /// backlog, awaiting its response, mid RMPP transfer) fails as
    /// [`SendStatus::Flushed`] now, as deregistration fails them, instead
    /// of at its next resend (which the dead port would refuse) or its
    /// deadline. Work requests still posted complete as the port flushes
    /// them; each send completes once, when its last reference goes.
    pub(super) fn end_sends_of_dead_port(&mut self) {
        let idxs: Vec<usize> = self
            .sends
            .iter()
            .filter(|(_, s)| s.state.is_active())
            .map(|(i, _)| i)
            .collect();
        for s in idxs {
            self.fail(s, SendStatus::Flushed);
            self.stats.ended_by_device_fatal += 1;
            self.settle(s, None);
        }
    }

    /// Agents that have gone since the last call.
    pub fn take_reaped(&mut self) -> Vec<AgentId> {
        std::mem::take(&mut self.reaped)
    }

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
                let _ = self.port.ack_reset(self.client);
            }
        }
    }
}
