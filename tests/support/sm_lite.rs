//! SM-lite run over madstack's ibsim transport in a thread of its own,
//! for tests against a real ibsim, and parsers for the diags' output
//! these tests compare with. Included by path (`#[path =
//! "support/sm_lite.rs"] mod sm_lite;`) next to `mod support;` by the
//! test crates that run SM-lite.
#![allow(dead_code)]

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mad_core::transport::ibsim::IbSimTransport;
use mad_core::transport::Transport;
use mad_core::wire::attr::SmState;
use mad_sm::{SmConfig, SmDriver, SmEvent, SmStats, SubnetManager};

use crate::support::IbSim;

/// How long SM-lite may take to bring a topology up.
pub const UP_TIMEOUT: Duration = Duration::from_secs(60);

/// The name of the first node in a topology file (where ibsim attaches
/// a client that names none).
pub fn first_node(netfile: &Path) -> String {
    let text = std::fs::read_to_string(netfile).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with("Switch") || l.starts_with("Hca") || l.starts_with("Ca"))
        .and_then(|l| l.split('"').nth(1))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no node in {}", netfile.display()))
}

/// Events with the time the SM thread took them.
pub type Seen = Vec<(Instant, SmEvent)>;

/// What the SM thread last reported: its state and counters.
#[derive(Debug, Clone)]
pub struct Status {
    /// SMInfo state.
    pub state: SmState,
    /// Sweep counters.
    pub stats: SmStats,
}

/// SM-lite running in its own thread over an ibsim transport, as the SM
/// of one node (`issm` set), driven by real time.
pub struct RunningSm {
    stop: Arc<AtomicBool>,
    events: mpsc::Receiver<(Instant, SmEvent)>,
    status: Arc<Mutex<Status>>,
    thread: Option<JoinHandle<SubnetManager>>,
}

impl RunningSm {
    /// SM-lite at the topology's first node.
    pub fn start(sim: &IbSim, cfg: SmConfig) -> Self {
        Self::start_at(sim, &first_node(sim.netfile()), cfg)
    }

    /// SM-lite at node `node` of the topology.
    pub fn start_at(sim: &IbSim, node: &str, cfg: SmConfig) -> Self {
        let mut tc = sim.config().node(node);
        tc.issm = true;
        let mut t = IbSimTransport::attach(tc).unwrap_or_else(|e| panic!("attach as SM: {e}"));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, events) = mpsc::channel();
        let status = Arc::new(Mutex::new(Status {
            state: SmState::NOT_ACTIVE,
            stats: SmStats::default(),
        }));
        let (stop2, status2) = (stop.clone(), status.clone());
        let thread = std::thread::spawn(move || {
            let mut sm = SubnetManager::new(cfg, t.port_attrs());
            let mut drv = SmDriver::new();
            sm.start(Instant::now());
            while !stop2.load(Ordering::Relaxed) {
                let now = Instant::now();
                let busy = drv
                    .pump(&mut sm, &mut t, now)
                    .unwrap_or_else(|e| panic!("SM transport: {e}"));
                // The status first: a test that saw an event reads the
                // status as of that event or later.
                if let Ok(mut s) = status2.lock() {
                    s.state = sm.sm_state();
                    s.stats = sm.stats();
                }
                while let Some(e) = sm.poll_event() {
                    let _ = tx.send((now, e));
                }
                if !busy {
                    let wait = sm
                        .poll_timeout()
                        .map_or(Duration::from_millis(10), |d| {
                            d.saturating_duration_since(Instant::now())
                        })
                        .min(Duration::from_millis(10));
                    t.wait_readable(wait)
                        .unwrap_or_else(|e| panic!("SM wait: {e}"));
                }
            }
            sm
        });
        Self {
            stop,
            events,
            status,
            thread: Some(thread),
        }
    }

    /// Waits for SubnetUp; panics on timeout, listing the events seen.
    pub fn wait_up(&self, sim: &IbSim) -> Vec<SmEvent> {
        match self.wait_for(UP_TIMEOUT, |e| *e == SmEvent::SubnetUp) {
            Ok((_, seen)) => seen.into_iter().map(|(_, e)| e).collect(),
            Err(seen) => panic!(
                "no SubnetUp within {UP_TIMEOUT:?}; events: {seen:#?}\nibsim: {}",
                sim.output()
            ),
        }
    }

    /// Waits up to `timeout` for an event `pred` accepts: Ok(when, the
    /// events before it), or Err(every event seen).
    pub fn wait_for(
        &self,
        timeout: Duration,
        pred: impl Fn(&SmEvent) -> bool,
    ) -> Result<(Instant, Seen), Seen> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok((t, e)) if pred(&e) => return Ok((t, seen)),
                Ok(x) => seen.push(x),
                Err(_) => return Err(seen),
            }
        }
    }

    /// The state and counters as of the last event.
    pub fn status(&self) -> Status {
        self.status
            .lock()
            .map(|s| s.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// Stops the thread and returns the SM.
    pub fn stop(mut self) -> SubnetManager {
        self.stop.store(true, Ordering::Relaxed);
        let t = self.thread.take().expect("running");
        t.join()
            .unwrap_or_else(|_| panic!("the SM thread panicked"))
    }
}

impl Drop for RunningSm {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
