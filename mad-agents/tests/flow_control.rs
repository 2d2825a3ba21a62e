//! Solicited flow control (engine module docs, "Flow control"): requests
//! awaiting a response beyond the per-agent or per-port limit wait in a
//! backlog and are posted as earlier ones finish. Virtual clock, Loopback
//! far side that records and answers only when told.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use mad_agents::{
    AgentId, AgentSpec, EngineConfig, FlowLimit, SendError, SendId, SendRequest, SendStatus, Stack,
    DEFAULT_PORT_UNANSWERED,
};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp};
use support::{answer, completions, drain, perf_get, recording, tid_of, Sent};

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);
const FAR: u16 = 7;

fn capped(agent: FlowLimit, port: FlowLimit) -> (Stack<Loopback>, Sent) {
    let (lb, sent) = recording(5, 4096);
    let cfg = EngineConfig {
        max_unanswered_per_agent: agent,
        max_unanswered_per_port: port,
        ..EngineConfig::default()
    };
    (Stack::new(lb, cfg), sent)
}

fn req(timeout: Duration, retries: u32) -> SendRequest {
    SendRequest::new(perf_get(), Address::gsi(FAR)).expect_response(timeout, retries)
}

/// An engine with at most one unanswered send per agent (none at the
/// port level), its agent "a", and the start of virtual time.
fn one_unanswered_per_agent() -> (Stack<Loopback>, Sent, AgentId, Instant) {
    let (mut e, sent) = capped(FlowLimit::Max(1), FlowLimit::Unlimited);
    let a = agent(&mut e, "a");
    (e, sent, a, Instant::now())
}

fn agent(e: &mut Stack<Loopback>, name: &str) -> AgentId {
    e.register(AgentSpec::send_only(name, Qp::Qp1)).unwrap()
}

/// Polls twice: the second lets the Loopback's "device" send what the
/// first posted.
fn run<T: mad_core::transport::Transport>(e: &mut Stack<T>, now: Instant) {
    e.poll(now);
    e.poll(now);
}

/// TIDs the far side has seen, in order.
fn seen(sent: &Sent) -> Vec<u64> {
    sent.lock()
        .unwrap()
        .iter()
        .map(|(_, m, _)| tid_of(m))
        .collect()
}

/// The far side answers the request it saw with `tid`.
fn reply(e: &mut Stack<Loopback>, sent: &Sent, tid: u64) {
    let mad = sent
        .lock()
        .unwrap()
        .iter()
        .find(|(_, m, _)| tid_of(m) == tid)
        .map(|(_, m, _)| m.clone())
        .unwrap();
    e.handle_recv(Instant::now(), answer(Qp::Qp1, &mad, Address::gsi(FAR)))
        .unwrap();
}

#[test]
fn a_full_agent_queues_its_requests_and_posts_one_as_each_answer_arrives() {
    let (mut e, sent) = capped(FlowLimit::Max(4), FlowLimit::Unlimited);
    let a = agent(&mut e, "a");
    let t0 = Instant::now();
    let ids: Vec<SendId> = (0..10)
        .map(|_| e.send(a, req(Duration::from_secs(1), 0), t0).unwrap())
        .collect();
    let tids: Vec<u64> = ids.iter().map(|s| e.send_tid(*s).unwrap()).collect();
    run(&mut e, t0);
    assert_eq!(seen(&sent), tids[..4], "only the first four go out");
    assert_eq!((e.agent_unanswered(a), e.agent_backlog(a)), (4, 6));
    assert_eq!(e.outstanding(), 10, "the queued ones are accepted sends");
    let mut done = Vec::new();
    for i in 0..10 {
        reply(&mut e, &sent, tids[i]);
        run(&mut e, t0);
        done.extend(completions(&drain(&mut e)));
        assert_eq!(done.len(), i + 1);
        assert_eq!(done[i].send, ids[i]);
        assert_eq!(done[i].status, SendStatus::Success);
        // One answer frees one slot: the next in line goes out, in order.
        assert_eq!(seen(&sent), tids[..(i + 5).min(10)], "after answer {i}");
        assert!(e.agent_unanswered(a) <= 4);
    }
    assert_eq!(e.outstanding(), 0);
    assert_eq!(e.stats().backlogged, 6);
    assert_eq!(e.agent_stats(a).unwrap().backlogged, 6);
}

#[test]
fn the_port_limit_is_shared_and_agents_with_a_backlog_take_turns() {
    let (mut e, sent) = capped(FlowLimit::Unlimited, FlowLimit::Max(4));
    let (a, b) = (agent(&mut e, "a"), agent(&mut e, "b"));
    let t0 = Instant::now();
    let sa: Vec<u64> = (0..6)
        .map(|_| {
            let s = e.send(a, req(Duration::from_secs(1), 0), t0).unwrap();
            e.send_tid(s).unwrap()
        })
        .collect();
    let sb: Vec<u64> = (0..6)
        .map(|_| {
            let s = e.send(b, req(Duration::from_secs(1), 0), t0).unwrap();
            e.send_tid(s).unwrap()
        })
        .collect();
    run(&mut e, t0);
    assert_eq!(seen(&sent), sa[..4]);
    assert_eq!(e.unanswered(), 4);
    assert_eq!((e.agent_backlog(a), e.agent_backlog(b)), (2, 6));
    for t in &sa[..4] {
        reply(&mut e, &sent, *t);
    }
    run(&mut e, t0);
    assert_eq!(
        seen(&sent)[4..],
        [sa[4], sb[0], sa[5], sb[1]],
        "freed port slots go to the agents in turn"
    );
    assert_eq!(e.unanswered(), 4);
    for t in [sa[4], sb[0], sa[5], sb[1]] {
        reply(&mut e, &sent, t);
    }
    run(&mut e, t0);
    assert_eq!(seen(&sent)[8..], sb[2..6]);
    assert_eq!(completions(&drain(&mut e)).len(), 8);
}

#[test]
fn the_default_keeps_a_port_with_a_descriptor_at_256_unanswered() {
    let (lb, sent) = recording(5, 4096);
    let (fd, _bell) = support::doorbell();
    let mut e = Stack::new(support::with_fd(lb, fd), EngineConfig::default());
    assert_eq!(e.flow_limits(), (usize::MAX, DEFAULT_PORT_UNANSWERED));
    let a1 = e.register(AgentSpec::send_only("a1", Qp::Qp1)).unwrap();
    let a2 = e.register(AgentSpec::send_only("a2", Qp::Qp1)).unwrap();
    let t0 = Instant::now();
    for i in 0..400 {
        let a = if i % 2 == 0 { a1 } else { a2 };
        e.send(a, req(Duration::from_secs(10), 0), t0).unwrap();
    }
    run(&mut e, t0);
    assert_eq!(sent.lock().unwrap().len(), 256);
    assert_eq!(e.unanswered(), 256);
    assert_eq!(e.agent_backlog(a1) + e.agent_backlog(a2), 144);
    // Responses, and sends expecting none, are not limited.
    let mut resp = perf_get();
    mad_testkit::header::edit(&mut resp, |h| {
        h.method = mad_core::wire::Method::GET;
        h.response = true;
    });
    e.send(a1, SendRequest::new(resp, Address::gsi(FAR)), t0)
        .unwrap();
    e.send(a1, SendRequest::new(perf_get(), Address::gsi(FAR)), t0)
        .unwrap();
    run(&mut e, t0);
    assert_eq!(sent.lock().unwrap().len(), 258);

    // An in-memory transport without a descriptor has no far-side queue
    // to overflow: no limit unless configured.
    let (lb, _) = recording(5, 64);
    let e = Stack::new(lb, EngineConfig::default());
    assert_eq!(e.flow_limits(), (usize::MAX, usize::MAX));
}

#[test]
fn a_backlogged_request_starts_its_timers_at_its_first_post_and_retries_keep_the_slot() {
    let (mut e, sent, a, t0) = one_unanswered_per_agent();
    // The first: 100 ms, 2 retries, silent far side -> ends at 300 ms.
    let first = e.send(a, req(100 * MS, 2), t0).unwrap();
    // The second waits for the slot the whole time: retries keep it.
    let second = e.send(a, req(100 * MS, 0), t0).unwrap();
    let t2 = e.send_tid(second).unwrap();
    run(&mut e, t0);
    for ms in [100, 200] {
        run(&mut e, t0 + ms * MS);
        assert!(
            !seen(&sent).contains(&t2),
            "posted during a retry at {ms} ms"
        );
    }
    assert_eq!(sent.lock().unwrap().len(), 3, "first post and two retries");
    run(&mut e, t0 + 300 * MS);
    let c = completions(&drain(&mut e));
    assert_eq!((c[0].send, c[0].status), (first, SendStatus::Timeout));
    assert_eq!(seen(&sent).last(), Some(&t2), "posted when the slot freed");
    // Its own 100 ms (and its absolute deadline) count from that post.
    run(&mut e, t0 + 399 * MS);
    assert!(
        drain(&mut e).is_empty(),
        "timed out before 100 ms on the wire"
    );
    run(&mut e, t0 + 400 * MS);
    let c = completions(&drain(&mut e));
    assert_eq!((c[0].send, c[0].status), (second, SendStatus::Timeout));
    assert_eq!(e.outstanding(), 0);
}

#[test]
fn cancel_modify_and_deregistration_work_on_backlogged_requests() {
    let (mut e, sent, a, t0) = one_unanswered_per_agent();
    let [s1, s2, s3] = [(); 3].map(|()| e.send(a, req(SEC, 0), t0).unwrap());
    let (t1, t2, t3) = (
        e.send_tid(s1).unwrap(),
        e.send_tid(s2).unwrap(),
        e.send_tid(s3).unwrap(),
    );
    run(&mut e, t0);
    // Cancel of a queued request completes it at once; it never goes out.
    e.cancel(s2).unwrap();
    let c = completions(&drain(&mut e));
    assert_eq!((c[0].send, c[0].status), (s2, SendStatus::Canceled));
    assert_eq!(e.agent_backlog(a), 1);
    // Modify of a queued request sets the timeout it will use.
    e.modify(s3, 50 * MS, t0).unwrap();
    reply(&mut e, &sent, t1);
    run(&mut e, t0 + 10 * MS);
    assert_eq!(seen(&sent), [t1, t3], "the canceled one was skipped");
    assert!(!seen(&sent).contains(&t2));
    run(&mut e, t0 + 59 * MS);
    assert_eq!(completions(&drain(&mut e)).len(), 1, "s1 only");
    run(&mut e, t0 + 60 * MS);
    let c = completions(&drain(&mut e));
    assert_eq!((c[0].send, c[0].status), (s3, SendStatus::Timeout));

    // Deregistration flushes the backlog at once, nothing more goes out.
    let b = agent(&mut e, "b");
    let ids: Vec<SendId> = (0..5)
        .map(|_| e.send(b, req(Duration::from_secs(1), 0), t0).unwrap())
        .collect();
    run(&mut e, t0 + 70 * MS);
    let before = sent.lock().unwrap().len();
    e.deregister(b).unwrap();
    run(&mut e, t0 + 70 * MS);
    let c = completions(&drain(&mut e));
    assert_eq!(c.len(), 5);
    assert!(c.iter().all(|c| c.status == SendStatus::Flushed));
    let mut got: Vec<SendId> = c.iter().map(|c| c.send).collect();
    got.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(sent.lock().unwrap().len(), before);
    assert_eq!(e.agent_state(b), None);
    assert_eq!((e.outstanding(), e.unanswered()), (0, 0));
}

#[test]
fn a_response_naming_a_backlogged_tid_does_not_answer_it() {
    let (mut e, sent, a, t0) = one_unanswered_per_agent();
    let [s1, s2] = [(); 2].map(|()| e.send(a, req(SEC, 0), t0).unwrap());
    run(&mut e, t0);
    let mut stray = perf_get();
    mad_testkit::header::edit(&mut stray, |h| h.tid = e.send_tid(s2).unwrap());
    e.handle_recv(Instant::now(), answer(Qp::Qp1, &stray, Address::gsi(FAR)))
        .unwrap();
    run(&mut e, t0);
    assert!(drain(&mut e).is_empty());
    assert_eq!(e.stats().unmatched_responses, 1);
    assert_eq!(e.agent_backlog(a), 1, "still waiting for its turn");
    let (t1, t2) = (e.send_tid(s1).unwrap(), e.send_tid(s2).unwrap());
    reply(&mut e, &sent, t1);
    run(&mut e, t0);
    reply(&mut e, &sent, t2);
    run(&mut e, t0);
    let c = completions(&drain(&mut e));
    assert_eq!(
        c.iter().map(|c| (c.send, c.status)).collect::<Vec<_>>(),
        [(s1, SendStatus::Success), (s2, SendStatus::Success)]
    );
}

/// Random sends, answers, cancels, deregistrations and clock steps over
/// three agents: the far side never has more unanswered requests than the
/// limits allow (counted from what it saw and what completed, not from
/// the engine's counters), and every send completes exactly once.
#[test]
fn under_random_load_the_wire_never_exceeds_the_limits_and_every_send_completes_once() {
    for seed in 1..=20u64 {
        let (agent_cap, port_cap) = (3usize, 5usize);
        let (mut e, sent) = capped(FlowLimit::Max(agent_cap), FlowLimit::Max(port_cap));
        let mut rng = mad_testkit::Rng::new(0x9E37_79B9_7F4A_7C15 ^ seed);
        let mut agents: Vec<AgentId> = (0..3).map(|i| agent(&mut e, &format!("a{i}"))).collect();
        let mut owner: HashMap<u64, AgentId> = HashMap::new();
        let mut live: Vec<SendId> = Vec::new();
        let mut done: HashMap<SendId, u32> = HashMap::new();
        let mut finished_tids: HashSet<u64> = HashSet::new();
        let mut answered: HashSet<u64> = HashSet::new();
        let mut wire: HashSet<u64> = HashSet::new();
        let mut looked = 0;
        let mut accepted = 0u64;
        let t0 = Instant::now();
        let mut now = t0;
        for _step in 0..3000 {
            match rng.below(10) {
                0..=3 => {
                    let a = agents[rng.below(agents.len() as u64) as usize];
                    let r = req(
                        Duration::from_millis(5 + rng.below(40)),
                        rng.below(3) as u32,
                    );
                    if let Ok(s) = e.send(a, r, now) {
                        owner.insert(e.send_tid(s).unwrap(), a);
                        live.push(s);
                        accepted += 1;
                    }
                }
                4..=6 => {
                    // Answer a random request the far side saw.
                    let n = sent.lock().unwrap().len();
                    if n > 0 {
                        let tid = tid_of(&sent.lock().unwrap()[rng.below(n as u64) as usize].1);
                        reply(&mut e, &sent, tid);
                        answered.insert(tid);
                    }
                }
                7 => {
                    if !live.is_empty() {
                        let s = live[rng.below(live.len() as u64) as usize];
                        let _ = e.cancel(s);
                    }
                }
                8 => now += Duration::from_millis(rng.below(20)),
                _ => {
                    if rng.below(40) == 0 {
                        let i = rng.below(agents.len() as u64) as usize;
                        e.deregister(agents[i]).unwrap();
                        agents[i] = agent(&mut e, "again");
                    }
                }
            }
            run(&mut e, now);
            for c in completions(&drain(&mut e)) {
                *done.entry(c.send).or_default() += 1;
                finished_tids.insert(c.tid);
                live.retain(|s| *s != c.send);
            }
            // Unanswered on the wire, as the far side sees it: posted,
            // not answered (by a response that matched) and not finished.
            let n = sent.lock().unwrap().len();
            for i in looked..n {
                let tid = tid_of(&sent.lock().unwrap()[i].1);
                if !finished_tids.contains(&tid) && !answered.contains(&tid) {
                    wire.insert(tid);
                }
            }
            looked = n;
            wire.retain(|t| !finished_tids.contains(t) && !answered.contains(t));
            let total = wire.len();
            let mut per_agent: HashMap<AgentId, usize> = HashMap::new();
            for tid in &wire {
                *per_agent.entry(owner[tid]).or_default() += 1;
            }
            assert!(
                total <= port_cap,
                "seed {seed}: {total} unanswered on the wire"
            );
            assert!(
                per_agent.values().all(|n| *n <= agent_cap),
                "seed {seed}: {per_agent:?}"
            );
        }
        // Let everything end.
        for a in agents {
            e.deregister(a).unwrap();
        }
        run(&mut e, now + Duration::from_secs(10));
        for c in completions(&drain(&mut e)) {
            *done.entry(c.send).or_default() += 1;
        }
        assert_eq!(e.outstanding(), 0, "seed {seed}");
        assert_eq!(e.unanswered(), 0, "seed {seed}");
        assert_eq!(done.len() as u64, accepted, "seed {seed}");
        assert!(
            done.values().all(|n| *n == 1),
            "seed {seed}: completed twice"
        );
        assert!(
            e.stats().backlogged > 0,
            "seed {seed}: the limits never bound"
        );
    }
}

/// Seed 002's device-fatal row at the engine: a send awaiting its answer
/// and one waiting in the backlog both end at once as `Flushed` (not at
/// the next resend, seconds later), each exactly once; a send after that
/// is refused at once; nothing completes again later.
#[test]
fn a_device_fatal_error_ends_every_pending_send_at_once_exactly_once() {
    let (lb, sent) = recording(5, 4096);
    let cfg = EngineConfig {
        max_unanswered_per_agent: FlowLimit::Max(1),
        max_unanswered_per_port: FlowLimit::Unlimited,
        ..EngineConfig::default()
    };
    let mut e = Stack::new(lb, cfg);
    let a = e.register(AgentSpec::send_only("a", Qp::Qp1)).unwrap();
    let t0 = Instant::now();
    let on_wire = e.send(a, req(10 * SEC, 5), t0).unwrap();
    let backlogged = e.send(a, req(10 * SEC, 5), t0).unwrap();
    e.poll(t0);
    assert_eq!(sent.lock().unwrap().len(), 1, "one on the wire");
    assert_eq!(e.agent_backlog(a), 1, "one in the backlog");
    assert!(drain(&mut e).is_empty(), "nothing completed yet");

    e.transport_mut()
        .push_event(mad_core::transport::AsyncEvent::DeviceFatal);
    e.poll(t0 + MS);
    let evs = drain(&mut e);
    assert!(
        evs.iter()
            .any(|(x, ev)| *x == a && *ev == mad_agents::AgentEvent::DeviceFatal),
        "the agent hears of it: {evs:?}"
    );
    let done = completions(&evs);
    let mut ids: Vec<_> = done.iter().map(|c| c.send).collect();
    ids.sort_by_key(|s| s.as_u64());
    let mut want = vec![on_wire, backlogged];
    want.sort_by_key(|s| s.as_u64());
    assert_eq!(ids, want, "both ended at once, once each");
    assert!(done.iter().all(|c| c.status == SendStatus::Flushed));
    assert_eq!(e.stats().ended_by_device_fatal, 2);
    assert_eq!(e.outstanding(), 0);
    assert_eq!(
        sent.lock().unwrap().len(),
        1,
        "the backlogged one never went out"
    );

    assert!(
        matches!(e.send(a, req(SEC, 0), t0 + MS), Err(SendError::Port(_))),
        "a post on the dead port fails at once"
    );
    e.poll(t0 + 60 * SEC);
    assert!(
        completions(&drain(&mut e)).is_empty(),
        "nothing completes twice"
    );
    assert_eq!(e.poll_timeout(), None, "no timer left");
}
