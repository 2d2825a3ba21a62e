//! The checks a MAD passes before it may be posted run once, at
//! `Engine::send` (issue 28 item 1 step 5): each refusal happens there,
//! with its named cause, before anything reaches the port or the
//! transport; a MAD the engine makes itself is checked once when handed
//! to the port.
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mad_agents::{AgentSpec, EngineConfig, SendError, SendRequest, Stack};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received, TransportError, Unsendable, WrId};
use mad_core::wire::{AttributeId, Method, MgmtClass, MAD_LEN};
use mad_testkit::{Hooks, MadBuilder, Wrapped};

/// Counts what reaches the transport; receives what the test queues.
#[derive(Default, Clone)]
struct Seen {
    posts: Arc<Mutex<usize>>,
    inbox: Arc<Mutex<VecDeque<Received>>>,
}

impl Hooks for Seen {
    fn send(&mut self, _: Qp, _: &[u8], _: &Address) -> Option<Result<WrId, TransportError>> {
        *self.posts.lock().unwrap() += 1;
        None
    }
    fn inject(&mut self) -> Option<Received> {
        self.inbox.lock().unwrap().pop_front()
    }
}

fn engine() -> (Stack<Wrapped<Loopback, Seen>>, Seen) {
    let seen = Seen::default();
    let t = Wrapped::new(
        Loopback::new(Loopback::attrs("lb0", 1, 5), 16),
        seen.clone(),
    );
    (Stack::new(t, EngineConfig::default()), seen)
}

fn mad(class: MgmtClass, len: usize) -> Vec<u8> {
    let mut m = MadBuilder::new(class, 1, Method::GET, AttributeId(0x12)).to_vec();
    m.resize(len, 0);
    m
}

/// Sends `bytes` for a fresh agent of `spec` and returns the refusal
/// (asserting that nothing was posted nor counted as sent).
fn refusal(spec: AgentSpec, bytes: Vec<u8>) -> SendError {
    let (mut e, seen) = engine();
    let a = e.register(spec).unwrap();
    let req =
        SendRequest::new(bytes, Address::gsi(7)).expect_response(Duration::from_millis(10), 1);
    let err = e.send(a, req, Instant::now()).unwrap_err();
    assert_eq!(
        *seen.posts.lock().unwrap(),
        0,
        "nothing reached the transport"
    );
    let s = e.stats();
    assert_eq!((s.sends, s.posted, s.post_failures), (0, 0, 0), "{s:?}");
    assert_eq!(e.outstanding(), 0);
    err
}

#[test]
fn a_mad_shorter_than_its_header_is_refused_at_send() {
    let e = refusal(
        AgentSpec::send_only("a", Qp::Qp1),
        mad(MgmtClass::PERF_MGT, 10),
    );
    assert!(
        matches!(e, SendError::BadSend(Unsendable::Truncated { len: 10 })),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "bad send: a MAD of 10 bytes is shorter than its 24-byte common header"
    );
}

#[test]
fn a_gsi_class_on_qp0_and_an_smp_on_qp1_are_refused_at_send() {
    let e = refusal(
        AgentSpec::send_only("a", Qp::Qp0),
        mad(MgmtClass::PERF_MGT, MAD_LEN),
    );
    assert!(
        matches!(
            e,
            SendError::BadSend(Unsendable::WrongQp {
                class: MgmtClass::PERF_MGT,
                qp: Qp::Qp0
            })
        ),
        "{e:?}"
    );
    let e = refusal(
        AgentSpec::send_only("a", Qp::Qp1),
        mad(MgmtClass::SUBN_DIRECTED_ROUTE, MAD_LEN),
    );
    assert!(
        matches!(
            e,
            SendError::BadSend(Unsendable::WrongQp {
                class: MgmtClass::SUBN_DIRECTED_ROUTE,
                qp: Qp::Qp1
            })
        ),
        "{e:?}"
    );
    // A message longer than one MAD is checked for its QP too.
    let e = refusal(
        AgentSpec::send_only("a", Qp::Qp0).with_rmpp(),
        mad(MgmtClass::SUBN_ADM, 1000),
    );
    assert!(
        matches!(
            e,
            SendError::BadSend(Unsendable::WrongQp {
                class: MgmtClass::SUBN_ADM,
                qp: Qp::Qp0
            })
        ),
        "{e:?}"
    );
}

#[test]
fn more_than_one_mad_without_rmpp_is_refused_at_send() {
    let e = refusal(
        AgentSpec::send_only("a", Qp::Qp1),
        mad(MgmtClass::SUBN_ADM, MAD_LEN + 1),
    );
    assert!(
        matches!(e, SendError::BadSend(Unsendable::NeedsRmpp { len: 257 })),
        "{e:?}"
    );
}

#[test]
fn an_rmpp_agents_non_rmpp_class_is_refused_at_send() {
    let e = refusal(
        AgentSpec::send_only("a", Qp::Qp1).with_rmpp(),
        mad(MgmtClass::PERF_MGT, MAD_LEN),
    );
    assert!(
        matches!(
            e,
            SendError::BadSend(Unsendable::NotRmppClass {
                class: MgmtClass::PERF_MGT
            })
        ),
        "{e:?}"
    );
}

#[test]
fn a_checked_send_and_its_retries_reach_the_transport_each_time() {
    let (mut e, seen) = engine();
    let a = e.register(AgentSpec::send_only("a", Qp::Qp1)).unwrap();
    let t0 = Instant::now();
    let timeout = Duration::from_millis(10);
    // A MAD shorter than 256 bytes but with its header is a MAD.
    let req = SendRequest::new(mad(MgmtClass::PERF_MGT, 100), Address::gsi(7))
        .expect_response(timeout, 2)
        .total_timeout(Duration::from_secs(10));
    e.send(a, req, t0).unwrap();
    // Retries back off; a second of polls sees every one.
    for i in 1..=100u32 {
        e.poll(t0 + i * timeout);
    }
    assert_eq!(e.stats().posted, 3, "the first post and two retries");
    assert_eq!(*seen.posts.lock().unwrap(), 3);
    assert_eq!(e.stats().post_failures, 0);
}

#[test]
fn an_smp_that_came_on_qp1_gets_no_answer_on_the_wrong_qp() {
    // The engine's own answers go back on the QP their request came on,
    // with its class: a MAD whose class does not belong on that QP (a
    // broken peer's SMP on QP1) is dropped as malformed on receipt, so no
    // answer on the wrong QP is ever made, and nothing reaches the
    // transport.
    let (mut e, seen) = engine();
    let m = mad(MgmtClass::SUBN_LID_ROUTED, MAD_LEN);
    seen.inbox.lock().unwrap().push_back(Received {
        qp: Qp::Qp1,
        src: Address::gsi(9),
        mad: m.as_slice().into(),
    });
    e.poll(Instant::now());
    let s = e.stats();
    assert_eq!((s.malformed, s.unclaimed_requests), (1, 0), "{s:?}");
    assert_eq!((s.post_failures, s.unsupported_answered), (0, 0), "{s:?}");
    assert_eq!(*seen.posts.lock().unwrap(), 0);
    // The same SMP on QP0 is answered (method unsupported), on QP0.
    seen.inbox.lock().unwrap().push_back(Received {
        qp: Qp::Qp0,
        src: Address::smi(9),
        mad: m.as_slice().into(),
    });
    e.poll(Instant::now());
    let s = e.stats();
    assert_eq!((s.unsupported_answered, s.post_failures), (1, 0), "{s:?}");
    assert_eq!(*seen.posts.lock().unwrap(), 1);
}
