//! SM-lite on its own thread over madstack's ibsim transport, for the
//! tests that compare the tools with SM-lite as the subnet manager.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mad_core::transport::ibsim::IbSimTransport;
use mad_core::transport::Transport;
use mad_sm::{SmConfig, SmDriver, SmEvent, SubnetManager};

use crate::support::IbSim;

/// A running SM-lite; stopped (its thread joined) when dropped.
pub struct RunningSm {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RunningSm {
    /// SM-lite with `cfg` at `node` of `sim`, once it reports the subnet
    /// up (a panic after `wait`, naming the events seen; at once on an
    /// error event when `errors_fail`).
    pub fn start(
        sim: &IbSim,
        node: &str,
        cfg: SmConfig,
        wait: Duration,
        errors_fail: bool,
    ) -> Self {
        let mut tc = sim.config().node(node);
        tc.issm = true;
        let mut t = IbSimTransport::attach(tc).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut sm = SubnetManager::new(cfg, t.port_attrs());
            let mut drv = SmDriver::new();
            sm.start(Instant::now());
            while !stop2.load(Ordering::Relaxed) {
                let busy = drv.pump(&mut sm, &mut t, Instant::now()).unwrap();
                while let Some(e) = sm.poll_event() {
                    let _ = tx.send(e);
                }
                if !busy {
                    let wait = sm
                        .poll_timeout()
                        .map_or(Duration::from_millis(10), |d| {
                            d.saturating_duration_since(Instant::now())
                        })
                        .min(Duration::from_millis(10));
                    t.wait_readable(wait).unwrap();
                }
            }
        });
        let end = Instant::now() + wait;
        let mut seen = Vec::new();
        loop {
            match rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
                Ok(SmEvent::SubnetUp) => break,
                Ok(SmEvent::Error(e)) if errors_fail => panic!("SM-lite error: {e:?}"),
                Ok(e) => seen.push(e),
                Err(_) => panic!(
                    "SM-lite: no SubnetUp in {wait:?}; events {seen:?}\n{}",
                    sim.output()
                ),
            }
        }
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for RunningSm {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
