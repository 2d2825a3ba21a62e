//! Response timers: the wait after the work requests complete, retries
//! with backoff, and the timers of RMPP transfers and reassemblies.

use super::*;

impl Engine {
    #[inline]
    pub(super) fn interval(&self, s: &SendSlot) -> Duration {
        let linear = self.cfg.linear_retries;
        // The attempt is the retries used so far.
        let attempt = s.retries_used;
        if attempt < linear {
            s.timeout
        } else {
            let shift = (attempt - linear + 1).min(20);
            s.timeout
                .saturating_mul(1u32 << shift)
                .min(self.cfg.max_backoff.max(s.timeout))
        }
    }

    pub(super) fn start_wait(&mut self, idx: usize, now: Instant) {
        let interval = self.interval(&self.sends[idx]);
        let s = &mut self.sends[idx];
        if s.state.take_extend() {
            let cover = now + s.timeout.saturating_mul(s.retries_left.saturating_add(1));
            s.abs_deadline = Some(s.abs_deadline.map_or(cover, |a| a.max(cover)));
        }
        let mut d = now + interval;
        if let Some(a) = s.abs_deadline {
            d = d.min(a);
        }
        self.timers.insert(d, Timer::Response(idx).key());
    }

    /// Runs every timer of the engine's table due at `now`, earliest
    /// first; true if one ran. One lookup per timer run and one to see
    /// that none is due; nothing is allocated.
    pub(super) fn handle_timeouts(&mut self, now: Instant) -> bool {
        let mut progress = false;
        while let Some((d, key)) = self.timers.first() {
            if d > now {
                break;
            }
            self.timers.remove(key);
            progress = true;
            match Timer::of(key) {
                Timer::Response(sidx) => self.on_response_timeout(sidx, now),
                Timer::RmppSend(sidx) => self.on_rmpp_timer(sidx, now),
                Timer::RmppRecv(aidx) => {
                    let Some(a) = self.agents.get_mut(aidx) else {
                        continue;
                    };
                    if let Some(rx) = a.rmpp_rx.as_mut() {
                        rx.handle_timeout(now);
                    }
                    // Acts on the outcome and sets the next timer.
                    self.drain_rx(aidx, now);
                }
            }
        }
        progress
    }

    /// True while the answer to send `idx` is being reassembled by its
    /// agent's RMPP receiver.
    pub(super) fn answer_arriving(&self, idx: usize) -> bool {
        let s = &self.sends[idx];
        self.agents[s.agent].rmpp_rx.as_ref().is_some_and(|rx| {
            rx.is_receiving(
                s.key.0,
                tid::TID_MATCH_MASK,
                s.key.1,
                &mad_rmpp::Peer::of(&s.dest),
            )
        })
    }

    pub(super) fn on_response_timeout(&mut self, idx: usize, now: Instant) {
        let s = &self.sends[idx];
        if !s.state.awaits_response() {
            self.settle(idx, Some(now));
            return;
        }
        let within = s.abs_deadline.is_none_or(|a| now < a);
        if within && !self.agents[s.agent].closing && self.answer_arriving(idx) {
            // The answer is arriving as an RMPP transfer: no retry (it would
            // restart the responder's transfer); wait on, up to the absolute
            // deadline, while the transfer's own timers govern it.
            self.start_wait(idx, now);
            return;
        }
        let s = &self.sends[idx];
        let retry = s.retries_left > 0 && within && !self.agents[s.agent].closing;
        if retry {
            let s = &mut self.sends[idx];
            s.retries_left -= 1;
            s.retries_used += 1;
            // Only a posted send's response timer runs: it is open.
            let r = s.state.new_attempt();
            must(&mut self.stats, Move::NewAttempt, r);
            let aidx = s.agent;
            self.agents[aidx].stats.retries += 1;
            self.stats.retries += 1;
            if self.sends[idx].rmpp.is_some() {
                // An RMPP request: the same message with the same TID as a
                // new transfer.
                self.restart_rmpp(idx, now);
            } else {
                self.post(idx, OnRefusal::Fail);
            }
        } else {
            self.fail(idx, SendStatus::Timeout);
        }
        self.settle(idx, Some(now));
    }
}
