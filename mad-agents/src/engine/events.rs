//! The agents' event queues: received messages (bounded), completions,
//! broadcast port events (at most one of each queued: an equal one still
//! queued is folded into the new one, [`crate::types::coalesce_port_event`]),
//! handed out round-robin by [`Engine::poll_event`].

use super::*;

impl Engine {
    pub(super) fn push_event(&mut self, aidx: usize, ev: AgentEvent) {
        let a = &mut self.agents[aidx];
        a.events.push_back(ev);
        if !a.in_ready {
            a.in_ready = true;
            self.ready.push_back(aidx);
        }
    }

    pub(super) fn deliver_recv(&mut self, aidx: usize, msg: Message) {
        let bound = self.cfg.recv_queue_bound;
        let len = msg.bytes().len();
        let a = &mut self.agents[aidx];
        let over_bytes = a.queued_recv > 0
            && a.queued_recv_bytes.saturating_add(len) > self.cfg.recv_queue_bytes;
        if a.queued_recv >= bound || over_bytes {
            a.stats.recv_dropped += 1;
            self.stats.recv_dropped += 1;
            return;
        }
        a.queued_recv += 1;
        a.queued_recv_bytes += len;
        a.stats.received += 1;
        self.push_event(aidx, AgentEvent::Received(msg));
    }

    pub(super) fn broadcast(&mut self, ev: &AgentEvent) {
        let idxs: Vec<usize> = self
            .agents
            .iter()
            .filter(|(_, a)| !a.closing)
            .map(|(i, _)| i)
            .collect();
        for i in idxs {
            if crate::types::coalesce_port_event(&mut self.agents[i].events, ev) {
                self.count_port_event_coalesced_at(i);
            }
            self.push_event(i, ev.clone());
        }
    }

    pub(super) fn count_port_event_coalesced_at(&mut self, aidx: usize) {
        self.agents[aidx].stats.port_events_coalesced += 1;
        self.stats.port_events_coalesced += 1;
    }

    pub(super) fn pop_event(&mut self, delivering: bool) -> Option<(AgentId, AgentEvent)> {
        while let Some(idx) = self.ready.pop_front() {
            let Some(a) = self.agents.get_mut(idx) else {
                continue;
            };
            a.in_ready = false;
            let Some(ev) = a.events.pop_front() else {
                continue;
            };
            if let AgentEvent::Received(m) = &ev {
                a.queued_recv = a.queued_recv.saturating_sub(1);
                a.queued_recv_bytes = a.queued_recv_bytes.saturating_sub(m.bytes().len());
            }
            if !a.events.is_empty() {
                a.in_ready = true;
                self.ready.push_back(idx);
            }
            if delivering {
                a.delivering += 1;
            }
            let id = a.id;
            self.stats.events += 1;
            self.try_reap(idx);
            return Some((id, ev));
        }
        None
    }

    /// The next event of some agent (one agent's events stay in order;
    /// agents take turns). A closing agent whose last event this is goes
    /// away with it.
    #[inline]
    pub fn poll_event(&mut self) -> Option<(AgentId, AgentEvent)> {
        self.pop_event(false)
    }
}
