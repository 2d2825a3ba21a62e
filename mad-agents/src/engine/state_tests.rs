//! The send lifecycle's transitions: every legal move, and the illegal
//! ones refused with the state unchanged.

use super::*;
use mad_core::transport::WcStatus;

type S = SendState<u32>;

fn open_awaiting() -> S {
    S::open(true, false)
}

/// Applies `f` and checks that it was refused and changed nothing.
fn refused<T: std::fmt::Debug>(s: &mut S, f: impl FnOnce(&mut S) -> Result<T, Refused>) {
    let before = s.clone();
    assert_eq!(f(s).map(|_| ()), Err(Refused));
    assert_eq!(*s, before);
}

/// Checks that `step` is allowed, leaves `s` where `done` holds, and is
/// refused when taken again.
fn allowed_once(s: &mut S, step: fn(&mut S) -> Result<(), Refused>, done: fn(&S) -> bool) {
    assert_eq!(step(s), Ok(()));
    assert!(done(s));
    refused(s, step);
}

#[test]
fn a_queued_request_holds_its_response_reference_and_is_dequeued_once() {
    let mut s = S::queued(7);
    assert_eq!(s.refs(), 1);
    assert!(s.is_queued() && s.is_active() && s.awaits_response());
    assert!(!s.ready_to_wait() && !s.holds_slot() && !s.rmpp_active());
    refused(&mut s, S::wr_posted);
    refused(&mut s, S::take_slot);
    refused(&mut s, |s| s.answer(1));
    refused(&mut s, S::restart_transfer);
    refused(&mut s, S::new_attempt);
    refused(&mut s, S::flush_repost);
    refused(&mut s, |s| s.late_error(SendStatus::Flushed));
    assert_eq!(s.dequeue(), Ok(false));
    assert!(!s.is_queued() && s.awaits_response() && s.ready_to_wait());
    refused(&mut s, S::dequeue);
}

#[test]
fn a_modify_while_queued_extends_at_the_first_post_only() {
    let mut s = S::queued(1);
    assert_eq!(s.mark_extend(), Ok(()));
    assert!(
        !s.take_extend(),
        "a queued send's extension waits for dequeue"
    );
    assert_eq!(s.dequeue(), Ok(true));
    assert!(!s.take_extend(), "consumed by the first post");
}

#[test]
fn a_modify_in_flight_extends_when_the_wait_starts() {
    let mut s = open_awaiting();
    assert_eq!(s.mark_extend(), Ok(()));
    assert!(s.take_extend());
    assert!(!s.take_extend());
}

#[test]
fn references_are_work_requests_plus_response_plus_transfer() {
    let mut s = S::open(true, true);
    assert_eq!(s.refs(), 2);
    s.wr_posted().unwrap();
    s.wr_posted().unwrap();
    assert_eq!((s.wr(), s.refs()), (2, 4));
    assert!(!s.ready_to_wait());
    s.wr_completed().unwrap();
    s.wr_completed().unwrap();
    assert!(!s.ready_to_wait(), "the transfer still holds it");
    assert!(s.end_transfer());
    assert!(!s.end_transfer());
    assert!(s.ready_to_wait());
    assert_eq!(s.refs(), 1);
    refused(&mut s, S::wr_completed);
    assert_eq!(s.restart_transfer(), Ok(()));
    assert!(s.rmpp_active());
}

#[test]
fn a_send_expecting_nothing_is_released_by_its_last_completion() {
    let mut s = S::open(false, false);
    refused(&mut s, S::take_slot);
    refused(&mut s, |s| s.answer(1));
    s.wr_posted().unwrap();
    assert!(!s.is_released() && !s.awaits_response());
    s.wr_completed().unwrap();
    assert!(s.is_released());
    assert_eq!(s.into_outcome(), (SendStatus::Success, None));
}

#[test]
fn the_flow_control_slot_is_taken_once_and_given_back_once() {
    let mut s = open_awaiting();
    allowed_once(&mut s, S::take_slot, S::holds_slot);
    assert!(s.release_slot());
    assert!(!s.release_slot());
    s.take_slot().unwrap();
    assert_eq!(
        s.fail(SendStatus::Timeout),
        Ok(Released {
            queued: None,
            slot: true,
            awaited: true
        })
    );
    assert!(!s.release_slot());
}

#[test]
fn a_flush_is_reposted_once_per_attempt() {
    let mut s = open_awaiting();
    allowed_once(&mut s, S::flush_repost, S::flush_reposted);
    assert_eq!(s.new_attempt(), Ok(()));
    assert!(!s.flush_reposted());
    assert_eq!(s.flush_repost(), Ok(()));
}

#[test]
fn an_answer_ends_the_wait_and_keeps_the_work_requests() {
    let mut s = open_awaiting();
    s.wr_posted().unwrap();
    s.take_slot().unwrap();
    s.flush_repost().unwrap();
    assert_eq!(
        s.answer(5),
        Ok(Released {
            queued: None,
            slot: true,
            awaited: true
        })
    );
    assert_eq!(s.refs(), 1);
    assert!(!s.is_active() && !s.awaits_response() && s.flush_reposted());
    assert_eq!(s.response(), Some(&5));
    assert_eq!(s.failure(), None);
    refused(&mut s, |s| s.answer(6));
    refused(&mut s, |s| s.fail(SendStatus::Canceled));
    refused(&mut s, S::mark_extend);
    refused(&mut s, S::restart_transfer);
    assert_eq!(
        s.wr_posted(),
        Ok(()),
        "a final RMPP segment may still go out"
    );
}

#[test]
fn a_work_request_error_after_the_answer_is_recorded_once() {
    let mut s = open_awaiting();
    s.wr_posted().unwrap();
    s.answer(9).unwrap();
    let err = SendStatus::WcError(WcStatus::RemAccessErr);
    assert_eq!(s.late_error(err), Ok(()));
    refused(&mut s, |s| s.late_error(SendStatus::Flushed));
    assert_eq!(s.failure(), Some(err));
    s.wr_completed().unwrap();
    assert!(s.is_released());
    assert_eq!(s.into_outcome(), (err, Some(9)));
}

#[test]
fn a_failure_is_final_and_the_first_one_wins() {
    let mut s = S::queued(3);
    assert_eq!(
        s.fail(SendStatus::Canceled),
        Ok(Released {
            queued: Some(3),
            slot: false,
            awaited: true
        })
    );
    assert!(s.is_released() && !s.is_active() && !s.awaits_response());
    refused(&mut s, |s| s.fail(SendStatus::Timeout));
    refused(&mut s, |s| s.answer(1));
    refused(&mut s, |s| s.late_error(SendStatus::Flushed));
    refused(&mut s, S::dequeue);
    refused(&mut s, S::new_attempt);
    assert_eq!(s.failure(), Some(SendStatus::Canceled));
    assert_eq!(s.into_outcome(), (SendStatus::Canceled, None));
}

#[test]
fn a_failed_send_still_counts_its_work_requests() {
    let mut s = S::open(true, true);
    s.wr_posted().unwrap();
    s.fail(SendStatus::Flushed).unwrap();
    assert_eq!(s.refs(), 1, "the transfer and the wait are gone");
    assert!(!s.rmpp_active() && !s.end_transfer());
    assert_eq!(s.wr_posted(), Ok(()), "an RMPP ABORT may still go out");
    s.wr_completed().unwrap();
    s.wr_completed().unwrap();
    assert!(s.is_released());
    assert!(matches!(s.phase(), Phase::Failed(SendStatus::Flushed)));
}

#[test]
fn only_a_send_that_awaited_its_response_leaves_the_waiting_table() {
    let mut s = S::open(false, true);
    assert_eq!(
        s.fail(SendStatus::Canceled),
        Ok(Released {
            queued: None,
            slot: false,
            awaited: false
        })
    );
    let mut s = open_awaiting();
    assert!(s.fail(SendStatus::Timeout).is_ok_and(|r| r.awaited));
}
