//! How the runtime's loop learns that the transport has something
//! (runtime module docs, "Waking up"): a descriptor epoll accepts is
//! waited on; one it refuses (libumad2sim's fake umad descriptors) or none
//! at all means polling on a bounded tick, and the port still works.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mad_agents::runtime::{Wakeup, IDLE};
use mad_agents::{AgentEvent, AgentSpec, EngineConfig, Runtime, SendRequest, SendStatus};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received};
use mad_core::wire::{Method, MgmtClass};
use support::{doorbell, perf_get, with_fd, Doorbell, Fd};

/// A Loopback whose far side answers every request.
fn answering() -> Loopback {
    mad_testkit::far::answering("lb0", 5, 64, None)
}

/// The MADs a [`WithFd`] delivers before its Loopback's.
type Inbox = Arc<Mutex<VecDeque<Received>>>;

fn start(fd: Fd) -> (Runtime, Inbox) {
    let t = with_fd(answering(), fd);
    let inbox = t.hooks.inbox.clone();
    let cfg = EngineConfig {
        fallback_tick: Duration::from_millis(1),
        ..EngineConfig::default()
    };
    (Runtime::start(t, cfg).unwrap(), inbox)
}

fn perf_set() -> Vec<u8> {
    let mut m = perf_get();
    mad_testkit::header::edit(&mut m, |h| {
        h.method = mad_core::wire::Method::SET;
        h.response = false;
    });
    m
}

/// Waits (with a generous guard against a hang, not a speed bound) until
/// the loop has gone idle: it has waited at least once more with `want`
/// as its planned sleep, with no caller driving the port.
fn until_idle(rt: &Runtime, want: Duration) {
    let began = Instant::now();
    let before = rt.stats().waits;
    loop {
        let s = rt.stats();
        if s.waits > before && s.last_wait == want {
            return;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "the loop never went idle with a {want:?} wait: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Hands an unsolicited request to the transport while the loop idles
/// (`bell` makes the descriptor readable) and returns once the loop thread
/// has delivered it to a callback agent (delivered by the loop itself: no
/// caller drives the port for a callback agent).
fn request_reaches_callback(
    rt: &Runtime,
    inbox: &Inbox,
    idle: Duration,
    mut bell: Option<&mut Doorbell>,
) {
    let (tx, rx) = std::sync::mpsc::channel();
    let pma = rt
        .register(
            AgentSpec::requests("pma", MgmtClass::PERF_MGT, 1, &[Method::SET]),
            move |ev| {
                if let AgentEvent::Received(m) = ev {
                    let _ = tx.send(m.src().lid);
                }
            },
        )
        .unwrap();
    for _ in 0..5 {
        until_idle(rt, idle);
        inbox.lock().unwrap().push_back(Received {
            qp: Qp::Qp1,
            src: Address::gsi(9),
            mad: perf_set().into(),
        });
        if let Some(b) = bell.as_deref_mut() {
            b.ring();
        }
        // A hang guard: a lost wake-up would show as the loop's planned
        // sleep (asserted by the callers), never as a slow answer here.
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(9));
    }
    drop(pma.deregister());
}

#[test]
fn a_descriptor_epoll_refuses_means_a_bounded_tick_and_the_port_still_works() {
    // Like libumad2sim's: a number that is no open descriptor.
    let (rt, inbox) = start(Fd::Bogus(1 << 30));
    match rt.wakeup() {
        Wakeup::Refused { fd, errno, tick } => {
            assert_eq!(fd, 1 << 30);
            assert_eq!(errno, Some(9), "EBADF");
            assert_eq!(tick, Duration::from_millis(1));
        }
        other => panic!("{other:?}"),
    }
    assert!(!rt.wakeup().is_event_driven());
    // Requests and their responses.
    let a = rt
        .register_channel(AgentSpec::send_only("perf", Qp::Qp1))
        .unwrap()
        .0;
    for _ in 0..20 {
        let c = a
            .send_and_wait(
                SendRequest::new(perf_get(), Address::gsi(7))
                    .expect_response(Duration::from_millis(500), 0),
            )
            .unwrap();
        assert_eq!(c.status, SendStatus::Success);
    }
    // Idle, the loop sleeps one tick at a time (not the idle safety net
    // of a descriptor loop), so an unsolicited request is seen within the
    // tick; no descriptor ever wakes it.
    request_reaches_callback(&rt, &inbox, Duration::from_millis(1), None);
    assert_eq!(rt.stats().transport_wakes, 0);
}

#[test]
fn a_transport_without_a_descriptor_ticks_the_same_way() {
    let (rt, inbox) = start(Fd::None);
    assert_eq!(
        rt.wakeup(),
        Wakeup::NoFd {
            tick: Duration::from_millis(1)
        }
    );
    request_reaches_callback(&rt, &inbox, Duration::from_millis(1), None);
    assert_eq!(rt.stats().transport_wakes, 0);
}

#[test]
fn a_real_descriptor_is_waited_on_and_the_idle_loop_sleeps() {
    let (fd, mut bell) = doorbell();
    let (rt, inbox) = start(fd);
    assert!(matches!(rt.wakeup(), Wakeup::Fd(_)), "{:?}", rt.wakeup());
    // Idle, the loop sleeps for the idle safety net, not a tick (the
    // ticking loop of a transport without a descriptor plans 1 ms).
    let (ticking, _) = start(Fd::None);
    until_idle(&ticking, Duration::from_millis(1));
    until_idle(&rt, IDLE);
    assert!(IDLE >= Duration::from_millis(100));
    // Event-driven: each request is delivered because the readable
    // descriptor woke the loop, once per request at least.
    let before = rt.stats().transport_wakes;
    request_reaches_callback(&rt, &inbox, IDLE, Some(&mut bell));
    let woke = rt.stats().transport_wakes - before;
    assert!(
        woke >= 5,
        "{woke} wake-ups by the descriptor for 5 requests"
    );
}
