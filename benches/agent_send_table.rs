//! The agent layer's per-send bookkeeping with N other sends outstanding
//! (N = 1, 1,000, 100,000): the send table, the TID match table and the
//! per-agent timeout list. The engine runs over the in-memory `Loopback`
//! transport; its far side answers only requests marked with attribute
//! modifier 1, so the N prefilled sends (unmarked, response timeouts of a
//! year, spread by a fixed-seed generator) stay outstanding throughout.
//! Virtual clock; one element = one operation below.
//!
//! - `send_answered`: send a marked Get, poll (work completion, response
//!   dispatched by TID among N+1 waiting), take the SendDone: send-table
//!   insert and complete, TID dispatch, timeout-list insert and remove.
//! - `send_cancel`: send an unmarked Get, poll (its response timer enters
//!   the timeout list), cancel it, take the SendDone.
//! - `timeout_expire`: send an unmarked Get with a 1 ms timeout, poll,
//!   advance the clock 2 ms, poll (the expired entry is found first in the
//!   list and the send fails with Timeout), take the SendDone.
//! - `stray_response`: a response whose TID nobody waits for arrives and is
//!   dropped after the TID lookup (TID dispatch alone).
//!
//! The target: the cost per operation at 100,000 outstanding is
//! within 1.5x of the cost at 1.
// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]
use criterion::measurement::WallTime;
use criterion::{black_box, BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use mad_agents::{AgentEvent, AgentId, AgentSpec, EngineConfig, SendRequest, SendStatus, Stack};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received};
use mad_core::wire::{AttributeId, Mad};
use mad_testkit::MadBuilder;
use std::cell::Cell;
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;

const OUTSTANDING: &[usize] = &[1, 1_000, 100_000];
const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// A PerfMgt Get(PortCounters); `answered` marks it for the far side.
fn perf_get(answered: bool) -> [u8; 256] {
    MadBuilder::perf_get(0, AttributeId::PM_PORT_COUNTERS)
        .attr_mod(u32::from(answered))
        .build()
}

fn responder_port() -> Loopback {
    Loopback::new(Loopback::attrs("lb0", 1, 5), 4096).with_responder(Box::new(
        |qp, mad: &[u8], dest: &Address| {
            let m = Mad::new_unchecked(mad);
            if m.is_response() || m.attr_mod() != 1 {
                return Vec::new();
            }
            let mut r = mad.to_vec();
            mad_testkit::header::edit(&mut r, |h| h.response = true);
            vec![mad_testkit::far::from_dest(qp, dest, qp.qpn(), r)]
        },
    ))
}

struct Setup {
    e: Stack<Loopback>,
    a: AgentId,
    now: Cell<Instant>,
}

/// An engine with `n` unanswered sends outstanding.
fn setup(n: usize) -> Setup {
    let mut e = Stack::new(responder_port(), EngineConfig::default());
    let a = e
        .register(AgentSpec::send_only("bench", Qp::Qp1))
        .expect("a send-only agent registers");
    let now = Instant::now();
    let mut rng = support::Rng::new(0x7461_626c + n as u64);
    for i in 0..n {
        let spread = Duration::from_millis(rng.next_u64() % 1_000_000_000);
        let req =
            SendRequest::new(perf_get(false), Address::gsi(7)).expect_response(YEAR + spread, 0);
        e.send(a, req, now).expect("prefill send accepted");
        if i % 1024 == 1023 {
            e.poll(now);
        }
    }
    while e.poll(now) {}
    assert_eq!(e.outstanding(), n, "the prefilled sends stay outstanding");
    Setup {
        e,
        a,
        now: Cell::new(now),
    }
}

fn take_done(e: &mut Stack<Loopback>) -> Option<SendStatus> {
    while let Some((_, ev)) = e.poll_event() {
        if let AgentEvent::SendDone(c) = ev {
            return Some(c.status);
        }
    }
    None
}

fn send_answered(s: &mut Setup, req: &SendRequest) -> Option<SendStatus> {
    let now = s.now.get();
    s.e.send(s.a, req.clone(), now).ok()?;
    s.e.poll(now);
    take_done(&mut s.e)
}

fn send_cancel(s: &mut Setup, req: &SendRequest) -> Option<SendStatus> {
    let now = s.now.get();
    let id = s.e.send(s.a, req.clone(), now).ok()?;
    s.e.poll(now);
    s.e.cancel(id).ok()?;
    take_done(&mut s.e)
}

fn timeout_expire(s: &mut Setup, req: &SendRequest) -> Option<SendStatus> {
    let now = s.now.get();
    s.e.send(s.a, req.clone(), now).ok()?;
    s.e.poll(now);
    let later = now + Duration::from_millis(2);
    s.now.set(later);
    s.e.poll(later);
    take_done(&mut s.e)
}

fn stray_response(s: &mut Setup, resp: &Received) -> Option<SendStatus> {
    s.e.transport_mut().push_recv(resp.clone());
    s.e.poll(s.now.get());
    None
}

fn bench_op<R>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    n: usize,
    input: &R,
    want: Option<SendStatus>,
    op: fn(&mut Setup, &R) -> Option<SendStatus>,
) {
    let mut s = setup(n);
    assert_eq!(op(&mut s, input), want, "{name} at {n} outstanding");
    g.bench_function(BenchmarkId::new(name, n), |b| {
        b.iter(|| op(&mut s, black_box(input)));
    });
    assert_eq!(s.e.outstanding(), n, "{name} leaves the prefill alone");
}

fn send_table(c: &mut Criterion) {
    let answered = SendRequest::new(perf_get(true), Address::gsi(7)).expect_response(YEAR, 0);
    let cancel = SendRequest::new(perf_get(false), Address::gsi(7)).expect_response(YEAR, 0);
    let expire = SendRequest::new(perf_get(false), Address::gsi(7))
        .expect_response(Duration::from_millis(1), 0);
    let mut stray = perf_get(false);
    stray[3] |= 0x80;
    stray[8..16].copy_from_slice(&0x0000_7777_dead_beefu64.to_be_bytes());
    let stray = Received {
        qp: Qp::Qp1,
        src: Address::gsi(7),
        mad: stray.into(),
    };
    let mut g = c.benchmark_group("agent_send_table");
    g.throughput(Throughput::Elements(1));
    for &n in OUTSTANDING {
        bench_op(
            &mut g,
            "send_answered",
            n,
            &answered,
            Some(SendStatus::Success),
            send_answered,
        );
        bench_op(
            &mut g,
            "send_cancel",
            n,
            &cancel,
            Some(SendStatus::Canceled),
            send_cancel,
        );
        bench_op(
            &mut g,
            "timeout_expire",
            n,
            &expire,
            Some(SendStatus::Timeout),
            timeout_expire,
        );
        bench_op(&mut g, "stray_response", n, &stray, None, stray_response);
    }
    g.finish();
}

support::bench_main!(send_table);
