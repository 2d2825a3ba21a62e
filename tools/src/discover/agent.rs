//! An [`Exchange`] over a mad-agents [`Runtime`]: the requests go
//! through the whole stack (agent layer: TIDs, timeouts, retries, send
//! tracking; port layer; the transport, with `--pcap` if asked for).
//!
//! Two send-only channel agents are registered (QP0 for SMPs, QP1 for
//! PerfMgt). Requests started in one round are handed to the engine under
//! one lock per agent ([`mad_agents::AgentRef::send_batch`]), which wakes
//! the runtime's loop thread only when no caller drives the port. Completions are taken on the caller's thread: waiting for
//! them drives the port there ([`mad_agents::AgentReceiver`]'s fast
//! path), so an answer the transport has at once (the built-in fabric)
//! costs no hand-off to the runtime's loop thread and back.

use std::marker::PhantomData;
use std::time::Duration;

use mad_agents::{Agent, AgentEvent, AgentReceiver, AgentSpec, Runtime, SendRequest, SendStatus};
use mad_core::transport::Qp;

use super::pipeline::{Answer, Exchange, Outcome, Outgoing, StartError};

/// Most time a poll blocks on one agent's channel while the other agent
/// has requests in flight too (then it looks at both in turn).
const BOTH_SLICE: Duration = Duration::from_millis(1);

/// One of the two agents: its registration, its channel and the requests
/// it has in flight.
struct Side {
    agent: Agent,
    rx: AgentReceiver,
    in_flight: usize,
    /// Requests started and not yet handed to the engine.
    pending: Vec<SendRequest>,
}

/// See the module documentation.
pub struct AgentExchange<'a> {
    /// The agents live on this runtime.
    rt: PhantomData<&'a Runtime>,
    /// QP0 (SMPs) and QP1 (PerfMgt), in that order.
    sides: [Side; 2],
    /// Requests the engine refused, reported at the next poll.
    refused: Vec<(u64, Outcome)>,
    sent: u64,
    resent: u64,
}

impl std::fmt::Debug for AgentExchange<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentExchange")
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

fn side_of(qp: Qp) -> usize {
    match qp {
        Qp::Qp0 => 0,
        Qp::Qp1 => 1,
    }
}

impl<'a> AgentExchange<'a> {
    /// Registers the two agents on `rt`.
    ///
    /// # Errors
    /// An agent cannot be registered.
    pub fn new(rt: &'a Runtime) -> Result<Self, String> {
        let side = |name: &str, qp: Qp, what: &str| {
            rt.register_channel(AgentSpec::send_only(name, qp))
                .map(|(agent, rx)| Side {
                    agent,
                    rx,
                    in_flight: 0,
                    pending: Vec::new(),
                })
                .map_err(|e| format!("{what} agent: {e}"))
        };
        Ok(Self {
            rt: PhantomData,
            sides: [
                side("discover-smi", Qp::Qp0, "SMP")?,
                side("discover-gsi", Qp::Qp1, "PerfMgt")?,
            ],
            refused: Vec::new(),
            sent: 0,
            resent: 0,
        })
    }

    /// Takes one event of side `i` into `out` (a completion: how it
    /// ended, and its tries counted).
    fn take(&mut self, i: usize, ev: AgentEvent, out: &mut Vec<(u64, Outcome)>) {
        let AgentEvent::SendDone(c) = ev else {
            return;
        };
        self.sides[i].in_flight = self.sides[i].in_flight.saturating_sub(1);
        self.sent += 1 + u64::from(c.retries);
        self.resent += u64::from(c.retries);
        let outcome = match (c.status, c.response) {
            (SendStatus::Success, Some(m)) => Outcome::Answer(Answer::Message(m)),
            (SendStatus::Success, None) => Outcome::Failed("no response MAD".into()),
            (SendStatus::Timeout, _) => Outcome::Timeout,
            (other, _) => Outcome::Failed(other.to_string()),
        };
        out.push((c.cookie, outcome));
    }

    /// Moves every completion waiting on side `i` into `out` (driving
    /// the port when its channel is empty).
    fn drain(&mut self, i: usize, out: &mut Vec<(u64, Outcome)>) {
        while self.sides[i].in_flight > 0 {
            let Some(ev) = self.sides[i].rx.try_recv() else {
                break;
            };
            self.take(i, ev, out);
        }
    }
}

impl Exchange for AgentExchange<'_> {
    fn start(&mut self, id: u64, req: Outgoing<'_>) -> Result<(), StartError> {
        let send = SendRequest::new(req.mad, *req.dest)
            .expect_response(req.limits.timeout, req.limits.retries)
            .cookie(id);
        self.sides[side_of(req.qp)].pending.push(send);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        for side in &mut self.sides {
            if side.pending.is_empty() {
                continue;
            }
            let refused = &mut self.refused;
            // Refused: reported like any other failure.
            let sent = side
                .agent
                .send_batch(side.pending.drain(..), |id, e| {
                    refused.push((id, Outcome::Failed(e.to_string())));
                })
                .map_err(|e| format!("the agent runtime: {e}"))?;
            side.in_flight += sent;
        }
        Ok(())
    }

    fn poll(&mut self, max: Duration, out: &mut Vec<(u64, Outcome)>) -> Result<(), String> {
        let before = out.len();
        out.append(&mut self.refused);
        self.drain(0, out);
        self.drain(1, out);
        if out.len() > before || max.is_zero() {
            return Ok(());
        }
        let busy: Vec<usize> = (0..2).filter(|&i| self.sides[i].in_flight > 0).collect();
        let slice = if busy.len() > 1 {
            max.min(BOTH_SLICE)
        } else {
            max
        };
        for i in busy {
            match self.sides[i].rx.recv_timeout(slice) {
                Some(ev) => {
                    self.take(i, ev, out);
                    self.drain(i, out);
                    return Ok(());
                }
                None if self.sides[i].rx.is_closed() => {
                    return Err("the agent runtime stopped".into());
                }
                None => {}
            }
        }
        Ok(())
    }

    fn sent(&self) -> u64 {
        self.sent
    }

    fn resent(&self) -> u64 {
        self.resent
    }
}
