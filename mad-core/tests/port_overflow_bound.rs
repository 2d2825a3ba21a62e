//! The port's overflow queue is bounded (issue 13): while the send queue
//! is stalled a caller that keeps posting is refused past
//! [`PortConfig::overflow_limit`] instead of growing the queue for ever.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use mad_core::port::{
    ClientId, Driver, PortConfig, PortCore, PortError, PortEvent, Post, DEFAULT_OVERFLOW_LIMIT,
};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, OutMad, Qp, Transport, Unsendable, WcStatus};
use mad_core::wire::{AttributeId, Method, MgmtClass};
use mad_testkit_wire::MadBuilder;

fn mad(tid: u64) -> Vec<u8> {
    MadBuilder::new(MgmtClass::PERF_MGT, 1, Method::GET, AttributeId(0))
        .tid(tid)
        .to_vec()
}

/// A work request of `client` with no answer wait.
fn wr<'a>(client: ClientId, mad: OutMad<'a>, dest: &'a Address, cookie: u64) -> Post<'a> {
    Post {
        client,
        mad,
        dest,
        cookie,
        wait: std::time::Duration::ZERO,
    }
}

/// An SMP, for QP0.
fn smp(tid: u64) -> Vec<u8> {
    MadBuilder::new(MgmtClass::SUBN_LID_ROUTED, 1, Method::GET, AttributeId(0))
        .tid(tid)
        .to_vec()
}

/// A port over a stalled loopback with a send queue of 4 and room for
/// `limit` sends on each overflow queue: its state and the driver of
/// the loopback.
fn stalled(limit: usize) -> (PortCore, Driver<Loopback>) {
    port(PortConfig {
        overflow_limit: limit,
        ..PortConfig::default()
    })
}

/// A port with `cfg` over a stalled loopback with a send queue of 4.
fn port(cfg: PortConfig) -> (PortCore, Driver<Loopback>) {
    let mut lb = Loopback::new(Loopback::attrs("lb0", 1, 5), 4);
    lb.set_stalled(true);
    (PortCore::new(lb.port_attrs(), cfg), Driver::new(lb))
}

#[test]
fn a_post_beyond_the_overflow_limit_is_refused_counted_and_queues_nothing() {
    let (mut p, mut d) = stalled(8);
    let c = p.register();
    let dest = Address::gsi(7);
    // 4 posted, 8 queued: all accepted.
    for tid in 0..12 {
        d.post(
            &mut p,
            wr(
                c,
                Unsendable::check_post(&mad(tid), Qp::Qp1).unwrap(),
                &dest,
                tid,
            ),
        )
        .unwrap();
    }
    assert_eq!((p.posted(Qp::Qp1), p.queued(Qp::Qp1)), (4, 8));
    let e = d
        .post(
            &mut p,
            wr(
                c,
                Unsendable::check_post(&mad(12), Qp::Qp1).unwrap(),
                &dest,
                12,
            ),
        )
        .unwrap_err();
    match &e {
        PortError::OverflowFull { qp, limit } => assert_eq!((*qp, *limit), (Qp::Qp1, 8)),
        other => panic!("expected OverflowFull, got {other:?}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("QP1") && msg.contains('8'), "{msg}");
    assert_eq!(p.queued(Qp::Qp1), 8, "the refused send was not queued");
    assert_eq!(p.stats().overflow_refused, 1);
    assert_eq!(p.stats().accepted, 12);

    // The other QP has its own bound.
    d.post(
        &mut p,
        wr(
            c,
            Unsendable::check_post(&smp(100), Qp::Qp0).unwrap(),
            &dest,
            100,
        ),
    )
    .unwrap();

    // Once the device moves, every accepted send completes exactly once
    // and the queue takes sends again.
    d.transport_mut().set_stalled(false);
    let mut done = Vec::new();
    for _ in 0..100 {
        d.drive(&mut p, Instant::now());
        while let Some(ev) = p.poll_client(c) {
            if let PortEvent::SendComplete { cookie, status, .. } = ev {
                assert_eq!(status, WcStatus::Success);
                done.push(cookie);
            }
        }
        if done.len() == 13 {
            break;
        }
    }
    done.sort_unstable();
    let mut want: Vec<u64> = (0..12).collect();
    want.push(100);
    assert_eq!(done, want);
    d.post(
        &mut p,
        wr(
            c,
            Unsendable::check_post(&mad(13), Qp::Qp1).unwrap(),
            &dest,
            13,
        ),
    )
    .unwrap();
}

#[test]
fn an_overflow_limit_of_zero_refuses_every_send_that_cannot_go_out_at_once() {
    let (mut p, mut d) = stalled(0);
    let c = p.register();
    for tid in 0..4 {
        d.post(
            &mut p,
            wr(
                c,
                Unsendable::check_post(&mad(tid), Qp::Qp1).unwrap(),
                &Address::gsi(7),
                tid,
            ),
        )
        .unwrap();
    }
    assert!(matches!(
        d.post(
            &mut p,
            wr(
                c,
                Unsendable::check_post(&mad(4), Qp::Qp1).unwrap(),
                &Address::gsi(7),
                4
            )
        ),
        Err(PortError::OverflowFull { limit: 0, .. })
    ));
}

#[test]
fn the_default_overflow_limit_bounds_a_caller_that_posts_for_ever() {
    assert_eq!(PortConfig::default().overflow_limit, DEFAULT_OVERFLOW_LIMIT);
    let (mut p, mut d) = port(PortConfig::default());
    let c = p.register();
    let m = mad(1);
    let mut accepted = 0usize;
    for tid in 0..(DEFAULT_OVERFLOW_LIMIT as u64 + 100) {
        if d.post(
            &mut p,
            wr(
                c,
                Unsendable::check_post(&m, Qp::Qp1).unwrap(),
                &Address::gsi(7),
                tid,
            ),
        )
        .is_ok()
        {
            accepted += 1;
        }
    }
    assert_eq!(accepted, 4 + DEFAULT_OVERFLOW_LIMIT);
    assert_eq!(p.stats().overflow_refused, 96);
}
