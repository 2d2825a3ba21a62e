//! Exactly-once under stress: many threads and agents on one runtime,
//! over 100,000 sends with random cancels, modifies, timeouts (the far side
//! drops some requests), injected work-request errors (with the flushes
//! behind them), duplicated and delayed MADs, and deregistrations while
//! sends are outstanding. Every accepted send must complete exactly once;
//! no callback may run after its agent's deregistration returned (a
//! sentinel flag checked in every callback); the send table must be empty
//! at the end.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mad_agents::{
    AgentEvent, AgentSpec, EngineConfig, Runtime, SendError, SendId, SendRequest, SendStatus,
};
use mad_core::port::PortError;
use mad_core::transport::fault::{FaultConfig, FaultInjector, Trigger};
use mad_core::transport::{Address, Qp, WcStatus};
use mad_core::wire::{AttributeId, Method, MgmtClass};

const THREADS: usize = 8;
const ROUNDS: usize = 7;
const SENDS_PER_ROUND: usize = 2_400;

/// xorshift64*, seeded per thread.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn perf_get() -> Vec<u8> {
    mad_testkit::MadBuilder::new(MgmtClass::PERF_MGT, 1, Method::GET, AttributeId(0)).to_vec()
}

#[derive(Default)]
struct Ledger {
    accepted: Vec<SendId>,
    completions: HashMap<SendId, (u32, SendStatus)>,
}

fn record(ledger: &Mutex<Ledger>, ev: &AgentEvent) {
    if let AgentEvent::SendDone(c) = ev {
        let mut l = ledger.lock().unwrap();
        let e = l.completions.entry(c.send).or_insert((0, c.status));
        e.0 += 1;
    }
}

#[test]
fn every_send_completes_exactly_once_and_nothing_runs_after_deregistration() {
    let responder = mad_testkit::far::answering("stress", 5, 128, None);
    let faults = FaultConfig {
        wr_error: Trigger::Probability(0.002),
        wr_error_status: WcStatus::GeneralErr,
        send_drop: 0.03,
        send_delay: 0.02,
        send_delay_polls: 3,
        recv_duplicate: 0.02,
        recv_delay: 0.02,
        recv_delay_polls: 2,
        ..FaultConfig::default()
    };
    let fi = FaultInjector::with_config(responder, 0x5eed, faults);
    let rt = Arc::new(Runtime::start(fi, EngineConfig::default()).unwrap());
    let violations = Arc::new(AtomicU64::new(0));
    let total_sends = Arc::new(AtomicU64::new(0));
    let started = Instant::now();

    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let rt = rt.clone();
            let violations = violations.clone();
            let total_sends = total_sends.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((t as u64 + 1) * 0x1234_5678_9ABC));
                let mut statuses: HashMap<&'static str, u64> = HashMap::new();
                for round in 0..ROUNDS {
                    let ledger = Arc::new(Mutex::new(Ledger::default()));
                    let gone = Arc::new(AtomicBool::new(false));
                    let by_channel = (t + round) % 3 == 0;
                    let spec = AgentSpec::send_only(&format!("t{t}r{round}"), Qp::Qp1);
                    let (agent, rx) = if by_channel {
                        let (a, rx) = rt.register_channel(spec).unwrap();
                        (a, Some(rx))
                    } else {
                        let (l2, g2, v2) = (ledger.clone(), gone.clone(), violations.clone());
                        let a = rt
                            .register(spec, move |ev| {
                                if g2.load(Ordering::SeqCst) {
                                    v2.fetch_add(1, Ordering::SeqCst);
                                }
                                record(&l2, &ev);
                            })
                            .unwrap();
                        (a, None)
                    };
                    let mut handles = Vec::new();
                    // Deregister somewhere in the second half, with sends
                    // still outstanding.
                    let stop_at =
                        SENDS_PER_ROUND * 3 / 4 + rng.below(SENDS_PER_ROUND as u64 / 4) as usize;
                    for i in 0..stop_at {
                        let timeout = match rng.below(10) {
                            0 => Duration::ZERO,
                            1..=6 => Duration::from_millis(2 + rng.below(20)),
                            _ => Duration::from_secs(30),
                        };
                        let retries = rng.below(3) as u32;
                        let req = SendRequest::new(perf_get(), Address::gsi(7))
                            .expect_response(timeout, retries)
                            .cookie(i as u64);
                        if rng.below(200) == 0
                            && !timeout.is_zero()
                            && timeout < Duration::from_secs(1)
                        {
                            // A blocking one now and then.
                            let c = match agent.send_and_wait(req) {
                                Ok(c) => c,
                                Err(e) if is_overflow(&e) => continue,
                                Err(e) => panic!("send_and_wait: {e}"),
                            };
                            let mut l = ledger.lock().unwrap();
                            l.accepted.push(c.send);
                            l.completions.entry(c.send).or_insert((0, c.status)).0 += 1;
                            continue;
                        }
                        let h = {
                            // Record under the ledger lock so that a completion
                            // racing the return is still matched.
                            let h = match agent.send(req) {
                                Ok(h) => h,
                                // The port's bounded overflow queue refused
                                // it (the fault injector stalls the queue):
                                // never accepted, so nothing completes.
                                Err(e) if is_overflow(&e) => continue,
                                Err(e) => panic!("send: {e}"),
                            };
                            ledger.lock().unwrap().accepted.push(h.id());
                            h
                        };
                        match rng.below(20) {
                            0 | 1 => {
                                let _ = h.cancel();
                            }
                            2 => {
                                let _ = h.modify(Duration::from_millis(1 + rng.below(5)));
                            }
                            _ => handles.push(h),
                        }
                        if rng.below(50) == 0 && !handles.is_empty() {
                            let k = rng.below(handles.len() as u64) as usize;
                            let _ = handles.swap_remove(k).cancel();
                        }
                        if let Some(rx) = &rx {
                            while let Some(ev) = rx.try_recv() {
                                record(&ledger, &ev);
                            }
                        }
                    }
                    let left = agent.deregister();
                    gone.store(true, Ordering::SeqCst);
                    assert!(left.is_empty(), "not called from a callback");
                    if let Some(rx) = &rx {
                        // Everything is in the channel by now, and nothing
                        // more may come.
                        while let Some(ev) = rx.try_recv() {
                            record(&ledger, &ev);
                        }
                        std::thread::sleep(Duration::from_millis(2));
                        if rx.try_recv().is_some() {
                            violations.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    let l = ledger.lock().unwrap();
                    assert_eq!(
                        l.completions.len(),
                        l.accepted.len(),
                        "thread {t} round {round}: every accepted send completed"
                    );
                    for id in &l.accepted {
                        let (n, st) = l
                            .completions
                            .get(id)
                            .copied()
                            .unwrap_or((0, SendStatus::Success));
                        assert_eq!(n, 1, "thread {t} round {round}: {id} completed {n} times");
                        let name = match st {
                            SendStatus::Success => "success",
                            SendStatus::Timeout => "timeout",
                            SendStatus::Canceled => "canceled",
                            SendStatus::Flushed => "flushed",
                            SendStatus::WcError(_) => "wc error",
                            _ => "other",
                        };
                        *statuses.entry(name).or_default() += 1;
                    }
                    total_sends.fetch_add(l.accepted.len() as u64, Ordering::SeqCst);
                }
                statuses
            })
        })
        .collect();
    let mut statuses: HashMap<&'static str, u64> = HashMap::new();
    for w in workers {
        for (k, v) in w.join().unwrap() {
            *statuses.entry(k).or_default() += v;
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    let sends = total_sends.load(Ordering::SeqCst);
    eprintln!(
        "{sends} sends in {:?}: {statuses:?}; engine {:?}",
        started.elapsed(),
        rt.engine_stats()
    );
    assert!(sends >= 100_000, "{sends}");
    assert_eq!(
        violations.load(Ordering::SeqCst),
        0,
        "callbacks after deregistration"
    );
    assert_eq!(
        rt.with_engine(|e| (e.outstanding(), e.agent_count())),
        (0, 0)
    );
    for s in ["success", "timeout", "canceled", "flushed", "wc error"] {
        assert!(
            statuses.get(s).copied().unwrap_or(0) > 0,
            "no {s} completion: {statuses:?}"
        );
    }
    let st = rt.engine_stats();
    assert_eq!(st.sends, st.completions);
    assert!(
        st.flush_reposts > 0 && st.retries > 0 && st.unmatched_responses > 0,
        "{st:?}"
    );
}

/// A send the port refused because its overflow queue was full: a clear,
/// synchronous refusal, not a send that must complete.
fn is_overflow(e: &SendError) -> bool {
    matches!(e, SendError::Port(PortError::OverflowFull { .. }))
}
