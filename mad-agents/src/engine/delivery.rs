//! The runtime's delivery hooks: taking events while keeping the agent
//! registered until its callback returns, and taking a completion a
//! caller waits for. Crate-private: only [`crate::Runtime`] delivers this way.

use super::*;

impl Engine {
    /// As [`Engine::poll_event`], but the agent stays registered (closing
    /// or not) until [`Engine::end_delivery`] says the event has been
    /// handled: a runtime uses this so that deregistration waits for a
    /// callback in progress.
    pub(crate) fn begin_delivery(&mut self) -> Option<(AgentId, AgentEvent)> {
        self.pop_event(true)
    }

    /// The event taken by [`Engine::begin_delivery`] for `agent` has been
    /// handled.
    pub(crate) fn end_delivery(&mut self, agent: AgentId) {
        if let Some(idx) = self.agent_idx(agent) {
            let a = &mut self.agents[idx];
            a.delivering = a.delivering.saturating_sub(1);
            self.try_reap(idx);
        }
    }

    /// Counts a received MAD that a runtime dropped because `agent`'s
    /// delivery channel was full.
    pub(crate) fn count_recv_drop(&mut self, agent: AgentId) {
        self.stats.recv_dropped += 1;
        if let Some(idx) = self.agent_idx(agent) {
            self.agents[idx].stats.recv_dropped += 1;
        }
    }

    /// Counts a port event that a runtime folded into a later equal one in
    /// `agent`'s delivery channel.
    pub(crate) fn count_port_event_coalesced(&mut self, agent: AgentId) {
        if let Some(idx) = self.agent_idx(agent) {
            self.count_port_event_coalesced_at(idx);
        }
    }

    /// Takes every queued event of `agent` out of the queue (in order).
    pub(crate) fn take_events(&mut self, agent: AgentId) -> Vec<AgentEvent> {
        let mut v = Vec::new();
        self.take_events_into(agent, &mut v);
        v
    }

    /// Appends every queued event of `agent` to `out` (in order), taking
    /// them out of the queue: a caller that reuses `out` allocates
    /// nothing per turn.
    pub(crate) fn take_events_into(&mut self, agent: AgentId, out: &mut Vec<AgentEvent>) {
        let Some(idx) = self.agent_idx(agent) else {
            return;
        };
        let a = &mut self.agents[idx];
        a.queued_recv = 0;
        a.queued_recv_bytes = 0;
        let n = a.events.len();
        out.extend(a.events.drain(..));
        self.stats.events += n as u64;
        self.try_reap(idx);
    }

    /// Takes the completion of `send` out of `agent`'s queue, if it is
    /// there.
    pub(crate) fn take_completion(&mut self, agent: AgentId, send: SendId) -> Option<Completion> {
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

    /// True while an event of `agent` taken by [`Engine::begin_delivery`]
    /// has not been handled yet ([`Engine::end_delivery`]): whoever takes
    /// the agent's next events must wait for it, to keep them in order.
    pub(crate) fn delivering(&self, agent: AgentId) -> bool {
        self.agent_idx(agent)
            .is_some_and(|idx| self.agents[idx].delivering > 0)
    }

    /// True if an agent other than `agent` has an event waiting to be
    /// handed out.
    pub(crate) fn has_events_besides(&self, agent: AgentId) -> bool {
        self.agents
            .iter()
            .any(|(_, a)| a.id != agent && !a.events.is_empty())
    }
}
