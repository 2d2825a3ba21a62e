//! Two CMs wired to each other on a virtual clock.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

use std::time::{Duration, Instant};

use mad_core::transport::Address;
use mad_core::wire::cm::{timeout_duration, CmMessage, RejectReason};
use mad_core::wire::{AttributeId, Method};
use mad_testkit::header;

use crate::{
    AcceptParams, Cm, CmConfig, CmError, CmEvent, CmPath, ConnId, ConnectParams, DisconnectCause,
    State,
};

const SERVICE: u64 = 0x0106_4e20;

/// Client `a` (LID 1, CA GUID 0xA) and server `b` (LID 2, CA GUID 0xB).
struct Net {
    a: Cm,
    b: Cm,
    now: Instant,
    /// MADs a→b / b→a to drop: a predicate on the message.
    drop_ab: Box<dyn FnMut(&CmMessage) -> bool>,
    drop_ba: Box<dyn FnMut(&CmMessage) -> bool>,
    /// Every MAD delivered, as "a>b REQ".
    log: Vec<String>,
    ev_a: Vec<(ConnId, CmEvent)>,
    ev_b: Vec<(ConnId, CmEvent)>,
}

fn path() -> CmPath {
    CmPath {
        local_lid: 1,
        remote_lid: 2,
        subnet_local: true,
        packet_life_time: 14, // 67 ms
        mtu: 4,
        pkey: 0xFFFF,
        sl: 3,
        ..CmPath::default()
    }
}

fn params(qpn: u32) -> ConnectParams {
    ConnectParams {
        responder_resources: 4,
        initiator_depth: 2,
        max_cm_retries: 3,
        remote_cm_response_timeout: 16, // 268 ms
        ..ConnectParams::new(SERVICE, qpn, 0x1234, path())
    }
}

fn accept(qpn: u32) -> AcceptParams {
    AcceptParams {
        qpn,
        starting_psn: 0x5678,
        responder_resources: 2,
        initiator_depth: 4,
        rnr_retry_count: 7,
        private_data: b"hello".to_vec(),
    }
}

/// Delivers every MAD `from` (at LID `lids.0`) has for `to` (at `lids.1`),
/// dropping those `lost` picks; true if there were any.
fn carry(
    from: &mut Cm,
    to: &mut Cm,
    lids: (u16, u16),
    lost: &mut dyn FnMut(&CmMessage) -> bool,
    tag: &str,
    now: Instant,
    log: &mut Vec<String>,
) -> bool {
    let mut moved = false;
    while let Some(t) = from.poll_transmit() {
        moved = true;
        let m = CmMessage::parse(&t.mad).unwrap();
        assert_eq!(t.to.lid, lids.1);
        if lost(&m) {
            log.push(format!("{tag} {} (lost)", m.short_name()));
            continue;
        }
        log.push(format!("{tag} {}", m.short_name()));
        to.handle_recv(now, &Address::gsi(lids.0), &t.mad).unwrap();
    }
    moved
}

impl Net {
    fn new() -> Self {
        let cfg = |guid, first| CmConfig {
            ca_guid: guid,
            response_timeout: 16,
            comm_id_seed: Some(first),
            ..CmConfig::default()
        };
        let mut b = Cm::new(cfg(0xB, 0x100));
        b.listen(SERVICE).unwrap();
        Self {
            a: Cm::new(cfg(0xA, 0x10)),
            b,
            now: Instant::now(),
            drop_ab: Box::new(|_| false),
            drop_ba: Box::new(|_| false),
            log: Vec::new(),
            ev_a: Vec::new(),
            ev_b: Vec::new(),
        }
    }

    /// Carries MADs both ways until neither side has any.
    fn pump(&mut self) {
        loop {
            let ab = carry(
                &mut self.a,
                &mut self.b,
                (1, 2),
                &mut self.drop_ab,
                "a>b",
                self.now,
                &mut self.log,
            );
            let ba = carry(
                &mut self.b,
                &mut self.a,
                (2, 1),
                &mut self.drop_ba,
                "b>a",
                self.now,
                &mut self.log,
            );
            let moved = ab || ba;
            self.ev_a.extend(std::iter::from_fn(|| self.a.poll_event()));
            self.ev_b.extend(std::iter::from_fn(|| self.b.poll_event()));
            if !moved {
                return;
            }
        }
    }

    /// Moves the clock by `d`, firing deadlines on the way, and pumps.
    fn advance(&mut self, d: Duration) {
        let end = self.now + d;
        loop {
            let next = [self.a.poll_timeout(), self.b.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    self.a.handle_timeout(self.now);
                    self.b.handle_timeout(self.now);
                    self.pump();
                }
                _ => break,
            }
        }
        self.now = end;
        self.pump();
    }

    /// Runs until neither side has a deadline left.
    fn settle(&mut self) {
        self.advance(Duration::from_secs(3600));
        assert!(self.a.poll_timeout().is_none() && self.b.poll_timeout().is_none());
    }

    fn names(ev: &[(ConnId, CmEvent)]) -> Vec<&'static str> {
        ev.iter()
            .map(|(_, e)| match e {
                CmEvent::ConnectRequest { .. } => "CONNECT_REQUEST",
                CmEvent::ConnectResponse { .. } => "CONNECT_RESPONSE",
                CmEvent::Established { .. } => "ESTABLISHED",
                CmEvent::Rejected { .. } => "REJECTED",
                CmEvent::Unreachable => "UNREACHABLE",
                CmEvent::ConnectError { .. } => "CONNECT_ERROR",
                CmEvent::Disconnected { .. } => "DISCONNECTED",
                CmEvent::TimewaitExit => "TIMEWAIT_EXIT",
                CmEvent::DeviceRemoval | CmEvent::ListenerRemoved { .. } => "DEVICE_REMOVAL",
            })
            .collect()
    }

    fn take(&mut self) -> (Vec<&'static str>, Vec<&'static str>) {
        let r = (Self::names(&self.ev_a), Self::names(&self.ev_b));
        self.ev_a.clear();
        self.ev_b.clear();
        r
    }

    /// Connects `qpn` and lets the server accept: returns (client, server)
    /// IDs, established.
    fn connected(&mut self, qpn: u32) -> (ConnId, ConnId) {
        let ca = self.a.connect(self.now, params(qpn)).unwrap();
        self.pump();
        let cb = self.server_request();
        self.b.accept(self.now, cb, accept(qpn + 0x100)).unwrap();
        self.pump();
        assert_eq!(self.take(), (vec!["ESTABLISHED"], vec!["ESTABLISHED"]));
        (ca, cb)
    }

    /// Connects QP 0x40 without `auto_rtu` and lets the server accept:
    /// (client, server) IDs.
    fn accepted_without_rtu(&mut self) -> (ConnId, ConnId) {
        let p = ConnectParams {
            auto_rtu: false,
            ..params(0x40)
        };
        let ca = self.a.connect(self.now, p).unwrap();
        self.pump();
        let cb = self.server_request();
        self.b.accept(self.now, cb, accept(0x140)).unwrap();
        self.pump();
        (ca, cb)
    }

    /// The ID of the last CONNECT_REQUEST on the server (consumed).
    fn server_request(&mut self) -> ConnId {
        let (id, e) = self.ev_b.pop().expect("an event on the server");
        assert!(matches!(e, CmEvent::ConnectRequest { .. }), "{e:?}");
        id
    }
}

#[test]
fn connect_hands_each_side_what_its_qp_needs() {
    let mut n = Net::new();
    let ca = n.a.connect(n.now, params(0x40)).unwrap();
    n.pump();
    let (cb, req) = n.ev_b.pop().unwrap();
    let CmEvent::ConnectRequest { listener, info } = req else {
        panic!("{req:?}")
    };
    assert_eq!(listener.0, SERVICE);
    assert_eq!(
        (info.remote_qpn, info.remote_psn, info.remote_ca_guid),
        (0x40, 0x1234, 0xA)
    );
    assert_eq!((info.responder_resources, info.initiator_depth), (4, 2));
    assert_eq!(
        (
            info.path.local_lid,
            info.path.remote_lid,
            info.path.mtu,
            info.path.sl
        ),
        (2, 1, 4, 3)
    );
    assert_eq!(info.path.packet_life_time, 14);
    n.b.accept(n.now, cb, accept(0x140)).unwrap();
    n.pump();
    assert_eq!(n.log, ["a>b REQ", "b>a REP", "a>b RTU"]);
    let (_, est) = &n.ev_a[0];
    let CmEvent::Established { info } = est else {
        panic!("{est:?}")
    };
    assert_eq!(
        (info.remote_qpn, info.remote_psn, info.local_qpn),
        (0x140, 0x5678, 0x40)
    );
    assert_eq!((info.responder_resources, info.initiator_depth), (2, 4));
    assert_eq!(&info.private_data[..5], b"hello");
    assert_eq!(
        (n.a.state(ca), n.b.state(cb)),
        (Some(State::Established), Some(State::Established))
    );
    assert!(n.a.poll_timeout().is_none() && n.b.poll_timeout().is_none());
}

#[test]
fn without_auto_rtu_the_rep_is_a_connect_response_and_establish_sends_the_rtu() {
    let mut n = Net::new();
    let (ca, _) = n.accepted_without_rtu();
    assert_eq!(n.take(), (vec!["CONNECT_RESPONSE"], vec![]));
    assert_eq!(n.a.state(ca), Some(State::RepRcvd));
    n.a.establish(n.now, ca).unwrap();
    n.pump();
    assert_eq!(n.take(), (vec!["ESTABLISHED"], vec!["ESTABLISHED"]));
    assert!(matches!(
        n.a.establish(n.now, ca),
        Err(CmError::InvalidState { .. })
    ));
}

#[test]
fn reject_carries_its_reason_and_private_data_to_the_client() {
    let mut n = Net::new();
    let ca = n.a.connect(n.now, params(0x40)).unwrap();
    n.pump();
    let cb = n.server_request();
    n.b.reject(n.now, cb, RejectReason::CONSUMER_DEFINED, b"go away")
        .unwrap();
    n.pump();
    let (_, e) = &n.ev_a[0];
    let CmEvent::Rejected {
        reason,
        private_data,
        ..
    } = e
    else {
        panic!("{e:?}")
    };
    assert_eq!(*reason, RejectReason::CONSUMER_DEFINED);
    assert_eq!(&private_data[..7], b"go away");
    assert_eq!(n.a.state(ca), None, "a rejected REQ leaves nothing behind");
    assert_eq!(n.b.state(cb), Some(State::RejSent));
    // The same QP asking again is a new request, not a stale one.
    n.ev_a.clear();
    n.a.connect(n.now, params(0x40)).unwrap();
    n.pump();
    assert_eq!(n.take(), (vec![], vec!["CONNECT_REQUEST"]));
    n.settle();
    // The REJ's record is gone after timewait; the client, unanswered,
    // gave up and said so with a REJ(Timeout), which took the request
    // off the server too.
    assert_eq!(n.b.state(cb), None);
    assert_eq!(n.take(), (vec!["UNREACHABLE"], vec!["REJECTED"]));
    assert!(n.b.is_empty());
}

#[test]
fn a_req_to_no_listener_is_rejected_invalid_service_id() {
    let mut n = Net::new();
    n.a.connect(
        n.now,
        ConnectParams {
            service_id: 0x99,
            ..params(0x40)
        },
    )
    .unwrap();
    n.pump();
    assert!(matches!(
        &n.ev_a[..],
        [(
            _,
            CmEvent::Rejected {
                reason: RejectReason::INVALID_SERVICE_ID,
                ..
            }
        )]
    ));
    assert!(n.b.is_empty());
}

#[test]
fn an_unanswered_req_is_resent_max_cm_retries_times_then_unreachable() {
    let mut n = Net::new();
    n.drop_ab = Box::new(|_| true);
    let p = params(0x40);
    let wait = p.path.packet_life() * 2 + timeout_duration(p.remote_cm_response_timeout);
    n.a.connect(n.now, p).unwrap();
    n.pump();
    n.advance(wait * 4 - Duration::from_millis(1));
    assert!(n.ev_a.is_empty(), "still trying: {:?}", n.ev_a);
    n.advance(Duration::from_millis(1));
    assert_eq!(n.take().0, ["UNREACHABLE"]);
    // The REQ, 3 resends, and the REJ(Timeout) the kernel sends when it
    // gives up.
    assert_eq!(
        n.log,
        [
            "a>b REQ (lost)",
            "a>b REQ (lost)",
            "a>b REQ (lost)",
            "a>b REQ (lost)",
            "a>b REJ (lost)"
        ]
    );
    assert!(n.a.is_empty());
}

#[test]
fn an_mra_keeps_the_client_waiting_past_its_retries() {
    let mut n = Net::new();
    let p = ConnectParams {
        max_cm_retries: 1,
        ..params(0x40)
    };
    let wait = p.path.packet_life() * 2 + timeout_duration(p.remote_cm_response_timeout);
    let ca = n.a.connect(n.now, p).unwrap();
    n.pump();
    let cb = n.server_request();
    n.b.delay(n.now, cb, 22).unwrap(); // 17 s
    n.pump();
    assert_eq!(n.a.state(ca), Some(State::MraReqRcvd));
    n.advance(wait * 10);
    assert!(n.ev_a.is_empty(), "{:?}", n.ev_a);
    assert_eq!(
        n.log,
        ["a>b REQ", "b>a MRA"],
        "no resend while the MRA lasts"
    );
    n.b.accept(n.now, cb, accept(0x140)).unwrap();
    n.pump();
    assert_eq!(n.take(), (vec!["ESTABLISHED"], vec!["ESTABLISHED"]));
}

#[test]
fn a_repeated_req_after_an_mra_gets_the_mra_again() {
    let mut n = Net::new();
    let ca = n.a.connect(n.now, params(0x40)).unwrap();
    n.drop_ba = Box::new(|m| matches!(m, CmMessage::Mra(_)));
    n.pump();
    let cb = n.server_request();
    n.b.delay(n.now, cb, 22).unwrap();
    n.pump();
    n.drop_ba = Box::new(|_| false);
    assert_eq!(n.a.state(ca), Some(State::ReqSent));
    n.advance(Duration::from_secs(1));
    assert_eq!(n.a.state(ca), Some(State::MraReqRcvd));
    assert_eq!(n.b.stats().duplicates, 1);
    assert!(n.ev_b.is_empty(), "no second CONNECT_REQUEST");
}

#[test]
fn lost_rep_and_lost_rtu_are_recovered_by_resends() {
    let mut n = Net::new();
    let mut lost_rep = 1;
    n.drop_ba =
        Box::new(move |m| matches!(m, CmMessage::Rep(_)) && std::mem::take(&mut lost_rep) == 1);
    let mut lost_rtu = 1;
    n.drop_ab =
        Box::new(move |m| matches!(m, CmMessage::Rtu(_)) && std::mem::take(&mut lost_rtu) == 1);
    n.a.connect(n.now, params(0x40)).unwrap();
    n.pump();
    let cb = n.server_request();
    n.b.accept(n.now, cb, accept(0x140)).unwrap();
    n.pump();
    n.advance(Duration::from_secs(2));
    assert_eq!(n.take(), (vec!["ESTABLISHED"], vec!["ESTABLISHED"]));
    assert!(n.log.contains(&"b>a REP (lost)".to_owned()));
    assert!(n.log.contains(&"a>b RTU (lost)".to_owned()));
    assert!(
        n.a.stats().duplicates >= 1,
        "the repeated REP got the RTU again"
    );
}

#[test]
fn a_rep_never_answered_is_a_connect_error_and_a_rej_timeout() {
    let mut n = Net::new();
    n.drop_ab = Box::new(|m| !matches!(m, CmMessage::Req(_)));
    n.accepted_without_rtu();
    n.settle();
    let (a, b) = n.take();
    assert_eq!(a, ["CONNECT_RESPONSE", "REJECTED", "TIMEWAIT_EXIT"]);
    assert_eq!(b, ["CONNECT_ERROR", "TIMEWAIT_EXIT"]);
}

#[test]
fn disconnect_from_the_client() {
    let mut n = Net::new();
    let (ca, _) = n.connected(0x40);
    n.a.disconnect(n.now, ca, b"bye").unwrap();
    n.pump();
    let (_, e) = &n.ev_b[0];
    assert!(
        matches!(e, CmEvent::Disconnected { private_data, cause: DisconnectCause::DreqReceived } if private_data.starts_with(b"bye"))
    );
    assert_eq!(n.take(), (vec!["DISCONNECTED"], vec!["DISCONNECTED"]));
    n.settle();
    assert_eq!(n.take(), (vec!["TIMEWAIT_EXIT"], vec!["TIMEWAIT_EXIT"]));
    assert!(n.a.is_empty() && n.b.is_empty());
}

#[test]
fn disconnect_from_the_server() {
    let mut n = Net::new();
    let (_, cb) = n.connected(0x40);
    n.b.disconnect(n.now, cb, &[]).unwrap();
    n.pump();
    assert_eq!(n.log[3..], ["b>a DREQ", "a>b DREP"]);
    assert_eq!(n.take(), (vec!["DISCONNECTED"], vec!["DISCONNECTED"]));
    n.settle();
    assert_eq!(n.take(), (vec!["TIMEWAIT_EXIT"], vec!["TIMEWAIT_EXIT"]));
}

#[test]
fn simultaneous_disconnect_reports_one_disconnect_on_each_side() {
    let mut n = Net::new();
    let (ca, cb) = n.connected(0x40);
    n.a.disconnect(n.now, ca, &[]).unwrap();
    n.b.disconnect(n.now, cb, &[]).unwrap();
    n.pump();
    n.settle();
    // Each side got the other's DREQ while its own was outstanding.
    for ev in [&n.ev_a, &n.ev_b] {
        assert!(
            matches!(
                ev[0].1,
                CmEvent::Disconnected {
                    cause: DisconnectCause::DreqCrossed,
                    ..
                }
            ),
            "{ev:?}"
        );
    }
    assert_eq!(
        n.take(),
        (
            vec!["DISCONNECTED", "TIMEWAIT_EXIT"],
            vec!["DISCONNECTED", "TIMEWAIT_EXIT"]
        )
    );
}

#[test]
fn an_unanswered_dreq_still_disconnects_after_its_retries() {
    let mut n = Net::new();
    let (ca, _) = n.connected(0x40);
    n.drop_ab = Box::new(|_| true);
    n.a.disconnect(n.now, ca, &[]).unwrap();
    n.pump();
    n.settle();
    let (a, _) = n.take();
    assert_eq!(a, ["DISCONNECTED", "TIMEWAIT_EXIT"]);
    assert_eq!(n.log.iter().filter(|l| l.contains("DREQ")).count(), 4);
}

#[test]
fn a_stale_req_during_timewait_is_rejected_and_accepted_after_it() {
    let mut n = Net::new();
    let (ca, cb) = n.connected(0x40);
    n.a.disconnect(n.now, ca, &[]).unwrap();
    n.pump();
    n.take();
    assert_eq!(n.b.state(cb), Some(State::Timewait));
    // The client reuses QP 0x40 before the server's timewait is over.
    let again = n.a.connect(n.now, params(0x40)).unwrap();
    n.pump();
    let (_, e) = &n.ev_a[0];
    assert!(
        matches!(
            e,
            CmEvent::Rejected {
                reason: RejectReason::STALE_CONN,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(n.b.stats().stale, 1);
    n.settle();
    n.take();
    assert_ne!(again, ca);
    // After TIMEWAIT_EXIT the QPN is free.
    n.connected(0x40);
}

#[test]
fn a_req_reusing_a_connected_qpn_is_stale_and_the_old_connection_is_torn_down() {
    let mut n = Net::new();
    let (_, cb) = n.connected(0x40);
    // A repeated REQ of the live connection is a duplicate, not stale.
    let first_req = {
        let mut m = Net::new();
        m.a = Cm::new(CmConfig {
            ca_guid: 0xA,
            comm_id_seed: Some(0x10),
            ..CmConfig::default()
        });
        m.a.connect(m.now, params(0x40)).unwrap();
        m.a.poll_transmit().unwrap().mad
    };
    n.b.handle_recv(n.now, &Address::gsi(1), &first_req)
        .unwrap();
    assert_eq!((n.b.stats().duplicates, n.b.stats().stale), (1, 0));
    assert!(n.b.poll_transmit().is_none());
    // A new REQ (new Communication ID) from the same QP: stale.
    n.a.connect(n.now, params(0x40)).unwrap();
    n.pump();
    let (a, b) = n.take();
    assert_eq!(a, ["REJECTED", "DISCONNECTED"]);
    assert_eq!(b, ["DISCONNECTED"]);
    assert_eq!(n.b.state(cb), Some(State::Timewait));
}

/// Side B receives `m` (TID `tid`) from LID 1; what it answers.
fn b_answers(n: &mut Net, m: &CmMessage, tid: u64) -> CmMessage {
    n.b.handle_recv(n.now, &Address::gsi(1), &m.to_mad(tid).unwrap())
        .unwrap();
    CmMessage::parse(&n.b.poll_transmit().unwrap().mad).unwrap()
}

#[test]
fn messages_for_unknown_connections_get_the_kernels_answers() {
    let mut n = Net::new();
    let src = Address::gsi(1);
    let rep = CmMessage::Rep(Box::new(mad_core::wire::cm::CmRep {
        local_comm_id: 7,
        remote_comm_id: 99,
        ..Default::default()
    }));
    let CmMessage::Rej(rej) = b_answers(&mut n, &rep, 1) else {
        panic!()
    };
    assert_eq!(
        (rej.reason, rej.remote_comm_id),
        (RejectReason::INVALID_COMM_ID, 7)
    );
    let dreq = CmMessage::Dreq(Box::new(mad_core::wire::cm::CmDreq {
        local_comm_id: 8,
        remote_comm_id: 98,
        ..Default::default()
    }));
    assert!(matches!(b_answers(&mut n, &dreq, 2), CmMessage::Drep(d) if d.remote_comm_id == 8));
    // RTU, DREP, MRA, REJ for nobody: dropped, counted.
    for m in [
        CmMessage::Rtu(Box::default()),
        CmMessage::Drep(Box::default()),
        CmMessage::Mra(Box::default()),
        CmMessage::Rej(Box::default()),
    ] {
        n.b.handle_recv(n.now, &src, &m.to_mad(3).unwrap()).unwrap();
    }
    assert!(n.b.poll_transmit().is_none());
    assert_eq!(n.b.stats().unknown, 6);
    // LAP: alternate paths are not supported (APR); SIDR: no service IDs
    // (SIDR_REP).
    for (tid, m, answer) in [
        (4, CmMessage::Lap(Box::default()), "Apr"),
        (5, CmMessage::SidrReq(Box::default()), "SidrRep"),
    ] {
        let got = b_answers(&mut n, &m, tid);
        let name = match got {
            CmMessage::Apr(_) => "Apr",
            CmMessage::SidrRep(_) => "SidrRep",
            _ => "another message",
        };
        assert_eq!(name, answer, "the answer to TID {tid}: {got:?}");
    }
    let get = CmMessage::ClassPortInfo(Box::default())
        .to_mad(0x77)
        .unwrap();
    n.b.handle_recv(n.now, &src, &get).unwrap();
    let resp = n.b.poll_transmit().unwrap().mad;
    let h = header::of(&resp);
    assert_eq!((h.method, h.response, h.tid), (Method::GET, true, 0x77));
}

#[test]
fn malformed_mads_are_errors_not_panics() {
    let mut n = Net::new();
    let src = Address::gsi(1);
    assert!(n.b.handle_recv(n.now, &src, &[1, 7, 2]).is_err());
    let mut m = CmMessage::Rtu(Box::default()).to_mad(1).unwrap();
    header::edit(&mut m, |h| h.class_version = 1);
    assert!(matches!(
        n.b.handle_recv(n.now, &src, &m),
        Err(CmError::Wire(_))
    ));
    header::edit(&mut m, |h| {
        h.class_version = 2;
        h.attr_id = AttributeId(0x0040); // no CM attribute
    });
    assert!(n.b.handle_recv(n.now, &src, &m).is_err());
    assert_eq!(n.b.stats().malformed, 3);
}

#[test]
fn bad_calls_are_refused() {
    let mut n = Net::new();
    let long = ConnectParams {
        private_data: vec![0; 93],
        ..params(1)
    };
    assert!(matches!(
        n.a.connect(n.now, long),
        Err(CmError::PrivateDataTooLong { max: 92, .. })
    ));
    let wide = ConnectParams {
        qpn: 1 << 24,
        ..params(1)
    };
    assert!(matches!(n.a.connect(n.now, wide), Err(CmError::Wire(_))));
    assert!(n.a.is_empty(), "a refused connect leaves nothing behind");
    assert!(matches!(
        n.a.disconnect(n.now, ConnId(5), &[]),
        Err(CmError::UnknownConnection(_))
    ));
    assert!(matches!(
        n.b.listen(SERVICE),
        Err(CmError::AlreadyListening(_))
    ));
    let ca = n.a.connect(n.now, params(1)).unwrap();
    assert!(matches!(
        n.a.disconnect(n.now, ca, &[]),
        Err(CmError::InvalidState { .. })
    ));
    assert!(matches!(
        n.a.accept(n.now, ca, accept(2)),
        Err(CmError::InvalidState { .. })
    ));
}

#[test]
fn device_removal_reaches_every_connection() {
    let mut n = Net::new();
    let (ca, _) = n.connected(0x40);
    let other = n.a.connect(n.now, params(0x41)).unwrap();
    let l = n.a.listen(0x99).unwrap();
    n.a.device_removed();
    let ev: Vec<_> = std::iter::from_fn(|| n.a.poll_event()).collect();
    let mut conns = [ca, other];
    conns.sort();
    assert_eq!(
        ev,
        [
            (conns[0], CmEvent::DeviceRemoval),
            (conns[1], CmEvent::DeviceRemoval),
            (ConnId::NONE, CmEvent::ListenerRemoved { listener: l })
        ]
    );
    assert!(n.a.is_empty() && n.a.poll_timeout().is_none() && n.a.poll_transmit().is_none());
    // The listener is gone with the device: listening again is allowed.
    assert_eq!(n.a.listen(0x99), Ok(l));
}
