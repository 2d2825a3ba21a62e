//! What a response must be to answer a send (engine module docs,
//! "Response matching": TID, class and source), and a work-request error
//! that comes after the response (reported, as the kernel does).
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use mad_agents::{AgentId, AgentSpec, EngineConfig, SendId, SendRequest, SendStatus, Stack};
use mad_core::transport::fault::FaultInjector;
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Grh, Qp, Received, WcStatus, PERMISSIVE_LID};
use mad_core::wire::{Method, MgmtClass};
use support::{
    answer, completions, drain, perf_get, perf_request, recording, recv_and_poll, tid_of, Sent,
};

const MS: Duration = Duration::from_millis(1);

fn engine() -> (Stack<Loopback>, Sent) {
    let (lb, sent) = recording(5, 64);
    (Stack::new(lb, EngineConfig::default()), sent)
}

fn last_sent(sent: &Sent) -> Vec<u8> {
    sent.lock().unwrap().last().unwrap().1.clone()
}

/// Sends `mad` to `to` from agent `a` at `t0`, expecting a response
/// within 100 ms, and polls so that it is posted; returns the send and the
/// MAD that went out.
fn send_and_post(
    e: &mut Stack<Loopback>,
    sent: &Sent,
    a: AgentId,
    mad: Vec<u8>,
    to: Address,
    t0: Instant,
) -> (SendId, Vec<u8>) {
    let req = SendRequest::new(mad, to).expect_response(100 * MS, 0);
    let s = e.send(a, req, t0).unwrap();
    e.poll(t0);
    (s, last_sent(sent))
}

fn from(lid: u16, qp: Qp) -> Address {
    Address {
        lid,
        qpn: qp.qpn(),
        ..Address::default()
    }
}

fn with_gid(mut a: Address, last: u8) -> Address {
    let mut gid = [0u8; 16];
    gid[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
    gid[15] = last;
    a.grh = Some(Grh {
        gid,
        hop_limit: 64,
        ..Grh::default()
    });
    a
}

fn smp(class: MgmtClass) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    mad_testkit::header::edit(&mut m, |h| {
        h.base_version = 1;
        h.mgmt_class = class;
        h.class_version = 1;
        h.method = Method::GET;
    });
    mad_testkit::header::edit(&mut m, |h| {
        h.attr_id = mad_core::wire::AttributeId(0x0011u16)
    });
    m
}

#[test]
fn a_response_from_another_lid_is_counted_and_dropped_and_the_send_keeps_waiting() {
    let (mut e, sent) = engine();
    let a = e.register(AgentSpec::send_only("perf", Qp::Qp1)).unwrap();
    let t0 = Instant::now();
    let (s, req) = send_and_post(&mut e, &sent, a, perf_get(), Address::gsi(7), t0);
    // Same TID and class, from LID 9 instead of 7.
    recv_and_poll(&mut e, t0 + MS, answer(Qp::Qp1, &req, from(9, Qp::Qp1)));
    assert!(drain(&mut e).is_empty(), "a stranger's answer completed it");
    assert_eq!(e.stats().wrong_source, 1);
    assert_eq!(e.stats().responses_matched, 0);
    assert!(e.is_outstanding(s));
    recv_and_poll(&mut e, t0 + 2 * MS, answer(Qp::Qp1, &req, from(7, Qp::Qp1)));
    let c = completions(&drain(&mut e));
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Success));
    assert_eq!(c[0].response.as_ref().unwrap().src().lid, 7);

    // The check can be turned off.
    let (lb, sent) = recording(5, 64);
    let cfg = EngineConfig {
        check_response_source: false,
        ..EngineConfig::default()
    };
    let mut e = Stack::new(lb, cfg);
    let a = e.register(AgentSpec::send_only("perf", Qp::Qp1)).unwrap();
    let (_, req) = send_and_post(&mut e, &sent, a, perf_get(), Address::gsi(7), t0);
    recv_and_poll(&mut e, t0 + MS, answer(Qp::Qp1, &req, from(9, Qp::Qp1)));
    assert_eq!(completions(&drain(&mut e))[0].status, SendStatus::Success);
}

#[test]
fn directed_route_smps_match_any_source_and_lid_routed_smps_only_their_destination() {
    let (mut e, sent) = engine();
    let a = e.register(AgentSpec::send_only("smp", Qp::Qp0)).unwrap();
    let t0 = Instant::now();
    // Directed route: the path is no address; any source answers.
    let (dr, req) = send_and_post(
        &mut e,
        &sent,
        a,
        smp(MgmtClass::SUBN_DIRECTED_ROUTE),
        Address::smi(PERMISSIVE_LID),
        t0,
    );
    recv_and_poll(&mut e, t0, answer(Qp::Qp0, &req, from(3, Qp::Qp0)));
    let c = completions(&drain(&mut e));
    assert_eq!((c[0].send, c[0].status), (dr, SendStatus::Success));
    // LID-routed to LID 4: an answer from LID 3 is not its answer.
    let (lr, req) = send_and_post(
        &mut e,
        &sent,
        a,
        smp(MgmtClass::SUBN_LID_ROUTED),
        Address::smi(4),
        t0,
    );
    for lid in [3, 4] {
        e.handle_recv(t0, answer(Qp::Qp0, &req, from(lid, Qp::Qp0)))
            .unwrap();
    }
    e.poll(t0);
    let c = completions(&drain(&mut e));
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].send, c[0].status), (lr, SendStatus::Success));
    assert_eq!(c[0].response.as_ref().unwrap().src().lid, 4);
    assert_eq!(e.stats().wrong_source, 1);
}

#[test]
fn with_a_grh_the_source_gid_must_be_the_destination_gid() {
    let (mut e, sent) = engine();
    let a = e.register(AgentSpec::send_only("perf", Qp::Qp1)).unwrap();
    let t0 = Instant::now();
    let (s, req) = send_and_post(
        &mut e,
        &sent,
        a,
        perf_get(),
        with_gid(Address::gsi(7), 0x21),
        t0,
    );
    for bad in [
        with_gid(from(7, Qp::Qp1), 0x22), // another GID, same LID
        from(7, Qp::Qp1),                 // no GRH on the answer
    ] {
        e.handle_recv(t0, answer(Qp::Qp1, &req, bad)).unwrap();
    }
    e.poll(t0);
    assert!(drain(&mut e).is_empty());
    assert_eq!(e.stats().wrong_source, 2);
    // The GID decides, not the LID (a router rewrites it).
    recv_and_poll(
        &mut e,
        t0,
        answer(Qp::Qp1, &req, with_gid(from(1, Qp::Qp1), 0x21)),
    );
    let c = completions(&drain(&mut e));
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Success));

    // Sent without a GRH: an answer with one is not its answer.
    let (s, req) = send_and_post(&mut e, &sent, a, perf_get(), Address::gsi(7), t0);
    recv_and_poll(
        &mut e,
        t0,
        answer(Qp::Qp1, &req, with_gid(from(7, Qp::Qp1), 0x21)),
    );
    assert!(drain(&mut e).is_empty());
    assert_eq!(e.stats().wrong_source, 3);
    assert!(e.is_outstanding(s));
}

/// A vendor range-2 RMPP message of one segment (Active, First, Last).
fn one_segment_rmpp() -> Vec<u8> {
    let mut m = vec![0u8; 256];
    mad_testkit::header::edit(&mut m, |h| {
        h.base_version = 1;
        h.mgmt_class = mad_core::wire::MgmtClass(0x32);
        h.class_version = 1;
        h.method = Method::SEND;
    });
    m[37..40].copy_from_slice(&[0x00, 0x14, 0x05]);
    m[24] = 1; // RMPP version
    m[25] = 1; // DATA
    m[26] = 0x01; // Active
    m
}

/// The ACK a receiver at `src` sends for segment `seg`.
fn ack(seg_mad: &[u8], seg: u32, wl: u32, src: u16) -> Received {
    let mut m = seg_mad.to_vec();
    mad_testkit::header::edit(&mut m, |h| h.response = !h.response);
    m[25] = 2; // ACK
    m[26] = 0x01;
    m[27] = 0;
    m[28..32].copy_from_slice(&seg.to_be_bytes());
    m[32..36].copy_from_slice(&wl.to_be_bytes());
    Received {
        qp: Qp::Qp1,
        src: from(src, Qp::Qp1),
        mad: m.into(),
    }
}

#[test]
fn an_rmpp_ack_from_another_lid_does_not_move_the_transfer() {
    let (mut e, sent) = engine();
    let a = e
        .register(
            AgentSpec::requests("v", MgmtClass(0x32), 1, &[])
                .with_oui(0x1405)
                .with_rmpp(),
        )
        .unwrap();
    let t0 = Instant::now();
    let s = e
        .send(a, SendRequest::new(one_segment_rmpp(), Address::gsi(2)), t0)
        .unwrap();
    e.poll(t0);
    let seg = last_sent(&sent);
    assert_eq!(tid_of(&seg), e.send_tid(s).unwrap());
    recv_and_poll(&mut e, t0 + MS, ack(&seg, 1, 1, 9));
    assert!(
        drain(&mut e).is_empty(),
        "a stranger's ACK ended the transfer"
    );
    assert_eq!(e.stats().wrong_source, 1);
    recv_and_poll(&mut e, t0 + 2 * MS, ack(&seg, 1, 1, 2));
    let c = completions(&drain(&mut e));
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Success));
}

#[test]
fn a_work_request_error_after_the_response_is_reported_with_the_response() {
    let (mut lb, sent) = recording(5, 64);
    lb.set_stalled(true);
    let fi = FaultInjector::new(lb, 7);
    let mut e = Stack::new(fi, EngineConfig::default());
    let a = e.register(AgentSpec::send_only("perf", Qp::Qp1)).unwrap();
    let t0 = Instant::now();
    // Completions come in order: the failing send completes only after
    // this one, which the stalled device holds.
    let first = e
        .send(a, SendRequest::new(perf_get(), Address::gsi(7)), t0)
        .unwrap();
    e.transport_mut().fail_next_send(WcStatus::LocProtErr);
    let s = e.send(a, perf_request(100 * MS, 0), t0).unwrap();
    e.poll(t0);
    assert!(sent.lock().unwrap().is_empty(), "still in the send queue");
    // The response beats the work completion.
    let mut req = perf_get();
    mad_testkit::header::edit(&mut req, |h| h.tid = e.send_tid(s).unwrap());
    e.handle_recv(t0 + MS, answer(Qp::Qp1, &req, from(7, Qp::Qp1)))
        .unwrap();
    e.poll(t0 + MS);
    assert!(
        drain(&mut e).is_empty(),
        "the work request holds a reference"
    );
    assert_eq!(e.stats().responses_matched, 1);
    // Then the work request fails: that is what the send reports, and the
    // response that arrived comes with it.
    e.transport_mut().inner_mut().set_stalled(false);
    for i in 2..10 {
        e.poll(t0 + i * MS);
    }
    let c = completions(&drain(&mut e));
    assert_eq!(c.len(), 2);
    assert_eq!((c[0].send, c[0].status), (first, SendStatus::Success));
    assert_eq!(
        (c[1].send, c[1].status),
        (s, SendStatus::WcError(WcStatus::LocProtErr))
    );
    assert_eq!(c[1].response.as_ref().unwrap().tid(), c[1].tid);
    assert_eq!(e.stats().late_wc_errors, 1);
    assert_eq!(e.agent_stats(a).unwrap().failed, 1);
    assert_eq!(e.outstanding(), 0);
}
