//! Per-agent event order in the model (and the receiving thread taking
//! from its channel): a channel agent's events reach its
//! channel in the order the port pulled their causes from the device, each
//! once, however the loop thread and the callers driving the port
//! interleave.

use mad_core::transport::{SendCompletion, WrId};
use mad_core::wire::Mad;

use super::{lock, World};
use crate::types::AgentEvent;

/// What the port did with the device.
#[derive(Default)]
pub(super) struct DevLog {
    /// What the port pulled, in order: a received MAD's TID, or
    /// [`COMPLETIONS`] for a batch of send completions.
    pub(super) pulled: Vec<u64>,
    /// Requests (not responses) posted and not yet completed.
    pub(super) requests: Vec<WrId>,
}

impl DevLog {
    pub(super) fn posted(&mut self, mad: &[u8], wr: WrId) {
        if Mad::new_checked(mad).is_ok_and(|m| !m.response_bit()) {
            self.requests.push(wr);
        }
    }

    pub(super) fn completed(&mut self, done: &[SendCompletion]) {
        if !done.is_empty() {
            self.pulled.push(COMPLETIONS);
        }
        self.requests
            .retain(|wr| done.iter().all(|c| c.wr_id != *wr));
    }
}

/// What the device log records for a batch of send completions (a TID of
/// 0 is never used by the requests the model sends).
pub(super) const COMPLETIONS: u64 = 0;

/// The TID of a MAD.
pub(super) fn tid(mad: &[u8]) -> u64 {
    Mad::new_checked(mad).map_or(u64::MAX, |m| m.tid())
}

/// What an event is known by in the device log.
fn key(ev: &AgentEvent) -> Option<u64> {
    match ev {
        AgentEvent::SendDone(_) => Some(COMPLETIONS),
        AgentEvent::Received(m) => Some(tid(m.bytes())),
        _ => None,
    }
}

impl World {
    /// The receiving thread takes one event out of the channel, if there
    /// is one (see [`World::take_channel`]).
    pub(super) fn take_one(&mut self) -> bool {
        let Some((name, rx, _)) = &self.channel else {
            return false;
        };
        let Ok(ev) = rx.try_recv() else {
            return false;
        };
        let mut log = lock(&self.log);
        if log.returned.contains(name) {
            log.violations.push(format!(
                "{name}'s channel got an event after its deregistration returned: {ev:?}"
            ));
        }
        log.events.entry(name).or_default().push(ev);
        true
    }

    /// The receiving thread takes what is in the channel; nothing may
    /// enter it after the agent's deregistration returned.
    pub(super) fn take_channel(&mut self) {
        let Some((name, rx, _)) = &self.channel else {
            return;
        };
        let mut log = lock(&self.log);
        while let Ok(ev) = rx.try_recv() {
            if log.returned.contains(name) {
                log.violations.push(format!(
                    "{name}'s channel got an event after its deregistration returned: {ev:?}"
                ));
            }
            log.events.entry(name).or_default().push(ev);
        }
    }

    /// The channel agent's events (but the completion a thread in
    /// `send_and_wait` took) came in the order the port pulled them,
    /// and none twice. A send-only agent gets one completion per batch
    /// the device completed at most in these scenarios.
    pub(super) fn check_channel_order(&self) {
        let Some((name, _, _)) = &self.channel else {
            return;
        };
        let got: Vec<u64> = lock(&self.log)
            .events
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(key)
            .collect();
        let pulled = lock(&self.pulled).pulled.clone();
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = got.iter().find(|k| !seen.insert(**k)) {
            self.violation(format!("{name}'s channel got event {dup} twice: {got:?}"));
            return;
        }
        let mut first = std::collections::HashSet::new();
        let want: Vec<u64> = pulled
            .into_iter()
            .filter(|k| got.contains(k) && first.insert(*k))
            .collect();
        if got != want {
            self.violation(format!(
                "{name}'s events came out of order: {got:?}, pulled {want:?}"
            ));
        }
    }
}
