//! RMPP wired into the agents (issue 5 item 2): two engines back to back
//! on the kit's [`Pair`] (a connected loopback pair on a virtual clock);
//! tests of one engine against a peer played by hand use a recording
//! loopback (or a raw loopback end) instead.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

#[path = "../support/mod.rs"]
mod support;

mod aborts;

use support::{completions, gsi_from, recv_and_poll, with_receiver};

use mad_agents::{
    AgentEvent, AgentId, AgentSpec, EngineConfig, Message, SendRequest, SendStatus, Stack,
};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received, Transport};
use mad_core::wire::rmpp::RmppStatus;
use mad_core::wire::{Method, MgmtClass, SA_DATA_OFFSET, VENDOR_DATA_OFFSET};
use mad_rmpp::ReceiverConfig;
use mad_testkit::pair::PairTransport;
use mad_testkit::{Pair, Side};

const MS: Duration = Duration::from_millis(1);
const VENDOR: MgmtClass = MgmtClass(0x32);
const OUI: u32 = 0x00_1405;

/// Two engines (A at LID 1, B at LID 2), A with the default
/// configuration and B with `b_cfg`.
fn pair(b_cfg: EngineConfig) -> Pair {
    Pair::with_configs(&EngineConfig::default(), &b_cfg)
}

/// One side's engine in a [`Pair`].
type PairEngine = Stack<PairTransport>;

/// Registers an RMPP agent of the test's vendor class on `e`, for
/// unsolicited requests of `methods`.
fn vendor_agent<T: Transport>(e: &mut Stack<T>, name: &str, methods: &[Method]) -> AgentId {
    e.register(
        AgentSpec::requests(name, VENDOR, 1, methods)
            .with_oui(OUI)
            .with_rmpp(),
    )
    .unwrap()
}

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// A vendor range-2 message: 40-byte header, then `data`.
fn vendor_msg(method: Method, data: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; VENDOR_DATA_OFFSET];
    mad_testkit::header::edit(&mut m, |h| {
        h.base_version = 1;
        h.mgmt_class = VENDOR;
        h.class_version = 1;
        mad_testkit::header::set_method_byte(h, method.0); // a response bit included
    });
    m[37..40].copy_from_slice(&OUI.to_be_bytes()[1..]);
    m.extend_from_slice(data);
    m
}

/// An SA GetTable request (one MAD, RMPP inactive).
fn sa_get_table() -> Vec<u8> {
    let mut m = vec![0u8; 256];
    mad_testkit::header::edit(&mut m, |h| {
        h.base_version = 1;
        h.mgmt_class = MgmtClass::SUBN_ADM;
        h.class_version = 2;
        h.method = Method::GET_TABLE;
    });
    mad_testkit::header::edit(&mut m, |h| {
        h.attr_id = mad_core::wire::AttributeId(0x0011u16)
    });
    m
}

type Evs = Vec<(AgentId, AgentEvent)>;

/// Drives the pair until `done`, handing each of B's events to `on_b`
/// (which may answer it from B at the time given) as it comes; returns
/// the events of A and of B taken on the way.
fn run(
    p: &mut Pair,
    mut on_b: impl FnMut(&mut PairEngine, &(AgentId, AgentEvent), Instant),
    mut done: impl FnMut(&Evs, &Evs) -> bool,
) -> (Evs, Evs) {
    let (mut ea, mut eb) = (Vec::new(), Vec::new());
    p.drive_until(|p| {
        let now = p.now();
        ea.extend(std::iter::from_fn(|| p.a.poll_event()));
        while let Some(ev) = p.b.poll_event() {
            on_b(&mut p.b, &ev, now);
            eb.push(ev);
        }
        done(&ea, &eb)
    });
    (ea, eb)
}

/// Drives the pair until A sees its first send complete.
fn run_until_a_send_completes(p: &mut Pair) -> (Evs, Evs) {
    run(p, |_, _, _| {}, |ea, _| !completions(ea).is_empty())
}

fn received(evs: &Evs) -> Vec<Message> {
    evs.iter()
        .filter_map(|(_, e)| match e {
            AgentEvent::Received(m) => Some(m.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_large_payload_goes_as_an_rmpp_transfer_and_arrives_reassembled() {
    let mut p = pair(EngineConfig::default());
    let tx = vendor_agent(&mut p.a, "tx", &[]);
    let rx = vendor_agent(&mut p.b, "rx", &[Method::SEND]);
    let data = payload(20_000);
    let t0 = p.now();
    let s =
        p.a.send(
            tx,
            SendRequest::new(vendor_msg(Method::SEND, &data), Address::gsi(2)),
            t0,
        )
        .unwrap();
    let (ea, eb) = run_until_a_send_completes(&mut p);
    let c = completions(&ea);
    assert_eq!(c.len(), 1);
    assert_eq!(
        (c[0].send, c[0].status),
        (s, SendStatus::Success),
        "all segments acknowledged"
    );
    let got = received(&eb);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].bytes().len(), VENDOR_DATA_OFFSET + data.len());
    assert_eq!(
        &got[0].bytes()[VENDOR_DATA_OFFSET..],
        &data[..],
        "byte-identical"
    );
    assert!(eb.iter().all(|(who, _)| *who == rx));
    // 20,000 bytes in 216-byte segments: 93 data work requests at least.
    assert!(p.a.stats().posted >= 93, "{:?}", p.a.stats());
    assert_eq!(p.a.outstanding(), 0);
    assert_eq!(p.b.agent_stats(rx).unwrap().rmpp_reassembled, 1);
}

/// A requester engine A with an RMPP send-only client and a responder
/// engine B with an RMPP SA agent owning GetTable: (pair, client, sa).
fn sa_pair() -> (Pair, AgentId, AgentId) {
    let mut p = pair(EngineConfig::default());
    let client =
        p.a.register(AgentSpec::send_only("sa-client", Qp::Qp1).with_rmpp())
            .unwrap();
    let sa =
        p.b.register(
            AgentSpec::requests("sa", MgmtClass::SUBN_ADM, 2, &[Method::GET_TABLE]).with_rmpp(),
        )
        .unwrap();
    (p, client, sa)
}

/// Answers every request `b` receives with a GetTableResp carrying `table`;
/// counts the requests in `requests`.
fn answer_with_table<'a>(
    table: &'a [u8],
    requests: &'a mut u32,
) -> impl FnMut(&mut PairEngine, &(AgentId, AgentEvent), Instant) + 'a {
    move |b, (who, ev), now| {
        if let AgentEvent::Received(req) = ev {
            *requests += 1;
            let mut resp = req.bytes()[..SA_DATA_OFFSET].to_vec();
            mad_testkit::header::edit(&mut resp, |h| {
                h.method = mad_core::wire::Method::GET_TABLE;
                h.response = true;
            });
            resp.extend_from_slice(table);
            let dest = Address::gsi(req.src().lid);
            b.send(*who, SendRequest::new(resp, dest), now).unwrap();
        }
    }
}

#[test]
fn a_request_answered_by_an_rmpp_response_completes_with_the_reassembled_message() {
    let (mut p, client, sa) = sa_pair();
    let table = payload(9_000);
    let t0 = p.now();
    let s =
        p.a.send(
            client,
            SendRequest::new(sa_get_table(), Address::gsi(2))
                .expect_response(Duration::from_millis(500), 1),
            t0,
        )
        .unwrap();
    let mut requests = 0;
    let (ea, _) = run(&mut p, answer_with_table(&table, &mut requests), |ea, _| {
        !completions(ea).is_empty()
    });
    let c = completions(&ea);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Success));
    let r = c[0].response.as_ref().unwrap();
    let h = mad_testkit::header::of(r.bytes());
    assert_eq!((h.method, h.response), (Method::GET_TABLE, true));
    assert_eq!(r.tid(), c[0].tid);
    assert_eq!(&r.bytes()[SA_DATA_OFFSET..], &table[..]);
    // The final ACK goes out with A's next poll.
    p.drive();
    assert_eq!(
        p.b.outstanding(),
        0,
        "the SA's transfer completed when fully acknowledged"
    );
    assert_eq!(p.b.agent_stats(sa).unwrap().succeeded, 1);
}

#[test]
fn an_rmpp_answer_longer_than_the_attempt_timeout_is_awaited_not_retried() {
    // The kernel stops a request's timer at its answer's first segment; a
    // retry here would restart the responder's transfer for ever (seen
    // against the real kernel with a 1.1 MB GetTable under qemu).
    // Each step takes 1 ms, so the answer's 1,800-odd segments arrive
    // over far longer than the 5 ms attempt timeout.
    let (mut p, client, sa) = sa_pair();
    p.set_step_time(MS);
    let table = payload(400_000);
    let t0 = p.now();
    let s =
        p.a.send(
            client,
            SendRequest::new(sa_get_table(), Address::gsi(2))
                .expect_response(Duration::from_millis(5), 3)
                .total_timeout(Duration::from_secs(4)),
            t0,
        )
        .unwrap();
    let mut requests = 0;
    let (ea, _) = run(&mut p, answer_with_table(&table, &mut requests), |ea, _| {
        !completions(ea).is_empty()
    });
    let c = completions(&ea);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Success));
    assert!(
        p.now() - t0 > 10 * 5 * MS,
        "the answer took {:?}, not ten attempt timeouts",
        p.now() - t0
    );
    assert_eq!(c[0].retries, 0, "retried while the answer was arriving");
    assert_eq!(requests, 1, "the SA saw the request more than once");
    let r = c[0].response.as_ref().unwrap();
    assert_eq!(&r.bytes()[SA_DATA_OFFSET..], &table[..]);
    assert_eq!(p.b.agent_stats(sa).unwrap().retries, 0);
}

#[test]
fn an_agent_without_rmpp_sees_the_raw_first_segment() {
    let mut p = pair(EngineConfig::default());
    let client = p.a.register(AgentSpec::send_only("raw", Qp::Qp1)).unwrap();
    let _sa =
        p.b.register(
            AgentSpec::requests("sa", MgmtClass::SUBN_ADM, 2, &[Method::GET_TABLE]).with_rmpp(),
        )
        .unwrap();
    let t0 = p.now();
    p.a.send(
        client,
        SendRequest::new(sa_get_table(), Address::gsi(2))
            .expect_response(Duration::from_millis(500), 0),
        t0,
    )
    .unwrap();
    let (ea, _) = run(
        &mut p,
        |b, (who, ev), now| {
            if let AgentEvent::Received(req) = ev {
                let mut resp = req.bytes()[..SA_DATA_OFFSET].to_vec();
                mad_testkit::header::edit(&mut resp, |h| {
                    h.method = mad_core::wire::Method::GET_TABLE;
                    h.response = true;
                });
                resp.extend_from_slice(&payload(3_000));
                b.send(
                    *who,
                    SendRequest::new(resp, Address::gsi(req.src().lid)),
                    now,
                )
                .unwrap();
            }
        },
        |ea, _| !completions(ea).is_empty(),
    );
    let c = completions(&ea);
    assert_eq!(c[0].status, SendStatus::Success);
    let seg = c[0].response.as_ref().unwrap().bytes().to_vec();
    assert_eq!(seg.len(), 256, "one raw segment");
    assert_eq!(seg[26] & 0x03, 0x03, "RMPP header: Active and First");
}

#[test]
fn a_receiver_that_refuses_the_size_ends_the_send_with_its_rmpp_status() {
    let small = with_receiver(ReceiverConfig {
        max_message_len: 1_000,
        ..ReceiverConfig::default()
    });
    let mut p = pair(small);
    let tx = vendor_agent(&mut p.a, "tx", &[]);
    vendor_agent(&mut p.b, "rx", &[Method::SEND]);
    let t0 = p.now();
    p.a.send(
        tx,
        SendRequest::new(vendor_msg(Method::SEND, &payload(5_000)), Address::gsi(2)),
        t0,
    )
    .unwrap();
    let (ea, eb) = run_until_a_send_completes(&mut p);
    let c = completions(&ea);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, SendStatus::RmppAbort(RmppStatus::RESX));
    assert!(received(&eb).is_empty());
    assert_eq!(p.a.outstanding(), 0);
}

#[test]
fn a_silent_peer_times_the_transfer_out() {
    // B has an agent for the transfer but loses everything it is sent.
    let mut p = pair(EngineConfig::default());
    let tx = vendor_agent(&mut p.a, "tx", &[]);
    let rx = vendor_agent(&mut p.b, "rx", &[Method::SEND]);
    p.set_loss(Side::B, 1.0);
    let t0 = p.now();
    let s =
        p.a.send(
            tx,
            SendRequest::new(vendor_msg(Method::SEND, &payload(2_000)), Address::gsi(2))
                .expect_response(Duration::from_millis(100), 2),
            t0,
        )
        .unwrap();
    let (done, eb) = run_until_a_send_completes(&mut p);
    let c = completions(&done);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Timeout));
    assert_eq!(p.a.outstanding(), 0);
    assert!(eb.is_empty(), "B heard nothing: {eb:?}");
    assert!(p.faults(Side::B).lost > 0);
    assert_eq!(p.b.agent_stats(rx).unwrap().rmpp_reassembled, 0);
}

#[test]
fn a_response_segment_nobody_waits_for_allocates_nothing() {
    // One engine; the segment is played by hand.
    let (lb, _sent) = support::recording(1, 64);
    let mut a = Stack::new(lb, EngineConfig::default());
    let client = a
        .register(AgentSpec::send_only("sa-client", Qp::Qp1).with_rmpp())
        .unwrap();
    let mut seg = sa_get_table();
    mad_testkit::header::edit(&mut seg, |h| {
        h.method = mad_core::wire::Method::GET_TABLE;
        h.response = true;
    });
    mad_testkit::header::edit(&mut seg, |h| h.tid = 0xdead_beefu64);
    seg[24] = 1; // RMPP version
    seg[25] = 1; // DATA
    seg[26] = 0x03; // Active | First
    seg[28..32].copy_from_slice(&1u32.to_be_bytes());
    seg[32..36].copy_from_slice(&100_000_000u32.to_be_bytes());
    recv_and_poll(&mut a, Instant::now(), gsi_from(2, seg));
    assert_eq!(a.rmpp_reassemblies(client), 0);
    assert_eq!(a.stats().unmatched_responses, 1);
}

#[test]
fn a_malformed_rmpp_response_fails_the_waiting_send_at_once() {
    // OpenSM under libumad2sim answers GetTable with RMPP Active but
    // segment 0 and no First flag: the receiver refuses it (ABORT BAD_SEG),
    // and the send must end with that status now, not at its timeout.
    // One engine; the SA is played by hand.
    let (lb, _sent) = support::recording(1, 64);
    let mut a = Stack::new(lb, EngineConfig::default());
    let client = a
        .register(AgentSpec::send_only("sa-client", Qp::Qp1).with_rmpp())
        .unwrap();
    let t0 = Instant::now();
    let s = a
        .send(
            client,
            SendRequest::new(sa_get_table(), Address::gsi(2))
                .expect_response(Duration::from_secs(10), 3),
            t0,
        )
        .unwrap();
    a.poll(t0);
    let tid = a.send_tid(s).unwrap();
    let mut resp = sa_get_table();
    mad_testkit::header::edit(&mut resp, |h| {
        h.method = mad_core::wire::Method::GET_TABLE;
        h.response = true;
    });
    mad_testkit::header::edit(&mut resp, |h| h.tid = tid);
    resp[24] = 1; // RMPP version
    resp[25] = 1; // DATA
    resp[26] = 0x01; // Active only
    a.handle_recv(t0 + MS, gsi_from(2, resp)).unwrap();
    let mut evs = Vec::new();
    for i in 1..10u32 {
        a.poll(t0 + i * MS);
        evs.extend(std::iter::from_fn(|| a.poll_event()));
    }
    let c = completions(&evs);
    assert_eq!(c.len(), 1, "{evs:?}");
    assert_eq!(c[0].status, SendStatus::RmppAbort(RmppStatus::BAD_SEG));
    assert_eq!(a.outstanding(), 0);
    assert_eq!(a.rmpp_reassemblies(client), 0);
}

/// B's agent owning vendor Set with RMPP (B's receiver forgets a finished
/// transfer after `b_linger`); A's RMPP client: (pair, client).
fn vendor_request_pair(b_linger: Duration) -> (Pair, AgentId) {
    let b_cfg = with_receiver(ReceiverConfig {
        linger: b_linger,
        ..ReceiverConfig::default()
    });
    let mut p = pair(b_cfg);
    let tx = vendor_agent(&mut p.a, "tx", &[]);
    vendor_agent(&mut p.b, "rx", &[Method::SET]);
    (p, tx)
}

/// The GetResp (one MAD, RMPP inactive) to a received vendor request.
fn get_resp(req: &Message) -> Vec<u8> {
    let mut r = req.bytes()[..256.min(req.bytes().len())].to_vec();
    mad_testkit::header::edit(&mut r, |h| {
        h.method = mad_core::wire::Method::GET;
        h.response = true;
    });
    r[24..36].iter_mut().for_each(|b| *b = 0);
    r
}

#[test]
fn an_rmpp_request_whose_response_times_out_is_sent_again_as_a_new_transfer_with_the_same_tid() {
    // B forgets a finished transfer after 20 ms, so a repeat with the same
    // TID is a new transfer to it; its agent answers only the second.
    let (mut p, tx) = vendor_request_pair(20 * MS);
    let data = payload(2_000);
    let t0 = p.now();
    let s =
        p.a.send(
            tx,
            SendRequest::new(vendor_msg(Method::SET, &data), Address::gsi(2))
                .expect_response(50 * MS, 2),
            t0,
        )
        .unwrap();
    let tid = p.a.send_tid(s).unwrap();
    let mut seen = 0;
    let (ea, eb) = run(
        &mut p,
        |b, (who, ev), now| {
            if let AgentEvent::Received(req) = ev {
                seen += 1;
                if seen == 2 {
                    let dest = Address::gsi(req.src().lid);
                    b.send(*who, SendRequest::new(get_resp(req), dest), now)
                        .unwrap();
                }
            }
        },
        |ea, _| !completions(ea).is_empty(),
    );
    let c = completions(&ea);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Success));
    assert_eq!(c[0].retries, 1, "answered after one retry");
    let got = received(&eb);
    assert_eq!(got.len(), 2, "the whole message went out twice");
    for m in &got {
        assert_eq!(m.tid(), tid, "same TID");
        assert_eq!(&m.bytes()[VENDOR_DATA_OFFSET..], &data[..]);
    }
    assert_eq!(p.a.stats().retries, 1);
    assert_eq!(p.a.outstanding(), 0);
}

#[test]
fn an_unanswered_rmpp_request_stops_at_its_retries_and_its_absolute_deadline() {
    let (mut p, tx) = vendor_request_pair(5 * MS);
    let t0 = p.now();
    // 2 retries: three transfers, then a timeout.
    let s =
        p.a.send(
            tx,
            SendRequest::new(vendor_msg(Method::SET, &payload(1_000)), Address::gsi(2))
                .expect_response(30 * MS, 2),
            t0,
        )
        .unwrap();
    let (ea, eb) = run_until_a_send_completes(&mut p);
    let c = completions(&ea);
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Timeout));
    assert_eq!(c[0].retries, 2);
    assert_eq!(received(&eb).len(), 3);

    // An absolute deadline shorter than the retries cuts them.
    p.advance(Duration::from_secs(10));
    let t1 = p.now();
    let s =
        p.a.send(
            tx,
            SendRequest::new(vendor_msg(Method::SET, &payload(1_000)), Address::gsi(2))
                .expect_response(30 * MS, 5)
                .total_timeout(70 * MS),
            t1,
        )
        .unwrap();
    let (ea, eb) = run_until_a_send_completes(&mut p);
    let c = completions(&ea);
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Timeout));
    assert!(
        c[0].retries <= 2,
        "{} retries past the deadline",
        c[0].retries
    );
    assert_eq!(received(&eb).len() as u32, c[0].retries + 1);
    assert_eq!(p.a.outstanding(), 0);
}

#[test]
fn an_rmpp_response_starts_with_the_window_the_requester_advertised_in_its_ds_ack() {
    // B answers a double-sided request; the requester (played by hand)
    // advertised a response window of 8 in its DS ACK.
    let (lb, sent) = {
        let sent: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>> = Default::default();
        let s2 = sent.clone();
        let lb = Loopback::new(Loopback::attrs("b", 1, 2), 256).with_responder(Box::new(
            move |_qp, mad: &[u8], _dest: &Address| {
                s2.lock().unwrap().push(mad.to_vec());
                Vec::new()
            },
        ));
        (lb, sent)
    };
    let mut b = Stack::new(lb, EngineConfig::default());
    let rx = vendor_agent(&mut b, "rx", &[Method::SET]);
    let requester = Address::gsi(1);
    // A one-segment RMPP request (Active, First, Last).
    let mut req = vendor_msg(Method::SET, &payload(100));
    req.resize(256, 0);
    mad_testkit::header::edit(&mut req, |h| h.tid = 0x0001_0000_0042u64);
    req[24] = 1;
    req[25] = 1; // DATA
    req[26] = 0x07;
    req[28..32].copy_from_slice(&1u32.to_be_bytes());
    req[32..36].copy_from_slice(&100u32.to_be_bytes());
    let t0 = Instant::now();
    recv_and_poll(
        &mut b,
        t0,
        Received {
            qp: Qp::Qp1,
            src: requester,
            mad: req.clone().into(),
        },
    );
    let got: Vec<Message> = std::iter::from_fn(|| b.poll_event())
        .filter_map(|(_, e)| match e {
            AgentEvent::Received(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(got.len(), 1);
    // The DS ACK: the request's header, ACK of segment 0, window 8.
    let mut ds = req.clone();
    ds[25] = 2; // ACK
    ds[26] = 0x01;
    ds[28..32].copy_from_slice(&0u32.to_be_bytes());
    ds[32..36].copy_from_slice(&8u32.to_be_bytes());
    recv_and_poll(
        &mut b,
        t0,
        Received {
            qp: Qp::Qp1,
            src: requester,
            mad: ds.into(),
        },
    );
    sent.lock().unwrap().clear();
    // The response: GetResp of 20 segments.
    let mut resp = got[0].bytes()[..VENDOR_DATA_OFFSET].to_vec();
    mad_testkit::header::edit(&mut resp, |h| {
        h.method = mad_core::wire::Method::GET;
        h.response = true;
    });
    resp[24..36].iter_mut().for_each(|x| *x = 0);
    resp.extend_from_slice(&payload(20 * 220));
    b.send(rx, SendRequest::new(resp, requester), t0).unwrap();
    for _ in 0..5 {
        b.poll(t0);
    }
    let data: Vec<u32> = sent
        .lock()
        .unwrap()
        .iter()
        .filter(|m| m[25] == 1)
        .map(|m| u32::from_be_bytes([m[28], m[29], m[30], m[31]]))
        .collect();
    assert_eq!(
        data,
        (1..=8).collect::<Vec<u32>>(),
        "the first window is the advertised 8, not 1"
    );

    // Without a DS ACK (another TID) the first window is 1.
    sent.lock().unwrap().clear();
    let mut req2 = req.clone();
    mad_testkit::header::edit(&mut req2, |h| h.tid = 0x0001_0000_0043u64);
    recv_and_poll(
        &mut b,
        t0,
        Received {
            qp: Qp::Qp1,
            src: requester,
            mad: req2.into(),
        },
    );
    let got: Vec<Message> = std::iter::from_fn(|| b.poll_event())
        .filter_map(|(_, e)| match e {
            AgentEvent::Received(m) => Some(m),
            _ => None,
        })
        .collect();
    let mut resp = got[0].bytes()[..VENDOR_DATA_OFFSET].to_vec();
    mad_testkit::header::edit(&mut resp, |h| {
        h.method = mad_core::wire::Method::GET;
        h.response = true;
    });
    resp[24..36].iter_mut().for_each(|x| *x = 0);
    resp.extend_from_slice(&payload(20 * 220));
    sent.lock().unwrap().clear();
    b.send(rx, SendRequest::new(resp, requester), t0).unwrap();
    for _ in 0..5 {
        b.poll(t0);
    }
    let n = sent.lock().unwrap().iter().filter(|m| m[25] == 1).count();
    assert_eq!(n, 1);
}

#[test]
fn a_recycled_message_buffer_receives_the_next_rmpp_transfer() {
    let mut p = pair(EngineConfig::default());
    let tx = vendor_agent(&mut p.a, "tx", &[]);
    let rx = vendor_agent(&mut p.b, "rx", &[Method::SEND]);
    let transfer = |p: &mut Pair, data: &[u8]| {
        let now = p.now();
        p.a.send(
            tx,
            SendRequest::new(vendor_msg(Method::SEND, data), Address::gsi(2)),
            now,
        )
        .unwrap();
        let (_, mut eb) = run(p, |_, _, _| {}, |_, eb| !received(eb).is_empty());
        // Past the receiver's linger, so the next transfer is a new one.
        p.advance(Duration::from_secs(60));
        p.drive();
        let i = eb
            .iter()
            .position(|(_, e)| matches!(e, AgentEvent::Received(_)))
            .unwrap();
        match eb.swap_remove(i).1 {
            AgentEvent::Received(m) => m,
            _ => unreachable!(),
        }
    };
    let first = transfer(&mut p, &payload(30_000));
    let addr = first.bytes().as_ptr();
    assert_eq!(&first.bytes()[VENDOR_DATA_OFFSET..], &payload(30_000)[..]);
    p.b.recycle(rx, first);
    let data: Vec<u8> = payload(25_000).iter().map(|x| x ^ 0x5A).collect();
    let second = transfer(&mut p, &data);
    assert_eq!(
        second.bytes().as_ptr(),
        addr,
        "reassembled into the recycled buffer"
    );
    assert_eq!(
        &second.bytes()[VENDOR_DATA_OFFSET..],
        &data[..],
        "byte-identical, nothing of the first message left"
    );
    assert_eq!(second.bytes().len(), VENDOR_DATA_OFFSET + data.len());
    // A shared message is not taken: its other holder still reads it.
    let keep = second.clone();
    p.b.recycle(rx, second);
    assert_eq!(&keep.bytes()[VENDOR_DATA_OFFSET..], &data[..]);
    // A fresh buffer would have been cut to the message; this one is the
    // first message's, whole.
    let buf = keep.into_buffer().unwrap();
    assert!(
        buf.capacity() >= VENDOR_DATA_OFFSET + 30_000,
        "capacity {} is the recycled buffer's",
        buf.capacity()
    );
}

#[test]
fn messages_an_agent_does_not_take_are_bounded_in_bytes_not_just_in_count() {
    // A peer keeps sending 100 KB messages to an agent whose owner does not
    // keep up: the agent's queue holds at most `recv_queue_bytes` (plus one
    // message into an empty queue), however many the count bound allows.
    let budget = 1 << 20;
    let mut p = pair(EngineConfig {
        recv_queue_bytes: budget,
        ..EngineConfig::default()
    });
    let tx = vendor_agent(&mut p.a, "flooder", &[]);
    let rx = vendor_agent(&mut p.b, "slow", &[Method::SEND]);
    let data = payload(100_000);
    for _ in 0..30 {
        let now = p.now();
        p.a.send(
            tx,
            SendRequest::new(vendor_msg(Method::SEND, &data), Address::gsi(2)),
            now,
        )
        .unwrap();
        // Move the transfer along, taking A's events but not B's.
        p.drive_until(|p| {
            while p.a.poll_event().is_some() {}
            false
        });
    }
    let queued = p.b.queued_events(rx);
    let held = queued * (VENDOR_DATA_OFFSET + data.len());
    assert!(queued >= 1, "nothing was delivered");
    assert!(
        held <= budget + VENDOR_DATA_OFFSET + data.len(),
        "{queued} messages ({held} bytes) queued for an agent with a {budget}-byte budget"
    );
    let dropped = p.b.agent_stats(rx).unwrap().recv_dropped;
    assert_eq!(
        dropped as usize + queued,
        30,
        "every message is either queued or counted as dropped"
    );
}

/// Segments of transfer `tid` that reached the raw end `b` so far.
fn segments_at(b: &mut Loopback, tid: u64) -> usize {
    let mut n = 0;
    while let Ok(Some(r)) = b.poll_recv() {
        if mad_testkit::header::of(&r.mad).tid == tid {
            n += 1;
        }
    }
    n
}

#[test]
fn an_answer_whose_receiver_acknowledges_nothing_ends_at_the_first_ack_timeout_and_a_reused_tid_replaces_it(
) {
    // A receiver that does no RMPP (a program under libumad2sim) takes
    // the first segment and never acknowledges it. The answer is not
    // resent after that first wait (the segments would reach whoever
    // attaches there next, under its reused TIDs), and while it waits a
    // new request with its TID and peer gets the new answer instead of a
    // duplicate-TID refusal.
    let (a, mut b) = Loopback::pair(Loopback::attrs("a", 1, 1), Loopback::attrs("b", 1, 2), 64);
    let mut a = Stack::new(
        a,
        EngineConfig {
            end_unacknowledged_answers: true,
            ..EngineConfig::default()
        },
    );
    let tx = vendor_agent(&mut a, "tx", &[]);
    let t0 = Instant::now();
    let answer = |tid: u64| {
        let mut m = vendor_msg(Method(Method::GET.0 | 0x80), &payload(2_000));
        mad_testkit::header::edit(&mut m, |h| h.tid = tid);
        m
    };
    let first = a
        .send(tx, SendRequest::new(answer(7), Address::gsi(2)), t0)
        .unwrap();
    a.poll(t0);
    assert_eq!(segments_at(&mut b, 7), 1, "the first window: one segment");
    // Before the ACK timeout the same TID to the same peer replaces it.
    let second = a
        .send(tx, SendRequest::new(answer(7), Address::gsi(2)), t0 + MS)
        .unwrap();
    a.poll(t0 + MS);
    assert_eq!(segments_at(&mut b, 7), 1, "the new answer's first segment");
    let mut done = Vec::new();
    for i in 0..10_000u32 {
        a.poll(t0 + i * MS);
        done.extend(std::iter::from_fn(|| a.poll_event()));
    }
    assert_eq!(segments_at(&mut b, 7), 0, "nothing resent in 10 s");
    let c = completions(&done);
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(c.iter().all(|c| c.status == SendStatus::Timeout), "{c:?}");
    assert!(c.iter().any(|c| c.send == first) && c.iter().any(|c| c.send == second));
    let st = a.stats();
    assert_eq!(
        (
            st.rmpp_unacknowledged_replaced,
            st.rmpp_unacknowledged_ended
        ),
        (1, 1)
    );
    assert_eq!(a.outstanding(), 0);
}
