//! Deterministic tests of the sans-IO engine on a virtual clock, over the
//! Loopback transport (a responder closure plays the far side) and the
//! FaultInjector (work-request errors).
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mad_agents::{
    AgentEvent, AgentId, AgentSpec, AgentState, Completion, Engine, EngineConfig, RegisterError,
    SendError, SendRequest, SendStatus,
};
use mad_core::transport::fault::FaultInjector;
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, AsyncEvent, Qp, Received, WcStatus};
use mad_core::wire::{Mad, MadStatus, Method, MgmtClass};

const MS: Duration = Duration::from_millis(1);

type Sent = Arc<Mutex<Vec<(Qp, Vec<u8>, Address)>>>;

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
            vec![Received {
                qp,
                src: Address {
                    lid: dest.lid,
                    qpn: qp.qpn(),
                    ..Address::default()
                },
                mad: response_to(mad).into(),
            }]
        },
    ));
    (lb, Far { sent, mode })
}

fn response_to(mad: &[u8]) -> Vec<u8> {
    let mut r = mad.to_vec();
    r[3] |= 0x80;
    r[3] = 0x81;
    r[64] = 0xAB;
    r
}

fn gsi_get(class: MgmtClass, version: u8) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[0] = 1;
    m[1] = class.0;
    m[2] = version;
    m[3] = Method::GET.0;
    m[16..18].copy_from_slice(&0x0012u16.to_be_bytes());
    m
}

fn perf_get() -> Vec<u8> {
    gsi_get(MgmtClass::PERF_MGT, 1)
}

fn tid_of(mad: &[u8]) -> u64 {
    Mad::new_unchecked(mad).tid()
}

fn drain(e: &mut Engine<impl mad_core::transport::Transport>) -> Vec<(AgentId, AgentEvent)> {
    std::iter::from_fn(|| e.poll_event()).collect()
}

fn completions(evs: &[(AgentId, AgentEvent)]) -> Vec<Completion> {
    evs.iter()
        .filter_map(|(_, e)| match e {
            AgentEvent::SendDone(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn engine(lb: Loopback) -> Engine<Loopback> {
    Engine::new(lb, EngineConfig::default())
}

fn perf_agent(e: &mut Engine<impl mad_core::transport::Transport>) -> AgentId {
    e.register(AgentSpec::send_only("perf", Qp::Qp1)).unwrap()
}

#[test]
fn a_response_completes_the_send_with_success_and_the_response() {
    let (lb, far) = port(5);
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let s = e
        .send(
            a,
            SendRequest::new(perf_get(), Address::gsi(7))
                .expect_response(100 * MS, 2)
                .cookie(42),
            t0,
        )
        .unwrap();
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
    let (lb, far) = port(5);
    *far.mode.lock().unwrap() = Mode::Silent;
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let s = e
        .send(
            a,
            SendRequest::new(perf_get(), Address::gsi(7)).expect_response(100 * MS, 0),
            t0,
        )
        .unwrap();
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
    let (lb, far) = port(5);
    *far.mode.lock().unwrap() = Mode::Silent;
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    e.send(
        a,
        SendRequest::new(perf_get(), Address::gsi(7)).expect_response(50 * MS, 3),
        t0,
    )
    .unwrap();
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
    let mut e = Engine::new(lb, cfg);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let tt = 100 * MS;
    // Without an explicit total: (3 + 1) x 100 ms = 400 ms.
    e.send(
        a,
        SendRequest::new(perf_get(), Address::gsi(7)).expect_response(tt, 3),
        t0,
    )
    .unwrap();
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
        SendRequest::new(perf_get(), Address::gsi(7))
            .expect_response(tt, 3)
            .total_timeout(Duration::from_secs(60)),
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
    let (lb, far) = port(5);
    *far.mode.lock().unwrap() = Mode::Silent;
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    e.send(
        a,
        SendRequest::new(perf_get(), Address::gsi(7)).expect_response(10 * MS, 0),
        t0,
    )
    .unwrap();
    e.poll(t0);
    e.poll(t0 + 10 * MS);
    assert_eq!(completions(&drain(&mut e))[0].status, SendStatus::Timeout);
    let req = far.sent.lock().unwrap()[0].1.clone();
    e.handle_recv(
        t0 + 11 * MS,
        Received {
            qp: Qp::Qp1,
            src: Address::gsi(7),
            mad: response_to(&req).into(),
        },
    )
    .unwrap();
    e.poll(t0 + 11 * MS);
    assert!(
        drain(&mut e).is_empty(),
        "the late response is not delivered"
    );
    assert_eq!(e.stats().unmatched_responses, 1);
}

#[test]
fn a_response_that_beats_the_send_completion_completes_on_the_completion() {
    let (mut lb, far) = port(5);
    *far.mode.lock().unwrap() = Mode::Silent;
    lb.set_stalled(true);
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let s = e
        .send(
            a,
            SendRequest::new(perf_get(), Address::gsi(7)).expect_response(10 * MS, 0),
            t0,
        )
        .unwrap();
    e.poll(t0);
    let mut req = perf_get();
    req[8..16].copy_from_slice(&e.send_tid(s).unwrap().to_be_bytes());
    e.handle_recv(
        t0 + MS,
        Received {
            qp: Qp::Qp1,
            src: Address::gsi(7),
            mad: response_to(&req).into(),
        },
    )
    .unwrap();
    e.poll(t0 + MS);
    assert!(
        drain(&mut e).is_empty(),
        "the work request still holds a reference"
    );
    assert!(e.is_outstanding(s));
    // Long after the response timeout: the response already counted.
    e.port_mut().transport_mut().set_stalled(false);
    e.poll(t0 + 100 * MS);
    let c = completions(&drain(&mut e));
    assert_eq!((c.len(), c[0].status), (1, SendStatus::Success));
    assert!(c[0].response.is_some());
}

#[test]
fn cancel_before_the_post_completes_completes_when_the_work_request_does() {
    let (mut lb, _far) = port(5);
    lb.set_stalled(true);
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let s = e
        .send(
            a,
            SendRequest::new(perf_get(), Address::gsi(7)).expect_response(10 * MS, 3),
            t0,
        )
        .unwrap();
    e.cancel(s).unwrap();
    assert!(
        matches!(e.cancel(s), Err(SendError::NotActive(_))),
        "cancel twice"
    );
    e.poll(t0);
    assert!(drain(&mut e).is_empty(), "its work request is still posted");
    e.port_mut().transport_mut().set_stalled(false);
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
    let (lb, far) = port(5);
    *far.mode.lock().unwrap() = Mode::Silent;
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let s = e
        .send(
            a,
            SendRequest::new(perf_get(), Address::gsi(7))
                .expect_response(Duration::from_secs(5), 3),
            t0,
        )
        .unwrap();
    e.poll(t0);
    assert!(e.poll_timeout().is_some());
    e.cancel(s).unwrap();
    let c = completions(&drain(&mut e));
    assert_eq!((c.len(), c[0].status), (1, SendStatus::Canceled));
    assert_eq!(e.poll_timeout(), None, "its timer is gone");
    let req = far.sent.lock().unwrap()[0].1.clone();
    e.handle_recv(
        t0 + MS,
        Received {
            qp: Qp::Qp1,
            src: Address::gsi(7),
            mad: response_to(&req).into(),
        },
    )
    .unwrap();
    e.poll(t0 + MS);
    assert!(drain(&mut e).is_empty());
    assert_eq!(e.stats().unmatched_responses, 1);
}

#[test]
fn modify_before_the_post_completes_sets_the_timeout_that_starts_at_completion() {
    let (mut lb, far) = port(5);
    *far.mode.lock().unwrap() = Mode::Silent;
    lb.set_stalled(true);
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let s = e
        .send(
            a,
            SendRequest::new(perf_get(), Address::gsi(7)).expect_response(10 * MS, 0),
            t0,
        )
        .unwrap();
    e.modify(s, 300 * MS, t0).unwrap();
    e.port_mut().transport_mut().set_stalled(false);
    e.poll(t0 + 20 * MS);
    assert_eq!(e.poll_timeout(), Some(t0 + 320 * MS));
    e.poll(t0 + 319 * MS);
    assert!(drain(&mut e).is_empty());
    e.poll(t0 + 320 * MS);
    assert_eq!(completions(&drain(&mut e))[0].status, SendStatus::Timeout);
}

#[test]
fn modify_while_waiting_moves_the_deadline_and_modify_to_zero_cancels() {
    let (lb, far) = port(5);
    *far.mode.lock().unwrap() = Mode::Silent;
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let s = e
        .send(
            a,
            SendRequest::new(perf_get(), Address::gsi(7)).expect_response(100 * MS, 0),
            t0,
        )
        .unwrap();
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

    let s2 = e
        .send(
            a,
            SendRequest::new(perf_get(), Address::gsi(7)).expect_response(100 * MS, 0),
            t0 + 400 * MS,
        )
        .unwrap();
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
    let mut e = Engine::new(fi, EngineConfig::default());
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let ids: Vec<_> = (0..4)
        .map(|_| {
            e.send(
                a,
                SendRequest::new(perf_get(), Address::gsi(7)).expect_response(100 * MS, 0),
                t0,
            )
            .unwrap()
        })
        .collect();
    e.port_mut().transport_mut().inner_mut().set_stalled(false);
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

#[test]
fn an_unclaimed_get_is_answered_with_status_0x000c_and_other_methods_are_dropped() {
    let (lb, far) = port(5);
    let mut e = engine(lb);
    let t0 = Instant::now();
    let mut req = perf_get();
    req[8..16].copy_from_slice(&0x1234u64.to_be_bytes());
    let src = Address {
        lid: 9,
        qpn: 1,
        pkey_index: 0,
        ..Address::default()
    };
    e.handle_recv(
        t0,
        Received {
            qp: Qp::Qp1,
            src,
            mad: req.clone().into(),
        },
    )
    .unwrap();
    let mut trap = req.clone();
    trap[3] = Method::TRAP.0;
    e.handle_recv(
        t0,
        Received {
            qp: Qp::Qp1,
            src,
            mad: trap.into(),
        },
    )
    .unwrap();
    // A directed-route SMP Get to nobody.
    let mut dr = mad_core::wire::smp::DrPath::from_hops(&[1, 2])
        .unwrap()
        .build_request(
            Method::GET,
            mad_core::wire::AttributeId::NODE_INFO,
            0,
            0x77,
            0,
        )
        .to_vec();
    dr[6] = 3; // as received at the far end
    e.handle_recv(
        t0,
        Received {
            qp: Qp::Qp0,
            src: Address::smi(0xFFFF),
            mad: dr.into(),
        },
    )
    .unwrap();
    e.poll(t0);
    e.poll(t0 + MS);
    let sent = far.sent.lock().unwrap();
    assert_eq!(
        sent.len(),
        2,
        "the Get and the DR Get are answered, the Trap is not"
    );
    let (qp, ans, dest) = sent.iter().find(|s| s.0 == Qp::Qp1).unwrap();
    let m = Mad::new_unchecked(&ans[..]);
    assert_eq!(*qp, Qp::Qp1);
    assert_eq!(m.raw_method(), 0x81);
    assert_eq!(m.status(), MadStatus::METHOD_ATTR_UNSUPPORTED);
    assert_eq!(m.tid(), 0x1234);
    assert_eq!(
        (dest.lid, dest.qpn, dest.qkey),
        (9, 1, mad_core::transport::GSI_QKEY)
    );
    let (qp, ans, _) = sent.iter().find(|s| s.0 == Qp::Qp0).unwrap();
    assert_eq!(*qp, Qp::Qp0);
    let m = Mad::new_unchecked(&ans[..]);
    assert_eq!(
        m.status().0,
        0x8000 | 0x000C,
        "D bit set for directed route"
    );
    assert_eq!(e.stats().unclaimed_requests, 3);
    assert_eq!(e.stats().unsupported_answered, 2);
}

#[test]
fn a_conflicting_registration_is_refused_naming_the_owner() {
    let (lb, _far) = port(5);
    let mut e = engine(lb);
    let pma = e
        .register(AgentSpec::requests(
            "pma",
            MgmtClass::PERF_MGT,
            1,
            &[Method::GET, Method::SET],
        ))
        .unwrap();
    let err = e
        .register(AgentSpec::requests(
            "intruder",
            MgmtClass::PERF_MGT,
            1,
            &[Method::SET],
        ))
        .unwrap_err();
    match &err {
        RegisterError::MethodInUse {
            method,
            owner,
            owner_name,
            ..
        } => {
            assert_eq!((*method, *owner, owner_name.as_str()), (2, pma, "pma"));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("\"pma\""), "{err}");
    // Other methods, another class version, send-only agents: fine.
    e.register(AgentSpec::requests(
        "trap",
        MgmtClass::PERF_MGT,
        1,
        &[Method::TRAP],
    ))
    .unwrap();
    e.register(AgentSpec::requests(
        "v2",
        MgmtClass::PERF_MGT,
        2,
        &[Method::GET],
    ))
    .unwrap();
    for i in 0..5 {
        e.register(AgentSpec::send_only(&format!("c{i}"), Qp::Qp1))
            .unwrap();
    }
    // Vendor classes: one slot per OUI.
    let v = |n: &str, oui| AgentSpec::requests(n, MgmtClass(0x32), 1, &[Method::GET]).with_oui(oui);
    e.register(v("ping", 0x1405)).unwrap();
    e.register(v("other-vendor", 0x0002c9)).unwrap();
    assert!(matches!(
        e.register(v("ping2", 0x1405)),
        Err(RegisterError::MethodInUse { .. })
    ));
    // LID-routed and directed-route SMPs are separate slots.
    e.register(AgentSpec::requests(
        "sma",
        MgmtClass::SUBN_LID_ROUTED,
        1,
        &[Method::GET],
    ))
    .unwrap();
    e.register(AgentSpec::requests(
        "sma-dr",
        MgmtClass::SUBN_DIRECTED_ROUTE,
        1,
        &[Method::GET],
    ))
    .unwrap();
    // After deregistration the methods are free again.
    e.deregister(pma).unwrap();
    assert_eq!(e.agent_state(pma), None);
    e.register(AgentSpec::requests(
        "pma2",
        MgmtClass::PERF_MGT,
        1,
        &[Method::SET],
    ))
    .unwrap();
}

#[test]
fn requests_dispatch_by_class_version_method_and_oui() {
    let (lb, _far) = port(5);
    let mut e = engine(lb);
    let get = e
        .register(AgentSpec::requests(
            "get",
            MgmtClass::PERF_MGT,
            1,
            &[Method::GET],
        ))
        .unwrap();
    let set = e
        .register(AgentSpec::requests(
            "set",
            MgmtClass::PERF_MGT,
            1,
            &[Method::SET],
        ))
        .unwrap();
    let v2 = e
        .register(AgentSpec::requests(
            "v2",
            MgmtClass::PERF_MGT,
            2,
            &[Method::GET],
        ))
        .unwrap();
    let ven = e
        .register(AgentSpec::requests("ven", MgmtClass(0x32), 1, &[Method::GET]).with_oui(0x1405))
        .unwrap();
    let t0 = Instant::now();
    let push = |e: &mut Engine<Loopback>, m: Vec<u8>| {
        e.handle_recv(
            t0,
            Received {
                qp: Qp::Qp1,
                src: Address::gsi(3),
                mad: m.into(),
            },
        )
        .unwrap();
    };
    let mut set_req = perf_get();
    set_req[3] = Method::SET.0;
    let mut vend = gsi_get(MgmtClass(0x32), 1);
    vend[37..40].copy_from_slice(&[0x00, 0x14, 0x05]);
    let mut vend_other = vend.clone();
    vend_other[39] = 0x06;
    push(&mut e, perf_get());
    push(&mut e, set_req);
    push(&mut e, gsi_get(MgmtClass::PERF_MGT, 2));
    push(&mut e, vend);
    push(&mut e, vend_other);
    e.poll(t0);
    let evs = drain(&mut e);
    let who: Vec<AgentId> = evs
        .iter()
        .filter(|(_, ev)| matches!(ev, AgentEvent::Received(_)))
        .map(|(a, _)| *a)
        .collect();
    assert_eq!(who.len(), 4, "the vendor MAD with another OUI is nobody's");
    for a in [get, set, v2, ven] {
        assert_eq!(who.iter().filter(|x| **x == a).count(), 1);
    }
    assert_eq!(e.stats().unclaimed_requests, 1);
}

#[test]
fn the_receive_queue_is_bounded_and_drops_are_counted() {
    let (lb, _far) = port(5);
    let mut e = Engine::new(
        lb,
        EngineConfig {
            recv_queue_bound: 4,
            ..EngineConfig::default()
        },
    );
    let a = e
        .register(AgentSpec::requests(
            "pma",
            MgmtClass::PERF_MGT,
            1,
            &[Method::GET],
        ))
        .unwrap();
    for _ in 0..10 {
        e.handle_recv(
            Instant::now(),
            Received {
                qp: Qp::Qp1,
                src: Address::gsi(3),
                mad: perf_get().into(),
            },
        )
        .unwrap();
    }
    e.poll(Instant::now());
    assert_eq!(drain(&mut e).len(), 4);
    let st = e.agent_stats(a).unwrap();
    assert_eq!((st.received, st.recv_dropped), (4, 6));
    assert_eq!(e.stats().recv_dropped, 6);
    // Once drained, there is room again.
    e.handle_recv(
        Instant::now(),
        Received {
            qp: Qp::Qp1,
            src: Address::gsi(3),
            mad: perf_get().into(),
        },
    )
    .unwrap();
    e.poll(Instant::now());
    assert_eq!(drain(&mut e).len(), 1);
}

#[test]
fn responses_go_to_the_sending_agent_only() {
    let (lb, _far) = port(5);
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let b = e
        .register(AgentSpec::requests(
            "pma",
            MgmtClass::PERF_MGT,
            1,
            &[Method::GET],
        ))
        .unwrap();
    let t0 = Instant::now();
    e.send(
        a,
        SendRequest::new(perf_get(), Address::gsi(7)).expect_response(MS, 0),
        t0,
    )
    .unwrap();
    e.poll(t0);
    let evs = drain(&mut e);
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].0, a);
    assert_ne!(evs[0].0, b);
}

#[test]
fn deregistration_flushes_waiting_sends_and_waits_for_posted_ones() {
    let (lb, far) = port(5);
    *far.mode.lock().unwrap() = Mode::Silent;
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let waiting = e
        .send(
            a,
            SendRequest::new(perf_get(), Address::gsi(7))
                .expect_response(Duration::from_secs(9), 0),
            t0,
        )
        .unwrap();
    e.poll(t0);
    e.port_mut().transport_mut().set_stalled(true);
    let posted = e
        .send(
            a,
            SendRequest::new(perf_get(), Address::gsi(7))
                .expect_response(Duration::from_secs(9), 0),
            t0,
        )
        .unwrap();
    let no_resp = e
        .send(a, SendRequest::new(perf_get(), Address::gsi(7)), t0)
        .unwrap();
    e.deregister(a).unwrap();
    assert_eq!(e.agent_state(a), Some(AgentState::Closing));
    assert!(matches!(
        e.send(a, SendRequest::new(perf_get(), Address::gsi(7)), t0),
        Err(SendError::UnknownAgent(_))
    ));
    let c = completions(&drain(&mut e));
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].send, c[0].status), (waiting, SendStatus::Flushed));
    assert_eq!(
        e.agent_state(a),
        Some(AgentState::Closing),
        "two work requests are posted"
    );
    e.port_mut().transport_mut().set_stalled(false);
    e.poll(t0 + MS);
    let c = completions(&drain(&mut e));
    assert_eq!(c.len(), 2);
    assert!(c.iter().all(|c| c.status == SendStatus::Flushed));
    assert!(c.iter().any(|c| c.send == posted) && c.iter().any(|c| c.send == no_resp));
    assert_eq!(e.agent_state(a), None, "gone");
    assert_eq!(e.take_reaped(), vec![a]);
    assert_eq!(e.outstanding(), 0);
    e.poll(t0 + Duration::from_secs(20));
    assert!(
        drain(&mut e).is_empty(),
        "nothing of the agent after it is gone"
    );
}

#[test]
fn one_hundred_thousand_outstanding_sends_on_one_agent_deregister_cleanly() {
    let (lb, far) = port(5);
    *far.mode.lock().unwrap() = Mode::Silent;
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let t0 = Instant::now();
    let n = 100_000usize;
    let mut ids = std::collections::HashSet::new();
    let start = Instant::now();
    for i in 0..n {
        let s = e
            .send(
                a,
                SendRequest::new(perf_get(), Address::gsi(7))
                    .expect_response(Duration::from_secs(3600), 1)
                    .cookie(i as u64),
                t0,
            )
            .unwrap();
        ids.insert(s);
        if i % 64 == 63 {
            e.poll(t0);
        }
    }
    let sends = start.elapsed();
    // Leave some work requests posted or queued at the port.
    assert_eq!(e.agent_outstanding(a), n);
    let start = Instant::now();
    e.deregister(a).unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut t = t0;
    while e.agent_state(a).is_some() {
        t += MS;
        e.poll(t);
        for c in completions(&drain(&mut e)) {
            assert_eq!(c.status, SendStatus::Flushed);
            assert!(seen.insert(c.send), "completed twice: {c:?}");
        }
    }
    let dereg = start.elapsed();
    assert_eq!(seen, ids, "every send completed exactly once");
    assert_eq!(e.outstanding(), 0);
    assert_eq!(e.poll_timeout(), None);
    eprintln!("100k sends: {sends:?} to post, {dereg:?} to deregister");
}

#[test]
fn async_events_reach_every_agent_and_a_holding_agent_delays_the_soft_reset() {
    let (lb, _far) = port(5);
    let mut e = engine(lb);
    let holder = e
        .register(AgentSpec::send_only("holder", Qp::Qp1).holding_reset())
        .unwrap();
    let other = perf_agent(&mut e);
    let t0 = Instant::now();
    e.port_mut()
        .transport_mut()
        .push_event(AsyncEvent::SmChange);
    e.poll(t0);
    let evs = drain(&mut e);
    for a in [holder, other] {
        assert!(
            evs.contains(&(a, AgentEvent::Async(AsyncEvent::SmChange))),
            "{evs:?}"
        );
    }
    e.port_mut()
        .transport_mut()
        .push_event(AsyncEvent::SoftResetRequest);
    e.poll(t0);
    let evs = drain(&mut e);
    for a in [holder, other] {
        assert!(evs.contains(&(a, AgentEvent::ResetPending)), "{evs:?}");
    }
    assert!(e.port().is_reset_pending());
    // A send made meanwhile waits, it is not lost.
    let s = e
        .send(
            other,
            SendRequest::new(perf_get(), Address::gsi(7))
                .expect_response(Duration::from_secs(1), 0),
            t0,
        )
        .unwrap();
    e.poll(t0 + MS);
    assert!(
        e.port().is_reset_pending(),
        "held off until the holder acknowledges"
    );
    assert!(drain(&mut e).is_empty());
    e.ack_reset(holder).unwrap();
    e.poll(t0 + 2 * MS);
    e.poll(t0 + 3 * MS);
    assert!(!e.port().is_reset_pending());
    let evs = drain(&mut e);
    for a in [holder, other] {
        assert!(evs.contains(&(a, AgentEvent::ResetEnd)), "{evs:?}");
    }
    let c = completions(&evs);
    assert_eq!(
        (c.len(), c[0].send, c[0].status),
        (1, s, SendStatus::Success)
    );
}
