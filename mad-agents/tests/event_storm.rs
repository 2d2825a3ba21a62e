//! A port event storm into an agent that never reads (issue 25): the
//! events queued for it stay bounded — an equal port event still queued
//! is folded into the new one and counted
//! ([`AgentStats::port_events_coalesced`]) — while every send completion
//! still arrives exactly once. Queued events are counted, not RSS.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod support;

use mad_agents::{AgentEvent, AgentSpec, EngineConfig, Runtime, SendError, SendId, Stack};
use mad_core::transport::{AsyncEvent, Qp};
use mad_testkit::{Hooks, Wrapped};

const STORM: usize = 200_000;
/// A send every this many port events.
const SEND_EVERY: usize = 1_000;

/// The port events of the storm, in turn (7 distinct ones, each of which
/// the port passes on to its agents).
const KINDS: [AsyncEvent; 7] = [
    AsyncEvent::LidChange,
    AsyncEvent::PkeyChange,
    AsyncEvent::GidChange,
    AsyncEvent::SmChange,
    AsyncEvent::ClientReregister,
    AsyncEvent::PortError,
    AsyncEvent::PortActive,
];

fn storm_event(i: usize) -> AsyncEvent {
    // Not a plain cycle: runs of one kind, then others in between.
    KINDS[(i / 3 + i % 5) % KINDS.len()]
}

fn request() -> mad_agents::SendRequest {
    support::perf_request(Duration::from_millis(200), 1)
}

/// Counts the port events and the completions per send in `evs`.
fn tally(evs: impl IntoIterator<Item = AgentEvent>) -> (usize, HashMap<SendId, usize>) {
    let mut port = 0;
    let mut done: HashMap<SendId, usize> = HashMap::new();
    for ev in evs {
        match ev {
            AgentEvent::SendDone(c) => *done.entry(c.send).or_default() += 1,
            e if e.is_port_event() => port += 1,
            e => panic!("unexpected event {e:?}"),
        }
    }
    (port, done)
}

#[test]
fn a_port_event_storm_into_an_engine_agent_that_never_polls_stays_bounded_and_loses_no_completion()
{
    let silent = Arc::default();
    let mut e = Stack::new(support::answering(silent), EngineConfig::default());
    let agent = e.register(AgentSpec::send_only("deaf", Qp::Qp1)).unwrap();
    let t0 = Instant::now();
    let mut sent = Vec::new();
    let mut most_queued = 0;
    for i in 0..STORM {
        e.transport_mut().push_event(storm_event(i));
        if i % SEND_EVERY == 0 {
            sent.push(e.send(agent, request(), t0).unwrap());
            e.poll(t0);
            most_queued = most_queued.max(e.queued_events(agent));
        }
    }
    for _ in 0..10 {
        e.poll(t0);
    }
    most_queued = most_queued.max(e.queued_events(agent));
    assert!(
        most_queued <= KINDS.len() + sent.len(),
        "{most_queued} events queued for an agent that never polls"
    );
    let evs: Vec<AgentEvent> = std::iter::from_fn(|| e.poll_event())
        .map(|(_, ev)| ev)
        .collect();
    let (port, done) = tally(evs);
    assert!(port <= KINDS.len(), "{port} port events queued");
    let st = e.agent_stats(agent).unwrap();
    assert_eq!(
        port as u64 + st.port_events_coalesced,
        STORM as u64,
        "every port event delivered or counted as coalesced"
    );
    assert_eq!(e.stats().port_events_coalesced, st.port_events_coalesced);
    assert_eq!(done.len(), sent.len(), "a completion for every send");
    assert!(done.values().all(|&n| n == 1), "each exactly once");
    assert!(sent.iter().all(|s| done.contains_key(s)));
}

/// Hands out the storm's port events to the runtime's loop, one per poll,
/// once `go` is set: the loop polls from the moment the runtime starts,
/// and a port event polled before the agent is registered reaches no one
/// (neither delivered nor coalesced), so the count would never add up.
struct Storm {
    go: Arc<AtomicBool>,
    next: Arc<AtomicUsize>,
}

impl Hooks for Storm {
    fn event(&mut self) -> Option<AsyncEvent> {
        if !self.go.load(Ordering::SeqCst) {
            return None;
        }
        let i = self.next.load(Ordering::SeqCst);
        if i >= STORM {
            return None;
        }
        self.next.store(i + 1, Ordering::SeqCst);
        Some(storm_event(i))
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_port_event_storm_into_a_channel_agent_that_never_reads_stays_bounded_and_loses_no_completion()
{
    let (go, next) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicUsize::new(0)),
    );
    let storm = Storm {
        go: go.clone(),
        next: next.clone(),
    };
    let transport = Wrapped::new(support::answering(Arc::default()), storm);
    let rt = Runtime::start(transport, EngineConfig::default()).unwrap();
    let (agent, rx) = rt
        .register_channel(AgentSpec::send_only("deaf", Qp::Qp1))
        .unwrap();
    go.store(true, Ordering::SeqCst);
    // Sends during the storm; one the port refuses for a full overflow
    // queue (the documented back-pressure) is counted and not retried.
    let (mut sent, mut refused) = (Vec::new(), 0);
    while next.load(Ordering::SeqCst) < STORM {
        match agent.send(request()) {
            Ok(h) => sent.push(h.id()),
            Err(SendError::Port(_)) => refused += 1,
            Err(e) => panic!("send refused: {e}"),
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    wait_until("every send completed", || {
        agent.stats().unwrap().completed == sent.len() as u64
    });
    wait_until("the storm delivered", || {
        agent.stats().unwrap().port_events_coalesced as usize + KINDS.len() >= STORM
    });
    // What the channel holds now, before anything was read.
    let first: Vec<AgentEvent> = std::iter::from_fn(|| rx.try_recv()).collect();
    let (port_first, mut done) = tally(first);
    assert!(
        port_first <= KINDS.len(),
        "{port_first} port events in the channel of an agent that never read"
    );
    // Anything still on its way, until every port event is accounted for
    // and every send's completion is in (a send counts as completed in
    // the engine a moment before its completion reaches the channel).
    let mut port = port_first;
    wait_until("every port event and completion delivered", || {
        let (p, d) = tally(std::iter::from_fn(|| rx.try_recv()));
        port += p;
        for (s, n) in d {
            *done.entry(s).or_default() += n;
        }
        port as u64 + agent.stats().unwrap().port_events_coalesced == STORM as u64
            && done.len() >= sent.len()
    });
    assert!(!sent.is_empty());
    assert_eq!(
        done.len(),
        sent.len(),
        "a completion for every send ({refused} refused)"
    );
    assert!(done.values().all(|&n| n == 1), "each exactly once");
    assert!(sent.iter().all(|s| done.contains_key(s)));
}
