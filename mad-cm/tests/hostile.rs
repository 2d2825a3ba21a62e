//! The CM against hostile peers and careless callers, on a virtual clock:
//! server `b` (LID 2) listens, honest client `a` (LID 1) connects through
//! it, and an attacker at LID 9 sends hand-made CM MADs: REQ floods and
//! abandoned REQs, DREQs and REJs with a wildcard (0) or guessed
//! Communication ID, REQs with LocalCommID 0 by the hundred thousand,
//! REQs repeated in timewait. Each test names what the kernel's `ib_cm`
//! does that the CM must do too.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::time::{Duration, Instant};

use mad_cm::{
    AcceptParams, Cm, CmConfig, CmError, CmEvent, CmPath, CmTables, ConnId, ConnectParams, State,
};
use mad_core::transport::Address;
use mad_core::wire::cm::{CmDreq, CmMessage, CmRej, CmReq, MsgRef, RejectReason, TransportType};

const SERVICE: u64 = 0x0106_1d2f;
const ATTACKER: u16 = 9;
const ATTACKER_GUID: u64 = 0xBAD0;

fn cfg(guid: u64, seed: u64) -> CmConfig {
    CmConfig {
        ca_guid: guid,
        max_connections: 4096,
        comm_id_seed: Some(seed),
        ..CmConfig::default()
    }
}

fn path() -> CmPath {
    CmPath {
        local_lid: 1,
        remote_lid: 2,
        subnet_local: true,
        packet_life_time: 14,
        mtu: 4,
        pkey: 0xFFFF,
        ..CmPath::default()
    }
}

fn params(qpn: u32) -> ConnectParams {
    ConnectParams {
        max_cm_retries: 3,
        remote_cm_response_timeout: 16,
        ..ConnectParams::new(SERVICE, qpn, 0x1234, path())
    }
}

struct Net {
    a: Cm,
    b: Cm,
    now: Instant,
    /// What `b` sent the attacker.
    to_attacker: Vec<CmMessage>,
    ev_a: Vec<(ConnId, CmEvent)>,
    ev_b: Vec<(ConnId, CmEvent)>,
}

impl Net {
    fn new() -> Self {
        let mut b = Cm::new(cfg(0xB, 2));
        b.listen(SERVICE).unwrap();
        Self {
            a: Cm::new(cfg(0xA, 1)),
            b,
            now: Instant::now(),
            to_attacker: Vec::new(),
            ev_a: Vec::new(),
            ev_b: Vec::new(),
        }
    }

    /// Carries MADs between `a` and `b` until both are quiet; what `b`
    /// sends to the attacker is kept.
    fn pump(&mut self) {
        loop {
            let mut moved = false;
            while let Some(t) = self.a.poll_transmit() {
                moved = true;
                self.b
                    .handle_recv(self.now, &Address::gsi(1), &t.mad)
                    .unwrap();
            }
            while let Some(t) = self.b.poll_transmit() {
                moved = true;
                if t.to.lid == ATTACKER {
                    self.to_attacker.push(CmMessage::parse(&t.mad).unwrap());
                } else {
                    self.a
                        .handle_recv(self.now, &Address::gsi(2), &t.mad)
                        .unwrap();
                }
            }
            self.ev_a.extend(std::iter::from_fn(|| self.a.poll_event()));
            self.ev_b.extend(std::iter::from_fn(|| self.b.poll_event()));
            if !moved {
                return;
            }
        }
    }

    /// The attacker sends `m` to `b`.
    fn attack(&mut self, m: CmMessage) {
        let mad = m.to_mad(7).unwrap();
        self.b
            .handle_recv(self.now, &Address::gsi(ATTACKER), &mad)
            .unwrap();
        self.pump();
    }

    /// Moves the clock on by `d` in steps, running both sides' deadlines.
    fn advance(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.now = (self.now + Duration::from_millis(250)).min(end);
            self.a.handle_timeout(self.now);
            self.b.handle_timeout(self.now);
            self.pump();
        }
    }

    /// `a` connects (QPN `qpn`) and `b`'s user accepts every request it
    /// has: the connection on each side.
    fn connect(&mut self, qpn: u32) -> (ConnId, ConnId) {
        let ca = self.a.connect(self.now, params(qpn)).unwrap();
        self.pump();
        let cb = self
            .ev_b
            .iter()
            .rev()
            .find_map(|(id, e)| {
                matches!(e, CmEvent::ConnectRequest { info, .. } if info.remote_qpn == qpn)
                    .then_some(*id)
            })
            .expect("b got the honest REQ");
        let accept = AcceptParams {
            qpn: 0x500,
            ..AcceptParams::default()
        };
        self.b.accept(self.now, cb, accept).unwrap();
        self.pump();
        assert_eq!(self.a.state(ca), Some(State::Established));
        assert_eq!(self.b.state(cb), Some(State::Established));
        (ca, cb)
    }
}

/// A REQ from the attacker's CA.
fn req(local_comm_id: u32, qpn: u32) -> CmMessage {
    CmMessage::Req(Box::new(CmReq {
        local_comm_id,
        service_id: SERVICE,
        local_ca_guid: ATTACKER_GUID,
        local_qpn: qpn,
        transport_type: TransportType::RC,
        remote_cm_response_timeout: 20,
        local_cm_response_timeout: 20,
        max_cm_retries: 15,
        primary_local_lid: ATTACKER,
        primary_remote_lid: 2,
        primary_local_ack_timeout: 15,
        path_mtu: 4,
        pkey: 0xFFFF,
        ..CmReq::default()
    }))
}

fn rej(local: u32, remote: u32, of: MsgRef, reason: RejectReason, ari_guid: u64) -> CmMessage {
    let mut ari = [0u8; 72];
    ari[..8].copy_from_slice(&ari_guid.to_be_bytes());
    CmMessage::Rej(Box::new(CmRej {
        local_comm_id: local,
        remote_comm_id: remote,
        message_rejected: of,
        reason,
        reject_info_length: 8,
        ari,
        ..CmRej::default()
    }))
}

fn dreq(local: u32, remote: u32, remote_qpn: u32) -> CmMessage {
    CmMessage::Dreq(Box::new(CmDreq {
        local_comm_id: local,
        remote_comm_id: remote,
        remote_qpn_eecn: remote_qpn,
        ..CmDreq::default()
    }))
}

fn names(ev: &[(ConnId, CmEvent)]) -> Vec<String> {
    ev.iter()
        .map(|(_, e)| {
            format!("{e:?}")
                .split([' ', '{', '('])
                .next()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn a_req_flood_and_abandoned_reqs_from_one_peer_leave_room_for_another_peer() {
    let mut n = Net::new();
    // 5,000 REQs, each a new connection, none answered by b's user, and
    // the attacker never comes back for them.
    for i in 1..=5_000u32 {
        n.attack(req(i, i));
    }
    let flood = n.ev_b.len();
    let no_resources = n
        .to_attacker
        .iter()
        .filter(|m| matches!(m, CmMessage::Rej(r) if r.reason == RejectReason::NO_RESOURCES))
        .count();
    assert_eq!(flood + no_resources, 5_000, "each REQ is taken or refused");
    assert!(
        flood <= 1024,
        "one peer holds {flood} of the table's 4,096 entries"
    );
    // Another peer still gets through.
    n.connect(0x42);
    // Abandoned REQs do not hold their entries for ever: once the
    // attacker would have given up, they are gone (the honest connection
    // stays).
    n.advance(Duration::from_secs(121));
    assert_eq!(n.b.len(), 1, "{:?}", n.b.tables());
    assert_eq!(
        n.b.tables(),
        CmTables {
            connections: 1,
            by_remote_id: 1,
            by_remote_qpn: 1,
            peers: 1,
            timers: 0,
        }
    );
    // The attacker was told each was dropped (the kernel's REJ for an ID
    // destroyed in REQ received), and b's user got an error for each.
    let dropped = n
        .to_attacker
        .iter()
        .filter(|m| matches!(m, CmMessage::Rej(r) if r.reason == RejectReason::CONSUMER_DEFINED))
        .count();
    assert_eq!(dropped, flood);
    assert_eq!(n.b.stats().user_timeouts, flood as u64);
    // And the attacker may ask again.
    n.attack(req(9_999, 9_999));
    assert!(names(&n.ev_b).last().is_some_and(|e| e == "ConnectRequest"));
}

#[test]
fn an_mraed_request_its_user_never_answers_is_dropped_after_the_mras_wait() {
    let mut n = Net::new();
    n.attack(req(0x77, 0x77));
    let (id, _) = n.ev_b[0].clone();
    // MRA: the peer waits 4.096 us x 2^22 = 17 s more per REQ.
    n.b.delay(n.now, id, 22).unwrap();
    n.pump();
    n.advance(Duration::from_secs(60));
    assert_eq!(
        n.b.state(id),
        Some(State::MraReqSent),
        "within the MRA's wait"
    );
    // Its repeated REQ gets the MRA again.
    n.attack(req(0x77, 0x77));
    assert!(matches!(n.to_attacker.last(), Some(CmMessage::Mra(_))));
    n.advance(Duration::from_secs(121));
    assert_eq!(n.b.state(id), None);
    assert_eq!(names(&n.ev_b), ["ConnectRequest", "ConnectError"]);
    assert!(n.b.is_empty() && n.b.tables() == CmTables::default());
}

#[test]
fn dreq_and_rej_with_a_zero_or_guessed_comm_id_do_not_end_an_established_connection() {
    let mut n = Net::new();
    let (ca, cb) = n.connect(0x42);
    // Even knowing b's ID, a 0 in place of a's is no wildcard.
    n.attack(dreq(0, cb.0, 0x500));
    n.attack(rej(
        0,
        cb.0,
        MsgRef::OTHER,
        RejectReason::CONSUMER_DEFINED,
        0,
    ));
    n.attack(rej(0, cb.0, MsgRef::REQ, RejectReason::CONSUMER_DEFINED, 0));
    n.attack(rej(0, cb.0, MsgRef::REP, RejectReason::CONSUMER_DEFINED, 0));
    // Nor is a wrong nonzero one.
    n.attack(dreq(ca.0 ^ 1, cb.0, 0x500));
    // Guessing b's ID in sequence (with a's claimed CA GUID in a
    // REJ(Timeout), which is found by the sender's ID).
    for guess in 0..=256u32 {
        n.attack(dreq(0, guess, 0x500));
        n.attack(rej(
            0,
            guess,
            MsgRef::OTHER,
            RejectReason::CONSUMER_DEFINED,
            0,
        ));
        n.attack(rej(guess, 0, MsgRef::OTHER, RejectReason::TIMEOUT, 0xA));
        n.attack(rej(
            guess,
            guess,
            MsgRef::OTHER,
            RejectReason::STALE_CONN,
            0,
        ));
    }
    assert_eq!(n.b.state(cb), Some(State::Established));
    assert_eq!(n.a.state(ca), Some(State::Established));
    assert!(
        !names(&n.ev_b).iter().any(|e| e == "Disconnected"),
        "{:?}",
        n.ev_b
    );
    // The DREQs for no connection got the kernel's DREP, nothing more.
    assert!(n
        .to_attacker
        .iter()
        .all(|m| matches!(m, CmMessage::Drep(_))));
    // The right pair of IDs does end it.
    n.a.disconnect(n.now, ca, &[]).unwrap();
    n.pump();
    assert_eq!(n.b.state(cb), Some(State::Timewait));
}

#[test]
fn local_comm_ids_are_not_a_sequence() {
    let mut a = Cm::new(cfg(0xA, 1));
    let now = Instant::now();
    let ids: Vec<u32> = (0..64)
        .map(|i| a.connect(now, params(0x100 + i)).unwrap().0)
        .collect();
    let steps = ids
        .windows(2)
        .filter(|w| w[1].wrapping_sub(w[0]) < 1024)
        .count();
    assert!(steps < 4, "IDs in sequence: {ids:x?}");
    assert!(!ids.contains(&0));
    // Another seed, other IDs; the default (no seed) differs from run to
    // run, as the kernel's do.
    let mut other = Cm::new(cfg(0xA, 2));
    assert_ne!(other.connect(now, params(0x100)).unwrap().0, ids[0]);
    let unseeded = |_| {
        let mut c = Cm::new(CmConfig::default());
        c.connect(now, params(0x100)).unwrap().0
    };
    let firsts: Vec<u32> = (0..4).map(unseeded).collect();
    assert!(firsts.windows(2).any(|w| w[0] != w[1]), "{firsts:x?}");
}

#[test]
fn reqs_with_local_comm_id_zero_leave_nothing_behind() {
    let mut n = Net::new();
    // 100,000 REQs naming no connection, from as many claimed CAs and
    // QPs, then 1,000 from one CA; b's user rejects anything it is
    // given, and its REJ's timewait passes now and then.
    for i in 0..101_000u32 {
        let CmMessage::Req(mut r) = req(0, i + 1) else {
            unreachable!()
        };
        r.local_ca_guid = if i < 100_000 {
            u64::from(i)
        } else {
            ATTACKER_GUID
        };
        n.attack(CmMessage::Req(r));
        for (id, e) in std::mem::take(&mut n.ev_b) {
            if matches!(e, CmEvent::ConnectRequest { .. }) {
                n.b.reject(n.now, id, RejectReason::CONSUMER_DEFINED, &[])
                    .unwrap();
            }
        }
        if i % 10_000 == 0 {
            n.advance(Duration::from_secs(1));
        }
    }
    n.advance(Duration::from_secs(10));
    // None was a "duplicate" of an earlier one: each was refused (REJ
    // InvalidCommID) and none made state.
    assert_eq!(n.b.stats().duplicates, 0, "{:?}", n.b.stats());
    assert_eq!(n.b.stats().refused, 101_000);
    assert_eq!(n.b.tables(), CmTables::default());
    let refused = n
        .to_attacker
        .iter()
        .filter(|m| matches!(m, CmMessage::Rej(r) if r.reason == RejectReason::INVALID_COMM_ID))
        .count();
    assert_eq!(refused, 101_000);
    // The peer's next REQ with an ID is a request like any other.
    n.attack(req(5, 5));
    assert_eq!(names(&n.ev_b), ["ConnectRequest"]);
}

#[test]
fn a_rej_in_req_received_is_reported_and_the_request_is_gone() {
    let mut n = Net::new();
    // The active side gives up (the kernel's REJ(Timeout), its CA GUID in
    // the ARI, our ID unknown to it).
    n.attack(req(0x51, 0x51));
    let (id, _) = n.ev_b[0].clone();
    n.attack(rej(
        0x51,
        0,
        MsgRef::OTHER,
        RejectReason::TIMEOUT,
        ATTACKER_GUID,
    ));
    assert_eq!(names(&n.ev_b), ["ConnectRequest", "Rejected"]);
    assert_eq!(n.b.state(id), None);
    // Any other reason, both IDs named; after an MRA too.
    n.ev_b.clear();
    n.attack(req(0x52, 0x52));
    let (id, _) = n.ev_b[0].clone();
    n.b.delay(n.now, id, 20).unwrap();
    n.pump();
    n.attack(rej(
        0x52,
        id.0,
        MsgRef::OTHER,
        RejectReason::CONSUMER_DEFINED,
        0,
    ));
    assert_eq!(names(&n.ev_b), ["ConnectRequest", "Rejected"]);
    assert_eq!(n.b.state(id), None);
    assert_eq!(n.b.tables(), CmTables::default());
}

#[test]
fn a_req_repeated_in_timewait_gets_rej_stale_connection() {
    let mut n = Net::new();
    let (ca, cb) = n.connect(0x42);
    // Keep a's REQ as sent.
    let mut replay = Cm::new(cfg(0xA, 1));
    replay.connect(n.now, params(0x42)).unwrap();
    let first_req = replay.poll_transmit().unwrap().mad;
    n.a.disconnect(n.now, ca, &[]).unwrap();
    n.pump();
    assert_eq!(n.b.state(cb), Some(State::Timewait));
    n.b.handle_recv(n.now, &Address::gsi(1), &first_req)
        .unwrap();
    let t = n.b.poll_transmit().expect("an answer to the repeated REQ");
    let CmMessage::Rej(r) = CmMessage::parse(&t.mad).unwrap() else {
        panic!("not a REJ")
    };
    assert_eq!(
        (r.reason, r.local_comm_id, r.remote_comm_id),
        (RejectReason::STALE_CONN, cb.0, ca.0)
    );
    assert_eq!(n.b.stats().stale, 1);
}

#[test]
fn out_of_range_parameters_are_errors_that_name_them() {
    let mut a = Cm::new(cfg(0xA, 1));
    let now = Instant::now();
    for plt in [64u8, 100, 255] {
        let mut p = params(0x42);
        p.path.packet_life_time = plt;
        let e = a.connect(now, p).unwrap_err();
        assert!(
            matches!(
                e,
                CmError::OutOfRange {
                    what: "packet_life_time",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("packet_life_time"), "{e}");
    }
    let mut p = params(0x42);
    p.path.packet_life_time = 63;
    a.connect(now, p).unwrap();
    for (what, bad) in [
        (
            "max_cm_retries",
            ConnectParams {
                max_cm_retries: 16,
                ..params(1)
            },
        ),
        (
            "retry_count",
            ConnectParams {
                retry_count: 8,
                ..params(1)
            },
        ),
        (
            "rnr_retry_count",
            ConnectParams {
                rnr_retry_count: 8,
                ..params(1)
            },
        ),
        (
            "remote_cm_response_timeout",
            ConnectParams {
                remote_cm_response_timeout: 32,
                ..params(1)
            },
        ),
        (
            "starting_psn",
            ConnectParams {
                starting_psn: 1 << 24,
                ..params(1)
            },
        ),
    ] {
        let e = a
            .connect(now, bad)
            .map(|id| panic!("{what}: accepted as {id:?}"));
        let e = e.unwrap_err();
        assert!(e.to_string().contains(what), "{what}: {e}");
    }
    assert_eq!(a.len(), 1, "a refused connect leaves nothing behind");
}
