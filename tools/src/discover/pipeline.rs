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
//! Two exchanges exist: [`super::transport::TransportExchange`] over a
//! bare [`Transport`](mad_core::transport::Transport) (it matches answers
//! by the low 32 TID bits, which the kernel leaves alone, and resends
//! after a timeout), and
//! [`super::agent::AgentExchange`] over a mad-agents runtime (the agent
//! layer does TIDs, timeouts and retries).

use std::collections::VecDeque;
use std::time::Duration;

use mad_core::hash::FastMap;
use mad_core::transport::{Address, Qp};
use mad_core::wire::MAD_LEN;

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

/// What [`Pipeline::run`] hands finished requests to. A closure
/// `FnMut(&mut Pipeline<K>, K, Outcome) -> Result<(), String>` is one.
pub trait Handler<K> {
    /// Gets a finished request (it may submit more).
    ///
    /// # Errors
    /// Stops the run.
    fn done(&mut self, p: &mut Pipeline<K>, ctx: K, outcome: Outcome) -> Result<(), String>;

    /// Asked as a queued request is about to go out: false drops it
    /// unsent (what it would read became known while it waited).
    fn still_wanted(&mut self, _ctx: &K) -> bool {
        true
    }
}

impl<K, F> Handler<K> for F
where
    F: FnMut(&mut Pipeline<K>, K, Outcome) -> Result<(), String>,
{
    fn done(&mut self, p: &mut Pipeline<K>, ctx: K, outcome: Outcome) -> Result<(), String> {
        self(p, ctx, outcome)
    }
}

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

    /// Fills the window from the FIFO (leaving out what `h` no longer
    /// wants); requests the exchange refuses go to `done`.
    fn fill<H>(&mut self, ex: &mut dyn Exchange, done: &mut Vec<(K, Outcome)>, h: &mut H)
    where
        H: Handler<K> + ?Sized,
    {
        while self.out.len() < self.limits.window {
            let Some(req) = self.ready.pop_front() else {
                break;
            };
            if !h.still_wanted(&req.ctx) {
                continue;
            }
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

    /// Runs until nothing is queued or in flight. `handler` gets every
    /// finished request ([`Handler::done`]) and may submit more; an error
    /// from it stops the run (requests in flight are forgotten).
    ///
    /// # Errors
    /// A transport failure, or the handler's error.
    pub fn run<H>(&mut self, ex: &mut dyn Exchange, handler: &mut H) -> Result<(), PipelineError>
    where
        H: Handler<K> + ?Sized,
    {
        let mut done: Vec<(K, Outcome)> = Vec::new();
        let mut finished: Vec<(u64, Outcome)> = Vec::new();
        loop {
            self.fill(ex, &mut done, handler);
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
                handler
                    .done(self, ctx, outcome)
                    .map_err(PipelineError::Handler)?;
            }
        }
        self.stats.sent = ex.sent();
        self.stats.retries = ex.resent();
        Ok(())
    }
}
