//! The runtime's fast path (issue 18): a thread waiting on its channel or
//! in `send_and_wait` drives the port itself, and the loop thread parks
//! while callers drive. Each test plays a careless or hostile caller
//! against one guarantee: exactly-once delivery, nothing after
//! deregistration, callbacks only on the loop thread, and timers,
//! unsolicited MADs and other agents' events still served while callers
//! drive.
//!
//! Every blocking call runs on a helper thread and is waited for with a
//! bound, so that a hang fails the test instead of hanging it.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use mad_agents::{
    AgentEvent, AgentReceiver, AgentSpec, EngineConfig, Runtime, SendError, SendId, SendRequest,
    SendStatus, Unsendable,
};
use mad_core::transport::{Address, Qp, Received};
use mad_core::wire::{Method, MgmtClass};
use support::{perf_get, with_fd, Fd};

use support::{within, BOUND};

fn answering(silent: bool) -> support::WithFd {
    with_fd(
        support::answering(Arc::new(AtomicBool::new(silent))),
        Fd::None,
    )
}

fn req(timeout: Duration) -> SendRequest {
    SendRequest::new(perf_get(), Address::gsi(7)).expect_response(timeout, 0)
}

/// Takes every event until the channel closes; the completions' ids.
fn drain_until_closed(rx: &AgentReceiver) -> Vec<SendId> {
    let mut got = Vec::new();
    while let Some(ev) = rx.recv() {
        if let AgentEvent::SendDone(c) = ev {
            got.push(c.send);
        }
    }
    got
}

/// A thread that keeps driving the port through an idle channel agent's
/// `try_recv` until told to stop, so that the loop thread parks.
fn hammer(rt: &Runtime) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let (idle, rx) = rt
        .register_channel(AgentSpec::send_only("idle", Qp::Qp1))
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let t = std::thread::spawn(move || {
        let _idle = idle;
        while !s2.load(Ordering::SeqCst) {
            assert!(rx.try_recv().is_none());
        }
    });
    (stop, t)
}

#[test]
fn completions_racing_a_deregistration_each_arrive_once_and_nothing_after() {
    for round in 0..20 {
        let rt = Runtime::start(answering(false), EngineConfig::default()).unwrap();
        let (agent, rx) = rt
            .register_channel(AgentSpec::send_only("racer", Qp::Qp1))
            .unwrap();
        // A receiver that drives the port while the agent goes.
        let receiver = std::thread::spawn(move || (drain_until_closed(&rx), rx));
        // A sender racing the deregistration.
        let sender_ref = agent.handle();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let s2 = sent.clone();
        let sender = std::thread::spawn(move || loop {
            // Up to 32 in flight (the far side's queue is 64 deep).
            if sender_ref.outstanding() >= 32 {
                std::thread::yield_now();
                if sender_ref.state().is_none() {
                    return;
                }
                continue;
            }
            match sender_ref.send(req(Duration::from_secs(5))) {
                Ok(h) => s2.lock().unwrap().push(h.id()),
                Err(SendError::UnknownAgent(_)) => return,
                Err(e) => panic!("send: {e}"),
            }
        });
        std::thread::sleep(Duration::from_micros(200 * (round % 5)));
        let left = within(move || agent.deregister()).expect("deregister hung");
        assert!(left.is_empty());
        // Every send that was accepted has completed and is in the
        // channel now; nothing enters it any more.
        sender.join().unwrap();
        let (got, rx) = within(move || receiver.join().unwrap()).expect("the channel never closed");
        let sent = sent.lock().unwrap().clone();
        let unique: HashSet<SendId> = got.iter().copied().collect();
        assert_eq!(unique.len(), got.len(), "a completion came twice");
        assert_eq!(
            unique,
            sent.iter().copied().collect::<HashSet<_>>(),
            "round {round}: every accepted send completes exactly once"
        );
        assert!(rx.try_recv().is_none());
    }
}

#[test]
fn a_receiver_or_handle_dropped_mid_flight_leaves_other_agents_whole() {
    let rt = Arc::new(Runtime::start(answering(false), EngineConfig::default()).unwrap());
    let (keep, keep_rx) = rt
        .register_channel(AgentSpec::send_only("keep", Qp::Qp1))
        .unwrap();
    for _ in 0..50 {
        let (gone, gone_rx) = rt
            .register_channel(AgentSpec::send_only("gone", Qp::Qp1))
            .unwrap();
        for _ in 0..8 {
            gone.send(req(Duration::from_secs(5))).unwrap();
            keep.send(req(Duration::from_secs(5))).unwrap();
        }
        // The receiver goes first, with completions in flight; then the
        // handle, from another thread, while the kept agent's receiver
        // drives.
        drop(gone_rx);
        within(move || drop(gone)).expect("dropping the agent hung");
        let mut n = 0;
        while n < 8 {
            match keep_rx.recv_timeout(BOUND) {
                Some(AgentEvent::SendDone(c)) => {
                    assert_eq!(c.status, SendStatus::Success);
                    n += 1;
                }
                other => panic!("{other:?}"),
            }
        }
    }
    assert!(keep_rx.try_recv().is_none());
    assert_eq!(rt.engine_stats().recv_dropped, 0);
}

#[test]
fn many_threads_at_once_each_get_exactly_their_own_completions() {
    const THREADS: usize = 6;
    const ROUNDS: u64 = 2_000;
    let rt = Arc::new(Runtime::start(answering(false), EngineConfig::default()).unwrap());
    // A callback agent too: its events must stay on the loop thread.
    let loop_name = Arc::new(Mutex::new(HashSet::new()));
    let l2 = loop_name.clone();
    let cb_done = Arc::new(AtomicU64::new(0));
    let c2 = cb_done.clone();
    let cb = rt
        .register(AgentSpec::send_only("cb", Qp::Qp1), move |ev| {
            if let AgentEvent::SendDone(c) = ev {
                assert_eq!(c.status, SendStatus::Success);
                c2.fetch_add(1, Ordering::SeqCst);
            }
            let name = std::thread::current().name().map(str::to_owned);
            l2.lock().unwrap().insert(name);
        })
        .unwrap();
    let shared = rt
        .register_channel(AgentSpec::send_only("waiters", Qp::Qp1))
        .unwrap()
        .0;
    let shared = Arc::new(shared);
    let mut threads = Vec::new();
    for i in 0..THREADS {
        let rt = rt.clone();
        let shared = shared.clone();
        let cb = cb.handle();
        threads.push(std::thread::spawn(move || {
            if i % 2 == 0 {
                // A closed loop with 4 outstanding on its own agent.
                let (a, rx) = rt
                    .register_channel(AgentSpec::send_only("mine", Qp::Qp1))
                    .unwrap();
                let mut sent = HashSet::new();
                for _ in 0..4 {
                    sent.insert(a.send(req(Duration::from_secs(5))).unwrap().id());
                }
                let mut got = HashSet::new();
                while got.len() < ROUNDS as usize {
                    match rx.recv_timeout(BOUND) {
                        Some(AgentEvent::SendDone(c)) => {
                            assert_eq!(c.status, SendStatus::Success);
                            assert!(sent.contains(&c.send), "not this agent's send");
                            assert!(got.insert(c.send), "a completion came twice");
                            if sent.len() < ROUNDS as usize {
                                sent.insert(a.send(req(Duration::from_secs(5))).unwrap().id());
                            }
                        }
                        other => panic!("{other:?}"),
                    }
                }
                assert!(rx.try_recv().is_none());
            } else {
                // Blocking round trips on one agent shared by threads,
                // and sends whose completions go to the callback.
                for _ in 0..ROUNDS / 4 {
                    let c = shared.send_and_wait(req(Duration::from_secs(5))).unwrap();
                    assert_eq!(c.status, SendStatus::Success);
                    cb.send(req(Duration::from_secs(5))).unwrap();
                }
            }
        }));
    }
    for t in threads {
        within(move || t.join().unwrap()).expect("a thread hung");
    }
    let want = (THREADS / 2) as u64 * ROUNDS / 4;
    let deadline = Instant::now() + BOUND;
    while cb_done.load(Ordering::SeqCst) < want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(cb_done.load(Ordering::SeqCst), want);
    let names = loop_name.lock().unwrap().clone();
    assert_eq!(names.len(), 1, "callbacks ran on {names:?}");
    let name = names.into_iter().next().flatten().unwrap_or_default();
    assert!(name.starts_with("mad-agents-"), "callback on {name}");
}

#[test]
fn deadlines_timers_and_unsolicited_requests_are_served_while_callers_drive() {
    let t = answering(true);
    let inbox = t.hooks.inbox.clone();
    let rt = Arc::new(Runtime::start(t, EngineConfig::default()).unwrap());
    let (stop, hammer) = hammer(&rt);
    // A bounded wait: the far side is silent, the fast path finds
    // nothing, the loop's timer ends it.
    let a = rt
        .register_channel(AgentSpec::send_only("waiter", Qp::Qp1))
        .unwrap()
        .0;
    let c = within(move || {
        let t0 = Instant::now();
        let c = a.send_and_wait(req(Duration::from_millis(30))).unwrap();
        (c, t0.elapsed())
    })
    .expect("send_and_wait ignored its deadline");
    assert_eq!(c.0.status, SendStatus::Timeout);
    assert!(c.1 >= Duration::from_millis(30));
    // A callback agent's timeout, and a request nobody asked for.
    let (tx, events) = mpsc::channel();
    let pma = rt
        .register(
            AgentSpec::requests("pma", MgmtClass::PERF_MGT, 1, &[Method::SET]),
            move |ev| {
                let _ = tx.send(ev);
            },
        )
        .unwrap();
    pma.send(req(Duration::from_millis(20))).unwrap();
    match events.recv_timeout(BOUND) {
        Ok(AgentEvent::SendDone(c)) => assert_eq!(c.status, SendStatus::Timeout),
        other => panic!("{other:?}"),
    }
    let mut set = perf_get();
    set[3] = Method::SET.0;
    inbox.lock().unwrap().push_back(Received {
        qp: Qp::Qp1,
        src: Address::gsi(9),
        mad: set.into(),
    });
    match events.recv_timeout(BOUND) {
        Ok(AgentEvent::Received(m)) => assert_eq!(m.src().lid, 9),
        other => panic!("{other:?}"),
    }
    stop.store(true, Ordering::SeqCst);
    hammer.join().unwrap();
}

#[test]
fn a_waiter_gets_its_completion_once_whoever_drives() {
    // The loop delivers channel events and callers take their own at the
    // same time: each completion reaches exactly one place.
    let rt = Arc::new(Runtime::start(answering(false), EngineConfig::default()).unwrap());
    let (agent, rx) = rt
        .register_channel(AgentSpec::send_only("both", Qp::Qp1))
        .unwrap();
    let agent = Arc::new(agent);
    let a2 = agent.clone();
    let (waited_tx, waited_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let ids = (0..10_000)
            .map(|_| a2.send_and_wait(req(Duration::from_secs(5))).unwrap().send)
            .collect::<Vec<_>>();
        let _ = waited_tx.send(ids);
    });
    // While the waiter runs, this thread keeps 4 sends of the same agent
    // in flight and receives their completions from the channel.
    let mut sent = HashSet::new();
    let mut got = HashSet::new();
    let deadline = Instant::now() + BOUND;
    let waited = loop {
        if let Ok(w) = waited_rx.try_recv() {
            break w;
        }
        assert!(Instant::now() < deadline, "send_and_wait hung");
        while sent.len() < got.len() + 4 {
            sent.insert(agent.send(req(Duration::from_secs(5))).unwrap().id());
        }
        match rx.recv_timeout(BOUND) {
            Some(AgentEvent::SendDone(c)) => {
                assert!(
                    sent.contains(&c.send),
                    "a waiter's completion in the channel"
                );
                assert!(got.insert(c.send));
            }
            other => panic!("{other:?}"),
        }
    };
    while got.len() < sent.len() {
        match rx.recv_timeout(BOUND) {
            Some(AgentEvent::SendDone(c)) => assert!(got.insert(c.send)),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(got, sent);
    assert!(waited.iter().all(|s| !got.contains(s)));
    assert_eq!(waited.iter().collect::<HashSet<_>>().len(), waited.len());
    assert!(rx.try_recv().is_none());
}

#[test]
fn a_receive_with_an_endless_timeout_neither_panics_nor_misses_its_event() {
    // A silent far side: the fast path finds nothing, the receiver
    // blocks without a deadline, the loop's timer ends the send.
    let rt = Runtime::start(answering(true), EngineConfig::default()).unwrap();
    let (a, rx) = rt
        .register_channel(AgentSpec::send_only("patient", Qp::Qp1))
        .unwrap();
    a.send(req(Duration::from_millis(30))).unwrap();
    let ev = within(move || rx.recv_timeout(Duration::MAX).map(|e| (e, rx)))
        .expect("recv_timeout(Duration::MAX) hung");
    match ev {
        Some((AgentEvent::SendDone(c), _)) => assert_eq!(c.status, SendStatus::Timeout),
        other => panic!("{other:?}"),
    }
    assert!(rt.stats().caller_blocks > 0);
}

#[test]
fn a_batch_sends_each_request_once_and_reports_each_refusal_by_its_cookie() {
    let rt = Runtime::start(answering(false), EngineConfig::default()).unwrap();
    let (agent, rx) = rt
        .register_channel(AgentSpec::send_only("batch", Qp::Qp1))
        .unwrap();
    // Five good requests around one the engine refuses (too short).
    let bad = SendRequest::new(vec![1u8; 10], Address::gsi(7))
        .expect_response(BOUND, 0)
        .cookie(99);
    let reqs = (1..=2u64)
        .map(|c| req(BOUND).cookie(c))
        .chain(std::iter::once(bad))
        .chain((3..=5u64).map(|c| req(BOUND).cookie(c)));
    let mut refused = Vec::new();
    let sent = agent
        .send_batch(reqs, |cookie, e| refused.push((cookie, e)))
        .unwrap();
    assert_eq!(sent, 5);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].0, 99);
    assert!(
        matches!(
            refused[0].1,
            SendError::BadSend(Unsendable::Truncated { len: 10 })
        ),
        "{refused:?}"
    );
    let (mut cookies, rx) = within(move || {
        let mut cookies = Vec::new();
        while cookies.len() < 5 {
            match rx.recv() {
                Some(AgentEvent::SendDone(c)) => {
                    assert_eq!(c.status, SendStatus::Success, "{c:?}");
                    cookies.push(c.cookie);
                }
                Some(_) => {}
                None => break,
            }
        }
        (cookies, rx)
    })
    .expect("the batch's completions within the bound");
    cookies.sort_unstable();
    assert_eq!(cookies, vec![1, 2, 3, 4, 5]);
    // Exactly once: nothing more comes.
    assert!(rx.try_recv().is_none());
    let handle = agent.handle();
    rt.shutdown();
    // A stopped runtime refuses the whole batch; nothing is reported one
    // by one.
    let mut after = 0;
    let r = handle.send_batch((0..3u64).map(|c| req(BOUND).cookie(c)), |_, _| after += 1);
    assert!(matches!(r, Err(SendError::Stopped)), "{r:?}");
    assert_eq!(after, 0);
    drop(agent);
    assert!(
        rx.is_closed(),
        "the channel closes once the runtime stopped"
    );
}
