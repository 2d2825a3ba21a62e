//! The runtime survives its callers (issue 13): a callback that panics,
//! an agent deregistered from a callback while another thread waits on
//! it, and a loop thread that dies anyway never leave a caller blocked.
//!
//! Every blocking call here runs on a helper thread and is waited for
//! with a bound, so that a hang fails the test instead of hanging it.
#![allow(clippy::unwrap_used)]

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

mod support;

use support::perf_get;

use mad_agents::{
    Agent, AgentEvent, AgentSpec, EngineConfig, Runtime, SendError, SendRequest, SendStatus,
};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received};
use mad_testkit::{Hooks, Wrapped};

use support::{within, BOUND};

/// A loopback that answers every request unless `silent`.
fn answering(silent: bool) -> Loopback {
    support::answering(Arc::new(AtomicBool::new(silent)))
}

fn req(timeout_ms: u64) -> SendRequest {
    SendRequest::new(perf_get(), Address::gsi(7))
        .expect_response(Duration::from_millis(timeout_ms), 0)
}

/// Waits (bounded) until the waiting thread's send is outstanding on
/// `agent`.
fn until_waiting(agent: &mad_agents::AgentRef) {
    let deadline = std::time::Instant::now() + BOUND;
    while agent.outstanding() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the waiter never sent"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn unanswered() -> SendRequest {
    SendRequest::new(perf_get(), Address::gsi(7))
}

#[test]
fn a_panicking_callback_is_reported_to_its_agent_and_counted_and_the_loop_runs_on() {
    let rt = Arc::new(Runtime::start(answering(false), EngineConfig::default()).unwrap());
    let (tx, events) = mpsc::channel();
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let fragile = rt
        .register(AgentSpec::send_only("fragile", Qp::Qp1), move |ev| {
            let n = c2.fetch_add(1, Ordering::SeqCst);
            tx.send(ev).unwrap();
            if n == 0 {
                panic!("a careless callback");
            }
        })
        .unwrap();
    fragile.send(unanswered()).unwrap();
    let first = events.recv_timeout(BOUND).unwrap();
    assert!(matches!(first, AgentEvent::SendDone(_)), "{first:?}");
    let report = events.recv_timeout(BOUND).unwrap();
    match report {
        AgentEvent::CallbackPanicked { message } => {
            assert!(message.contains("a careless callback"), "{message}");
        }
        other => panic!("expected the panic to be reported, got {other:?}"),
    }
    assert_eq!(rt.stats().callback_panics, 1);

    // The loop still runs: the same agent and another one keep working,
    // and every blocking call returns.
    let rt2 = rt.clone();
    let status = within(move || {
        let (other, _rx) = rt2
            .register_channel(AgentSpec::send_only("other", Qp::Qp1))
            .unwrap();
        other.send_and_wait(req(1000)).map(|c| c.status)
    });
    assert!(
        matches!(status, Some(Ok(SendStatus::Success))),
        "the loop thread died: {status:?}"
    );
    fragile.send(unanswered()).unwrap();
    assert!(matches!(
        events.recv_timeout(BOUND).unwrap(),
        AgentEvent::SendDone(_)
    ));
    assert!(within(move || drop(fragile)).is_some(), "drop blocked");
    assert_eq!(rt.stats().callback_panics, 1);
}

#[test]
fn a_callback_panicking_after_deregistering_itself_is_not_called_again() {
    let rt = Runtime::start(answering(true), EngineConfig::default()).unwrap();
    let slot: Arc<Mutex<Option<Agent>>> = Arc::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let (s2, c2) = (slot.clone(), calls.clone());
    let agent = rt
        .register(AgentSpec::send_only("a", Qp::Qp1), move |_ev| {
            c2.fetch_add(1, Ordering::SeqCst);
            if let Some(me) = s2.lock().unwrap().take() {
                let _ = me.deregister();
                panic!("after deregistering");
            }
        })
        .unwrap();
    let h = agent.handle();
    *slot.lock().unwrap() = Some(agent);
    h.send(unanswered()).unwrap();
    let deadline = std::time::Instant::now() + BOUND;
    while rt.stats().callback_panics == 0 {
        assert!(std::time::Instant::now() < deadline, "the panic was lost");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the panic report would be a callback after deregistration returned"
    );
}

#[test]
fn send_and_wait_returns_when_another_agents_callback_deregisters_its_agent() {
    let rt = Runtime::start(answering(true), EngineConfig::default()).unwrap();
    let (victim, _rx) = rt
        .register_channel(AgentSpec::send_only("victim", Qp::Qp1))
        .unwrap();
    let h = victim.handle();
    let probe = victim.handle();
    let slot: Arc<Mutex<Option<Agent>>> = Arc::new(Mutex::new(Some(victim)));
    let waiter = std::thread::spawn(move || h.send_and_wait(req(3_600_000)).map(|c| c.status));
    until_waiting(&probe);
    let s2 = slot.clone();
    let killer = rt
        .register(AgentSpec::send_only("killer", Qp::Qp1), move |_ev| {
            if let Some(v) = s2.lock().unwrap().take() {
                // Dropping the victim's `Agent` deregisters it, here on the
                // loop thread.
                drop(v);
            }
        })
        .unwrap();
    killer.send(unanswered()).unwrap();
    let r = within(move || waiter.join().unwrap());
    match r {
        Some(Ok(s)) => assert_ne!(s, SendStatus::Success),
        Some(Err(e)) => panic!("send_and_wait failed: {e}"),
        None => panic!("send_and_wait did not return after its agent was deregistered"),
    }
    assert_eq!(rt.with_engine(|e| e.outstanding()), 0);
}

#[test]
fn send_and_wait_returns_when_its_agent_deregisters_itself_in_its_callback() {
    let rt = Runtime::start(answering(true), EngineConfig::default()).unwrap();
    let slot: Arc<Mutex<Option<Agent>>> = Arc::default();
    let (tx, left) = mpsc::channel();
    let s2 = slot.clone();
    let agent = rt
        .register(AgentSpec::send_only("a", Qp::Qp1), move |_ev| {
            if let Some(me) = s2.lock().unwrap().take() {
                tx.send(me.deregister()).unwrap();
            }
        })
        .unwrap();
    let h = agent.handle();
    *slot.lock().unwrap() = Some(agent);
    let h2 = h.clone();
    let waiter = std::thread::spawn(move || h2.send_and_wait(req(3_600_000)).map(|c| c.status));
    until_waiting(&h);
    h.send(unanswered()).unwrap();
    let left = left.recv_timeout(BOUND).unwrap();
    let r = within(move || waiter.join().unwrap());
    match r {
        Some(Ok(s)) => assert_ne!(s, SendStatus::Success),
        Some(Err(e)) => panic!("send_and_wait failed: {e}"),
        None => panic!("send_and_wait did not return after its agent deregistered itself"),
    }
    assert!(
        left.is_empty(),
        "the waiter's completion went to the waiter, not into the returned events: {left:?}"
    );
}

/// Hooks that panic in `poll_recv` once `armed`: a transport bug that
/// kills the loop thread outside any callback. The wrapped loopback
/// reports no descriptor.
struct Booby {
    armed: Arc<AtomicBool>,
}

/// A runtime over a silent loopback whose transport panics once `armed`.
fn booby_runtime(armed: &Arc<AtomicBool>) -> Runtime {
    Runtime::start(
        Wrapped::new(
            answering(true),
            Booby {
                armed: armed.clone(),
            },
        ),
        EngineConfig::default(),
    )
    .unwrap()
}

impl Hooks for Booby {
    fn inject(&mut self) -> Option<Received> {
        assert!(!self.armed.load(Ordering::SeqCst), "the transport blew up");
        None
    }
    fn raw_fd(&self) -> Option<Option<RawFd>> {
        Some(None)
    }
}

#[test]
fn when_the_loop_thread_dies_waiters_get_an_error_and_drops_return() {
    let armed = Arc::new(AtomicBool::new(false));
    let rt = booby_runtime(&armed);
    let (agent, rx) = rt
        .register_channel(AgentSpec::send_only("a", Qp::Qp1))
        .unwrap();
    let cb = rt
        .register(AgentSpec::send_only("b", Qp::Qp1), |_| {})
        .unwrap();
    let h = agent.handle();
    let waiter = std::thread::spawn(move || h.send_and_wait(req(3_600_000)));
    until_waiting(&agent);
    armed.store(true, Ordering::SeqCst);
    let r = within(move || waiter.join().unwrap().map(|c| c.status));
    assert!(
        matches!(r, Some(Err(SendError::Stopped))),
        "the waiter hung or succeeded: {r:?}"
    );
    assert!(
        within(move || rx.recv()).is_some_and(|e| e.is_none()),
        "a channel's receiver waits for ever on a dead loop"
    );
    let h = agent.handle();
    assert!(
        within(move || drop(agent)).is_some(),
        "dropping an agent hung"
    );
    assert!(within(move || drop(cb)).is_some(), "dropping an agent hung");
    assert!(matches!(h.send(unanswered()), Err(SendError::Stopped)));
    let again = within(move || h.send_and_wait(req(10)).map(|c| c.status));
    assert!(matches!(again, Some(Err(SendError::Stopped))), "{again:?}");
    assert!(
        within(move || drop(rt)).is_some(),
        "dropping the runtime hung"
    );
}

/// A caller's thread that drives the port itself (the fast path) when the
/// transport panics gets what a dead loop gives — `Stopped`, a closed
/// channel — not the transport's panic, and the runtime ends for all.
#[test]
fn a_transport_panic_on_a_drive_by_a_callers_thread_ends_the_runtime_without_panicking_the_caller()
{
    for _ in 0..200 {
        let armed = Arc::new(AtomicBool::new(false));
        let rt = booby_runtime(&armed);
        let (agent, rx) = rt
            .register_channel(AgentSpec::send_only("a", Qp::Qp1))
            .unwrap();
        let h = agent.handle();
        armed.store(true, Ordering::SeqCst);
        // Whichever thread polls first meets the panic: this one (its
        // send_and_wait drives the port) or the loop thread.
        let r = within(move || h.send_and_wait(req(3_600_000)).map(|c| c.status));
        assert!(
            matches!(r, Some(Err(SendError::Stopped))),
            "the caller panicked, hung or succeeded: {r:?}"
        );
        assert!(
            within(move || rx.recv()).is_some_and(|e| e.is_none()),
            "the channel did not close"
        );
        assert!(within(move || drop(agent)).is_some(), "dropping hung");
        assert!(within(move || drop(rt)).is_some(), "dropping hung");
    }
}

#[test]
fn a_callback_that_always_panics_gets_each_completion_once_and_its_agent_still_deregisters() {
    let rt = Runtime::start(answering(false), EngineConfig::default()).unwrap();
    let (tx, events) = mpsc::channel();
    let agent = rt
        .register(AgentSpec::send_only("hopeless", Qp::Qp1), move |ev| {
            let report = matches!(ev, AgentEvent::CallbackPanicked { .. });
            tx.send(ev).unwrap();
            panic!("{}", if report { "again" } else { "always" });
        })
        .unwrap();
    let ids: Vec<_> = (0..5)
        .map(|_| agent.send(req(1000)).unwrap().id())
        .collect();
    let mut done = Vec::new();
    let mut reports = 0;
    while done.len() < 5 || reports < 5 {
        match events.recv_timeout(BOUND).expect("an event went missing") {
            AgentEvent::SendDone(c) => {
                assert_eq!(c.status, SendStatus::Success);
                done.push(c.send);
            }
            AgentEvent::CallbackPanicked { message } => {
                assert_eq!(message, "always");
                reports += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    done.sort();
    let mut want = ids;
    want.sort();
    assert_eq!(done, want, "each completion exactly once");
    // Each event panicked, and so did each report of it (not reported
    // again: one report an event). The last panic comes just after the
    // last event was sent here.
    let deadline = std::time::Instant::now() + BOUND;
    while rt.stats().callback_panics < 10 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(rt.stats().callback_panics, 10);
    assert!(within(move || drop(agent)).is_some(), "drop blocked");
    assert!(events.recv_timeout(Duration::from_millis(50)).is_err());
}

#[test]
fn a_panic_in_a_callback_run_inside_another_agents_deregistration_is_caught_there() {
    let rt = Runtime::start(answering(true), EngineConfig::default()).unwrap();
    let (btx, bevents) = mpsc::channel();
    let b = rt
        .register(AgentSpec::send_only("b", Qp::Qp1), move |ev| {
            let _ = btx.send(ev);
            panic!("b gives up");
        })
        .unwrap();
    for _ in 0..2 {
        b.send(req(3_600_000)).unwrap();
    }
    let (a, done) = support::deregister_in_a_callback(&rt, b, unanswered());
    assert_eq!(done.recv_timeout(BOUND).unwrap(), 0);
    let got: Vec<_> = bevents.try_iter().collect();
    let flushed = got
        .iter()
        .filter(|e| matches!(e, AgentEvent::SendDone(c) if c.status == SendStatus::Flushed))
        .count();
    assert_eq!(flushed, 2, "{got:?}");
    assert!(
        !got.iter()
            .any(|e| matches!(e, AgentEvent::CallbackPanicked { .. })),
        "b was being deregistered: no report may reach it: {got:?}"
    );
    assert_eq!(rt.stats().callback_panics, 2);
    // The loop thread is alive.
    let h = a.handle();
    let r = within(move || h.send_and_wait(req(10)).map(|c| c.status));
    assert!(matches!(r, Some(Ok(SendStatus::Timeout))), "{r:?}");
}

#[test]
fn a_callback_that_owns_its_own_agent_does_not_deadlock_shutdown() {
    let rt = Runtime::start(answering(false), EngineConfig::default()).unwrap();
    let slot: Arc<Mutex<Option<Agent>>> = Arc::default();
    let s2 = slot.clone();
    let agent = rt
        .register(AgentSpec::send_only("cyclic", Qp::Qp1), move |_ev| {
            // Holds its own Agent, never lets go of it.
            let _ = s2.lock().unwrap().is_some();
        })
        .unwrap();
    agent.send(unanswered()).unwrap();
    *slot.lock().unwrap() = Some(agent);
    drop(slot);
    // Shutdown deregisters the agent and drops its callback, which drops
    // the Agent inside it, which deregisters (again) on the loop thread.
    assert!(
        within(move || drop(rt)).is_some(),
        "shutdown deadlocked dropping a callback that owns an Agent"
    );
}

#[test]
fn a_callback_that_owns_another_agent_releases_it_when_its_own_agent_is_deregistered() {
    let rt = Runtime::start(answering(false), EngineConfig::default()).unwrap();
    let (b, _brx) = rt
        .register_channel(AgentSpec::send_only("b", Qp::Qp1))
        .unwrap();
    let b_ref = b.handle();
    let owned = Some(b);
    let a = rt
        .register(AgentSpec::send_only("a", Qp::Qp1), move |_ev| {
            let _ = owned.as_ref().map(|b| b.id());
        })
        .unwrap();
    // Deregistering "a" from this thread drops its callback, and with it
    // "b"'s Agent: "b" is deregistered too.
    assert!(
        within(move || drop(a)).is_some(),
        "deregistration deadlocked"
    );
    let deadline = std::time::Instant::now() + BOUND;
    while b_ref.state().is_some() {
        assert!(std::time::Instant::now() < deadline, "b stayed registered");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(within(move || drop(rt)).is_some(), "shutdown deadlocked");
}
