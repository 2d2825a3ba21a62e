//! Deterministic tests of the sans-IO engine on a virtual clock, over the
//! Loopback transport (a responder closure plays the far side) and the
//! FaultInjector (work-request errors).
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mad_agents::{
    AgentEvent, AgentId, AgentSpec, AgentState, EngineConfig, RegisterError, SendError,
    SendRequest, SendStatus, Stack,
};
use mad_core::transport::fault::FaultInjector;
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, AsyncEvent, Qp, Received, WcStatus};
use mad_core::wire::{AttributeId, Mad, MadStatus, Method, MgmtClass};

#[path = "../support/mod.rs"]
mod support;

mod dispatch;

use support::{
    completions, drain, gsi_from, perf_get, perf_request, perf_requests, recv_and_poll, tid_of,
    Sent,
};

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

/// What the far side does with a request.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Answer,
    Silent,
}

struct Far {
    sent: Sent,
    mode: Arc<Mutex<Mode>>,
}

/// A loopback port whose far side records every MAD and answers requests
/// with GetResp (same TID) while in `Mode::Answer`.
fn port(lid: u16) -> (Loopback, Far) {
    let sent: Sent = Arc::default();
    let mode = Arc::new(Mutex::new(Mode::Answer));
    let (s2, m2) = (sent.clone(), mode.clone());
    let lb = Loopback::new(Loopback::attrs("lb0", 1, lid), 64).with_responder(Box::new(
        move |qp, mad: &[u8], dest: &Address| {
            s2.lock().unwrap().push((qp, mad.to_vec(), *dest));
            let m = Mad::new_unchecked(mad);
            if *m2.lock().unwrap() == Mode::Silent || m.is_response() {
                return Vec::new();
            }
            vec![mad_testkit::far::from_dest(
                qp,
                dest,
                qp.qpn(),
                response_to(mad),
            )]
        },
    ));
    (lb, Far { sent, mode })
}

/// An engine on [`port`]`(5)` with a send-only PerfMgt agent: the far
/// side in `mode`, the loopback's completions held while `stalled`; and
/// the start of virtual time.
fn rig(mode: Mode, stalled: bool) -> (Stack<Loopback>, Far, AgentId, Instant) {
    let (mut lb, far) = port(5);
    *far.mode.lock().unwrap() = mode;
    lb.set_stalled(stalled);
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    (e, far, a, Instant::now())
}

fn response_to(mad: &[u8]) -> Vec<u8> {
    let mut r = mad.to_vec();
    mad_testkit::header::edit(&mut r, |h| h.response = true);
    mad_testkit::header::edit(&mut r, |h| {
        h.method = mad_core::wire::Method::GET;
        h.response = true;
    });
    r[64] = 0xAB;
    r
}

fn gsi_get(class: MgmtClass, version: u8) -> Vec<u8> {
    mad_testkit::MadBuilder::new(class, version, Method::GET, AttributeId(0x0012)).to_vec()
}

fn engine(lb: Loopback) -> Stack<Loopback> {
    Stack::new(lb, EngineConfig::default())
}

fn perf_agent(e: &mut Stack<impl mad_core::transport::Transport>) -> AgentId {
    e.register(AgentSpec::send_only("perf", Qp::Qp1)).unwrap()
}

#[test]
fn a_response_completes_the_send_with_success_and_the_response() {
    let (mut e, far, a, t0) = rig(Mode::Answer, false);
    let s = e.send(a, perf_request(100 * MS, 2).cookie(42), t0).unwrap();
    assert!(e.is_outstanding(s));
    e.poll(t0);
    let evs = drain(&mut e);
    let c = completions(&evs);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].send, s);
    assert_eq!(c[0].status, SendStatus::Success);
    assert_eq!(c[0].cookie, 42);
    assert_eq!(c[0].retries, 0);
    let resp = c[0].response.as_ref().unwrap();
    assert_eq!(resp.tid(), c[0].tid);
    assert_eq!(resp.bytes()[64], 0xAB);
    assert_eq!(e.outstanding(), 0);
    // The TID carries the agent's id in bits 47..32 and nothing above.
    let sent_tid = tid_of(&far.sent.lock().unwrap()[0].1);
    assert_eq!(sent_tid, c[0].tid);
    assert_eq!(sent_tid >> 48, 0);
    assert_eq!(
        ((sent_tid >> 32) & 0xFFFF) as u16,
        e.agent_tid_bits(a).unwrap()
    );
}

#[test]
fn the_timeout_fires_exactly_at_its_deadline() {
    let (mut e, _far, a, t0) = rig(Mode::Silent, false);
    let s = e.send(a, perf_request(100 * MS, 0), t0).unwrap();
    // The timer starts when the work request completes.
    assert_eq!(e.poll_timeout(), None);
    e.poll(t0);
    assert_eq!(e.poll_timeout(), Some(t0 + 100 * MS));
    e.poll(t0 + 99 * MS);
    assert!(drain(&mut e).is_empty(), "nothing before the deadline");
    e.poll(t0 + 100 * MS);
    let c = completions(&drain(&mut e));
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Timeout));
    assert_eq!(e.outstanding(), 0);
    assert_eq!(e.poll_timeout(), None);
}

#[test]
fn retries_repost_the_same_mad_with_the_same_tid_and_stop_at_the_limit() {
    let (mut e, far, a, t0) = rig(Mode::Silent, false);
    e.send(a, perf_request(50 * MS, 3), t0).unwrap();
    let mut t = t0;
    let mut done = Vec::new();
    for step in 0..=40 {
        t = t0 + step * 5 * MS;
        e.poll(t);
        done.extend(completions(&drain(&mut e)));
        // Each repost happens exactly at 50 ms multiples.
        let n = far.sent.lock().unwrap().len() as u32;
        assert_eq!(n, (step * 5 / 50 + 1).min(4), "at {} ms", step * 5);
    }
    let sent = far.sent.lock().unwrap();
    assert_eq!(sent.len(), 4, "1 send + 3 retries");
    assert!(
        sent.iter().all(|(_, m, _)| m == &sent[0].1),
        "same MAD, same TID"
    );
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, SendStatus::Timeout);
    assert_eq!(done[0].retries, 3);
    assert_eq!(e.stats().retries, 3);
    let _ = t;
}

#[test]
fn backoff_doubles_after_the_linear_retries_and_the_absolute_deadline_cuts_it() {
    let (lb, far) = port(5);
    *far.mode.lock().unwrap() = Mode::Silent;
    let cfg = EngineConfig {
        linear_retries: 1,
        ..EngineConfig::default()
    };
    let mut e = Stack::new(lb, cfg);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let tt = 100 * MS;
    // Without an explicit total: (3 + 1) x 100 ms = 400 ms.
    e.send(a, perf_request(tt, 3), t0).unwrap();
    e.poll(t0);
    assert_eq!(e.poll_timeout(), Some(t0 + tt));
    e.poll(t0 + tt); // retry 1, then waits 2T
    assert_eq!(e.poll_timeout(), Some(t0 + 3 * tt));
    e.poll(t0 + 3 * tt); // retry 2, would wait 4T but the deadline is 4T
    assert_eq!(e.poll_timeout(), Some(t0 + 4 * tt));
    e.poll(t0 + 4 * tt);
    let c = completions(&drain(&mut e));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, SendStatus::Timeout);
    assert_eq!(
        c[0].retries, 2,
        "the absolute deadline ended it before retry 3"
    );
    assert_eq!(far.sent.lock().unwrap().len(), 3);

    // With a generous total the doubling goes on: T, 2T, 4T, 8T.
    far.sent.lock().unwrap().clear();
    let t1 = t0 + Duration::from_secs(10);
    e.send(
        a,
        perf_request(tt, 3).total_timeout(Duration::from_secs(60)),
        t1,
    )
    .unwrap();
    e.poll(t1);
    let mut at = t1;
    let mut waits = Vec::new();
    while let Some(d) = e.poll_timeout() {
        waits.push((d - at).as_millis());
        at = d;
        e.poll(d);
    }
    assert_eq!(waits, vec![100, 200, 400, 800]);
    assert_eq!(far.sent.lock().unwrap().len(), 4);
}

#[test]
fn a_response_after_the_timeout_is_counted_and_dropped() {
    let (mut e, far, a, t0) = rig(Mode::Silent, false);
    e.send(a, perf_request(10 * MS, 0), t0).unwrap();
    e.poll(t0);
    e.poll(t0 + 10 * MS);
    assert_eq!(completions(&drain(&mut e))[0].status, SendStatus::Timeout);
    let req = far.sent.lock().unwrap()[0].1.clone();
    recv_and_poll(&mut e, t0 + 11 * MS, gsi_from(7, response_to(&req)));
    assert!(
        drain(&mut e).is_empty(),
        "the late response is not delivered"
    );
    assert_eq!(e.stats().unmatched_responses, 1);
}

#[test]
fn a_response_that_beats_the_send_completion_completes_on_the_completion() {
    let (mut e, _far, a, t0) = rig(Mode::Silent, true);
    let s = e.send(a, perf_request(10 * MS, 0), t0).unwrap();
    e.poll(t0);
    let mut req = perf_get();
    mad_testkit::header::edit(&mut req, |h| h.tid = e.send_tid(s).unwrap());
    recv_and_poll(&mut e, t0 + MS, gsi_from(7, response_to(&req)));
    assert!(
        drain(&mut e).is_empty(),
        "the work request still holds a reference"
    );
    assert!(e.is_outstanding(s));
    // Long after the response timeout: the response already counted.
    e.transport_mut().set_stalled(false);
    e.poll(t0 + 100 * MS);
    let c = completions(&drain(&mut e));
    assert_eq!((c.len(), c[0].status), (1, SendStatus::Success));
    assert!(c[0].response.is_some());
}

#[test]
fn cancel_before_the_post_completes_completes_when_the_work_request_does() {
    let (mut e, _far, a, t0) = rig(Mode::Answer, true);
    let s = e.send(a, perf_request(10 * MS, 3), t0).unwrap();
    e.cancel(s).unwrap();
    assert!(
        matches!(e.cancel(s), Err(SendError::NotActive(_))),
        "cancel twice"
    );
    e.poll(t0);
    assert!(drain(&mut e).is_empty(), "its work request is still posted");
    e.transport_mut().set_stalled(false);
    e.poll(t0 + MS);
    let evs = drain(&mut e);
    let c = completions(&evs);
    assert_eq!(c.len(), 1, "exactly once: {evs:?}");
    assert_eq!(c[0].status, SendStatus::Canceled);
    assert!(
        c[0].response.is_none(),
        "the answer to a canceled send is not delivered"
    );
    assert_eq!(
        e.stats().unmatched_responses,
        1,
        "the far side answered: dropped"
    );
    assert!(matches!(e.cancel(s), Err(SendError::UnknownSend(_))));
}

#[test]
fn cancel_while_waiting_for_the_response_completes_at_once_and_a_later_answer_is_dropped() {
    let (mut e, far, a, t0) = rig(Mode::Silent, false);
    let s = e.send(a, perf_request(5 * SEC, 3), t0).unwrap();
    e.poll(t0);
    assert!(e.poll_timeout().is_some());
    e.cancel(s).unwrap();
    let c = completions(&drain(&mut e));
    assert_eq!((c.len(), c[0].status), (1, SendStatus::Canceled));
    assert_eq!(e.poll_timeout(), None, "its timer is gone");
    let req = far.sent.lock().unwrap()[0].1.clone();
    recv_and_poll(&mut e, t0 + MS, gsi_from(7, response_to(&req)));
    assert!(drain(&mut e).is_empty());
    assert_eq!(e.stats().unmatched_responses, 1);
}

#[test]
fn modify_before_the_post_completes_sets_the_timeout_that_starts_at_completion() {
    let (mut e, _far, a, t0) = rig(Mode::Silent, true);
    let s = e.send(a, perf_request(10 * MS, 0), t0).unwrap();
    e.modify(s, 300 * MS, t0).unwrap();
    e.transport_mut().set_stalled(false);
    e.poll(t0 + 20 * MS);
    assert_eq!(e.poll_timeout(), Some(t0 + 320 * MS));
    e.poll(t0 + 319 * MS);
    assert!(drain(&mut e).is_empty());
    e.poll(t0 + 320 * MS);
    assert_eq!(completions(&drain(&mut e))[0].status, SendStatus::Timeout);
}

#[test]
fn modify_while_waiting_moves_the_deadline_and_modify_to_zero_cancels() {
    let (mut e, _far, a, t0) = rig(Mode::Silent, false);
    let s = e.send(a, perf_request(100 * MS, 0), t0).unwrap();
    e.poll(t0);
    e.modify(s, 500 * MS, t0 + 50 * MS).unwrap();
    assert_eq!(e.poll_timeout(), Some(t0 + 550 * MS));
    e.poll(t0 + 200 * MS);
    assert!(
        drain(&mut e).is_empty(),
        "the old deadline no longer applies"
    );
    e.modify(s, 20 * MS, t0 + 300 * MS).unwrap();
    assert_eq!(e.poll_timeout(), Some(t0 + 320 * MS));
    e.poll(t0 + 320 * MS);
    assert_eq!(completions(&drain(&mut e))[0].status, SendStatus::Timeout);

    let s2 = e.send(a, perf_request(100 * MS, 0), t0 + 400 * MS).unwrap();
    e.poll(t0 + 400 * MS);
    e.modify(s2, Duration::ZERO, t0 + 400 * MS).unwrap();
    assert_eq!(completions(&drain(&mut e))[0].status, SendStatus::Canceled);
    // A send that expects no response has no timeout to change.
    let (mut lb2, _f) = port(6);
    lb2.set_stalled(true);
    let mut e2 = engine(lb2);
    let a2 = perf_agent(&mut e2);
    let s3 = e2
        .send(a2, SendRequest::new(perf_get(), Address::gsi(7)), t0)
        .unwrap();
    assert!(matches!(
        e2.modify(s3, MS, t0),
        Err(SendError::NotWaiting(_))
    ));
}

#[test]
fn a_work_request_error_completes_that_send_and_the_flushed_ones_behind_it_are_reposted_once() {
    let (mut lb, far) = port(5);
    lb.set_stalled(true);
    let mut fi = FaultInjector::new(lb, 7);
    fi.fail_next_send(WcStatus::GeneralErr);
    let mut e = Stack::new(fi, EngineConfig::default());
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let ids: Vec<_> = (0..4)
        .map(|_| e.send(a, perf_request(100 * MS, 0), t0).unwrap())
        .collect();
    e.transport_mut().inner_mut().set_stalled(false);
    for i in 0..10 {
        e.poll(t0 + i * MS);
    }
    let c = completions(&drain(&mut e));
    assert_eq!(c.len(), 4);
    let status_of = |id| c.iter().find(|c| c.send == id).unwrap().status;
    assert_eq!(status_of(ids[0]), SendStatus::WcError(WcStatus::GeneralErr));
    for id in &ids[1..] {
        assert_eq!(
            status_of(*id),
            SendStatus::Success,
            "flushed, reposted, answered"
        );
    }
    assert_eq!(e.stats().flush_reposts, 3);
    assert_eq!(far.sent.lock().unwrap().len(), 3);
    assert_eq!(e.outstanding(), 0);
}
