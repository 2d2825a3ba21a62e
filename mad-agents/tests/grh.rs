//! GRH-correct agent layer (issue 12 item 2) and hostile RMPP peers
//! (issue 13): the engine on a RoCE-like port — one that refuses, as
//! `umad_send` does with EIO on RoCE, every post that carries no GRH —
//! facing peers at LID 0 told apart only by their GIDs. The peers are
//! played by the test with `mad_rmpp` senders and receivers, as the
//! kernel's `mad_rmpp.c` would behave, or worse. Virtual clock.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mad_agents::{AgentEvent, AgentId, AgentSpec, EngineConfig, SendRequest, SendStatus, Stack};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Grh, Qp, Received, TransportError, WcStatus, WrId, GSI_QKEY};
use mad_core::wire::rmpp::{RmppStatus, RmppType};
use mad_core::wire::{Method, MgmtClass, SA_DATA_OFFSET, VENDOR_DATA_OFFSET};
use mad_rmpp::segment::{header, read_header, write_header, FLAG_ACTIVE};
use mad_rmpp::{Output, ReceiverConfig, ReceiverTable, SendEvent, Sender, SenderConfig};
use mad_testkit::{Hooks, Wrapped};
use support::{completions, drain, recording, with_receiver, Sent};

const MS: Duration = Duration::from_millis(1);
const VENDOR: MgmtClass = MgmtClass(0x32);
const OUI: u32 = 0x00_1405;

/// Refuses posts the way a RoCE port does: without a GRH (always), or
/// every post once `refuse_all` is set. No descriptor.
struct Roce {
    refuse_all: Arc<AtomicBool>,
}

impl Hooks for Roce {
    fn send(&mut self, _: Qp, _: &[u8], dest: &Address) -> Option<Result<WrId, TransportError>> {
        if dest.grh.is_none() || self.refuse_all.load(Ordering::SeqCst) {
            return Some(Err(TransportError::Io {
                context: "umad_send on roce0:1".into(),
                source: std::io::Error::from_raw_os_error(5), // EIO
            }));
        }
        None
    }
    fn raw_fd(&self) -> Option<Option<std::os::fd::RawFd>> {
        Some(None)
    }
}

/// A Loopback that refuses posts the way a RoCE port does ([`Roce`]).
type RoceLike = Wrapped<Loopback, Roce>;

/// The engine under test on a RoCE-like port at LID 0, what it sent, and
/// the switch that makes the port refuse everything.
fn roce_engine() -> (Stack<RoceLike>, Sent, Arc<AtomicBool>) {
    roce_engine_with(EngineConfig::default())
}

fn roce_engine_with(cfg: EngineConfig) -> (Stack<RoceLike>, Sent, Arc<AtomicBool>) {
    let (lb, sent) = recording(0, 64);
    let refuse_all = Arc::new(AtomicBool::new(false));
    let t = Wrapped::new(
        lb,
        Roce {
            refuse_all: refuse_all.clone(),
        },
    );
    (Stack::new(t, cfg), sent, refuse_all)
}

/// A RoCE peer: QP1 at LID 0 with a GRH whose GID ends in `last`, as the
/// engine sees its MADs arrive.
fn roce(last: u8) -> Address {
    let mut gid = [0u8; 16];
    gid[..2].copy_from_slice(&[0xfe, 0x80]);
    gid[15] = last;
    Address {
        lid: 0,
        qpn: 1,
        qkey: GSI_QKEY,
        grh: Some(Grh {
            gid,
            hop_limit: 1,
            traffic_class: 0,
            flow_label: 0,
            sgid_index: 0,
        }),
        ..Address::default()
    }
}

fn gid_of(a: &Address) -> Option<u8> {
    a.grh.map(|g| g.gid[15])
}

fn vendor_agent(e: &mut Stack<RoceLike>, methods: &[Method]) -> AgentId {
    e.register(
        AgentSpec::requests("vendor", VENDOR, 1, methods)
            .with_oui(OUI)
            .with_rmpp(),
    )
    .unwrap()
}

/// A vendor range-2 header (40 bytes) with `method` and `tid`.
fn vendor_header(method: Method, tid: u64) -> Vec<u8> {
    let mut m = vec![0u8; VENDOR_DATA_OFFSET];
    mad_testkit::header::edit(&mut m, |h| {
        h.base_version = 1;
        h.mgmt_class = VENDOR;
        h.class_version = 1;
        mad_testkit::header::set_method_byte(h, method.0); // a response bit included
        h.tid = tid;
    });
    m[37..40].copy_from_slice(&OUI.to_be_bytes()[1..]);
    m
}

fn payload(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(7) ^ seed).collect()
}

/// The MADs the engine sent since the last call.
fn take_sent(sent: &Sent) -> Vec<(Qp, Vec<u8>, Address)> {
    std::mem::take(&mut *sent.lock().unwrap())
}

fn push(e: &mut Stack<RoceLike>, now: Instant, src: Address, mad: &[u8]) {
    e.handle_recv(
        now,
        Received {
            qp: Qp::Qp1,
            src,
            mad: mad.into(),
        },
    )
    .unwrap();
}

fn rmpp_header(mad: &[u8]) -> (RmppType, RmppStatus, u32, u32) {
    let h = read_header(mad).unwrap();
    (h.rmpp_type, h.status, h.data1, h.data2)
}

/// A control MAD (ACK / STOP / ABORT) on `template`'s vendor header (the
/// OUI included: requests are dispatched by it).
fn control(template: &[u8], rtype: RmppType, st: RmppStatus, d1: u32, d2: u32) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[..VENDOR_DATA_OFFSET].copy_from_slice(&template[..VENDOR_DATA_OFFSET]);
    write_header(&header(rtype, 0x1F, FLAG_ACTIVE, st, d1, d2), &mut m);
    m
}

// ----- issue 12: GRH -----

#[test]
fn two_kernel_senders_at_lid_0_with_different_gids_and_the_same_tid_are_delivered_and_acked_at_their_gids(
) {
    let (mut e, sent, _) = roce_engine();
    let agent = vendor_agent(&mut e, &[Method::SEND]);
    let t0 = Instant::now();
    let peers = [roce(1), roce(2)];
    let data = [payload(3000, 0x11), payload(2500, 0x22)];
    let mut tx: Vec<Sender> = data
        .iter()
        .map(|d| {
            Sender::new(
                &vendor_header(Method::SEND, 0x77),
                d,
                SenderConfig::default(),
                t0,
            )
            .unwrap()
        })
        .collect();
    let mut acks = [0usize; 2];
    for step in 0..200u32 {
        let now = t0 + step * MS;
        // Both peers send whatever their windows allow, interleaved.
        let segs: Vec<Vec<Vec<u8>>> = tx
            .iter_mut()
            .map(|t| std::iter::from_fn(|| t.poll_transmit(now)).collect())
            .collect();
        for i in 0..segs.iter().map(Vec::len).max().unwrap_or(0) {
            for (p, s) in segs.iter().enumerate() {
                if let Some(m) = s.get(i) {
                    push(&mut e, now, peers[p], m);
                }
            }
        }
        e.poll(now);
        for (_, mad, dest) in take_sent(&sent) {
            let p = usize::from(gid_of(&dest).expect("an ACK without a GRH") - 1);
            assert_eq!(dest.qkey, GSI_QKEY);
            assert_eq!(rmpp_header(&mad).0, RmppType::ACK);
            acks[p] += 1;
            tx[p].handle_reply(&mad, now);
        }
        if tx.iter().all(Sender::is_finished) {
            break;
        }
    }
    for t in &mut tx {
        assert_eq!(
            t.poll_event(),
            Some(SendEvent::Finished(mad_rmpp::Outcome::Success))
        );
    }
    assert!(acks[0] > 0 && acks[1] > 0, "{acks:?}");
    let mut got: Vec<(u8, Vec<u8>)> = drain(&mut e)
        .into_iter()
        .filter_map(|(who, ev)| match ev {
            AgentEvent::Received(m) => {
                assert_eq!(who, agent);
                assert_eq!(m.src().lid, 0);
                Some((gid_of(m.src()).unwrap(), m.bytes().to_vec()))
            }
            _ => None,
        })
        .collect();
    got.sort();
    assert_eq!(got.len(), 2);
    for (i, (gid, bytes)) in got.iter().enumerate() {
        assert_eq!(usize::from(*gid), i + 1);
        assert_eq!(&bytes[VENDOR_DATA_OFFSET..], &data[i][..], "peer {gid}");
    }
    assert_eq!(e.stats().post_failures, 0);
}

#[test]
fn an_rmpp_abort_and_an_unsupported_answer_go_back_with_the_request_grh() {
    let (mut e, sent, _) = roce_engine();
    vendor_agent(&mut e, &[Method::SEND]);
    let t0 = Instant::now();
    // Segment 1 without the First flag: ABORT(BAD_SEG) to its sender.
    let mut bad = vendor_header(Method::SEND, 5);
    bad.resize(256, 0);
    write_header(
        &header(RmppType::DATA, 0x1F, FLAG_ACTIVE, RmppStatus::SUCCESS, 1, 0),
        &mut bad,
    );
    push(&mut e, t0, roce(4), &bad);
    // A Get nobody owns: GetResp(0x000C) to its sender.
    let mut get = vec![0u8; 256];
    mad_testkit::header::edit(&mut get, |h| {
        h.base_version = 1;
        h.mgmt_class = MgmtClass::PERF_MGT;
        h.class_version = 1;
        h.method = Method::GET;
    });
    push(&mut e, t0, roce(9), &get);
    e.poll(t0);
    // What a poll posts goes out at the next one.
    e.poll(t0 + MS);
    let out = take_sent(&sent);
    assert_eq!(out.len(), 2, "{out:?}");
    let class_of = |m: &[u8]| mad_testkit::header::of(m).mgmt_class;
    let abort = out.iter().find(|(_, m, _)| class_of(m) == VENDOR).unwrap();
    let h = rmpp_header(&abort.1);
    assert_eq!((h.0, h.1), (RmppType::ABORT, RmppStatus::BAD_SEG));
    assert_eq!(abort.2.grh, roce(4).grh);
    assert_eq!(abort.2.qkey, GSI_QKEY);
    let answer = out
        .iter()
        .find(|(_, m, _)| class_of(m) == MgmtClass::PERF_MGT)
        .unwrap();
    assert_eq!(answer.2.grh, roce(9).grh);
    assert_eq!(e.stats().unsupported_answered, 1);
    assert_eq!(e.stats().post_failures, 0);
}

#[test]
fn a_refused_segment_post_fails_the_send_once_and_every_refusal_is_counted() {
    let (mut e, sent, refuse_all) = roce_engine();
    let agent = vendor_agent(&mut e, &[Method::SEND]);
    let t0 = Instant::now();
    let mut msg = vendor_header(Method::SEND, 0);
    msg.extend_from_slice(&payload(2000, 3));
    let s = e.send(agent, SendRequest::new(msg, roce(5)), t0).unwrap();
    e.poll(t0);
    let opening = take_sent(&sent);
    assert_eq!(opening.len(), 1, "window of 1");
    // The port starts refusing; the peer opens the window.
    refuse_all.store(true, Ordering::SeqCst);
    push(
        &mut e,
        t0 + MS,
        roce(5),
        &control(&opening[0].1, RmppType::ACK, RmppStatus::SUCCESS, 1, 65),
    );
    let mut done = Vec::new();
    for i in 1..50u32 {
        e.poll(t0 + i * MS);
        done.extend(completions(&drain(&mut e)));
    }
    assert_eq!(done.len(), 1, "completes exactly once: {done:?}");
    assert_eq!(done[0].send, s);
    assert_eq!(done[0].status, SendStatus::WcError(WcStatus::LocQpOpErr));
    assert_eq!(e.stats().post_failures, 1);
    assert_eq!(e.agent_stats(agent).unwrap().post_failures, 1);
    // The engine's own posts count too: an ACK to a peer without a GRH is
    // refused by this port (what went unseen against the kernel).
    refuse_all.store(false, Ordering::SeqCst);
    let mut tx = Sender::new(
        &vendor_header(Method::SEND, 9),
        &payload(500, 1),
        SenderConfig::default(),
        t0,
    )
    .unwrap();
    push(
        &mut e,
        t0 + 60 * MS,
        Address::gsi(0),
        &tx.poll_transmit(t0).unwrap(),
    );
    e.poll(t0 + 60 * MS);
    assert!(take_sent(&sent).is_empty());
    assert_eq!(e.stats().post_failures, 2);
    assert_eq!(e.agent_stats(agent).unwrap().post_failures, 2);
}

/// An SA GetTable request from `src`'s point of view, TID `tid`.
fn get_table(tid: u64) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    mad_testkit::header::edit(&mut m, |h| {
        h.base_version = 1;
        h.mgmt_class = MgmtClass::SUBN_ADM;
        h.class_version = 2;
        h.method = Method::GET_TABLE;
    });
    mad_testkit::header::edit(&mut m, |h| h.tid = tid);
    m
}

#[test]
fn rmpp_responses_to_two_requesters_using_the_same_tid_both_complete() {
    let (mut e, sent, _) = roce_engine();
    let sa = e
        .register(
            AgentSpec::requests("sa", MgmtClass::SUBN_ADM, 2, &[Method::GET_TABLE]).with_rmpp(),
        )
        .unwrap();
    let t0 = Instant::now();
    let peers = [roce(1), roce(2)];
    for p in &peers {
        push(&mut e, t0, *p, &get_table(0x4242));
    }
    e.poll(t0);
    let mut sends = Vec::new();
    for (who, ev) in drain(&mut e) {
        if let AgentEvent::Received(req) = ev {
            let mut resp = req.bytes()[..SA_DATA_OFFSET].to_vec();
            mad_testkit::header::edit(&mut resp, |h| {
                h.method = mad_core::wire::Method::GET_TABLE;
                h.response = true;
            });
            resp.extend_from_slice(&payload(4000, gid_of(req.src()).unwrap()));
            let dest = req.reply_address();
            sends.push(e.send(who, SendRequest::new(resp, dest), t0).unwrap());
        }
    }
    assert_eq!(sends.len(), 2, "the second response was refused");
    // Each requester reassembles its own response, as the kernel would.
    let mut rx: Vec<ReceiverTable> = (0..2)
        .map(|_| ReceiverTable::new(ReceiverConfig::default()))
        .collect();
    let mut delivered: Vec<Option<Vec<u8>>> = vec![None, None];
    let mut done = Vec::new();
    for step in 1..300u32 {
        let now = t0 + step * MS;
        e.poll(now);
        done.extend(completions(&drain(&mut e)));
        for (_, mad, dest) in take_sent(&sent) {
            let p = usize::from(gid_of(&dest).unwrap() - 1);
            // The engine's segments arrive from its own address (LID 0,
            // its GID); what the requester sends back goes to it, and
            // arrives at the engine from the requester's address.
            rx[p].handle(&mad, &roce(100), now);
            while let Some(o) = rx[p].poll_output() {
                match o {
                    Output::Send { mad, .. } => push(&mut e, now, peers[p], &mad),
                    Output::Delivered { message, .. } => delivered[p] = Some(message),
                    Output::Ended { .. } => {}
                }
            }
        }
        if done.len() == 2 {
            break;
        }
    }
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(
        done.iter().all(|c| c.status == SendStatus::Success),
        "{done:?}"
    );
    for (p, d) in delivered.iter().enumerate() {
        let d = d.as_ref().expect("a requester got no response");
        assert_eq!(&d[SA_DATA_OFFSET..], &payload(4000, p as u8 + 1)[..]);
    }
    assert_eq!(e.agent_stats(sa).unwrap().succeeded, 2);
}

// ----- issue 13: hostile RMPP peers -----

/// A RoCE-like engine with a send-only vendor agent (RMPP), what it sent,
/// and the start of virtual time.
fn vendor_sender() -> (Stack<RoceLike>, Sent, AgentId, Instant) {
    let (mut e, sent, _) = roce_engine();
    let agent = vendor_agent(&mut e, &[]);
    (e, sent, agent, Instant::now())
}

/// An RMPP-active vendor Send of `len` bytes of data to `roce(6)` (even
/// when it fits one segment).
fn rmpp_request(len: usize) -> SendRequest {
    let mut msg = vendor_header(Method::SEND, 0);
    msg[26] = FLAG_ACTIVE;
    msg.extend_from_slice(&payload(len, 9));
    SendRequest::new(msg, roce(6))
}

/// Polls `e` every millisecond from `t0` for at most `ms` ms while a peer
/// at `roce(6)` may answer: `peer(step, first MAD sent)` gives the MAD it
/// sends then, if any. Returns the first completion and when it came.
fn run_acking(
    e: &mut Stack<RoceLike>,
    sent: &Sent,
    t0: Instant,
    ms: u32,
    mut peer: impl FnMut(u32, &[u8]) -> Option<Vec<u8>>,
) -> Option<(mad_agents::Completion, Duration)> {
    let mut template: Option<Vec<u8>> = None;
    for step in 0..ms {
        let now = t0 + step * MS;
        e.poll(now);
        for (_, mad, _) in take_sent(sent) {
            template.get_or_insert(mad);
        }
        if let Some(m) = template.as_deref().and_then(|t| peer(step, t)) {
            push(e, now + MS, roce(6), &m);
        }
        if let Some(c) = completions(&drain(e)).pop() {
            return Some((c, now - t0));
        }
    }
    None
}

#[test]
fn an_rmpp_send_does_not_outlive_its_absolute_deadline_while_the_peer_trickles_acks() {
    let (mut e, sent, agent, t0) = vendor_sender();
    // 20 segments; the peer acknowledges one every 900 ms (just inside
    // the ACK timer, so the sender alone would keep going for 18 s).
    let req = rmpp_request(20 * 216 - 10)
        .expect_response(Duration::from_secs(1), 0)
        .total_timeout(Duration::from_secs(5));
    let s = e.send(agent, req, t0).unwrap();
    let mut acked = 0u32;
    let ended = run_acking(&mut e, &sent, t0, 30_000, |step, t| {
        (step % 900 == 899).then(|| {
            acked += 1;
            control(t, RmppType::ACK, RmppStatus::SUCCESS, acked, acked + 1)
        })
    });
    let (c, at) = ended.expect("the send never completed");
    assert_eq!((c.send, c.status), (s, SendStatus::Timeout));
    assert!(at <= Duration::from_secs(5) + 2 * MS, "{at:?}");
    assert_eq!(e.stats().rmpp_deadline_expired, 1);
}

#[test]
fn a_peer_repeating_a_stale_ack_cannot_keep_an_rmpp_send_alive() {
    let (mut e, sent, agent, t0) = vendor_sender();
    // No response expected: no absolute deadline, only the ACK timer.
    let mut msg = vendor_header(Method::SEND, 0);
    msg.extend_from_slice(&payload(2000, 1));
    let s = e.send(agent, SendRequest::new(msg, roce(6)), t0).unwrap();
    // Segment 1 acknowledged again and again, window 2, every 500 ms.
    let ended = run_acking(&mut e, &sent, t0, 60_000, |step, t| {
        (step % 500 == 499).then(|| control(t, RmppType::ACK, RmppStatus::SUCCESS, 1, 2))
    });
    let (c, at) = ended.expect("the peer kept the send alive for a minute");
    assert_eq!((c.send, c.status), (s, SendStatus::Timeout));
    // The first wait and 3 retries of 2 s each, after the first ACK.
    assert!(at <= Duration::from_secs(9), "{at:?}");
}

#[test]
fn a_repeated_final_ack_gets_the_ds_ack_again_and_a_late_abort_does_not_fail_the_request() {
    let (mut e, sent, agent, t0) = vendor_sender();
    let req = rmpp_request(100).expect_response(Duration::from_secs(2), 0);
    let s = e.send(agent, req, t0).unwrap();
    e.poll(t0);
    let seg = take_sent(&sent).pop().unwrap().1;
    // The responder's final ACK carries the response method.
    let mut ack = control(&seg, RmppType::ACK, RmppStatus::SUCCESS, 1, 1);
    mad_testkit::header::edit(&mut ack, |h| h.response = true);
    for round in 0..3u32 {
        push(&mut e, t0 + (round + 1) * MS, roce(6), &ack);
        e.poll(t0 + (round + 1) * MS);
        e.poll(t0 + (round + 1) * MS);
        let out = take_sent(&sent);
        assert_eq!(out.len(), 1, "round {round}: {out:?}");
        assert_eq!(
            rmpp_header(&out[0].1),
            (RmppType::ACK, RmppStatus::SUCCESS, 0, 1),
            "a DS ACK"
        );
        assert_eq!(out[0].2.grh, roce(6).grh);
    }
    // A late ABORT (for the request's transfer, response method) does not
    // end the request: it still waits for its response.
    let mut abort = control(&seg, RmppType::ABORT, RmppStatus::T2L, 0, 0);
    mad_testkit::header::edit(&mut abort, |h| h.response = true);
    push(&mut e, t0 + 10 * MS, roce(6), &abort);
    e.poll(t0 + 10 * MS);
    assert!(completions(&drain(&mut e)).is_empty());
    assert!(e.is_outstanding(s));
    // The single-MAD response completes it.
    let mut resp = vendor_header(Method(Method::SEND.0 | 0x80), e.send_tid(s).unwrap());
    resp.resize(256, 0);
    push(&mut e, t0 + 11 * MS, roce(6), &resp);
    e.poll(t0 + 11 * MS);
    let c = completions(&drain(&mut e));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, SendStatus::Success);
}

#[test]
fn a_peer_finishing_endless_small_transfers_cannot_grow_an_agent_s_reassembly_table() {
    let cfg = with_receiver(ReceiverConfig {
        max_lingering_per_source: 8,
        ..ReceiverConfig::default()
    });
    let (mut e, _sent, _) = roce_engine_with(cfg);
    let agent = vendor_agent(&mut e, &[Method::SEND]);
    let t0 = Instant::now();
    for tid in 0..100u64 {
        let mut tx = Sender::new(
            &vendor_header(Method::SEND, tid),
            &payload(50, 0),
            SenderConfig::default(),
            t0,
        )
        .unwrap();
        push(&mut e, t0, roce(7), &tx.poll_transmit(t0).unwrap());
        e.poll(t0);
    }
    assert_eq!(e.agent_stats(agent).unwrap().rmpp_reassembled, 100);
    assert_eq!(e.rmpp_reassemblies(agent), 8);
    assert_eq!(e.rmpp_receiver_stats(agent).unwrap().evicted_lingering, 92);
}

#[test]
fn a_malformed_abort_for_a_transfer_being_received_is_answered_with_abort_bad_status() {
    let (mut e, sent, _) = roce_engine();
    let agent = vendor_agent(&mut e, &[Method::SEND]);
    let t0 = Instant::now();
    let mut tx = Sender::new(
        &vendor_header(Method::SEND, 3),
        &payload(3000, 2),
        SenderConfig::default(),
        t0,
    )
    .unwrap();
    let first = tx.poll_transmit(t0).unwrap();
    push(&mut e, t0, roce(8), &first);
    e.poll(t0);
    e.poll(t0 + MS);
    assert_eq!(rmpp_header(&take_sent(&sent)[0].1).0, RmppType::ACK);
    // The sender "aborts" with a status outside the ABORT range.
    push(
        &mut e,
        t0 + 2 * MS,
        roce(8),
        &control(&first, RmppType::ABORT, RmppStatus(3), 0, 0),
    );
    e.poll(t0 + 2 * MS);
    e.poll(t0 + 3 * MS);
    let out = take_sent(&sent);
    assert_eq!(out.len(), 1, "{out:?}");
    let h = rmpp_header(&out[0].1);
    assert_eq!((h.0, h.1), (RmppType::ABORT, RmppStatus::BAD_STATUS));
    assert_eq!(out[0].2.grh, roce(8).grh);
    assert_eq!(e.rmpp_reassemblies(agent), 0, "the transfer is over");
    assert_eq!(e.rmpp_receiver_stats(agent).unwrap().bad_status, 1);
}
