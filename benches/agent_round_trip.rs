//! Full agent round trips in process: SMP Get NodeInfo (directed route)
//! from an `Engine` (the agent layer: TID allocation, send table, response
//! timer, dispatch by TID, completion) over mad-sim's built-in fabric
//! (`SimPort`, the SMA answering), driven in poll mode on one thread with a
//! fixed clock. W requests are sent, then the engine is polled until all W
//! completed: one element = one request answered and completed.
//!
//! The fabric is ibsim's example `net` (two switches, two HCAs); the
//! engine is attached where ibsim attaches a client (Switch1 port 0) and
//! asks Switch1 itself (route "0") and Hca1 (route "0,1") in turn.
// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]
use criterion::{black_box, BenchmarkId, Criterion, Throughput};
use mad_agents::{AgentEvent, AgentId, AgentSpec, EngineConfig, SendRequest, SendStatus, Stack};
use mad_core::transport::{Address, Qp, PERMISSIVE_LID};
use mad_core::wire::smp::DrPath;
use mad_core::wire::{AttributeId, Method};
use mad_sim::{Fabric, SimPort, Topology};
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;

pub(crate) fn setup() -> (Stack<SimPort>, AgentId, Vec<SendRequest>) {
    let topo = Topology::parse_str(mad_testkit::fabric::IBSIM_EXAMPLE_NET)
        .expect("ibsim's example topology parses");
    let fabric = Fabric::new(&topo);
    let port = fabric.attach_default().expect("Switch1 port 0");
    let mut e = Stack::new(port, EngineConfig::default());
    let a = e
        .register(AgentSpec::send_only("bench", Qp::Qp0))
        .expect("a send-only agent registers");
    let reqs = [DrPath::local(), DrPath::from_hops(&[1]).expect("one hop")]
        .iter()
        .map(|p| {
            let mad = p.build_request(Method::GET, AttributeId::NODE_INFO, 0, 0, 0);
            SendRequest::new(mad, Address::smi(PERMISSIVE_LID))
                .expect_response(Duration::from_secs(1), 0)
        })
        .collect();
    (e, a, reqs)
}

/// Sends `w` requests and polls until all completed; returns the number
/// that succeeded.
pub(crate) fn round_trips(
    e: &mut Stack<SimPort>,
    a: AgentId,
    reqs: &[SendRequest],
    w: usize,
    now: Instant,
) -> usize {
    for i in 0..w {
        if e.send(a, reqs[i % reqs.len()].clone(), now).is_err() {
            return 0;
        }
    }
    let mut done = 0;
    let mut ok = 0;
    while done < w {
        let progressed = e.poll(now);
        while let Some((_, ev)) = e.poll_event() {
            if let AgentEvent::SendDone(c) = ev {
                done += 1;
                if c.status == SendStatus::Success && c.response.is_some() {
                    ok += 1;
                }
            }
        }
        if !progressed && done < w {
            break;
        }
    }
    ok
}

fn agent_round_trip(c: &mut Criterion) {
    let now = Instant::now();
    let mut g = c.benchmark_group("agent_round_trip_sim");
    for w in [1usize, 16, 256] {
        let (mut e, a, reqs) = setup();
        assert_eq!(
            round_trips(&mut e, a, &reqs, w, now),
            w,
            "every NodeInfo query is answered"
        );
        g.throughput(Throughput::Elements(w as u64));
        g.bench_function(BenchmarkId::new("smp_get_nodeinfo", format!("W{w}")), |b| {
            b.iter(|| round_trips(&mut e, a, black_box(&reqs), w, now));
        });
    }
    g.finish();
}

support::bench_main!(agent_round_trip);
