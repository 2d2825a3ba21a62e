//! The invariants checked after every step: completions exactly once
//! and to their agent, the tables, the bounds, the timers.

use super::*;

impl Harness {
    /// Takes what the far side saw, hands out the events and checks them,
    /// and checks the tables.
    pub(super) fn check(&mut self) {
        {
            let mut log = self.log.lock().unwrap();
            self.seen.extend(log.drain(..));
        }
        if self.seen.len() > 64 {
            self.seen.drain(..self.seen.len() - 64);
        }
        let mut received: HashMap<AgentId, usize> = HashMap::new();
        while let Some((a, ev)) = self.e.poll_event() {
            assert!(
                !self.reaped.contains(&a),
                "an event for a reaped agent: {ev:?}"
            );
            match ev {
                AgentEvent::SendDone(c) => {
                    let rec = self
                        .sends
                        .get_mut(&c.send)
                        .expect("a completion of no send");
                    assert!(!rec.done, "a send completed twice: {c:?}");
                    assert_eq!(rec.agent, a, "a completion to another agent");
                    assert_eq!((c.tid, c.cookie), (rec.tid, rec.cookie));
                    rec.done = true;
                    if c.status == SendStatus::Success && rec.expects {
                        assert!(c.response.is_some(), "success without the response");
                    }
                    if let Some(r) = &c.response {
                        let class = mad_testkit::header::of(r.bytes()).mgmt_class;
                        let k = mad_agents::tid::match_key(r.tid(), class.0);
                        assert_eq!(k.0, mad_agents::tid::match_key(c.tid, 0).0, "response TID");
                        self.check_message(r.bytes());
                    }
                }
                AgentEvent::Received(m) => {
                    assert!(
                        !self.deregistered.contains(&a),
                        "a request delivered to a deregistered agent"
                    );
                    let n = received.entry(a).or_default();
                    *n += 1;
                    assert!(
                        *n <= self.cfg.recv_queue_bound,
                        "more receives than the queue bound"
                    );
                    self.check_message(m.bytes());
                    if self.held.len() < 8 {
                        self.held.push((a, m));
                    }
                }
                _ => {}
            }
        }
        for a in self.e.take_reaped() {
            assert!(
                self.deregistered.contains(&a),
                "reaped without deregistration"
            );
            assert!(self.reaped.insert(a), "reaped twice");
            assert!(
                self.sends.values().all(|s| s.agent != a || s.done),
                "reaped with a send not completed"
            );
            assert_eq!(self.e.agent_state(a), None);
            self.agents.retain(|(x, _)| *x != a);
        }
        let pending = self.sends.values().filter(|s| !s.done).count();
        assert_eq!(
            self.e.outstanding(),
            pending,
            "send table != sends not completed"
        );
        assert_eq!(self.e.agent_count(), self.agents.len());
        let rx = &self.cfg.rmpp_receiver;
        for &(a, _) in &self.agents {
            assert!(self.e.rmpp_reassemblies(a) <= rx.max_total + rx.max_lingering);
            assert_eq!(self.e.queued_events(a), 0);
            let mine = self
                .sends
                .values()
                .filter(|s| s.agent == a && !s.done)
                .count();
            assert_eq!(self.e.agent_outstanding(a), mine);
        }
    }

    /// A reassembled message (longer than a MAD) with a (TID, method) only
    /// genuine segments came with is the one the peer sent.
    pub(super) fn check_message(&self, bytes: &[u8]) {
        if bytes.len() <= 256 {
            return;
        }
        let k = tid_method(bytes).unwrap();
        if self.tainted.contains(&k) {
            return;
        }
        let m = self
            .expected
            .get(&k)
            .expect("a reassembled message nobody sent");
        assert_eq!(bytes.len(), m.len(), "reassembled length");
        assert_eq!(&bytes[..24], &m[..24]);
        assert_eq!(&bytes[36..], &m[36..], "reassembled bytes");
    }

    /// Polls, moving the clock to each next deadline, until `done` (at
    /// most `rounds` times).
    pub(super) fn settle(&mut self, rounds: usize, done: impl Fn(&Self) -> bool) -> bool {
        for _ in 0..rounds {
            self.poll();
            self.check();
            if done(self) {
                return true;
            }
            match self.e.poll_timeout() {
                Some(d) => self.clock.advance_to(d),
                None => self.clock.advance(Duration::from_millis(1)),
            }
        }
        false
    }
}
