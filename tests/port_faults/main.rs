//! The per-port layer under injected faults (issue 3, "Done means").
//!
//! Every test drives a port (`mad_testkit::PortPair`) over a seeded `FaultInjector<Loopback>` with a
//! virtual clock, streams at least 1,000 sends through it, and checks with a
//! ledger that every accepted send completed to its owner exactly once.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use mad_core::port::{ClientId, PortConfig, PortError, PortEvent, SendToken};
use mad_core::transport::fault::{FaultConfig, FaultInjector, Trigger};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, AsyncEvent, Qp, QpState, Received, Unsendable, WcStatus};
use mad_core::wire::{AttributeId, Method, MgmtClass};
use mad_testkit::PortPair;

mod sharing;

type Fi = FaultInjector<Loopback>;

/// A virtual clock: time only moves when the test says so.
struct Clock {
    base: Instant,
    now: Duration,
}

impl Clock {
    fn new() -> Self {
        Self {
            base: Instant::now(),
            now: Duration::ZERO,
        }
    }
    fn now(&self) -> Instant {
        self.base + self.now
    }
    fn advance(&mut self, d: Duration) -> Instant {
        self.now += d;
        self.now()
    }
}

fn mad(class: u8, tid: u64) -> Vec<u8> {
    mad_testkit::MadBuilder::new(MgmtClass(class), 2, Method::GET, AttributeId(0))
        .tid(tid)
        .to_vec()
}

fn gsi_mad(tid: u64) -> Vec<u8> {
    mad(0x03, tid)
}

fn port(depth: usize, seed: u64, cfg: FaultConfig) -> PortPair<Fi> {
    let lo = Loopback::new(Loopback::attrs("lo", 1, 5), depth);
    PortPair::new(
        FaultInjector::with_config(lo, seed, cfg),
        PortConfig::default(),
    )
}

/// Every accepted send and every completion, per token.
#[derive(Default)]
struct Ledger {
    /// Owner and cookie of each accepted send.
    owner: BTreeMap<SendToken, (ClientId, u64)>,
    done: HashMap<SendToken, Vec<WcStatus>>,
    /// Non-completion events per client, in order.
    events: HashMap<ClientId, Vec<PortEvent>>,
    /// Completions in the order clients saw them.
    order: Vec<(SendToken, WcStatus)>,
}

impl Ledger {
    fn post(
        &mut self,
        p: &mut PortPair<Fi>,
        c: ClientId,
        tid: u64,
    ) -> Result<SendToken, PortError> {
        let t = p.post(
            c,
            Unsendable::check_post(&gsi_mad(tid), Qp::Qp1).unwrap(),
            &Address::gsi(9),
            tid,
        )?;
        assert!(
            self.owner.insert(t, (c, tid)).is_none(),
            "token {t:?} handed out twice"
        );
        Ok(t)
    }

    /// Takes every pending event of every client.
    fn collect(&mut self, p: &mut PortPair<Fi>) {
        for c in p.clients() {
            while let Some(ev) = p.poll_client(c) {
                match ev {
                    PortEvent::SendComplete {
                        token,
                        status,
                        cookie,
                        ..
                    } => {
                        assert_eq!(self.owner.get(&token), Some(&(c, cookie)), "to its owner");
                        self.done.entry(token).or_default().push(status);
                        self.order.push((token, status));
                    }
                    other => self.events.entry(c).or_default().push(other),
                }
            }
        }
    }

    /// No send completed twice, none never.
    fn assert_exactly_once(&self) {
        for t in self.owner.keys() {
            match self.done.get(t).map(Vec::as_slice) {
                Some([_]) => {}
                None => panic!("send {t:?} never completed"),
                Some(v) => panic!("send {t:?} completed {} times: {v:?}", v.len()),
            }
        }
        assert_eq!(
            self.done.len(),
            self.owner.len(),
            "completion of an unknown send"
        );
    }

    fn status(&self, t: SendToken) -> WcStatus {
        self.done[&t][0]
    }

    fn with_status(&self, s: WcStatus) -> Vec<SendToken> {
        self.owner
            .keys()
            .copied()
            .filter(|t| self.done.get(t).is_some_and(|v| v[0] == s))
            .collect()
    }
}

/// Polls until nothing is posted or queued on QP1 (bounded).
fn settle(p: &mut PortPair<Fi>, l: &mut Ledger, clock: &mut Clock) {
    for _ in 0..10_000 {
        let now = clock.advance(Duration::from_millis(1));
        p.poll(now);
        l.collect(p);
        if p.posted(Qp::Qp1) == 0 && p.queued(Qp::Qp1) == 0 {
            return;
        }
    }
    panic!("port did not settle: {p:?}");
}

/// [`port`]`(depth, seed, cfg)` with one client that has streamed `n`
/// sends in bursts of `burst`: the port, the client, the ledger and the
/// clock.
fn streamed(
    depth: usize,
    seed: u64,
    cfg: FaultConfig,
    n: u64,
    burst: u64,
) -> (PortPair<Fi>, ClientId, Ledger, Clock) {
    let mut p = port(depth, seed, cfg);
    let c = p.register();
    let (mut l, mut clock) = (Ledger::default(), Clock::new());
    stream(&mut p, &mut l, &mut clock, c, n, burst);
    (p, c, l, clock)
}

/// Streams `n` sends of `c` in bursts of `burst`, polling between bursts.
fn stream(
    p: &mut PortPair<Fi>,
    l: &mut Ledger,
    clock: &mut Clock,
    c: ClientId,
    n: u64,
    burst: u64,
) {
    for i in 0..n {
        l.post(p, c, i).unwrap();
        if i % burst == burst - 1 {
            p.poll(clock.advance(Duration::from_millis(1)));
            l.collect(p);
        }
    }
    settle(p, l, clock);
}

fn assert_rts(p: &PortPair<Fi>) {
    assert_eq!(p.qp_state(Qp::Qp0), QpState::Rts);
    assert_eq!(p.qp_state(Qp::Qp1), QpState::Rts);
}

#[test]
fn wr_error_mid_stream_one_error_then_flushes_then_recovery() {
    use WcStatus::{FatalErr, GeneralErr, LocQpOpErr};
    for (status, state) in [
        (LocQpOpErr, QpState::Err),
        (GeneralErr, QpState::Err),
        (FatalErr, QpState::Err),
        (GeneralErr, QpState::Sqe),
    ] {
        let cfg = FaultConfig {
            wr_error: Trigger::Nth(500),
            wr_error_status: status,
            wr_error_state: state,
            ..FaultConfig::default()
        };
        let (p, _, l, _) = streamed(16, 1, cfg, 1200, 40);
        l.assert_exactly_once();

        let errors = l.with_status(status);
        assert_eq!(errors.len(), 1, "{status}: exactly one error completion");
        let bad = errors[0];
        let flushed = l.with_status(WcStatus::WrFlushErr);
        let fi = p.driver.transport().stats();
        assert!(
            !flushed.is_empty(),
            "{status}: sends were posted behind the failed one"
        );
        assert_eq!(
            flushed.len() as u64,
            fi.flushed,
            "{status}: as many as the device flushed"
        );
        // The flushed ones are exactly those posted right behind it.
        let want: Vec<SendToken> = (1..=flushed.len() as u64)
            .map(|k| SendToken(bad.0 + k))
            .collect();
        assert_eq!(flushed, want, "{status}");
        let ok = l.with_status(WcStatus::Success);
        assert_eq!(
            ok.len(),
            1200 - 1 - flushed.len(),
            "{status}: every other send succeeds"
        );
        assert_eq!(p.driver.transport().inner().stats().sent, ok.len() as u64);
        assert_rts(&p);
        assert_eq!(p.stats().qp_recoveries, 1);
        let resets = if state == QpState::Err { 1 } else { 0 };
        assert_eq!(
            fi.qp_resets, resets,
            "ERR goes through RESET, SQE straight to RTS"
        );
    }
}

#[test]
fn random_wr_errors_each_flush_exactly_what_was_behind() {
    let cfg = FaultConfig {
        wr_error: Trigger::Probability(0.01),
        ..FaultConfig::default()
    };
    let (p, _, l, _) = streamed(16, 0xfeed, cfg, 3000, 37);
    l.assert_exactly_once();
    let fi = p.driver.transport().stats();
    let errors = l.with_status(WcStatus::GeneralErr);
    assert!(
        errors.len() >= 5,
        "the seed gives several errors, got {}",
        errors.len()
    );
    assert_eq!(errors.len() as u64, fi.wr_errors);
    assert_eq!(l.with_status(WcStatus::WrFlushErr).len() as u64, fi.flushed);
    // Every flushed send directly follows an error or another flushed send.
    for (t, s) in l.owner.keys().map(|&t| (t, l.status(t))) {
        if s == WcStatus::WrFlushErr {
            let prev = l.status(SendToken(t.0 - 1));
            assert!(prev != WcStatus::Success, "{t:?} flushed after a success");
        }
    }
    assert_eq!(p.stats().qp_recoveries, errors.len() as u64);
    assert_rts(&p);
}

#[test]
fn cq_overflow_with_hundreds_posted_flushes_exactly_those() {
    // Warm up: a stream that completes normally.
    let (mut p, c, mut l, mut clock) = streamed(512, 3, FaultConfig::default(), 1000, 100);
    assert_eq!(l.with_status(WcStatus::Success).len(), 1000);

    // The device stops completing; 1,000 sends: 512 posted, 488 queued.
    p.driver.transport_mut().inner_mut().set_stalled(true);
    let tokens: Vec<SendToken> = (0..1000).map(|i| l.post(&mut p, c, i).unwrap()).collect();
    p.poll(clock.advance(Duration::from_millis(1)));
    assert_eq!((p.posted(Qp::Qp1), p.queued(Qp::Qp1)), (512, 488));

    p.driver.transport_mut().inject_cq_error();
    p.driver.transport_mut().inner_mut().set_stalled(false);
    p.poll(clock.advance(Duration::from_millis(1)));
    l.collect(&mut p);
    let flushed = l.with_status(WcStatus::WrFlushErr);
    assert_eq!(
        flushed,
        tokens[..512].to_vec(),
        "exactly the posted ones flush"
    );
    assert_eq!(p.stats().recreates, 1);
    assert_eq!(p.driver.transport().stats().recreates, 1);

    settle(&mut p, &mut l, &mut clock);
    assert!(tokens[512..]
        .iter()
        .all(|&t| l.status(t) == WcStatus::Success));
    // New sends succeed.
    let before = l.with_status(WcStatus::Success).len();
    stream(&mut p, &mut l, &mut clock, c, 1000, 64);
    assert_eq!(l.with_status(WcStatus::Success).len(), before + 1000);
    l.assert_exactly_once();
    assert_rts(&p);
}

#[test]
fn device_fatal_fails_everything_in_flight_and_every_later_post() {
    let cfg = FaultConfig {
        device_fatal: Trigger::Nth(700),
        ..FaultConfig::default()
    };
    let mut p = port(64, 4, cfg);
    let (a, b) = (p.register(), p.register());
    let (mut l, mut clock) = (Ledger::default(), Clock::new());
    let mut refused = 0;
    for i in 0..1500u64 {
        let who = if i % 2 == 0 { a } else { b };
        // The port learns of the death at its next poll (event or a failing
        // call); from then on every post fails at once.
        let known_dead = p.is_dead();
        match l.post(&mut p, who, i) {
            Ok(_) => assert!(!known_dead, "a post was accepted by a dead port"),
            Err(PortError::Dead { ca, port }) => {
                assert_eq!((ca.as_str(), port), ("lo", 1));
                refused += 1;
            }
            Err(e) => panic!("unexpected {e}"),
        }
        if i % 100 == 99 {
            p.poll(clock.advance(Duration::from_millis(1)));
            l.collect(&mut p);
            if p.is_dead() {
                assert_eq!((p.posted(Qp::Qp1), p.queued(Qp::Qp1)), (0, 0));
            }
        }
    }
    l.collect(&mut p);
    assert!(p.is_dead());
    assert_eq!(
        p.driver.transport().stats().sends,
        700,
        "the device died at its 700th send"
    );
    assert!(refused > 0);
    assert_eq!(l.owner.len() + refused, 1500);
    l.assert_exactly_once();
    let flushed = l.with_status(WcStatus::WrFlushErr);
    let ok = l.with_status(WcStatus::Success);
    assert_eq!(ok.len() + flushed.len(), l.owner.len());
    assert!(ok.len() < 700);
    assert_eq!(p.driver.transport().inner().stats().sent as usize, ok.len());
    // Successes are a prefix; everything in flight at death (posted or
    // queued) is the flushed tail.
    assert_eq!(ok.last().map(|t| t.0), Some(ok.len() as u64));
    assert_eq!(flushed.first().map(|t| t.0), Some(ok.len() as u64 + 1));
    assert!(
        flushed.len() > 64,
        "the whole send list and the queue flush"
    );
    for c in [a, b] {
        let fatal = l.events[&c]
            .iter()
            .filter(|e| **e == PortEvent::DeviceFatal)
            .count();
        assert_eq!(fatal, 1, "DeviceFatal reaches each client once");
    }
    // Error text names the port and the way out.
    let e = p
        .post(
            a,
            Unsendable::check_post(&gsi_mad(1), Qp::Qp1).unwrap(),
            &Address::gsi(9),
            0,
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "port lo/1 is dead after a device-fatal error; reopen it explicitly"
    );
    // poll on a dead port does nothing and delivers nothing twice.
    p.poll(clock.advance(Duration::from_secs(1)));
    l.collect(&mut p);
    l.assert_exactly_once();

    // Reopening is explicit and brings the port back.
    p.reopen(FaultInjector::new(
        Loopback::new(Loopback::attrs("lo", 1, 5), 64),
        5,
    ));
    assert!(!p.is_dead());
    l.collect(&mut p);
    assert_eq!(l.events[&a].last(), Some(&PortEvent::Reopened));
    stream(&mut p, &mut l, &mut clock, a, 1000, 50);
    assert_eq!(l.with_status(WcStatus::Success).len(), ok.len() + 1000);
    l.assert_exactly_once();
}

/// Index of the first event equal to `e`.
fn at(events: &[PortEvent], e: &PortEvent) -> usize {
    events
        .iter()
        .position(|x| x == e)
        .unwrap_or_else(|| panic!("no {e:?} in {events:?}"))
}

#[test]
fn soft_reset_two_phases_with_slow_and_silent_clients() {
    let cfg = PortConfig {
        reset_ack_timeout: Duration::from_millis(500),
        ..PortConfig::default()
    };
    let lo = Loopback::new(Loopback::attrs("lo", 1, 5), 32);
    let mut p = PortPair::new(FaultInjector::new(lo, 6), cfg);
    let (quick, slow, silent) = (p.register(), p.register(), p.register());
    let (mut l, mut clock) = (Ledger::default(), Clock::new());
    stream(&mut p, &mut l, &mut clock, quick, 400, 50);

    // Sends in flight when the reset is requested: the device holds them.
    p.driver.transport_mut().inner_mut().set_stalled(true);
    let in_flight: Vec<SendToken> = (0..100).map(|i| l.post(&mut p, slow, i).unwrap()).collect();
    p.driver.transport_mut().request_soft_reset();
    let t0 = clock.advance(Duration::from_millis(1));
    p.poll(t0);
    l.collect(&mut p);
    assert!(p.is_reset_pending());
    assert_eq!(p.next_deadline(), Some(t0 + Duration::from_millis(500)));
    for c in [quick, slow, silent] {
        assert_eq!(
            l.events[&c],
            vec![PortEvent::ResetPending],
            "phase 1 reaches idle clients too"
        );
    }
    p.ack_reset(quick).unwrap();
    assert!(p.is_reset_pending());
    // Posts during the reset are queued, not lost, and not posted.
    let posted_before = p.driver.transport().stats().sends;
    let during: Vec<SendToken> = (0..300)
        .map(|i| l.post(&mut p, quick, i).unwrap())
        .collect();
    p.poll(clock.advance(Duration::from_millis(100)));
    assert_eq!(p.driver.transport().stats().sends, posted_before);
    assert_eq!(p.queued(Qp::Qp1), 300 + 100 - 32);
    p.ack_reset(slow).unwrap();
    p.ack_reset(slow).unwrap(); // repeated: harmless
    assert_eq!(p.reset_waiting_for(), vec![silent]);
    p.poll(clock.advance(Duration::from_millis(300)));
    l.collect(&mut p);
    assert!(
        p.is_reset_pending(),
        "the silent client holds it until the deadline"
    );
    assert!(l.events[&quick].iter().all(|e| *e != PortEvent::ResetEnd));

    // Deadline: forced (the device still holds the 32 posted).
    p.poll(clock.advance(Duration::from_millis(100)));
    l.collect(&mut p);
    p.driver.transport_mut().inner_mut().set_stalled(false);
    assert!(!p.is_reset_pending());
    assert_eq!((p.stats().forced_resets, p.stats().soft_resets), (1, 1));
    for c in [quick, slow, silent] {
        let ev = &l.events[&c];
        assert_eq!(
            ev.iter().filter(|e| **e == PortEvent::ResetPending).count(),
            1
        );
        assert_eq!(ev.iter().filter(|e| **e == PortEvent::ResetEnd).count(), 1);
        assert!(at(ev, &PortEvent::ResetPending) < at(ev, &PortEvent::ResetEnd));
    }
    // The 32 that were on the send list flush; the queued ones go out after.
    assert!(in_flight[..32]
        .iter()
        .all(|&t| l.status(t) == WcStatus::WrFlushErr));
    settle(&mut p, &mut l, &mut clock);
    assert!(in_flight[32..]
        .iter()
        .chain(&during)
        .all(|&t| l.status(t) == WcStatus::Success));
    let pos = |t: SendToken| l.order.iter().position(|(x, _)| *x == t).unwrap();
    assert!(pos(in_flight[31]) < pos(in_flight[32]));
    assert!(pos(during[0]) < pos(during[299]));
    stream(&mut p, &mut l, &mut clock, silent, 600, 60);
    l.assert_exactly_once();
    assert!(l.owner.len() >= 1000);
    assert_rts(&p);
}

#[test]
fn soft_reset_runs_when_the_last_client_acknowledges() {
    let mut p = port(
        16,
        7,
        FaultConfig {
            soft_reset: Trigger::Nth(300),
            ..FaultConfig::default()
        },
    );
    let cs = [p.register(), p.register(), p.register()];
    let (mut l, mut clock) = (Ledger::default(), Clock::new());
    let mut acked = 0;
    let mut held_back = 0;
    for i in 0..1000u64 {
        let below = p.driver.transport().stats().sends;
        l.post(&mut p, cs[(i % 3) as usize], i).unwrap();
        if p.is_reset_pending() {
            assert_eq!(
                p.driver.transport().stats().sends,
                below,
                "posted during a reset"
            );
            held_back += 1;
        }
        if i % 25 == 24 {
            p.poll(clock.advance(Duration::from_millis(1)));
            l.collect(&mut p);
            // One client acknowledges per poll, in turn.
            if p.is_reset_pending() && acked < 3 {
                p.ack_reset(cs[acked]).unwrap();
                acked += 1;
            }
        }
    }
    settle(&mut p, &mut l, &mut clock);
    assert_eq!(acked, 3);
    assert!(held_back > 0, "sends were queued during the reset");
    assert_eq!((p.stats().soft_resets, p.stats().forced_resets), (1, 0));
    assert!(matches!(p.ack_reset(cs[0]), Err(PortError::NoResetPending)));

    // A client asks for a reset on an idle port: a send with room on the QP
    // still waits for the reset to finish.
    p.request_reset(clock.advance(Duration::from_millis(1)));
    let below = p.driver.transport().stats().sends;
    let t = l.post(&mut p, cs[1], 7).unwrap();
    p.poll(clock.advance(Duration::from_millis(1)));
    assert_eq!(
        (p.driver.transport().stats().sends, p.queued(Qp::Qp1)),
        (below, 1)
    );
    for c in cs {
        p.ack_reset(c).unwrap();
    }
    assert!(!p.is_reset_pending());
    settle(&mut p, &mut l, &mut clock);
    assert_eq!(l.status(t), WcStatus::Success);
    let two = [PortEvent::ResetPending, PortEvent::ResetEnd]
        .iter()
        .cycle()
        .take(4)
        .cloned()
        .collect::<Vec<_>>();
    for c in cs {
        assert_eq!(l.events[&c], two);
    }
    assert_eq!(p.stats().soft_resets, 2);
    l.assert_exactly_once();
}

#[test]
fn every_async_event_reaches_every_client_once_and_attrs_refresh() {
    let mut p = port(32, 8, FaultConfig::default());
    let cs = [p.register(), p.register(), p.register()];
    let (mut l, mut clock) = (Ledger::default(), Clock::new());
    let events = [
        AsyncEvent::PortActive,
        AsyncEvent::PortError,
        AsyncEvent::LidChange,
        AsyncEvent::PkeyChange,
        AsyncEvent::GidChange,
        AsyncEvent::SmChange,
        AsyncEvent::ClientReregister,
    ];
    for (k, ev) in events.iter().enumerate() {
        stream(&mut p, &mut l, &mut clock, cs[k % 3], 150, 40);
        if *ev == AsyncEvent::LidChange {
            let mut a = Loopback::attrs("lo", 1, 77);
            a.pkeys = vec![0xffff, 0x8001];
            p.driver.transport_mut().inner_mut().stage_attrs(a);
        }
        p.driver.transport_mut().inject_event(*ev);
    }
    p.poll(clock.advance(Duration::from_millis(1)));
    l.collect(&mut p);
    let want: Vec<PortEvent> = events.iter().map(|e| PortEvent::Async(*e)).collect();
    for c in cs {
        assert_eq!(l.events[&c], want, "{c}");
    }
    assert_eq!(
        mad_core::transport::Transport::port_attrs(p.driver.transport()).lid,
        77,
        "LID_CHANGE refreshed the cached attributes"
    );
    assert_eq!(
        mad_core::transport::Transport::port_attrs(p.driver.transport()).pkeys,
        vec![0xffff, 0x8001]
    );
    assert_eq!(
        p.driver.transport().stats().refreshes,
        6,
        "no refresh for CLIENT_REREGISTER"
    );
    assert_eq!(p.stats().events, 7);
    l.assert_exactly_once();
    assert_eq!(l.owner.len(), 1050);
}

#[test]
fn qp_fatal_flushes_that_qp_and_brings_it_back() {
    let (mut p, c, mut l, mut clock) = streamed(16, 9, FaultConfig::default(), 500, 20);
    p.driver.transport_mut().inner_mut().set_stalled(true);
    let held: Vec<SendToken> = (0..10).map(|i| l.post(&mut p, c, i).unwrap()).collect();
    p.driver
        .transport_mut()
        .inject_event(AsyncEvent::QpFatal(Qp::Qp1));
    p.driver.transport_mut().inner_mut().set_stalled(false);
    p.poll(clock.advance(Duration::from_millis(1)));
    l.collect(&mut p);
    assert!(held.iter().all(|&t| l.status(t) == WcStatus::WrFlushErr));
    assert_eq!(p.stats().qp_fatal, 1);
    assert_rts(&p);
    stream(&mut p, &mut l, &mut clock, c, 500, 20);
    assert_eq!(l.with_status(WcStatus::Success).len(), 1000);
    l.assert_exactly_once();
}

#[test]
fn seeded_soak_of_every_fault_keeps_completions_exactly_once() {
    for seed in [1u64, 2, 3] {
        let cfg = FaultConfig {
            wr_error: Trigger::Probability(0.005),
            cq_error: Trigger::Probability(0.001),
            soft_reset: Trigger::Probability(0.001),
            send_drop: 0.01,
            send_delay: 0.01,
            send_delay_polls: 3,
            ..FaultConfig::default()
        };
        let mut p = port(24, seed, cfg);
        let cs = [p.register(), p.register(), p.register()];
        let (mut l, mut clock) = (Ledger::default(), Clock::new());
        for i in 0..5000u64 {
            l.post(&mut p, cs[(i % 3) as usize], i).unwrap();
            if i % 30 == 29 {
                p.poll(clock.advance(Duration::from_millis(50)));
                l.collect(&mut p);
                // Clients 0 and 1 acknowledge resets; client 2 never does.
                if p.is_reset_pending() {
                    p.ack_reset(cs[0]).unwrap();
                    p.ack_reset(cs[1]).unwrap();
                }
            }
        }
        settle(&mut p, &mut l, &mut clock);
        l.assert_exactly_once();
        let s = p.stats();
        assert_eq!((s.accepted, s.completed), (5000, 5000), "seed {seed}");
        assert_eq!(s.succeeded + s.wr_errors + s.flushed, 5000);
        assert!(
            s.wr_errors > 0 && s.cq_errors > 0 && s.soft_resets > 0,
            "seed {seed}: {s:?}"
        );
        for c in cs {
            assert_eq!(p.outstanding(c), 0);
        }
        assert_rts(&p);
    }
}
