//! An [`Exchange`] over a mad-agents [`Runtime`]: the requests go
//! through the whole stack (agent layer: TIDs, timeouts, retries, send
//! tracking; port layer; the transport, with `--pcap` if asked for).
//!
//! Two send-only agents are registered (QP0 for SMPs, QP1 for PerfMgt);
//! their completions come back through one channel. Requests started in
//! one round are handed to the engine under one lock, with one wake-up of
//! the runtime's loop thread.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use mad_agents::{Agent, AgentEvent, AgentSpec, Runtime, SendRequest, SendStatus};
use mad_core::transport::{Address, Qp};
use mad_core::wire::MAD_LEN;

use super::pipeline::{Exchange, Limits, Outcome, StartError};

/// See the module documentation.
pub struct AgentExchange<'a> {
    rt: &'a Runtime,
    smi: Agent,
    gsi: Agent,
    tx: mpsc::Sender<(u64, Outcome, u32)>,
    rx: mpsc::Receiver<(u64, Outcome, u32)>,
    pending: Vec<(u64, Qp, SendRequest)>,
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

fn sink(tx: mpsc::Sender<(u64, Outcome, u32)>) -> impl FnMut(AgentEvent) + Send + 'static {
    move |ev| {
        if let AgentEvent::SendDone(c) = ev {
            let outcome = match (c.status, c.response) {
                (SendStatus::Success, Some(m)) => {
                    Outcome::Answer(mad_core::MadBuf::from_slice(m.bytes()))
                }
                (SendStatus::Success, None) => Outcome::Failed("no response MAD".into()),
                (SendStatus::Timeout, _) => Outcome::Timeout,
                (other, _) => Outcome::Failed(other.to_string()),
            };
            let _ = tx.send((c.cookie, outcome, c.retries));
        }
    }
}

impl<'a> AgentExchange<'a> {
    /// Registers the two agents on `rt`.
    ///
    /// # Errors
    /// An agent cannot be registered.
    pub fn new(rt: &'a Runtime) -> Result<Self, String> {
        let (tx, rx) = mpsc::channel();
        let smi = rt
            .register(
                AgentSpec::send_only("discover-smi", Qp::Qp0),
                sink(tx.clone()),
            )
            .map_err(|e| format!("SMP agent: {e}"))?;
        let gsi = rt
            .register(
                AgentSpec::send_only("discover-gsi", Qp::Qp1),
                sink(tx.clone()),
            )
            .map_err(|e| format!("PerfMgt agent: {e}"))?;
        Ok(Self {
            rt,
            smi,
            gsi,
            tx,
            rx,
            pending: Vec::new(),
            sent: 0,
            resent: 0,
        })
    }

    fn took(&mut self, retries: u32) {
        self.sent += 1 + u64::from(retries);
        self.resent += u64::from(retries);
    }
}

impl Exchange for AgentExchange<'_> {
    fn start(
        &mut self,
        id: u64,
        qp: Qp,
        mad: &[u8; MAD_LEN],
        dest: &Address,
        limits: &Limits,
    ) -> Result<(), StartError> {
        let req = SendRequest::new(mad, *dest)
            .expect_response(limits.timeout, limits.retries)
            .cookie(id);
        self.pending.push((id, qp, req));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let smi = self.smi.handle().id();
        let gsi = self.gsi.handle().id();
        let batch = std::mem::take(&mut self.pending);
        let tx = self.tx.clone();
        self.rt.with_engine(|engine| {
            let now = Instant::now();
            for (id, qp, req) in batch {
                let agent = match qp {
                    Qp::Qp0 => smi,
                    Qp::Qp1 => gsi,
                };
                if let Err(e) = engine.send(agent, req, now) {
                    // Refused: reported like any other failure.
                    let _ = tx.send((id, Outcome::Failed(e.to_string()), 0));
                }
            }
        });
        Ok(())
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
