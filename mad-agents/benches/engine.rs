//! Engine hot paths with many sends outstanding (issue 4: "100,000
//! outstanding sends on one agent: each operation stays fast"). A
//! benchmark, not a timed test: it reports the cost of one send, one
//! cancel, one matched response and one poll while 100,000 sends of the
//! same agent wait for their responses, and the cost of deregistering
//! such an agent — once with every send on the wire (no flow-control
//! limit) and once with the default port limit of 256, so that 99,744 of
//! them wait in the agent's backlog.
#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use mad_agents::{AgentEvent, AgentId, AgentSpec, EngineConfig, FlowLimit, SendRequest, Stack};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received};
use mad_core::wire::{Method, MgmtClass};

const OUTSTANDING: usize = 100_000;

fn perf_get() -> Vec<u8> {
    let mut m = vec![0u8; 256];
    mad_testkit::header::edit(&mut m, |h| {
        h.base_version = 1;
        h.mgmt_class = MgmtClass::PERF_MGT;
        h.class_version = 1;
        h.method = Method::GET;
    });
    m
}

fn req() -> SendRequest {
    SendRequest::new(perf_get(), Address::gsi(7)).expect_response(Duration::from_secs(3600), 0)
}

type Posted = Arc<Mutex<VecDeque<Vec<u8>>>>;

/// An engine whose one agent has `n` sends waiting for responses, with a
/// port limit of `port` unanswered requests; the far side keeps what it
/// is sent.
fn loaded(n: usize, port: FlowLimit) -> (Stack<Loopback>, AgentId, Instant, Posted) {
    let posted: Posted = Arc::default();
    let p2 = posted.clone();
    let lb = Loopback::new(Loopback::attrs("bench", 1, 5), 256).with_responder(Box::new(
        move |_qp, mad: &[u8], _dest: &Address| {
            p2.lock().unwrap().push_back(mad.to_vec());
            Vec::new()
        },
    ));
    let cfg = EngineConfig {
        max_unanswered_per_port: port,
        ..EngineConfig::default()
    };
    let mut e = Stack::new(lb, cfg);
    let a = e.register(AgentSpec::send_only("bench", Qp::Qp1)).unwrap();
    let t0 = Instant::now();
    for i in 0..n {
        e.send(a, req(), t0).unwrap();
        if i % 128 == 127 {
            e.poll(t0);
        }
    }
    e.poll(t0);
    e.poll(t0);
    (e, a, t0, posted)
}

fn respond(e: &mut Stack<Loopback>, mad: &[u8]) {
    let mut resp = mad.to_vec();
    mad_testkit::header::edit(&mut resp, |h| {
        h.method = mad_core::wire::Method::GET;
        h.response = true;
    });
    e.transport_mut().push_recv(Received {
        qp: Qp::Qp1,
        src: Address::gsi(7),
        mad: resp.into(),
    });
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("agents");
    g.throughput(Throughput::Elements(1));
    let (mut e, a, t0, _) = loaded(OUTSTANDING, FlowLimit::Unlimited);
    g.bench_function("send, cancel, complete with 100k outstanding", |b| {
        b.iter(|| {
            let s = e.send(a, req(), t0).unwrap();
            e.cancel(s).unwrap();
            e.poll(t0);
            while e.poll_event().is_some() {}
        });
    });
    g.bench_function("poll with 100k outstanding", |b| b.iter(|| e.poll(t0)));
    g.bench_function(
        "send, match response, complete with 100k outstanding",
        |b| {
            b.iter(|| {
                let s = e.send(a, req(), t0).unwrap();
                e.poll(t0);
                let mut resp = perf_get();
                mad_testkit::header::edit(&mut resp, |h| h.tid = e.send_tid(s).unwrap());
                respond(&mut e, &resp);
                e.poll(t0);
                while let Some((_, ev)) = e.poll_event() {
                    assert!(matches!(ev, AgentEvent::SendDone(_)));
                }
            });
        },
    );
    drop(e);

    // The default port limit: 256 on the wire, the rest in the backlog.
    let (mut e, a, t0, posted) = loaded(OUTSTANDING, FlowLimit::Max(256));
    assert_eq!(e.unanswered(), 256);
    assert_eq!(e.agent_backlog(a), OUTSTANDING - 256);
    g.bench_function("send to the backlog, cancel there, with 100k queued", |b| {
        b.iter(|| {
            let s = e.send(a, req(), t0).unwrap();
            e.cancel(s).unwrap();
            e.poll(t0);
            while e.poll_event().is_some() {}
        });
    });
    g.bench_function(
        "answer one, post the next from the backlog, queue one, with 100k queued",
        |b| {
            b.iter(|| {
                let mad = posted.lock().unwrap().pop_front().unwrap();
                respond(&mut e, &mad);
                e.poll(t0);
                e.poll(t0);
                let mut n = 0;
                while let Some((_, ev)) = e.poll_event() {
                    assert!(matches!(ev, AgentEvent::SendDone(_)));
                    n += 1;
                }
                assert_eq!(n, 1);
                e.send(a, req(), t0).unwrap();
            });
        },
    );
    drop(e);

    g.sample_size(10);
    g.throughput(Throughput::Elements(OUTSTANDING as u64));
    for (name, port) in [
        (
            "deregister an agent with 100k outstanding",
            FlowLimit::Unlimited,
        ),
        ("deregister an agent with 100k queued", FlowLimit::Max(256)),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || loaded(OUTSTANDING, port),
                |(mut e, a, t0, _)| {
                    e.deregister(a).unwrap();
                    while e.agent_state(a).is_some() {
                        e.poll(t0);
                        while e.poll_event().is_some() {}
                    }
                },
                BatchSize::PerIteration,
            );
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
