//! Solicited flow control: slots per agent and per port, and the
//! backlog (see the [engine documentation](super#flow-control)).

use super::*;

impl Engine {
    /// True if a new request of agent `aidx` may go on the wire now.
    #[inline]
    pub(super) fn has_flow_room(&self, aidx: usize) -> bool {
        let a = &self.agents[aidx];
        a.backlog.is_empty()
            && a.unanswered < self.flow.agent_limit
            && self.flow.unanswered < self.flow.port_limit
            && self.flow.ready.is_empty()
    }

    /// Request `idx`, open and awaiting its response, takes a slot.
    pub(super) fn take_flow_slot(&mut self, idx: usize) {
        let s = &mut self.sends[idx];
        // Taken once, by an open request awaiting its answer.
        let r = s.state.take_slot();
        if must(&mut self.stats, Move::TakeSlot, r).is_some() {
            self.agents[s.agent].unanswered += 1;
            self.flow.unanswered += 1;
        }
    }

    /// The send no longer awaits a response on the wire: its slot goes to
    /// the backlog (posted by the next [`Engine::pump_backlog`]).
    pub(super) fn release_flow_slot(&mut self, idx: usize) {
        if self.sends[idx].state.release_slot() {
            self.free_flow_slot(self.sends[idx].agent);
        }
    }

    /// A slot of agent `aidx` came free.
    pub(super) fn free_flow_slot(&mut self, aidx: usize) {
        let a = &mut self.agents[aidx];
        a.unanswered = a.unanswered.saturating_sub(1);
        self.flow.unanswered = self.flow.unanswered.saturating_sub(1);
        self.mark_flow_ready(aidx);
    }

    /// Queues agent `aidx` for a port slot if it has a backlog and room
    /// under its own limit.
    pub(super) fn mark_flow_ready(&mut self, aidx: usize) {
        let limit = self.flow.agent_limit;
        let a = &mut self.agents[aidx];
        if !a.fc_ready && !a.closing && !a.backlog.is_empty() && a.unanswered < limit {
            a.fc_ready = true;
            self.flow.ready.push_back(aidx);
        }
    }

    /// Posts backlogged requests while the port has room, one per agent
    /// in turn. O(log n) per request posted.
    pub(super) fn pump_backlog(&mut self, now: Instant) {
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
    pub(super) fn post_queued(&mut self, idx: usize, now: Instant) {
        let s = &mut self.sends[idx];
        // It came out of the backlog.
        let r = s.state.dequeue();
        if must(&mut self.stats, Move::Dequeue, r).unwrap_or(false) {
            // A modify while queued: the total follows the new timeout.
            s.total = s
                .total
                .max(s.timeout.saturating_mul(s.retries_left.saturating_add(1)));
        }
        s.abs_deadline = Some(now + s.total);
        self.post(idx, OnRefusal::Fail);
        self.take_flow_slot(idx);
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
}
