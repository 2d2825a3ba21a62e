//! An [`Exchange`] over a mad-agents [`Runtime`]: the requests go
//! through the whole stack (agent layer: TIDs, timeouts, retries, send
//! tracking; port layer; the transport, with `--pcap` if asked for).
//!
//! Two send-only agents are registered (QP0 for SMPs, QP1 for PerfMgt);
//! their completions come back through one channel.

use std::sync::mpsc;
use std::time::Duration;

use mad_agents::{Agent, AgentEvent, AgentSpec, Runtime, SendRequest, SendStatus};
use mad_core::transport::{Address, Qp};
use mad_core::wire::MAD_LEN;

use super::pipeline::{Exchange, Limits, Outcome, StartError};

/// See the module documentation.
pub struct AgentExchange {
    smi: Agent,
    gsi: Agent,
    rx: mpsc::Receiver<(u64, Outcome, u32)>,
    sent: u64,
    resent: u64,
}

impl std::fmt::Debug for AgentExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentExchange")
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

fn sink(tx: mpsc::Sender<(u64, Outcome, u32)>) -> impl FnMut(AgentEvent) + Send + 'static {
    move |ev| {
        if let AgentEvent::SendDone(c) = ev {
            let outcome = match (c.status, c.response) {
                (SendStatus::Success, Some(m)) => Outcome::Answer(m.bytes().to_vec()),
                (SendStatus::Success, None) => Outcome::Failed("no response MAD".into()),
                (SendStatus::Timeout, _) => Outcome::Timeout,
                (other, _) => Outcome::Failed(other.to_string()),
            };
            let _ = tx.send((c.cookie, outcome, c.retries));
        }
    }
}

impl AgentExchange {
    /// Registers the two agents on `rt`.
    ///
    /// # Errors
    /// An agent cannot be registered.
    pub fn new(rt: &Runtime) -> Result<Self, String> {
        let (tx, rx) = mpsc::channel();
        let smi = rt
            .register(
                AgentSpec::send_only("discover-smi", Qp::Qp0),
                sink(tx.clone()),
            )
            .map_err(|e| format!("SMP agent: {e}"))?;
        let gsi = rt
            .register(AgentSpec::send_only("discover-gsi", Qp::Qp1), sink(tx))
            .map_err(|e| format!("PerfMgt agent: {e}"))?;
        Ok(Self {
            smi,
            gsi,
            rx,
            sent: 0,
            resent: 0,
        })
    }

    fn took(&mut self, retries: u32) {
        self.sent += 1 + u64::from(retries);
        self.resent += u64::from(retries);
    }
}

impl Exchange for AgentExchange {
    fn start(
        &mut self,
        id: u64,
        qp: Qp,
        mad: &[u8; MAD_LEN],
        dest: &Address,
        limits: &Limits,
    ) -> Result<(), StartError> {
        let req = SendRequest::new(mad.to_vec(), *dest)
            .expect_response(limits.timeout, limits.retries)
            .cookie(id);
        let agent = match qp {
            Qp::Qp0 => &self.smi,
            Qp::Qp1 => &self.gsi,
        };
        agent
            .handle()
            .send(req)
            .map(|_| ())
            .map_err(|e| StartError::Refused(e.to_string()))
    }

    fn poll(&mut self, max: Duration, out: &mut Vec<(u64, Outcome)>) -> Result<(), String> {
        let first = if max.is_zero() {
            self.rx.try_recv().ok()
        } else {
            match self.rx.recv_timeout(max) {
                Ok(v) => Some(v),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("the agent runtime stopped".into())
                }
            }
        };
        let Some((id, o, r)) = first else {
            return Ok(());
        };
        self.took(r);
        out.push((id, o));
        while let Ok((id, o, r)) = self.rx.try_recv() {
            self.took(r);
            out.push((id, o));
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
