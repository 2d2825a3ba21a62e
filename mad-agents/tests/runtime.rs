//! The runtime: delivery by callback and channel, blocking
//! `send_and_wait`, synchronous deregistration from other threads and from
//! callbacks, shutdown.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

mod support;

use support::{answering, perf_get};

use mad_agents::{
    AgentEvent, AgentSpec, EngineConfig, Runtime, SendError, SendRequest, SendStatus,
};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received};
use mad_core::wire::{Method, MgmtClass};

fn runtime(silent: bool) -> (Runtime, Arc<AtomicBool>) {
    let s = Arc::new(AtomicBool::new(silent));
    (
        Runtime::start(answering(s.clone()), EngineConfig::default()).unwrap(),
        s,
    )
}

fn req(timeout_ms: u64) -> SendRequest {
    SendRequest::new(perf_get(), Address::gsi(7))
        .expect_response(Duration::from_millis(timeout_ms), 0)
}

#[test]
fn send_and_wait_returns_the_response() {
    let (rt, _) = runtime(false);
    let (agent, rx) = rt
        .register_channel(AgentSpec::send_only("c", Qp::Qp1))
        .unwrap();
    let c = agent.send_and_wait(req(1000)).unwrap();
    assert_eq!(c.status, SendStatus::Success);
    assert_eq!(c.response.unwrap().tid(), c.tid);
    assert!(
        rx.try_recv().is_none(),
        "the completion went to the waiter, not the channel"
    );
}

#[test]
fn send_and_wait_times_out_on_a_real_clock() {
    let (rt, _) = runtime(true);
    let (agent, _rx) = rt
        .register_channel(AgentSpec::send_only("c", Qp::Qp1))
        .unwrap();
    let t = Instant::now();
    let c = agent
        .send_and_wait(req(30).expect_response(Duration::from_millis(30), 2))
        .unwrap();
    let took = t.elapsed();
    assert_eq!((c.status, c.retries), (SendStatus::Timeout, 2));
    assert!(took >= Duration::from_millis(90), "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn completions_reach_the_callback_and_the_channel() {
    let (rt, _) = runtime(false);
    let (tx, got) = mpsc::channel();
    let a = rt
        .register(AgentSpec::send_only("cb", Qp::Qp1), move |ev| {
            tx.send(ev).unwrap();
        })
        .unwrap();
    let (b, rx) = rt
        .register_channel(AgentSpec::send_only("ch", Qp::Qp1))
        .unwrap();
    let sa = a.send(req(1000).cookie(1)).unwrap();
    let sb = b.send(req(1000).cookie(2)).unwrap();
    let ea = got.recv_timeout(Duration::from_secs(5)).unwrap();
    let eb = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    match (ea, eb) {
        (AgentEvent::SendDone(ca), AgentEvent::SendDone(cb)) => {
            assert_eq!(
                (ca.send, ca.cookie, ca.status),
                (sa.id(), 1, SendStatus::Success)
            );
            assert_eq!(
                (cb.send, cb.cookie, cb.status),
                (sb.id(), 2, SendStatus::Success)
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cancel_and_modify_through_the_handle() {
    let (rt, _) = runtime(true);
    let (a, rx) = rt
        .register_channel(AgentSpec::send_only("c", Qp::Qp1))
        .unwrap();
    let s = a.send(req(60_000)).unwrap();
    s.modify(Duration::from_millis(20)).unwrap();
    match rx.recv_timeout(Duration::from_secs(5)).unwrap() {
        AgentEvent::SendDone(c) => assert_eq!(c.status, SendStatus::Timeout),
        other => panic!("{other:?}"),
    }
    let s = a.send(req(60_000)).unwrap();
    s.cancel().unwrap();
    match rx.recv_timeout(Duration::from_secs(5)).unwrap() {
        AgentEvent::SendDone(c) => assert_eq!((c.send, c.status), (s.id(), SendStatus::Canceled)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(s.cancel(), Err(SendError::UnknownSend(_))));
}

#[test]
fn deregistration_waits_for_a_running_callback_and_nothing_runs_after_it() {
    let (rt, _) = runtime(true);
    let running = Arc::new(AtomicBool::new(false));
    let after = Arc::new(AtomicBool::new(false));
    let late = Arc::new(AtomicUsize::new(0));
    let (r2, a2, l2) = (running.clone(), after.clone(), late.clone());
    let agent = rt
        .register(AgentSpec::send_only("slow", Qp::Qp1), move |_ev| {
            if a2.load(Ordering::SeqCst) {
                l2.fetch_add(1, Ordering::SeqCst);
            }
            r2.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(100));
            r2.store(false, Ordering::SeqCst);
        })
        .unwrap();
    for _ in 0..5 {
        agent.send(req(1)).unwrap();
    }
    for _ in 0..5 {
        agent.send(req(60_000)).unwrap();
    }
    while !running.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let left = agent.deregister();
    assert!(left.is_empty());
    assert!(
        !running.load(Ordering::SeqCst),
        "returned while the callback ran"
    );
    after.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        late.load(Ordering::SeqCst),
        0,
        "a callback ran after deregistration returned"
    );
    assert_eq!(rt.with_engine(|e| e.outstanding()), 0);
    assert_eq!(
        rt.stats().callbacks,
        10,
        "every send completed through the callback"
    );
}

#[test]
fn deregistering_from_its_own_callback_returns_the_remaining_completions() {
    let (rt, _) = runtime(true);
    let slot: Arc<Mutex<Option<mad_agents::Agent>>> = Arc::default();
    let (tx, got) = mpsc::channel();
    let calls = Arc::new(AtomicUsize::new(0));
    let (s2, c2) = (slot.clone(), calls.clone());
    let agent = rt
        .register(AgentSpec::send_only("self", Qp::Qp1), move |ev| {
            c2.fetch_add(1, Ordering::SeqCst);
            if let Some(me) = s2.lock().unwrap().take() {
                let left = me.deregister();
                tx.send((ev, left)).unwrap();
            }
        })
        .unwrap();
    let first = agent.send(req(1)).unwrap();
    let others: Vec<_> = (0..4)
        .map(|_| agent.send(req(60_000)).unwrap().id())
        .collect();
    *slot.lock().unwrap() = Some(agent);
    let (ev, left) = got.recv_timeout(Duration::from_secs(5)).unwrap();
    match ev {
        AgentEvent::SendDone(c) => {
            assert_eq!((c.send, c.status), (first.id(), SendStatus::Timeout))
        }
        other => panic!("{other:?}"),
    }
    let mut ids: Vec<_> = left
        .iter()
        .map(|e| match e {
            AgentEvent::SendDone(c) => {
                assert_eq!(c.status, SendStatus::Flushed);
                c.send
            }
            other => panic!("{other:?}"),
        })
        .collect();
    ids.sort();
    let mut want = others.clone();
    want.sort();
    assert_eq!(
        ids, want,
        "each remaining send completes exactly once, in the return value"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        rt.with_engine(|e| (e.outstanding(), e.agent_count())),
        (0, 0)
    );
}

#[test]
fn deregistering_another_agent_from_a_callback_delivers_its_completions_first() {
    let (rt, _) = runtime(true);
    let (btx, bgot) = mpsc::channel();
    let b = rt
        .register(AgentSpec::send_only("b", Qp::Qp1), move |ev| {
            btx.send(ev).unwrap();
        })
        .unwrap();
    for _ in 0..3 {
        b.send(req(60_000)).unwrap();
    }
    let (_a, done) = support::deregister_in_a_callback(&rt, b, req(1));
    assert_eq!(done.recv_timeout(Duration::from_secs(5)).unwrap(), 0);
    let flushed: Vec<_> = bgot.try_iter().collect();
    assert_eq!(flushed.len(), 3, "{flushed:?}");
    assert!(flushed
        .iter()
        .all(|e| matches!(e, AgentEvent::SendDone(c) if c.status == SendStatus::Flushed)));
}

#[test]
fn send_and_wait_inside_a_callback_does_not_deadlock() {
    let (rt, _) = runtime(false);
    let (tx, got) = mpsc::channel();
    let slot: Arc<Mutex<Option<mad_agents::AgentRef>>> = Arc::default();
    let s2 = slot.clone();
    let a = rt
        .register(AgentSpec::send_only("a", Qp::Qp1), move |ev| {
            if matches!(ev, AgentEvent::SendDone(_)) {
                if let Some(me) = s2.lock().unwrap().take() {
                    tx.send(me.send_and_wait(req(1000)).map(|c| c.status).unwrap())
                        .unwrap();
                }
            }
        })
        .unwrap();
    *slot.lock().unwrap() = Some(a.handle());
    a.send(req(1000)).unwrap();
    assert_eq!(
        got.recv_timeout(Duration::from_secs(5)).unwrap(),
        SendStatus::Success
    );
}

#[test]
fn shutdown_flushes_every_agent_and_later_sends_fail() {
    let (rt, _) = runtime(true);
    let (a, rx) = rt
        .register_channel(AgentSpec::send_only("a", Qp::Qp1))
        .unwrap();
    for _ in 0..10 {
        a.send(req(60_000)).unwrap();
    }
    rt.shutdown();
    let evs: Vec<_> = std::iter::from_fn(|| rx.recv_timeout(Duration::from_millis(100))).collect();
    assert_eq!(evs.len(), 10);
    assert!(evs
        .iter()
        .all(|e| matches!(e, AgentEvent::SendDone(c) if c.status == SendStatus::Flushed)));
    assert!(matches!(a.send(req(1)), Err(SendError::Stopped)));
    drop(a); // does not hang
}

#[test]
fn a_full_channel_drops_requests_and_counts_them() {
    use mad_core::transport::Transport;
    let (here, mut far) =
        Loopback::pair(Loopback::attrs("a", 1, 5), Loopback::attrs("b", 1, 6), 64);
    let rt = Runtime::start(
        here,
        EngineConfig {
            recv_queue_bound: 3,
            ..EngineConfig::default()
        },
    )
    .unwrap();
    let (a, rx) = rt
        .register_channel(AgentSpec::requests(
            "pma",
            MgmtClass::PERF_MGT,
            1,
            &[Method::GET],
        ))
        .unwrap();
    for _ in 0..10 {
        far.post_send(Qp::Qp1, &perf_get(), &Address::gsi(5))
            .unwrap();
    }
    let mut out = Vec::new();
    far.poll_send_completions(&mut out).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while a.stats().unwrap().received + a.stats().unwrap().recv_dropped < 10
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let st = a.stats().unwrap();
    assert_eq!((st.received, st.recv_dropped), (3, 7), "{st:?}");
    let got: Vec<_> = std::iter::from_fn(|| rx.try_recv()).collect();
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|e| matches!(e, AgentEvent::Received(_))));
}

#[test]
fn a_channel_agent_that_does_not_keep_up_holds_at_most_its_byte_budget() {
    // The far side turns every Trap this port sends into a PerfMgt Set
    // for the port's own channel agent, which nobody reads: its channel
    // holds what `recv_queue_bytes` allows (one message always fits), the
    // rest is dropped and counted, whatever the count bound would allow.
    let lb = Loopback::new(Loopback::attrs("lb0", 1, 5), 64).with_responder(Box::new(
        |qp, mad: &[u8], _dest: &Address| {
            let mut r = mad.to_vec();
            mad_testkit::header::edit(&mut r, |h| {
                h.method = mad_core::wire::Method::SET;
                h.response = false;
            });
            vec![Received {
                qp,
                src: Address::gsi(9),
                mad: r.into(),
            }]
        },
    ));
    let rt = Runtime::start(
        lb,
        EngineConfig {
            recv_queue_bytes: 1000,
            ..EngineConfig::default()
        },
    )
    .unwrap();
    let (_slow, rx) = rt
        .register_channel(AgentSpec::requests(
            "slow",
            MgmtClass::PERF_MGT,
            1,
            &[Method::SET],
        ))
        .unwrap();
    let (sender, _) = rt
        .register_channel(AgentSpec::send_only("trapper", Qp::Qp1))
        .unwrap();
    let mut trap = perf_get();
    mad_testkit::header::edit(&mut trap, |h| {
        h.method = mad_core::wire::Method::TRAP;
        h.response = false;
    });
    for _ in 0..20 {
        sender
            .handle()
            .send_and_wait(SendRequest::new(trap.clone(), Address::gsi(9)))
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while rt.engine_stats().recv_dropped + 3 < 20 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut held = 0;
    while rx.try_recv().is_some() {
        held += 1;
    }
    // 256-byte MADs: three fit in 1,000 bytes.
    assert_eq!(held, 3, "{:?}", rt.engine_stats());
    assert_eq!(rt.engine_stats().recv_dropped + held, 20);
}
