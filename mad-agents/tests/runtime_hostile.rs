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

use mad_agents::{
    Agent, AgentEvent, AgentSpec, EngineConfig, Runtime, SendError, SendRequest, SendStatus,
};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{
    Address, AsyncEvent, PortAttrs, Qp, QpState, Received, SendCompletion, Transport,
    TransportError, WrId,
};
use mad_core::wire::{Mad, Method, MgmtClass};

/// How long a call that must return in bounded time may take here.
const BOUND: Duration = Duration::from_secs(10);

/// Runs `f` on its own thread; `None` if it has not returned within
/// [`BOUND`] (the thread is then left behind, blocked).
fn within<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(BOUND).ok()
}

fn perf_get() -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[..4].copy_from_slice(&[1, MgmtClass::PERF_MGT.0, 1, Method::GET.0]);
    m
}

/// A loopback that answers every request unless `silent`.
fn answering(silent: bool) -> Loopback {
    Loopback::new(Loopback::attrs("lb0", 1, 5), 64).with_responder(Box::new(
        move |qp, mad: &[u8], dest: &Address| {
            if silent || Mad::new_unchecked(mad).is_response() {
                return Vec::new();
            }
            let mut r = mad.to_vec();
            r[3] = 0x81;
            vec![Received {
                qp,
                src: Address {
                    lid: dest.lid,
                    qpn: 1,
                    ..Address::default()
                },
                mad: r.into(),
            }]
        },
    ))
}

fn req(timeout_ms: u64) -> SendRequest {
    SendRequest::new(perf_get(), Address::gsi(7))
        .expect_response(Duration::from_millis(timeout_ms), 0)
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
    agent.send(unanswered()).unwrap();
    *slot.lock().unwrap() = Some(agent);
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
    let slot: Arc<Mutex<Option<Agent>>> = Arc::new(Mutex::new(Some(victim)));
    let (started_tx, started) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        started_tx.send(()).unwrap();
        h.send_and_wait(req(3_600_000)).map(|c| c.status)
    });
    started.recv_timeout(BOUND).unwrap();
    // Let the waiter post its send.
    std::thread::sleep(Duration::from_millis(50));
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
    let (posted_tx, posted) = mpsc::channel();
    let h2 = h.clone();
    let waiter = std::thread::spawn(move || {
        posted_tx.send(()).unwrap();
        h2.send_and_wait(req(3_600_000)).map(|c| c.status)
    });
    posted.recv_timeout(BOUND).unwrap();
    std::thread::sleep(Duration::from_millis(50));
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

/// A loopback whose `poll_recv` panics once `armed`: a transport bug that
/// kills the loop thread outside any callback.
struct Booby(Loopback, Arc<AtomicBool>);

impl Transport for Booby {
    fn port_attrs(&self) -> &PortAttrs {
        self.0.port_attrs()
    }
    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        self.0.refresh_port_attrs()
    }
    fn send_queue_depth(&self) -> usize {
        self.0.send_queue_depth()
    }
    fn post_send(&mut self, qp: Qp, mad: &[u8], dest: &Address) -> Result<WrId, TransportError> {
        self.0.post_send(qp, mad, dest)
    }
    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError> {
        self.0.poll_send_completions(out)
    }
    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        assert!(!self.1.load(Ordering::SeqCst), "the transport blew up");
        self.0.poll_recv()
    }
    fn poll_event(&mut self) -> Option<AsyncEvent> {
        self.0.poll_event()
    }
    fn qp_state(&self, qp: Qp) -> QpState {
        self.0.qp_state(qp)
    }
    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
        self.0.modify_qp(qp, to)
    }
    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        self.0.recreate_queues()
    }
    fn raw_fd(&self) -> Option<RawFd> {
        None
    }
}

#[test]
fn when_the_loop_thread_dies_waiters_get_an_error_and_drops_return() {
    let armed = Arc::new(AtomicBool::new(false));
    let rt = Runtime::start(
        Booby(answering(true), armed.clone()),
        EngineConfig::default(),
    )
    .unwrap();
    let (agent, _rx) = rt
        .register_channel(AgentSpec::send_only("a", Qp::Qp1))
        .unwrap();
    let cb = rt
        .register(AgentSpec::send_only("b", Qp::Qp1), |_| {})
        .unwrap();
    let h = agent.handle();
    let (posted_tx, posted) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        posted_tx.send(()).unwrap();
        h.send_and_wait(req(3_600_000))
    });
    posted.recv_timeout(BOUND).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    armed.store(true, Ordering::SeqCst);
    let r = within(move || waiter.join().unwrap().map(|c| c.status));
    assert!(
        matches!(r, Some(Err(SendError::Stopped))),
        "the waiter hung or succeeded: {r:?}"
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
