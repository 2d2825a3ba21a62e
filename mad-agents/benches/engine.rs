//! Engine hot paths with many sends outstanding (issue 4: "100,000
//! outstanding sends on one agent: each operation stays fast"). A
//! benchmark, not a timed test: it reports the cost of one send, one
//! cancel, one matched response and one poll while 100,000 sends of the
//! same agent wait for their responses, and the cost of deregistering
//! such an agent.
#![allow(missing_docs, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use mad_agents::{AgentEvent, AgentId, AgentSpec, Engine, EngineConfig, SendRequest};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received};
use mad_core::wire::{Method, MgmtClass};

const OUTSTANDING: usize = 100_000;

fn perf_get() -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[..4].copy_from_slice(&[1, MgmtClass::PERF_MGT.0, 1, Method::GET.0]);
    m
}

fn req() -> SendRequest {
    SendRequest::new(perf_get(), Address::gsi(7)).expect_response(Duration::from_secs(3600), 0)
}

/// An engine whose one agent has `n` sends waiting for responses.
fn loaded(n: usize) -> (Engine<Loopback>, AgentId, Instant) {
    let mut e = Engine::new(
        Loopback::new(Loopback::attrs("bench", 1, 5), 256),
        EngineConfig::default(),
    );
    let a = e.register(AgentSpec::send_only("bench", Qp::Qp1)).unwrap();
    let t0 = Instant::now();
    for i in 0..n {
        e.send(a, req(), t0).unwrap();
        if i % 128 == 127 {
            e.poll(t0);
        }
    }
    e.poll(t0);
    (e, a, t0)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("agents");
    g.throughput(Throughput::Elements(1));
    let (mut e, a, t0) = loaded(OUTSTANDING);
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
                resp[3] = 0x81;
                resp[8..16].copy_from_slice(&e.send_tid(s).unwrap().to_be_bytes());
                e.port_mut().transport_mut().push_recv(Received {
                    qp: Qp::Qp1,
                    src: Address::gsi(7),
                    mad: resp,
                });
                e.poll(t0);
                while let Some((_, ev)) = e.poll_event() {
                    assert!(matches!(ev, AgentEvent::SendDone(_)));
                }
            });
        },
    );
    drop(e);
    g.sample_size(10);
    g.throughput(Throughput::Elements(OUTSTANDING as u64));
    g.bench_function("deregister an agent with 100k outstanding", |b| {
        b.iter_batched(
            || loaded(OUTSTANDING),
            |(mut e, a, t0)| {
                e.deregister(a).unwrap();
                while e.agent_state(a).is_some() {
                    e.poll(t0);
                    while e.poll_event().is_some() {}
                }
            },
            BatchSize::PerIteration,
        );
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
