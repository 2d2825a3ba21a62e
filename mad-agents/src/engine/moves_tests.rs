//! Each move the engine makes only where its bookkeeping says it is legal
//! ([`state::must`]), driven at its call site into a refusal (the send's
//! state is set to one the move does not allow, as a bug would leave it):
//! a debug build stops at the assertion naming the move, and every build
//! counts it in [`EngineStats::refused_moves`].

use super::*;
use crate::types::EngineConfig;
use mad_core::transport::loopback::Loopback;
use std::panic::{catch_unwind, AssertUnwindSafe};

type E = crate::Stack<Loopback>;

/// An engine on a loopback port (LID 5) with one send-only agent on QP1,
/// RMPP-capable when `rmpp`.
fn engine(rmpp: bool) -> (E, AgentId) {
    let mut e = crate::Stack::new(
        Loopback::new(Loopback::attrs("lb0", 1, 5), 64),
        EngineConfig::default(),
    );
    let spec = AgentSpec::send_only("moves", Qp::Qp1);
    let spec = if rmpp { spec.with_rmpp() } else { spec };
    let a = e.register(spec).expect("the agent registers");
    (e, a)
}

/// A request of `class` of `len` bytes to LID 7 that awaits an answer
/// for a second, retried once.
fn request(class: MgmtClass, len: usize) -> SendRequest {
    let mut mad = vec![0u8; len];
    let version = if class == MgmtClass::SUBN_ADM { 2 } else { 1 };
    Mad::new_unchecked(&mut mad[..]).set_request(
        class,
        version,
        Method::GET,
        mad_core::wire::AttributeId(0x0012),
        0,
    );
    SendRequest::new(mad, Address::gsi(7)).expect_response(Duration::from_secs(1), 1)
}

/// Sends a PerfMgt Get and polls once (posted, completed, waiting for
/// its answer); returns its slab index.
fn waiting_send(e: &mut E, a: AgentId, now: Instant) -> usize {
    let id = e
        .send(a, request(MgmtClass::PERF_MGT, MAD_LEN), now)
        .expect("sent");
    e.poll(now);
    e.send_idx(id).expect("outstanding")
}

/// An [`engine`] without RMPP holding one [`waiting_send`] made at the
/// returned instant; returns the engine and the send's slab index.
fn one_waiting_send() -> (E, usize, Instant) {
    let (mut e, a) = engine(false);
    let t0 = Instant::now();
    let idx = waiting_send(&mut e, a, t0);
    (e, idx, t0)
}

/// Runs `f` and checks that it refused `mv`: in a debug build the
/// assertion fired naming it; in every build the counter grew.
fn refused(e: &mut E, mv: Move, f: impl FnOnce(&mut E)) {
    let before = e.stats().refused_moves;
    let r = catch_unwind(AssertUnwindSafe(|| f(&mut *e)));
    if cfg!(debug_assertions) {
        let payload = r.expect_err("a refused move trips the debug assertion");
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert_eq!(msg, format!("refused state move {mv:?}"));
        assert_eq!(e.stats().refused_moves, before + 1);
    } else {
        assert!(r.is_ok(), "a release build goes on");
        assert!(e.stats().refused_moves > before, "and counts it");
    }
}

#[test]
fn a_healthy_engine_refuses_no_move() {
    let (mut e, idx, t0) = one_waiting_send();
    assert!(e.timers.contains(Timer::Response(idx).key()));
    // Retried once, then timed out.
    e.poll(t0 + Duration::from_secs(1));
    e.poll(t0 + Duration::from_secs(3));
    assert_eq!(e.outstanding(), 0);
    assert_eq!(e.stats().retries, 1);
    assert_eq!(e.stats().refused_moves, 0);
}

#[test]
fn a_post_of_a_send_still_in_the_backlog_is_counted() {
    let (mut e, idx, _) = one_waiting_send();
    e.sends[idx].state = SendState::queued(0);
    refused(&mut e, Move::WrPosted, |e| {
        e.post(idx, OnRefusal::Fail);
    });
}

#[test]
fn a_completion_with_no_work_request_in_flight_is_counted() {
    let (mut e, idx, t0) = one_waiting_send();
    let id = e.sends[idx].id;
    refused(&mut e, Move::WrCompleted, |e| {
        e.on_wc(id, WcStatus::Success, t0);
    });
}

#[test]
fn a_dequeue_of_a_send_not_in_the_backlog_is_counted() {
    let (mut e, idx, t0) = one_waiting_send();
    refused(&mut e, Move::Dequeue, |e| e.post_queued(idx, t0));
}

#[test]
fn a_second_flow_slot_for_one_send_is_counted() {
    let (mut e, idx, _) = one_waiting_send();
    assert_eq!(e.unanswered(), 1, "the request holds its slot");
    refused(&mut e, Move::TakeSlot, |e| e.take_flow_slot(idx));
    assert_eq!(e.unanswered(), 1, "and no second one");
}

#[test]
fn a_retry_of_a_send_that_is_not_open_is_counted() {
    let (mut e, idx, t0) = one_waiting_send();
    e.sends[idx].state = SendState::queued(0);
    refused(&mut e, Move::NewAttempt, |e| {
        e.poll(t0 + Duration::from_secs(1));
    });
}

#[test]
fn a_restart_of_a_transfer_that_is_not_open_is_counted() {
    let (mut e, a) = engine(true);
    let t0 = Instant::now();
    let id = e
        .send(a, request(MgmtClass::SUBN_ADM, 600), t0)
        .expect("an RMPP request is sent");
    let idx = e.send_idx(id).expect("outstanding");
    assert!(e.sends[idx].rmpp.is_some());
    e.sends[idx].state = SendState::queued(0);
    refused(&mut e, Move::RestartTransfer, |e| e.restart_rmpp(idx, t0));
}

#[test]
fn the_next_deadline_is_the_first_of_one_table() {
    let (mut e, a) = engine(false);
    let b = e
        .register(AgentSpec::send_only("other", Qp::Qp1))
        .expect("a second agent");
    let t0 = Instant::now();
    waiting_send(&mut e, a, t0);
    let mut short = request(MgmtClass::PERF_MGT, MAD_LEN);
    short.timeout = Duration::from_millis(10);
    e.send(b, short, t0).expect("sent");
    e.poll(t0);
    assert_eq!(e.poll_timeout(), Some(t0 + Duration::from_millis(10)));
    e.poll(t0 + Duration::from_millis(10));
    // The short one retried: its second attempt is due 10 ms later.
    assert_eq!(e.poll_timeout(), Some(t0 + Duration::from_millis(20)));
}
