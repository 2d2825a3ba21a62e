//! A transport called directly, not through the engine or the port (the
//! discovery thread, the SM driver, tests), with bytes rather than a
//! checked `OutMad`: `Transport::post_send` / `post_request` make the
//! `OutMad` (`Unsendable::check_post`), so a bad MAD is refused with its
//! named cause, without a panic, and nothing is posted; a good one goes
//! out.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use mad_core::transport::fault::FaultInjector;
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{
    Address, Qp, SendCompletion, Transport, TransportError, Unsendable, WcStatus,
};
use mad_core::wire::{AttributeId, Method, MgmtClass, MAD_LEN};
use mad_testkit_wire::MadBuilder;

fn mad(class: MgmtClass, len: usize) -> Vec<u8> {
    let mut m = MadBuilder::new(class, 1, Method::GET, AttributeId(0x12)).to_vec();
    m.resize(len, 0);
    m
}

/// Every bad MAD is refused by `post_send` and `post_request` with its
/// cause and completes nothing; a good one on each QP is posted.
fn refuses_bad_mads_and_posts_good_ones(t: &mut dyn Transport) {
    let gsi = mad(MgmtClass::PERF_MGT, MAD_LEN);
    let smp = mad(MgmtClass::SUBN_LID_ROUTED, MAD_LEN);
    let cases: [(Qp, &[u8], Unsendable); 4] = [
        (Qp::Qp1, &gsi[..10], Unsendable::Truncated { len: 10 }),
        (
            Qp::Qp1,
            &mad(MgmtClass::PERF_MGT, 300),
            Unsendable::TooLong {
                len: 300,
                max: MAD_LEN,
            },
        ),
        (
            Qp::Qp0,
            &gsi,
            Unsendable::WrongQp {
                class: MgmtClass::PERF_MGT,
                qp: Qp::Qp0,
            },
        ),
        (
            Qp::Qp1,
            &smp,
            Unsendable::WrongQp {
                class: MgmtClass::SUBN_LID_ROUTED,
                qp: Qp::Qp1,
            },
        ),
    ];
    for (qp, bytes, cause) in cases {
        let to = Address::gsi(1);
        match t.post_send(qp, bytes, &to) {
            Err(TransportError::BadSend(c)) => assert_eq!(c, cause),
            other => panic!("post_send of {cause:?}: {other:?}"),
        }
        match t.post_request(qp, bytes, &to, Duration::from_millis(10)) {
            Err(TransportError::BadSend(c)) => assert_eq!(c, cause),
            other => panic!("post_request of {cause:?}: {other:?}"),
        }
    }
    let mut done: Vec<SendCompletion> = Vec::new();
    t.poll_send_completions(&mut done).unwrap();
    assert!(done.is_empty(), "refused posts complete nothing: {done:?}");
    t.post_send(Qp::Qp1, &gsi, &Address::gsi(1)).unwrap();
    t.post_send(Qp::Qp0, &smp, &Address::smi(1)).unwrap();
    t.poll_send_completions(&mut done).unwrap();
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(
        done.iter().all(|c| c.status == WcStatus::Success),
        "{done:?}"
    );
}

fn loopback() -> Loopback {
    Loopback::new(Loopback::attrs("lb0", 1, 1), 8)
}

#[test]
fn the_loopback_refuses_a_bad_mad_posted_directly() {
    let mut t = loopback();
    refuses_bad_mads_and_posts_good_ones(&mut t);
    assert_eq!(t.stats().posted, 2, "only the good MADs were posted");
}

#[test]
fn the_fault_injector_refuses_a_bad_mad_posted_directly() {
    let mut t = FaultInjector::new(loopback(), 1);
    refuses_bad_mads_and_posts_good_ones(&mut t);
    assert_eq!(t.stats().sends, 2, "only the good MADs were posted");
}

#[test]
fn a_boxed_transport_refuses_a_bad_mad_posted_directly() {
    let mut t: Box<dyn Transport> = Box::new(loopback());
    refuses_bad_mads_and_posts_good_ones(&mut t);
}
