//! Unit tests of the fault injector over a `Loopback`.
use super::*;
use crate::transport::loopback::Loopback;
use crate::wire::{AttributeId, Method, MgmtClass};
use mad_testkit_wire::{header, MadBuilder};

/// An SA Get with TID `tid`.
fn mad(tid: u8) -> Vec<u8> {
    MadBuilder::new(MgmtClass::SUBN_ADM, 2, Method::GET, AttributeId(0))
        .tid(u64::from(tid))
        .to_vec()
}

/// The TID of a MAD `mad` made.
fn tid(m: &[u8]) -> u8 {
    u8::try_from(header::of(m).tid).expect("a TID mad() made")
}

fn lo(depth: usize) -> Loopback {
    Loopback::new(Loopback::attrs("lo", 1, 5), depth)
}

fn drain<T: Transport>(t: &mut T) -> Vec<SendCompletion> {
    let mut v = Vec::new();
    t.poll_send_completions(&mut v).unwrap();
    v
}

fn post_n<T: Transport>(t: &mut T, n: u8) -> Vec<WrId> {
    (0..n)
        .map(|i| t.post_send(Qp::Qp1, &mad(i), &Address::gsi(9)).unwrap())
        .collect()
}

/// A fault injector on a loopback of `depth` whose `n`th send completes
/// with `status` and leaves the QP in `state`.
fn failing_nth(depth: usize, n: u64, status: WcStatus, state: QpState) -> FaultInjector<Loopback> {
    let cfg = FaultConfig {
        wr_error: Trigger::Nth(n),
        wr_error_status: status,
        wr_error_state: state,
        ..FaultConfig::default()
    };
    FaultInjector::with_config(lo(depth), 1, cfg)
}

#[test]
fn nth_send_fails_and_everything_behind_it_is_flushed_in_order() {
    let mut f = failing_nth(16, 3, WcStatus::LocQpOpErr, QpState::Err);
    let ids = post_n(&mut f, 6);
    assert_eq!(
        f.qp_state(Qp::Qp1),
        QpState::Rts,
        "ERR only once the WC is out"
    );
    let c = drain(&mut f);
    let got: Vec<(WrId, WcStatus)> = c.iter().map(|c| (c.wr_id, c.status)).collect();
    use WcStatus::*;
    let want: Vec<WcStatus> = vec![
        Success, Success, LocQpOpErr, WrFlushErr, WrFlushErr, WrFlushErr,
    ];
    assert_eq!(got, ids.iter().copied().zip(want).collect::<Vec<_>>());
    assert_eq!(f.qp_state(Qp::Qp1), QpState::Err);
    // Posting in ERR is accepted and flushed.
    let late = post_n(&mut f, 1)[0];
    assert_eq!(
        drain(&mut f)[0],
        SendCompletion {
            wr_id: late,
            qp: Qp::Qp1,
            status: WrFlushErr,
            vendor_err: 0
        }
    );
    assert!(matches!(
        f.modify_qp(Qp::Qp1, QpState::Rts),
        Err(TransportError::InvalidTransition {
            from: QpState::Err,
            ..
        })
    ));
    for s in [QpState::Reset, QpState::Init, QpState::Rtr, QpState::Rts] {
        f.modify_qp(Qp::Qp1, s).unwrap();
    }
    post_n(&mut f, 2);
    assert!(drain(&mut f).iter().all(|c| c.status == Success));
    assert_eq!(
        f.inner().stats().sent,
        2 + 2,
        "failed and flushed sends never went out"
    );
    let s = f.stats();
    assert_eq!((s.wr_errors, s.flushed, s.completions), (1, 4, 9));
}

#[test]
fn sqe_mode_recovers_with_sqe_to_rts() {
    let mut f = failing_nth(4, 1, WcStatus::GeneralErr, QpState::Sqe);
    post_n(&mut f, 2);
    drain(&mut f);
    assert_eq!(f.qp_state(Qp::Qp1), QpState::Sqe);
    f.modify_qp(Qp::Qp1, QpState::Rts).unwrap();
    post_n(&mut f, 1);
    assert_eq!(drain(&mut f)[0].status, WcStatus::Success);
}

#[test]
fn cq_error_loses_every_completion_until_recreate() {
    let mut f = FaultInjector::new(lo(512), 7);
    f.inner_mut().set_stalled(true);
    post_n(&mut f, 200);
    f.inject_cq_error();
    assert_eq!(f.poll_event(), Some(AsyncEvent::CqError));
    assert_eq!(f.poll_event(), Some(AsyncEvent::QpFatal(Qp::Qp0)));
    assert_eq!(f.poll_event(), Some(AsyncEvent::QpFatal(Qp::Qp1)));
    f.inner_mut().set_stalled(false);
    assert!(drain(&mut f).is_empty());
    assert_eq!(f.qp_state(Qp::Qp1), QpState::Err);
    assert!(f.modify_qp(Qp::Qp1, QpState::Reset).is_err());
    f.recreate_queues().unwrap();
    assert_eq!(f.qp_state(Qp::Qp1), QpState::Rts);
    let ids = post_n(&mut f, 3);
    let c = drain(&mut f);
    assert_eq!(c.iter().map(|c| c.wr_id).collect::<Vec<_>>(), ids);
    assert_eq!(f.stats().lost, 200);
}

#[test]
fn device_fatal_fails_every_later_call() {
    let mut f = FaultInjector::new(lo(8), 7);
    post_n(&mut f, 3);
    f.inject_device_fatal();
    assert_eq!(f.poll_event(), Some(AsyncEvent::DeviceFatal));
    assert!(matches!(
        f.post_send(Qp::Qp1, &mad(1), &Address::gsi(1)),
        Err(TransportError::DeviceDead(ref n)) if n == "lo"
    ));
    assert!(f.poll_send_completions(&mut Vec::new()).is_err());
    assert!(f.poll_recv().is_err());
    assert!(f.modify_qp(Qp::Qp1, QpState::Reset).is_err());
    assert!(f.recreate_queues().is_err());
    assert!(f.refresh_port_attrs().is_err());
    assert_eq!(f.poll_event(), None);
}

/// The statuses of 300 sends under random faults, polling every 7.
fn run(seed: u64) -> Vec<WcStatus> {
    let cfg = FaultConfig {
        wr_error: Trigger::Probability(0.02),
        send_drop: 0.05,
        send_delay: 0.05,
        send_delay_polls: 2,
        ..FaultConfig::default()
    };
    let mut f = FaultInjector::with_config(lo(16), seed, cfg);
    let mut out = Vec::new();
    for i in 0..300u32 {
        if f.qp_state(Qp::Qp1) == QpState::Err {
            for s in [QpState::Reset, QpState::Init, QpState::Rtr, QpState::Rts] {
                f.modify_qp(Qp::Qp1, s).unwrap();
            }
        }
        if f.outstanding(Qp::Qp1) < 16 {
            f.post_send(Qp::Qp1, &mad(0), &Address::gsi(1)).unwrap();
        }
        if i % 7 == 0 {
            out.extend(drain(&mut f).iter().map(|c| c.status));
        }
    }
    for _ in 0..4 {
        out.extend(drain(&mut f).iter().map(|c| c.status));
    }
    out
}

#[test]
fn same_seed_same_faults_other_seed_other_faults() {
    let a = run(42);
    assert_eq!(a, run(42));
    assert_ne!(a, run(43));
    assert!(a.contains(&WcStatus::GeneralErr) && a.contains(&WcStatus::WrFlushErr));
}

#[test]
fn dropped_send_succeeds_but_never_arrives_duplicated_arrives_twice() {
    let (a, mut b) = Loopback::pair(Loopback::attrs("a", 1, 1), Loopback::attrs("b", 1, 2), 8);
    let cfg = FaultConfig {
        send_drop: 1.0,
        ..FaultConfig::default()
    };
    let mut f = FaultInjector::with_config(a, 1, cfg);
    post_n(&mut f, 2);
    assert!(drain(&mut f).iter().all(|c| c.status == WcStatus::Success));
    assert!(b.poll_recv().unwrap().is_none());
    f.config_mut().send_drop = 0.0;
    f.config_mut().send_duplicate = 1.0;
    assert_eq!(f.send_queue_depth(), 7, "one slot kept for a duplicate");
    let ids = post_n(&mut f, 2);
    let c = drain(&mut f);
    assert_eq!(
        c.iter().map(|c| c.wr_id).collect::<Vec<_>>(),
        ids,
        "one completion per send"
    );
    let mut tids = Vec::new();
    while let Some(r) = b.poll_recv().unwrap() {
        tids.push(tid(&r.mad));
    }
    // One duplicate outstanding at a time: the first send is doubled,
    // the second is posted while the duplicate is still below.
    assert_eq!(tids, vec![0, 0, 1]);
}

#[test]
fn delayed_send_is_overtaken_on_the_wire_but_completes_in_order() {
    let (a, mut b) = Loopback::pair(Loopback::attrs("a", 1, 1), Loopback::attrs("b", 1, 2), 8);
    let cfg = FaultConfig {
        send_delay: 1.0,
        send_delay_polls: 2,
        ..FaultConfig::default()
    };
    let mut f = FaultInjector::with_config(a, 1, cfg);
    let first = post_n(&mut f, 1)[0];
    f.config_mut().send_delay = 0.0;
    let second = f.post_send(Qp::Qp1, &mad(1), &Address::gsi(2)).unwrap();
    assert!(drain(&mut f).is_empty(), "the second waits for the first");
    let c = drain(&mut f);
    assert_eq!(
        c.iter().map(|c| c.wr_id).collect::<Vec<_>>(),
        vec![first, second]
    );
    let order: Vec<u8> = std::iter::from_fn(|| b.poll_recv().unwrap())
        .map(|r| tid(&r.mad))
        .collect();
    assert_eq!(order, vec![1, 0]);
}

#[test]
fn receives_can_be_dropped_duplicated_and_delayed() {
    let recv = |tid| Received {
        qp: Qp::Qp1,
        src: Address::gsi(3),
        mad: mad(tid).into(),
    };
    let mut f = FaultInjector::new(lo(4), 1);
    for t in 0..3 {
        f.inner_mut().push_recv(recv(t));
    }
    f.config_mut().recv_drop = 1.0;
    assert!(f.poll_recv().unwrap().is_none());
    assert_eq!(f.stats().recvs_dropped, 3);
    f.config_mut().recv_drop = 0.0;
    f.config_mut().recv_duplicate = 1.0;
    f.inner_mut().push_recv(recv(7));
    assert_eq!(tid(&f.poll_recv().unwrap().unwrap().mad), 7);
    assert_eq!(tid(&f.poll_recv().unwrap().unwrap().mad), 7);
    f.config_mut().recv_duplicate = 0.0;
    f.config_mut().recv_delay = 1.0;
    f.inner_mut().push_recv(recv(8));
    assert!(f.poll_recv().unwrap().is_none());
    f.config_mut().recv_delay = 0.0;
    f.inner_mut().push_recv(recv(9));
    assert_eq!(tid(&f.poll_recv().unwrap().unwrap().mad), 9);
    drain(&mut f); // one poll: the held MAD is due
    assert_eq!(tid(&f.poll_recv().unwrap().unwrap().mad), 8);
}

#[test]
fn injected_events_pass_through_in_order() {
    let mut f = FaultInjector::new(lo(4), 1);
    f.inner_mut().push_event(AsyncEvent::PortActive);
    f.inject_event(AsyncEvent::LidChange);
    f.request_soft_reset();
    assert_eq!(f.poll_event(), Some(AsyncEvent::LidChange));
    assert_eq!(f.poll_event(), Some(AsyncEvent::SoftResetRequest));
    assert_eq!(f.poll_event(), Some(AsyncEvent::PortActive));
    assert_eq!(f.poll_event(), None);
}

/// A loopback that records the answer wait of every post.
struct Waits {
    inner: Loopback,
    waits: Vec<std::time::Duration>,
}

crate::transport_layer!([] Waits, inner: Loopback);

impl Transport for Waits {
    fn post(&mut self, mad: OutMad<'_>, dest: &Address, wait: std::time::Duration) -> Posted {
        self.waits.push(wait);
        self.inner.post(mad, dest, wait)
    }
    crate::forward_transport!(control, poll_recv);
}

#[test]
fn a_request_reaches_the_transport_below_with_its_wait_even_when_held_back_or_duplicated() {
    let below = Waits {
        inner: lo(8),
        waits: Vec::new(),
    };
    let cfg = FaultConfig {
        send_delay: 1.0,
        send_delay_polls: 1,
        ..FaultConfig::default()
    };
    let mut f = FaultInjector::with_config(below, 1, cfg);
    let wait = std::time::Duration::from_millis(1500);
    f.post_request(Qp::Qp1, &mad(0), &Address::gsi(9), wait)
        .unwrap();
    assert!(f.inner().waits.is_empty(), "held back, not yet below");
    // Held for one poll: completed by the second at the latest.
    let done: usize = (0..2).map(|_| drain(&mut f).len()).sum();
    assert_eq!(done, 1, "the held send completes");
    assert_eq!(f.inner().waits, vec![wait], "released with its wait");
    f.config_mut().send_delay = 0.0;
    f.config_mut().send_duplicate = 1.0;
    f.post_request(Qp::Qp1, &mad(1), &Address::gsi(9), wait)
        .unwrap();
    assert_eq!(f.stats().sends_duplicated, 1);
    assert_eq!(f.inner().waits, vec![wait; 3], "the copy keeps it too");
    f.post_send(Qp::Qp1, &mad(2), &Address::gsi(9)).unwrap();
    assert_eq!(
        f.inner().waits.last(),
        Some(&std::time::Duration::ZERO),
        "a MAD awaiting no answer posts with none"
    );
}
