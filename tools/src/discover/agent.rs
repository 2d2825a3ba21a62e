//! An [`Exchange`] over a mad-agents [`Runtime`]: the requests go
//! through the whole stack (agent layer: TIDs, timeouts, retries, send
//! tracking; port layer; the transport, with `--pcap` if asked for).
//!
//! Two send-only channel agents are registered (QP0 for SMPs, QP1 for
//! PerfMgt) and driven by a thread of the exchange's own, the *port
//! thread*: it hands the requests started on the caller's thread to the
//! engine ([`mad_agents::AgentRef::send_batch`], one lock per agent and
//! chunk), takes the completions — driving the port itself
//! ([`mad_agents::AgentReceiver`]'s fast path), so an answer the
//! transport has at once (the built-in fabric) costs no hand-off to the
//! runtime's loop thread — and hands them back a chunk at a time. The
//! caller's thread meanwhile handles the answers of the chunk before:
//! the engine's and the transport's work (on the built-in fabric, the
//! whole fabric's) runs beside the caller's, on two cores. Both hand
//! over a batch at a time; each waits only when it has nothing to do.
//!
//! # Soft reset (seed 001)
//! The reader holds the port's two-phase soft reset like every other
//! service: a third agent, registered holding the reset, feeds a
//! [`ResetHold`] from its callback (on the runtime's loop thread, so an
//! idle reader, whose port thread sleeps on the request channel,
//! acknowledges at once). The port thread marks the hold busy while it
//! has requests in flight ([`ResetHold::try_busy`]); on `ResetPending` it
//! hands no new request to the engine (they wait in its queue), lets
//! those in flight end (answered, timed out or flushed), then marks it
//! idle, which acknowledges; on `ResetEnd` it goes on with the queue
//! ([`AgentExchange::reset_stats`]).

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mad_agents::{
    Agent, AgentEvent, AgentReceiver, AgentSpec, ResetHold, ResetHoldStats, Runtime, SendRequest,
    SendStatus, SharedPort,
};
use mad_core::transport::Qp;

use super::pipeline::{Answer, Exchange, Outcome, Outgoing, StartError};

/// Most time the port thread blocks on an agent's channel while requests
/// are in flight (then it looks for new requests, and at the other
/// agent).
const SLICE: Duration = Duration::from_millis(1);

/// Requests the port thread hands to the engine before it hands the
/// answers so far back: the caller's thread starts on them while the
/// port thread goes on.
const CHUNK: usize = 32;

/// How long a thread of the exchange looks for the other's next batch
/// before it blocks (a blocked thread costs the other a futex wake-up per
/// batch): about the time the port thread takes for a chunk.
const SPIN: Duration = Duration::from_micros(50);

/// Longest the port thread waits for a soft reset to end before it looks
/// at the request channel again (woken at once by the reset's end).
const HELD_SLICE: Duration = Duration::from_millis(20);

/// The next message of `rx`, looking for it for up to [`SPIN`] (giving
/// the CPU away between looks) before blocking, up to `max` in all
/// (`None`: no limit). `Err(true)`: the sender is gone; `Err(false)`:
/// none came in time.
fn recv_spinning<T>(rx: &Receiver<T>, max: Option<Duration>) -> Result<T, bool> {
    let t0 = Instant::now();
    let spin = max.map_or(SPIN, |m| m.min(SPIN));
    loop {
        match rx.try_recv() {
            Ok(v) => return Ok(v),
            Err(TryRecvError::Disconnected) => return Err(true),
            Err(TryRecvError::Empty) if t0.elapsed() < spin => std::thread::yield_now(),
            Err(TryRecvError::Empty) => break,
        }
    }
    match max {
        None => rx.recv().map_err(|_| true),
        Some(m) => rx
            .recv_timeout(m.saturating_sub(t0.elapsed()))
            .map_err(|e| e == RecvTimeoutError::Disconnected),
    }
}

/// A finished request: its id, how it ended, and how many times it was
/// posted (0: refused).
type Finished = (u64, Outcome, u32);

/// What the port thread hands back: finished requests, or why it
/// stopped.
type Done = Result<Vec<Finished>, String>;

/// One of the two agents on the port thread: its registration, its
/// channel and the requests it has in flight.
struct Side {
    agent: Agent,
    rx: AgentReceiver,
    in_flight: usize,
}

/// See the module documentation.
pub struct AgentExchange<'a> {
    /// The agents live on this runtime.
    rt: PhantomData<&'a Runtime>,
    /// Requests started and not yet handed to the port thread (QP0 side
    /// 0, QP1 side 1).
    pending: Vec<(usize, SendRequest)>,
    /// To the port thread (`None` once it is told to stop).
    requests: Option<Sender<Vec<(usize, SendRequest)>>>,
    /// From the port thread.
    done: Receiver<Done>,
    port: Option<JoinHandle<()>>,
    sent: u64,
    resent: u64,
    /// The reader's part in the port's soft reset, fed by `holder`.
    hold: Arc<ResetHold>,
    /// The agent that holds soft resets for the reader (its callback
    /// feeds `hold`); deregistered after the port thread ended.
    holder: Option<Agent>,
    /// The shared port this exchange keeps alive ([`AgentExchange::open`]);
    /// let go of after the port thread (and its agents) ended.
    shared: Option<SharedPort>,
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
    /// Registers the two agents on `rt` and starts the port thread.
    ///
    /// # Errors
    /// An agent cannot be registered, or the thread cannot start.
    pub fn new(rt: &'a Runtime) -> Result<Self, String> {
        Self::start_on(rt)
    }

    /// Registers the agents on `rt` and starts the port thread (the
    /// agents keep the runtime's state; the caller keeps the runtime).
    fn start_on(rt: &Runtime) -> Result<Self, String> {
        let (hold, holder) = ResetHold::register_holder(rt, "discover-reset", Qp::Qp1)
            .map_err(|e| format!("soft-reset agent: {e}"))?;
        let side = |name: &str, qp: Qp, what: &str| {
            rt.register_channel(AgentSpec::send_only(name, qp))
                .map(|(agent, rx)| Side {
                    agent,
                    rx,
                    in_flight: 0,
                })
                .map_err(|e| format!("{what} agent: {e}"))
        };
        let sides = [
            side("discover-smi", Qp::Qp0, "SMP")?,
            side("discover-gsi", Qp::Qp1, "PerfMgt")?,
        ];
        let (req_tx, req_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel();
        let held = hold.clone();
        let port = std::thread::Builder::new()
            .name("discover-port".into())
            .spawn(move || PortThread::new(sides).run(&held, &req_rx, &done_tx))
            .map_err(|e| format!("cannot start the discovery's port thread: {e}"))?;
        Ok(Self {
            rt: PhantomData,
            pending: Vec::new(),
            requests: Some(req_tx),
            done: done_rx,
            port: Some(port),
            sent: 0,
            resent: 0,
            hold,
            holder: Some(holder),
            shared: None,
        })
    }

    /// The reader's part in soft resets so far (held, acknowledged,
    /// resumed, requests that waited; device-fatal errors heard).
    #[must_use]
    pub fn reset_stats(&self) -> ResetHoldStats {
        self.hold.stats()
    }

    /// Moves a batch from the port thread into `out`, counting tries.
    fn take(&mut self, batch: Done, out: &mut Vec<(u64, Outcome)>) -> Result<(), String> {
        for (id, outcome, tries) in batch? {
            self.sent += u64::from(tries);
            self.resent += u64::from(tries.saturating_sub(1));
            out.push((id, outcome));
        }
        Ok(())
    }
}

impl AgentExchange<'static> {
    /// [`AgentExchange::new`] on a shared port, keeping a handle on it:
    /// the port lives while the exchange does (the exporter's reader next
    /// to other services of the process on one port).
    ///
    /// # Errors
    /// As [`AgentExchange::new`].
    pub fn open(port: &SharedPort) -> Result<Self, String> {
        let mut ex = Self::start_on(port.runtime())?;
        ex.shared = Some(port.clone());
        Ok(ex)
    }
}

impl Drop for AgentExchange<'_> {
    /// Stops the port thread (requests still in flight are forgotten)
    /// and waits for it: its agents are deregistered when this returns
    /// (the one holding soft resets last).
    fn drop(&mut self) {
        self.requests = None;
        if let Some(t) = self.port.take() {
            let _ = t.join();
        }
        drop(self.holder.take());
    }
}

impl Exchange for AgentExchange<'_> {
    fn start(&mut self, id: u64, req: Outgoing<'_>) -> Result<(), StartError> {
        let send = SendRequest::new(req.mad, *req.dest)
            .expect_response(req.limits.timeout, req.limits.retries)
            .cookie(id);
        self.pending.push((side_of(req.qp), send));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.pending);
        self.requests
            .as_ref()
            .and_then(|t| t.send(batch).ok())
            .ok_or_else(|| "the agent runtime stopped".to_owned())
    }

    fn poll(&mut self, max: Duration, out: &mut Vec<(u64, Outcome)>) -> Result<(), String> {
        let before = out.len();
        loop {
            match self.done.try_recv() {
                Ok(batch) => self.take(batch, out)?,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return Err("the agent runtime stopped".into()),
            }
        }
        if out.len() > before || max.is_zero() {
            return Ok(());
        }
        match recv_spinning(&self.done, Some(max)) {
            Ok(batch) => self.take(batch, out),
            Err(false) => Ok(()),
            Err(true) => Err("the agent runtime stopped".into()),
        }
    }

    fn sent(&self) -> u64 {
        self.sent
    }

    fn resent(&self) -> u64 {
        self.resent
    }
}

/// The port thread's state: the two agents, the requests it was given
/// and not yet handed to the engine, and what finished since it last
/// handed answers back.
struct PortThread {
    sides: [Side; 2],
    queued: VecDeque<(usize, SendRequest)>,
    chunk: [Vec<SendRequest>; 2],
    out: Vec<Finished>,
}

impl PortThread {
    fn new(sides: [Side; 2]) -> Self {
        Self {
            sides,
            queued: VecDeque::new(),
            chunk: [Vec::new(), Vec::new()],
            out: Vec::new(),
        }
    }

    fn in_flight(&self) -> bool {
        self.sides.iter().any(|s| s.in_flight > 0)
    }

    /// Until the exchange is dropped: takes requests, hands them to the
    /// engine a chunk at a time, and hands back what finished after each.
    /// While a soft reset is pending (`hold`) nothing new goes to the
    /// engine; the hold is marked busy while requests are in flight.
    fn run(
        mut self,
        hold: &ResetHold,
        requests: &Receiver<Vec<(usize, SendRequest)>>,
        done: &Sender<Done>,
    ) {
        // The hold is marked busy (a pending reset waits for us).
        let mut busy_mark = false;
        loop {
            let busy = self.in_flight();
            if !busy && !self.queued.is_empty() && hold.is_held() {
                // Drained (marked idle): the queue waits for the reset's
                // end.
                hold.wait_resumed(HELD_SLICE);
            }
            // Wait for requests only with nothing else to do.
            let got = if busy || !self.queued.is_empty() {
                requests
                    .try_recv()
                    .map_err(|e| e == TryRecvError::Disconnected)
            } else {
                recv_spinning(requests, None)
            };
            match got {
                Ok(batch) => {
                    self.queued.extend(batch);
                    while let Ok(more) = requests.try_recv() {
                        self.queued.extend(more);
                    }
                }
                // The exchange is gone: what is in flight is forgotten.
                Err(true) => return,
                Err(false) => {}
            }
            if !self.queued.is_empty() && admit(hold, &mut busy_mark) {
                if let Err(e) = self.send_chunk() {
                    let _ = done.send(Err(e));
                    return;
                }
            }
            self.drain();
            if self.out.is_empty() && self.queued.is_empty() && self.in_flight() {
                if let Err(e) = self.block() {
                    let _ = done.send(Err(e));
                    return;
                }
            }
            if busy_mark && !self.in_flight() {
                // Nothing in flight: a pending reset may be acknowledged.
                hold.set_idle();
                busy_mark = false;
            }
            if !self.out.is_empty() && done.send(Ok(std::mem::take(&mut self.out))).is_err() {
                return;
            }
        }
    }

    /// Hands the next [`CHUNK`] queued requests to the engine (under one
    /// lock per agent); refused ones finish at once.
    fn send_chunk(&mut self) -> Result<(), String> {
        let n = self.queued.len().min(CHUNK);
        for (side, req) in self.queued.drain(..n) {
            self.chunk[side].push(req);
        }
        for (side, reqs) in self.sides.iter_mut().zip(&mut self.chunk) {
            if reqs.is_empty() {
                continue;
            }
            let out = &mut self.out;
            // Refused: reported like any other failure.
            let sent = side
                .agent
                .send_batch(reqs.drain(..), |id, e| {
                    out.push((id, Outcome::Failed(e.to_string()), 0));
                })
                .map_err(|e| format!("the agent runtime: {e}"))?;
            side.in_flight += sent;
        }
        Ok(())
    }

    /// Takes every completion there is (driving the port when a channel
    /// is empty).
    fn drain(&mut self) {
        for side in &mut self.sides {
            while side.in_flight > 0 {
                let Some(ev) = side.rx.try_recv() else {
                    break;
                };
                take(side, ev, &mut self.out);
            }
        }
    }

    /// Blocks for a completion, at most [`SLICE`] on each agent with
    /// requests in flight.
    ///
    /// # Errors
    /// The runtime stopped.
    fn block(&mut self) -> Result<(), String> {
        for side in self.sides.iter_mut().filter(|s| s.in_flight > 0) {
            match side.rx.recv_timeout(SLICE) {
                Some(ev) => {
                    take(side, ev, &mut self.out);
                    return Ok(());
                }
                None if side.rx.is_closed() => return Err("the agent runtime stopped".into()),
                None => {}
            }
        }
        Ok(())
    }
}

/// May the port thread hand requests to the engine now? Not while a soft
/// reset is pending; otherwise yes, with the hold marked busy (`marked`)
/// from now until nothing is in flight, so that a reset coming meanwhile
/// waits for the requests handed over.
fn admit(hold: &ResetHold, marked: &mut bool) -> bool {
    if *marked {
        !hold.is_held()
    } else {
        *marked = hold.try_busy();
        *marked
    }
}

/// Takes one event of `side` into `out` (a completion: how it ended, and
/// its tries).
fn take(side: &mut Side, ev: AgentEvent, out: &mut Vec<Finished>) {
    let AgentEvent::SendDone(c) = ev else {
        return;
    };
    side.in_flight = side.in_flight.saturating_sub(1);
    let outcome = match (c.status, c.response) {
        (SendStatus::Success, Some(m)) => Outcome::Answer(Answer::Message(m)),
        (SendStatus::Success, None) => Outcome::Failed("no response MAD".into()),
        (SendStatus::Timeout, _) => Outcome::Timeout,
        (other, _) => Outcome::Failed(other.to_string()),
    };
    out.push((c.cookie, outcome, 1 + c.retries));
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_agents::EngineConfig;
    use mad_core::transport::{Address, PERMISSIVE_LID};
    use mad_core::wire::smp::DrPath;
    use mad_core::wire::{AttributeId, Method};
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use crate::discover::pipeline::Limits;

    fn node_info() -> [u8; mad_core::wire::MAD_LEN] {
        DrPath::from_hops(&[])
            .map(|r| r.build_request(Method::GET, AttributeId::NODE_INFO, 0, 0, 0))
            .unwrap_or_else(|e| panic!("{e:?}"))
    }

    /// A runtime over a loopback port that answers every request
    /// (`answer`) or none.
    fn runtime(answer: bool) -> Runtime {
        let silent = Arc::new(AtomicBool::new(!answer));
        let lb = mad_testkit::far::answering("t", 1, 64, Some(silent));
        Runtime::start(lb, EngineConfig::default()).unwrap_or_else(|e| panic!("{e}"))
    }

    fn start(ex: &mut AgentExchange<'_>, ids: std::ops::Range<u64>, limits: &Limits) {
        let mad = node_info();
        let dest = Address::smi(PERMISSIVE_LID);
        for id in ids {
            let out = Outgoing {
                qp: Qp::Qp0,
                mad: &mad,
                dest: &dest,
                limits,
            };
            ex.start(id, out).unwrap_or_else(|e| panic!("{e:?}"));
        }
    }

    #[test]
    fn answers_come_back_from_the_port_thread_each_once_and_counted() {
        let rt = runtime(true);
        let mut ex = AgentExchange::new(&rt).unwrap_or_else(|e| panic!("{e}"));
        start(&mut ex, 0..100, &Limits::default());
        ex.flush().unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        let until = Instant::now() + Duration::from_secs(10);
        while out.len() < 100 && Instant::now() < until {
            ex.poll(Duration::from_millis(100), &mut out)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let mut ids: Vec<u64> = out.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..100).collect::<Vec<_>>());
        assert!(out
            .iter()
            .all(|(_, o)| matches!(o, Outcome::Answer(a) if a.get(3) == Some(&0x81))));
        assert_eq!((ex.sent(), ex.resent()), (100, 0));
        drop(ex);
        rt.shutdown();
    }

    #[test]
    fn dropping_the_exchange_with_requests_in_flight_returns_promptly() {
        let rt = runtime(false);
        let mut ex = AgentExchange::new(&rt).unwrap_or_else(|e| panic!("{e}"));
        let slow = Limits {
            timeout: Duration::from_secs(30),
            ..Limits::default()
        };
        start(&mut ex, 0..10, &slow);
        ex.flush().unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        ex.poll(Duration::from_millis(20), &mut out)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.is_empty(), "{out:?}");
        let t0 = Instant::now();
        drop(ex);
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        rt.shutdown();
    }
}
