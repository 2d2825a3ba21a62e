//! How the runtime's loop learns that the transport has something
//! (runtime module docs, "Waking up"): a descriptor epoll accepts is
//! waited on; one it refuses (libumad2sim's fake umad descriptors) or none
//! at all means polling on a bounded tick, and the port still works.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mad_agents::runtime::Wakeup;
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
    m[3] = Method::SET.0;
    m
}

/// Mean time from an unsolicited request reaching the transport, with the
/// loop idle, to its delivery; `bell` makes the descriptor readable.
fn mean_request_latency(rt: &Runtime, inbox: &Inbox, mut bell: Option<&mut Doorbell>) -> Duration {
    let (pma, rx) = rt
        .register_channel(AgentSpec::requests(
            "pma",
            MgmtClass::PERF_MGT,
            1,
            &[Method::SET],
        ))
        .unwrap();
    let mut total = Duration::ZERO;
    let rounds = 10;
    for _ in 0..rounds {
        // Let the loop go idle.
        std::thread::sleep(Duration::from_millis(30));
        let t = Instant::now();
        inbox.lock().unwrap().push_back(Received {
            qp: Qp::Qp1,
            src: Address::gsi(9),
            mad: perf_set().into(),
        });
        if let Some(b) = bell.as_deref_mut() {
            b.ring();
        }
        match rx.recv_timeout(Duration::from_secs(2)) {
            Some(AgentEvent::Received(m)) => assert_eq!(m.src().lid, 9),
            other => panic!("{other:?}"),
        }
        total += t.elapsed();
    }
    drop(pma.deregister());
    total / rounds
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
    // Unsolicited requests are seen within the tick, not a 100 ms sleep.
    let mean = mean_request_latency(&rt, &inbox, None);
    assert!(mean < Duration::from_millis(20), "mean latency {mean:?}");
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
    let mean = mean_request_latency(&rt, &inbox, None);
    assert!(mean < Duration::from_millis(20), "mean latency {mean:?}");
}

#[test]
fn a_real_descriptor_is_waited_on_and_the_idle_loop_sleeps() {
    let (fd, mut bell) = doorbell();
    let (rt, inbox) = start(fd);
    assert!(matches!(rt.wakeup(), Wakeup::Fd(_)), "{:?}", rt.wakeup());
    // Event-driven: a readable descriptor wakes the loop at once.
    let mean = mean_request_latency(&rt, &inbox, Some(&mut bell));
    assert!(mean < Duration::from_millis(20), "mean latency {mean:?}");
    // And with nothing to do it sleeps instead of ticking: over the same
    // window a ticking loop (no descriptor) wakes every millisecond, the
    // descriptor loop only at its 100 ms idle poll. The window lasts
    // until the ticking loop has woken 50 times (at least 300 ms), so a
    // loaded machine that delays the ticks only makes it longer.
    let (ticking, _) = start(Fd::None);
    std::thread::sleep(Duration::from_millis(50));
    let (idle_before, tick_before) = (rt.stats().waits, ticking.stats().waits);
    let began = std::time::Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    while ticking.stats().waits - tick_before < 50 && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let window = began.elapsed();
    let (idle, ticks) = (
        rt.stats().waits - idle_before,
        ticking.stats().waits - tick_before,
    );
    assert!(
        ticks >= 50,
        "the ticking loop woke {ticks} times in {window:?}"
    );
    let polls = u64::try_from(window.as_millis() / 100).unwrap_or(u64::MAX);
    assert!(
        idle <= polls + 5 && idle * 4 < ticks,
        "{idle} wake-ups idle in {window:?} ({ticks} of the ticking loop)"
    );
}
