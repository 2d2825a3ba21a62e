//! RMPP wired into the agents (issue 5 item 2): two engines back to back
//! on a Loopback pair, on a virtual clock.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use mad_agents::{
    AgentEvent, AgentId, AgentSpec, Completion, Engine, EngineConfig, Message, SendRequest,
    SendStatus,
};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received};
use mad_core::wire::rmpp::RmppStatus;
use mad_core::wire::{Method, MgmtClass, SA_DATA_OFFSET, VENDOR_DATA_OFFSET};
use mad_rmpp::ReceiverConfig;

const MS: Duration = Duration::from_millis(1);
const VENDOR: MgmtClass = MgmtClass(0x32);
const OUI: u32 = 0x00_1405;

fn pair(b_cfg: EngineConfig) -> (Engine<Loopback>, Engine<Loopback>) {
    let (a, b) = Loopback::pair(Loopback::attrs("a", 1, 1), Loopback::attrs("b", 1, 2), 64);
    (
        Engine::new(a, EngineConfig::default()),
        Engine::new(b, b_cfg),
    )
}

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// A vendor range-2 message: 40-byte header, then `data`.
fn vendor_msg(method: Method, data: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; VENDOR_DATA_OFFSET];
    m[..4].copy_from_slice(&[1, VENDOR.0, 1, method.0]);
    m[37..40].copy_from_slice(&OUI.to_be_bytes()[1..]);
    m.extend_from_slice(data);
    m
}

/// An SA GetTable request (one MAD, RMPP inactive).
fn sa_get_table() -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[..4].copy_from_slice(&[1, MgmtClass::SUBN_ADM.0, 2, Method::GET_TABLE.0]);
    m[16..18].copy_from_slice(&0x0011u16.to_be_bytes());
    m
}

type Evs = Vec<(AgentId, AgentEvent)>;

/// Polls both engines with the clock advancing 1 ms a step until `done`.
fn run(
    a: &mut Engine<Loopback>,
    b: &mut Engine<Loopback>,
    t0: Instant,
    steps: u32,
    mut on_b: impl FnMut(&mut Engine<Loopback>, &(AgentId, AgentEvent), Instant),
    mut done: impl FnMut(&Evs, &Evs) -> bool,
) -> (Evs, Evs) {
    let (mut ea, mut eb) = (Vec::new(), Vec::new());
    for i in 0..steps {
        let now = t0 + i * MS;
        a.poll(now);
        b.poll(now);
        ea.extend(std::iter::from_fn(|| a.poll_event()));
        while let Some(ev) = b.poll_event() {
            on_b(b, &ev, now);
            eb.push(ev);
        }
        if done(&ea, &eb) {
            break;
        }
    }
    (ea, eb)
}

fn completions(evs: &Evs) -> Vec<Completion> {
    evs.iter()
        .filter_map(|(_, e)| match e {
            AgentEvent::SendDone(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
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
    let (mut a, mut b) = pair(EngineConfig::default());
    let tx = a
        .register(
            AgentSpec::requests("tx", VENDOR, 1, &[])
                .with_oui(OUI)
                .with_rmpp(),
        )
        .unwrap();
    let rx = b
        .register(
            AgentSpec::requests("rx", VENDOR, 1, &[Method::SEND])
                .with_oui(OUI)
                .with_rmpp(),
        )
        .unwrap();
    let data = payload(20_000);
    let t0 = Instant::now();
    let s = a
        .send(
            tx,
            SendRequest::new(vendor_msg(Method::SEND, &data), Address::gsi(2)),
            t0,
        )
        .unwrap();
    let (ea, eb) = run(
        &mut a,
        &mut b,
        t0,
        5000,
        |_, _, _| {},
        |ea, _| !completions(ea).is_empty(),
    );
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
    assert!(a.stats().posted >= 93, "{:?}", a.stats());
    assert_eq!(a.outstanding(), 0);
    assert_eq!(b.agent_stats(rx).unwrap().rmpp_reassembled, 1);
}

#[test]
fn a_request_answered_by_an_rmpp_response_completes_with_the_reassembled_message() {
    let (mut a, mut b) = pair(EngineConfig::default());
    let client = a
        .register(AgentSpec::send_only("sa-client", Qp::Qp1).with_rmpp())
        .unwrap();
    let sa = b
        .register(
            AgentSpec::requests("sa", MgmtClass::SUBN_ADM, 2, &[Method::GET_TABLE]).with_rmpp(),
        )
        .unwrap();
    let table = payload(9_000);
    let t0 = Instant::now();
    let s = a
        .send(
            client,
            SendRequest::new(sa_get_table(), Address::gsi(2))
                .expect_response(Duration::from_millis(500), 1),
            t0,
        )
        .unwrap();
    let table2 = table.clone();
    let (ea, _) = run(
        &mut a,
        &mut b,
        t0,
        5000,
        move |b, (who, ev), now| {
            if let AgentEvent::Received(req) = ev {
                // The SA answers with GetTableResp carrying the table.
                let mut resp = req.bytes()[..SA_DATA_OFFSET].to_vec();
                resp[3] = 0x92;
                resp.extend_from_slice(&table2);
                let dest = Address::gsi(req.src().lid);
                b.send(*who, SendRequest::new(resp, dest), now).unwrap();
            }
        },
        |ea, _| !completions(ea).is_empty(),
    );
    let c = completions(&ea);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Success));
    let r = c[0].response.as_ref().unwrap();
    assert_eq!(r.bytes()[3], 0x92);
    assert_eq!(r.tid(), c[0].tid);
    assert_eq!(&r.bytes()[SA_DATA_OFFSET..], &table[..]);
    // The final ACK goes out with A's next poll.
    for _ in 0..5 {
        a.poll(t0 + Duration::from_secs(6));
        b.poll(t0 + Duration::from_secs(6));
    }
    assert_eq!(
        b.outstanding(),
        0,
        "the SA's transfer completed when fully acknowledged"
    );
    assert_eq!(b.agent_stats(sa).unwrap().succeeded, 1);
}

#[test]
fn an_agent_without_rmpp_sees_the_raw_first_segment() {
    let (mut a, mut b) = pair(EngineConfig::default());
    let client = a.register(AgentSpec::send_only("raw", Qp::Qp1)).unwrap();
    let _sa = b
        .register(
            AgentSpec::requests("sa", MgmtClass::SUBN_ADM, 2, &[Method::GET_TABLE]).with_rmpp(),
        )
        .unwrap();
    let t0 = Instant::now();
    a.send(
        client,
        SendRequest::new(sa_get_table(), Address::gsi(2))
            .expect_response(Duration::from_millis(500), 0),
        t0,
    )
    .unwrap();
    let (ea, _) = run(
        &mut a,
        &mut b,
        t0,
        200,
        |b, (who, ev), now| {
            if let AgentEvent::Received(req) = ev {
                let mut resp = req.bytes()[..SA_DATA_OFFSET].to_vec();
                resp[3] = 0x92;
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
    let small = EngineConfig {
        rmpp_receiver: ReceiverConfig {
            max_message_len: 1_000,
            ..ReceiverConfig::default()
        },
        ..EngineConfig::default()
    };
    let (mut a, mut b) = pair(small);
    let tx = a
        .register(
            AgentSpec::requests("tx", VENDOR, 1, &[])
                .with_oui(OUI)
                .with_rmpp(),
        )
        .unwrap();
    b.register(
        AgentSpec::requests("rx", VENDOR, 1, &[Method::SEND])
            .with_oui(OUI)
            .with_rmpp(),
    )
    .unwrap();
    let t0 = Instant::now();
    a.send(
        tx,
        SendRequest::new(vendor_msg(Method::SEND, &payload(5_000)), Address::gsi(2)),
        t0,
    )
    .unwrap();
    let (ea, eb) = run(
        &mut a,
        &mut b,
        t0,
        5000,
        |_, _, _| {},
        |ea, _| !completions(ea).is_empty(),
    );
    let c = completions(&ea);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, SendStatus::RmppAbort(RmppStatus::RESX));
    assert!(received(&eb).is_empty());
    assert_eq!(a.outstanding(), 0);
}

#[test]
fn a_silent_peer_times_the_transfer_out() {
    let (a, _b) = Loopback::pair(Loopback::attrs("a", 1, 1), Loopback::attrs("b", 1, 2), 64);
    let mut a = Engine::new(a, EngineConfig::default());
    let tx = a
        .register(
            AgentSpec::requests("tx", VENDOR, 1, &[])
                .with_oui(OUI)
                .with_rmpp(),
        )
        .unwrap();
    let t0 = Instant::now();
    let s = a
        .send(
            tx,
            SendRequest::new(vendor_msg(Method::SEND, &payload(2_000)), Address::gsi(2))
                .expect_response(Duration::from_millis(100), 2),
            t0,
        )
        .unwrap();
    let mut done = Vec::new();
    for i in 0..20_000u32 {
        a.poll(t0 + i * MS);
        done.extend(std::iter::from_fn(|| a.poll_event()));
        if !done.is_empty() {
            break;
        }
    }
    let c = completions(&done);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].send, c[0].status), (s, SendStatus::Timeout));
    assert_eq!(a.outstanding(), 0);
}

#[test]
fn a_response_segment_nobody_waits_for_allocates_nothing() {
    let (mut a, _b) = pair(EngineConfig::default());
    let client = a
        .register(AgentSpec::send_only("sa-client", Qp::Qp1).with_rmpp())
        .unwrap();
    let mut seg = sa_get_table();
    seg[3] = 0x92;
    seg[8..16].copy_from_slice(&0xdead_beefu64.to_be_bytes());
    seg[24] = 1; // RMPP version
    seg[25] = 1; // DATA
    seg[26] = 0x03; // Active | First
    seg[28..32].copy_from_slice(&1u32.to_be_bytes());
    seg[32..36].copy_from_slice(&100_000_000u32.to_be_bytes());
    a.port_mut().transport_mut().push_recv(Received {
        qp: Qp::Qp1,
        src: Address::gsi(2),
        mad: seg,
    });
    a.poll(Instant::now());
    assert_eq!(a.rmpp_reassemblies(client), 0);
    assert_eq!(a.stats().unmatched_responses, 1);
}

#[test]
fn a_malformed_rmpp_response_fails_the_waiting_send_at_once() {
    // OpenSM under libumad2sim answers GetTable with RMPP Active but
    // segment 0 and no First flag: the receiver refuses it (ABORT BAD_SEG),
    // and the send must end with that status now, not at its timeout.
    let (mut a, _b) = pair(EngineConfig::default());
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
    resp[3] = 0x92;
    resp[8..16].copy_from_slice(&tid.to_be_bytes());
    resp[24] = 1; // RMPP version
    resp[25] = 1; // DATA
    resp[26] = 0x01; // Active only
    a.port_mut().transport_mut().push_recv(Received {
        qp: Qp::Qp1,
        src: Address::gsi(2),
        mad: resp,
    });
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
