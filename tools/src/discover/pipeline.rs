//! A window of MAD requests in flight: bounded in total (per port) and per
//! destination, handed to an [`Exchange`] that sends them and reports how
//! each ended, and passed to a handler that may submit more.
//!
//! This is what keeps discovery and counter sweeps fast: many requests
//! travel at once, but never more than a destination (an SMA, a PMA) or
//! the port (ibsim wedges with about 512 unanswered per client) can take.
//!
//! Requests wait in one FIFO. A request whose destination already has
//! [`Limits::per_dest`] in flight is parked behind it and moves to the
//! front of the FIFO when one of that destination's answers arrives, so a
//! busy destination never blocks the others.
//!
//! Two exchanges exist: [`TransportExchange`] over a bare
//! [`Transport`] (it matches answers by the low 32 TID bits, which the
//! kernel leaves alone, and resends after a timeout), and
//! [`super::agent::AgentExchange`] over a mad-agents runtime (the agent
//! layer does TIDs, timeouts and retries).

use std::collections::VecDeque;

use mad_core::hash::FastMap;
use std::time::{Duration, Instant};

use mad_core::transport::{Address, Qp, Transport, TransportError, WcStatus, WrId};
use mad_core::wire::{Mad, MAD_HEADER_LEN, MAD_LEN};

pub use super::answer::Answer;

/// How many requests may be in flight, and how long to wait for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most requests in flight on the port (all destinations).
    pub window: usize,
    /// Most requests in flight to one destination.
    pub per_dest: usize,
    /// How long to wait for an answer before resending.
    pub timeout: Duration,
    /// Resends after the first try before giving up.
    pub retries: u32,
}

impl Default for Limits {
    /// 256 on the port, 4 per destination, 1 s timeout, 2 resends (three
    /// tries in all, as libibmad).
    fn default() -> Self {
        Self {
            window: 256,
            per_dest: 4,
            timeout: Duration::from_millis(1000),
            retries: 2,
        }
    }
}

/// One request and the caller's context, handed back with its outcome.
#[derive(Debug, Clone)]
pub struct Request<K> {
    /// QP0 for SMPs, QP1 for everything else.
    pub qp: Qp,
    /// The MAD; its TID is chosen by the exchange.
    pub mad: [u8; MAD_LEN],
    /// Where it goes.
    pub dest: Address,
    /// The destination it counts against for [`Limits::per_dest`] (a node
    /// GUID, a LID); `None` when unknown (counted against the port only).
    pub dest_key: Option<u64>,
    /// The caller's context.
    pub ctx: K,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The answer MAD (status not checked: that is class specific).
    Answer(Answer),
    /// No answer after every retry.
    Timeout,
    /// The transport refused or failed the send.
    Failed(String),
}

/// Why an exchange did not take a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// Full for now: offer it again after the next poll.
    Busy,
    /// Refused for good (this request fails).
    Refused(String),
}

/// What [`Exchange::start`] is to send.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// QP0 for SMPs, QP1 for everything else.
    pub qp: Qp,
    /// The MAD; its TID is chosen by the exchange.
    pub mad: &'a [u8; MAD_LEN],
    /// Where it goes.
    pub dest: &'a Address,
    /// The timeout and the resends after it.
    pub limits: &'a Limits,
}

/// Sends requests and reports how each ended.
pub trait Exchange {
    /// Starts `req.mad` on `req.qp` to `req.dest`, expecting an answer
    /// within `req.limits.timeout` with `req.limits.retries` resends;
    /// `id` comes back with its outcome from [`Exchange::poll`].
    ///
    /// # Errors
    /// [`StartError::Busy`] to be offered again later, or a refusal.
    fn start(&mut self, id: u64, req: Outgoing<'_>) -> Result<(), StartError>;

    /// Sends what [`Exchange::start`] may have buffered (called after
    /// every round of starts; an exchange that sends at once does
    /// nothing).
    ///
    /// # Errors
    /// A failure of the transport as a whole.
    fn flush(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// Moves finished requests into `out`; when none is ready, blocks up
    /// to `max` for one.
    ///
    /// # Errors
    /// A failure of the transport as a whole.
    fn poll(&mut self, max: Duration, out: &mut Vec<(u64, Outcome)>) -> Result<(), String>;

    /// MADs posted so far (resends included).
    fn sent(&self) -> u64;

    /// Resends so far.
    fn resent(&self) -> u64;
}

/// Counters of a pipeline run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// MADs posted (resends included).
    pub sent: u64,
    /// Requests answered.
    pub answered: u64,
    /// Resends after a timeout.
    pub retries: u64,
    /// Requests that ended without an answer.
    pub failed: u64,
    /// Most requests in flight at once.
    pub max_in_flight: usize,
}

/// Why a pipeline run stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipelineError {
    /// The transport failed (not a single request).
    Transport(String),
    /// The handler asked to stop.
    Handler(String),
}

impl std::fmt::Display for PipelineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(m) => write!(f, "transport: {m}"),
            Self::Handler(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PipelineError {}

struct InFlight<K> {
    ctx: K,
    dest_key: Option<u64>,
}

/// The request window; see the module documentation.
pub struct Pipeline<K> {
    limits: Limits,
    ready: VecDeque<Request<K>>,
    parked: FastMap<u64, VecDeque<Request<K>>>,
    /// Requests in `parked`, all destinations together.
    parked_len: usize,
    per_dest: FastMap<u64, usize>,
    out: FastMap<u64, InFlight<K>>,
    next_id: u64,
    stats: Stats,
}

impl<K> std::fmt::Debug for Pipeline<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("limits", &self.limits)
            .field("ready", &self.ready.len())
            .field("in_flight", &self.out.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<K> Pipeline<K> {
    /// An empty pipeline (`window` and `per_dest` of at least 1).
    #[must_use]
    pub fn new(limits: Limits) -> Self {
        let limits = Limits {
            window: limits.window.max(1),
            per_dest: limits.per_dest.max(1),
            ..limits
        };
        Self {
            limits,
            ready: VecDeque::new(),
            parked: FastMap::default(),
            parked_len: 0,
            per_dest: FastMap::default(),
            out: FastMap::default(),
            next_id: 0,
            stats: Stats::default(),
        }
    }

    /// The limits in force.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Queues a request (sent in FIFO order as the window allows).
    pub fn submit(&mut self, req: Request<K>) {
        self.ready.push_back(req);
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Requests in flight now.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.out.len()
    }

    /// Requests queued and not yet sent.
    #[must_use]
    pub fn queued(&self) -> usize {
        self.ready.len() + self.parked_len
    }

    /// Ends the flight of `id` and releases its destination slot (a
    /// parked request of that destination moves to the front).
    fn land(&mut self, id: u64) -> Option<K> {
        let f = self.out.remove(&id)?;
        if let Some(k) = f.dest_key {
            if let Some(n) = self.per_dest.get_mut(&k) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.per_dest.remove(&k);
                }
            }
            if let Some(q) = self.parked.get_mut(&k) {
                if let Some(r) = q.pop_front() {
                    self.parked_len -= 1;
                    self.ready.push_front(r);
                }
                if q.is_empty() {
                    self.parked.remove(&k);
                }
            }
        }
        Some(f.ctx)
    }

    /// Fills the window from the FIFO; requests the exchange refuses go
    /// to `done`.
    fn fill(&mut self, ex: &mut dyn Exchange, done: &mut Vec<(K, Outcome)>) {
        while self.out.len() < self.limits.window {
            let Some(req) = self.ready.pop_front() else {
                break;
            };
            if let Some(k) = req.dest_key {
                if self.per_dest.get(&k).copied().unwrap_or(0) >= self.limits.per_dest {
                    self.parked.entry(k).or_default().push_back(req);
                    self.parked_len += 1;
                    continue;
                }
            }
            self.next_id += 1;
            let id = self.next_id;
            let out = Outgoing {
                qp: req.qp,
                mad: &req.mad,
                dest: &req.dest,
                limits: &self.limits,
            };
            match ex.start(id, out) {
                Ok(()) => {
                    if let Some(k) = req.dest_key {
                        *self.per_dest.entry(k).or_insert(0) += 1;
                    }
                    self.out.insert(
                        id,
                        InFlight {
                            ctx: req.ctx,
                            dest_key: req.dest_key,
                        },
                    );
                    self.stats.max_in_flight = self.stats.max_in_flight.max(self.out.len());
                }
                Err(StartError::Busy) => {
                    self.ready.push_front(req);
                    break;
                }
                Err(StartError::Refused(e)) => {
                    self.stats.failed += 1;
                    done.push((req.ctx, Outcome::Failed(e)));
                }
            }
        }
    }

    /// Runs until nothing is queued or in flight. `handler(pipeline, ctx,
    /// outcome)` gets every finished request and may submit more; an
    /// error from it stops the run (requests in flight are forgotten).
    ///
    /// # Errors
    /// A transport failure, or the handler's error.
    pub fn run<H>(&mut self, ex: &mut dyn Exchange, handler: &mut H) -> Result<(), PipelineError>
    where
        H: FnMut(&mut Pipeline<K>, K, Outcome) -> Result<(), String>,
    {
        let mut done: Vec<(K, Outcome)> = Vec::new();
        let mut finished: Vec<(u64, Outcome)> = Vec::new();
        loop {
            self.fill(ex, &mut done);
            ex.flush().map_err(PipelineError::Transport)?;
            if self.out.is_empty() && done.is_empty() && self.ready.is_empty() {
                if self.parked.is_empty() {
                    break;
                }
                // Parked requests whose destination has nothing in flight
                // cannot happen (a slot is only taken by a flight);
                // release them rather than stall.
                let keys: Vec<u64> = self.parked.keys().copied().collect();
                for k in keys {
                    if let Some(q) = self.parked.remove(&k) {
                        self.parked_len -= q.len();
                        self.ready.extend(q);
                    }
                }
                self.per_dest.clear();
                continue;
            }
            // Poll when something is in flight, or when the exchange was
            // busy (its queue drains as completions are polled).
            if !self.out.is_empty() || !self.ready.is_empty() {
                finished.clear();
                let max = if done.is_empty() {
                    Duration::from_millis(50)
                } else {
                    Duration::ZERO
                };
                ex.poll(max, &mut finished)
                    .map_err(PipelineError::Transport)?;
                self.stats.sent = ex.sent();
                for (id, outcome) in finished.drain(..) {
                    if let Some(ctx) = self.land(id) {
                        match &outcome {
                            Outcome::Answer(_) => self.stats.answered += 1,
                            _ => self.stats.failed += 1,
                        }
                        done.push((ctx, outcome));
                    }
                }
            }
            for (ctx, outcome) in done.drain(..) {
                handler(self, ctx, outcome).map_err(PipelineError::Handler)?;
            }
        }
        self.stats.sent = ex.sent();
        self.stats.retries = ex.resent();
        Ok(())
    }
}

// ---- A bare transport. ----

struct Sent {
    id: u64,
    qp: Qp,
    mad: [u8; MAD_LEN],
    dest: Address,
    tries: u32,
    deadline: Instant,
    timeout: Duration,
    retries: u32,
}

/// Upper 32 TID bits the tools write ("mad\0"); the kernel may replace
/// them, so answers are matched on the low 32 bits only.
const TID_HIGH: u64 = 0x6d61_6400;
/// Where the TID is in the common MAD header.
const TID_OFFSET: usize = 8;

/// An [`Exchange`] over a bare [`Transport`]: it writes TIDs, matches
/// answers (response bit, low 32 TID bits, class), resends after a
/// timeout, and respects the transport's send-queue depth. `wait(t, max)`
/// blocks until the transport may have something.
pub struct TransportExchange<'a, T: Transport + ?Sized, W> {
    t: &'a mut T,
    wait: W,
    out: FastMap<u32, Sent>,
    deadlines: VecDeque<(Instant, u32)>,
    uncompleted: FastMap<WrId, u32>,
    next_tid: u32,
    sent: u64,
    resent: u64,
    completions: Vec<mad_core::transport::SendCompletion>,
}

impl<'a, T, W> TransportExchange<'a, T, W>
where
    T: Transport + ?Sized,
    W: FnMut(&mut T, Duration) -> Result<(), String>,
{
    /// An exchange over `t`.
    pub fn new(t: &'a mut T, wait: W) -> Self {
        // Start the TID counter somewhere different on every run so a
        // late answer to an earlier run is not taken for ours.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| {
                d.subsec_nanos() ^ (d.as_secs() as u32).rotate_left(16)
            });
        Self {
            t,
            wait,
            out: FastMap::default(),
            deadlines: VecDeque::new(),
            uncompleted: FastMap::default(),
            next_tid: seed,
            sent: 0,
            resent: 0,
            completions: Vec::new(),
        }
    }

    fn take_tid(&mut self) -> u32 {
        loop {
            self.next_tid = self.next_tid.wrapping_add(1);
            if !self.out.contains_key(&self.next_tid) {
                return self.next_tid;
            }
        }
    }

    fn post(&mut self, mut s: Sent, now: Instant) -> Result<(), TransportError> {
        let tid = self.take_tid();
        let full = (TID_HIGH << 32) | u64::from(tid);
        s.mad[TID_OFFSET..TID_OFFSET + 8].copy_from_slice(&full.to_be_bytes());
        match self.t.post_send(s.qp, &s.mad, &s.dest) {
            Ok(wr) => {
                self.sent += 1;
                if s.tries > 0 {
                    self.resent += 1;
                }
                s.tries += 1;
                s.deadline = now + s.timeout;
                self.uncompleted.insert(wr, tid);
                self.deadlines.push_back((s.deadline, tid));
                self.out.insert(tid, s);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn expire(&mut self, now: Instant, out: &mut Vec<(u64, Outcome)>) {
        while let Some(&(deadline, tid)) = self.deadlines.front() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_front();
            let current = self.out.get(&tid).is_some_and(|s| s.deadline == deadline);
            if !current {
                continue;
            }
            let Some(s) = self.out.remove(&tid) else {
                continue;
            };
            if s.tries > s.retries {
                out.push((s.id, Outcome::Timeout));
                continue;
            }
            let id = s.id;
            if let Err(e) = self.post(s, now) {
                out.push((id, Outcome::Failed(format!("resend: {e}"))));
            }
        }
    }
}

impl<T, W> Exchange for TransportExchange<'_, T, W>
where
    T: Transport + ?Sized,
    W: FnMut(&mut T, Duration) -> Result<(), String>,
{
    fn start(&mut self, id: u64, req: Outgoing<'_>) -> Result<(), StartError> {
        if self.uncompleted.len() >= self.t.send_queue_depth().max(1) {
            return Err(StartError::Busy);
        }
        let s = Sent {
            id,
            qp: req.qp,
            mad: *req.mad,
            dest: *req.dest,
            tries: 0,
            deadline: Instant::now(),
            timeout: req.limits.timeout,
            retries: req.limits.retries,
        };
        match self.post(s, Instant::now()) {
            Ok(()) => Ok(()),
            Err(TransportError::QueueFull { .. }) => Err(StartError::Busy),
            Err(e) => Err(StartError::Refused(e.to_string())),
        }
    }

    fn poll(&mut self, max: Duration, out: &mut Vec<(u64, Outcome)>) -> Result<(), String> {
        let before = out.len();
        let mut idle_waited = false;
        loop {
            self.completions.clear();
            self.t
                .poll_send_completions(&mut self.completions)
                .map_err(|e| format!("poll completions: {e}"))?;
            for c in &self.completions {
                let Some(tid) = self.uncompleted.remove(&c.wr_id) else {
                    continue;
                };
                if c.status != WcStatus::Success {
                    if let Some(s) = self.out.remove(&tid) {
                        out.push((
                            s.id,
                            Outcome::Failed(format!("send completed with {}", c.status)),
                        ));
                    }
                }
            }
            while let Some(rx) = self.t.poll_recv().map_err(|e| format!("receive: {e}"))? {
                let Some(tid) = answer_tid(&rx.mad) else {
                    continue;
                };
                let class_ok = self
                    .out
                    .get(&tid)
                    .is_some_and(|s| s.mad.get(1) == rx.mad.get(1));
                if !class_ok {
                    continue;
                }
                if let Some(s) = self.out.remove(&tid) {
                    let mut mad = rx.mad;
                    // Restore the TID we sent, whatever the kernel did.
                    if mad.len() >= MAD_HEADER_LEN {
                        mad[TID_OFFSET..TID_OFFSET + 8]
                            .copy_from_slice(&s.mad[TID_OFFSET..TID_OFFSET + 8]);
                    }
                    out.push((s.id, Outcome::Answer(mad.into())));
                }
                if out.len() - before >= 256 {
                    break;
                }
            }
            self.expire(Instant::now(), out);
            if out.len() > before || idle_waited || max.is_zero() {
                return Ok(());
            }
            let now = Instant::now();
            let until = self
                .deadlines
                .front()
                .map_or(max, |d| d.0.saturating_duration_since(now))
                .min(max);
            (self.wait)(self.t, until)?;
            idle_waited = true;
        }
    }

    fn sent(&self) -> u64 {
        self.sent
    }

    fn resent(&self) -> u64 {
        self.resent
    }
}

/// The low 32 TID bits of a response MAD, or `None` for a request or
/// something too short to be a MAD.
fn answer_tid(mad: &[u8]) -> Option<u32> {
    if mad.len() < MAD_HEADER_LEN {
        return None;
    }
    let m = Mad::new_unchecked(mad);
    if !m.response_bit() {
        return None;
    }
    Some((m.tid() & 0xFFFF_FFFF) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::transport::loopback::Loopback;
    use mad_core::transport::Received;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    #[test]
    fn answer_tid_ignores_requests_and_short_buffers() {
        assert_eq!(answer_tid(&[0u8; 10]), None);
        let mut mad = [0u8; MAD_LEN];
        mad[3] = 0x01; // Get
        mad[12..16].copy_from_slice(&7u32.to_be_bytes());
        assert_eq!(answer_tid(&mad), None);
        mad[3] = 0x81; // GetResp
        assert_eq!(answer_tid(&mad), Some(7));
    }

    /// Requests the loopback's responder holds back, answered at the next
    /// wait: (destination LID, MAD).
    type Held = Arc<Mutex<Vec<(u16, Vec<u8>)>>>;

    fn held_loopback(held: &Held, drop_lid: Option<u16>) -> Loopback {
        let h = held.clone();
        Loopback::new(Loopback::attrs("t", 1, 1), 4096).with_responder(Box::new(
            move |_qp, mad: &[u8], dest: &Address| {
                if Some(dest.lid) != drop_lid {
                    if let Ok(mut v) = h.lock() {
                        v.push((dest.lid, mad.to_vec()));
                    }
                }
                Vec::new()
            },
        ))
    }

    fn request(lid: u16, ctx: u32) -> Request<u32> {
        let mut mad = [0u8; MAD_LEN];
        mad[0] = 1;
        mad[1] = 0x04; // PerfMgt
        mad[2] = 1;
        mad[3] = 0x01; // Get
        Request {
            qp: Qp::Qp1,
            mad,
            dest: Address::gsi(lid),
            dest_key: Some(u64::from(lid)),
            ctx,
        }
    }

    /// Answers everything held; records the most in flight per LID and
    /// in total seen at one time.
    fn answer_all(t: &mut Loopback, held: &Held, max_seen: &mut (usize, usize)) {
        let batch: Vec<(u16, Vec<u8>)> = held
            .lock()
            .map(|mut v| v.drain(..).collect())
            .unwrap_or_default();
        let mut per: HashMap<u16, usize> = HashMap::new();
        for (lid, _) in &batch {
            *per.entry(*lid).or_insert(0) += 1;
        }
        max_seen.0 = max_seen.0.max(per.values().copied().max().unwrap_or(0));
        max_seen.1 = max_seen.1.max(batch.len());
        for (lid, mut mad) in batch {
            mad[3] |= 0x80;
            t.push_recv(Received {
                qp: Qp::Qp1,
                src: Address::gsi(lid),
                mad: mad.into(),
            });
        }
    }

    #[test]
    fn bounds_in_flight_per_destination_and_per_port() {
        let held: Held = Arc::default();
        let mut t = held_loopback(&held, None);
        let mut max_seen = (0usize, 0usize);
        let h2 = held.clone();
        let mut ex = TransportExchange::new(&mut t, |t: &mut Loopback, _max: Duration| {
            answer_all(t, &h2, &mut max_seen);
            Ok(())
        });
        let mut p: Pipeline<u32> = Pipeline::new(Limits {
            window: 10,
            per_dest: 3,
            ..Limits::default()
        });
        // 40 requests to LID 7, 40 spread over LIDs 100..140.
        for i in 0..40 {
            p.submit(request(7, i));
            p.submit(request(100 + i as u16, 100 + i));
        }
        let mut got = Vec::new();
        p.run(&mut ex, &mut |_p: &mut Pipeline<u32>,
                             ctx: u32,
                             o: Outcome| {
            assert!(matches!(o, Outcome::Answer(_)), "{ctx}: {o:?}");
            got.push(ctx);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        drop(ex);
        got.sort_unstable();
        let want: Vec<u32> = (0..40).chain(100..140).collect();
        assert_eq!(got, want);
        assert_eq!(max_seen.0, 3, "per-destination bound");
        assert_eq!(max_seen.1, 10, "window");
        assert_eq!(p.stats().max_in_flight, 10);
        assert_eq!(p.stats().answered, 80);
    }

    #[test]
    fn unanswered_requests_are_resent_then_time_out() {
        let held: Held = Arc::default();
        let mut t = held_loopback(&held, Some(9));
        let h2 = held.clone();
        let mut seen = (0, 0);
        let mut ex = TransportExchange::new(&mut t, |t: &mut Loopback, max: Duration| {
            answer_all(t, &h2, &mut seen);
            std::thread::sleep(max.min(Duration::from_millis(2)));
            Ok(())
        });
        let mut p: Pipeline<u32> = Pipeline::new(Limits {
            timeout: Duration::from_millis(20),
            retries: 2,
            ..Limits::default()
        });
        p.submit(request(9, 1));
        p.submit(request(10, 2));
        let mut outcomes = Vec::new();
        p.run(&mut ex, &mut |_p: &mut Pipeline<u32>,
                             ctx: u32,
                             o: Outcome| {
            outcomes.push((ctx, matches!(o, Outcome::Answer(_)), o == Outcome::Timeout));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let sent = ex.sent();
        drop(ex);
        outcomes.sort_unstable();
        assert_eq!(outcomes, vec![(1, false, true), (2, true, false)]);
        // Three tries of the dropped one, one of the answered one.
        assert_eq!(sent, 4);
        assert_eq!(p.stats().retries, 2);
        assert_eq!(p.stats().failed, 1);
    }

    #[test]
    fn handler_can_submit_more_and_stop_the_run() {
        let held: Held = Arc::default();
        let mut t = held_loopback(&held, None);
        let h2 = held.clone();
        let mut seen = (0, 0);
        let mut ex = TransportExchange::new(&mut t, |t: &mut Loopback, _m: Duration| {
            answer_all(t, &h2, &mut seen);
            Ok(())
        });
        let mut p: Pipeline<u32> = Pipeline::new(Limits::default());
        p.submit(request(1, 0));
        let mut n = 0;
        let r =
            p.run(&mut ex, &mut |p: &mut Pipeline<u32>,
                                 ctx: u32,
                                 _o: Outcome| {
                n += 1;
                if ctx == 5 {
                    return Err("enough".into());
                }
                p.submit(request(1, ctx + 1));
                Ok(())
            });
        assert_eq!(r, Err(PipelineError::Handler("enough".into())));
        assert_eq!(n, 6);
    }
}
