//! Pumps a [`SubnetManager`] over any [`Transport`], without blocking.
//!
//! The driver is the only place where SM-lite meets a transport: each
//! [`SmDriver::pump`] drains send completions, hands QP0 receives to the
//! SM, fires its timers, and posts what it has to send. A MAD the
//! transport refuses with [`TransportError::QueueFull`] is kept and
//! posted first on the next pump. Waiting (for a receive or for
//! [`SubnetManager::poll_timeout`]) is the caller's business: use the
//! transport's fd, or its own wait call.

use std::time::Instant;

use mad_core::transport::{Address, Qp, SendCompletion, Transport, TransportError};
use mad_core::wire::MAD_LEN;

use super::SubnetManager;

/// See the module docs.
#[derive(Debug)]
pub struct SmDriver {
    /// The MAD being sent (reused for every MAD: no allocation per send).
    mad: Box<[u8; MAD_LEN]>,
    /// `mad` holds a MAD the transport refused with a full queue, for here.
    pending: Option<Address>,
    completions: Vec<SendCompletion>,
    sent: u64,
    received: u64,
    failed_sends: u64,
}

impl Default for SmDriver {
    fn default() -> Self {
        Self {
            mad: Box::new([0; MAD_LEN]),
            pending: None,
            completions: Vec::new(),
            sent: 0,
            received: 0,
            failed_sends: 0,
        }
    }
}

impl SmDriver {
    /// A driver with nothing pending.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// One non-blocking round (see the module docs). Returns true if
    /// anything was received or sent.
    ///
    /// # Errors
    /// What the transport reports, except a full send queue (the MAD is
    /// kept for the next round). Receives on QP1 are dropped: SM-lite
    /// speaks only on QP0.
    pub fn pump<T: Transport + ?Sized>(
        &mut self,
        sm: &mut SubnetManager,
        t: &mut T,
        now: Instant,
    ) -> Result<bool, TransportError> {
        let mut busy = self.pump_quiet(sm, t, now)?;
        // Then what the SM has to send (a MAD refused with a full queue
        // first).
        loop {
            let next = match self.pending.take() {
                Some(to) => Some(to),
                None => sm.poll_transmit_into(now, &mut self.mad),
            };
            let Some(to) = next else { break };
            match t.post_send(Qp::Qp0, &self.mad[..], &to) {
                Ok(_) => {
                    busy = true;
                    self.sent += 1;
                }
                Err(TransportError::QueueFull { .. }) => {
                    self.pending = Some(to);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(busy)
    }

    /// [`SmDriver::pump`] without posting anything: send completions and
    /// receives are taken and the SM's timers fire, but what it would
    /// send (resends of timed-out SMPs included) waits for the next
    /// [`SmDriver::pump`]. For a port whose owner holds it quiet, as
    /// during a soft reset. Returns true if anything was received.
    ///
    /// # Errors
    /// What the transport reports.
    pub fn pump_quiet<T: Transport + ?Sized>(
        &mut self,
        sm: &mut SubnetManager,
        t: &mut T,
        now: Instant,
    ) -> Result<bool, TransportError> {
        let mut busy = false;
        self.completions.clear();
        t.poll_send_completions(&mut self.completions)?;
        // A send that completed in error is simply lost: SM-lite resends
        // after its timeout.
        self.failed_sends += self
            .completions
            .iter()
            .filter(|c| c.status != mad_core::transport::WcStatus::Success)
            .count() as u64;
        while let Some(rx) = t.poll_recv()? {
            busy = true;
            self.received += 1;
            if rx.qp == Qp::Qp0 {
                sm.handle_recv(now, &rx.mad, &rx.src);
            }
        }
        if sm.poll_timeout().is_some_and(|d| d <= now) {
            sm.handle_timeout(now);
        }
        Ok(busy)
    }

    /// MADs posted so far.
    #[must_use]
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// MADs received so far (both QPs).
    #[must_use]
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Sends that completed with an error status.
    #[must_use]
    pub fn failed_sends(&self) -> u64 {
        self.failed_sends
    }
}
