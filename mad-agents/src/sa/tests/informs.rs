//! InformInfo subscriptions and reports, SM changes, and the client's
//! errors.

use super::*;

fn trap_notice(trap: u16, issuer_lid: u16) -> Notice {
    Notice {
        is_generic: true,
        notice_type: Notice::TYPE_SUBNET_MGMT,
        producer_type_or_vendor_id: Notice::PRODUCER_CLASS_MANAGER,
        trap_number_or_device_id: trap,
        issuer_lid,
        ..Notice::default()
    }
}

fn subscription(trap: u16) -> InformInfo {
    InformInfo {
        lid_range_begin: InformInfo::LID_RANGE_ALL,
        is_generic: 1,
        trap_type: InformInfo::TYPE_ALL,
        trap_number_or_device_id: trap,
        producer_type_or_vendor_id: InformInfo::PRODUCER_TYPE_ALL,
        ..InformInfo::default()
    }
}

/// An SA and a client on [`env`], the client subscribed to trap 64.
fn subscribed_to_trap_64() -> (Env, SaResponder, SaClient, InformSubscription) {
    let (e, sa, c) = sa_and_client(SaClientConfig::default());
    let sub = c.subscribe(&subscription(64)).unwrap();
    (e, sa, c, sub)
}

#[test]
fn subscribe_delivers_matching_reports_and_acknowledges_them() {
    let (_e, sa, c, sub) = subscribed_to_trap_64();
    assert_eq!(sa.subscribers().len(), 1);
    assert_eq!(sa.subscribers()[0].lid, CLIENT_LID);
    // InformInfoRecord lists it.
    let iir = c.all::<InformInfoRecord>().unwrap();
    assert_eq!(iir.records.len(), 1);
    assert_eq!(iir.records[0].inform_info.trap_number_or_device_id, 64);
    // A matching Report arrives; another trap number does not.
    assert_eq!(sa.report(&trap_notice(65, 4)), 0);
    assert_eq!(sa.report(&trap_notice(64, 4)), 1);
    let r = c.next_report(Duration::from_secs(5)).expect("a report");
    assert_eq!(r.notice.trap_number_or_device_id, 64);
    assert_eq!(r.notice.issuer_lid, 4);
    assert_eq!(r.src.lid, SA_LID);
    wait_until("the ReportResp", || sa.stats().reports_acked == 1);
    assert_eq!(c.stats().report_acks, 1);
    assert!(c.try_report().is_none());
    // Unsubscribe: the SA forgets it and sends nothing more.
    c.unsubscribe(&sub).unwrap();
    assert!(sa.subscribers().is_empty());
    assert!(c.subscriptions().is_empty());
    assert_eq!(sa.report(&trap_notice(64, 4)), 0);
    // Unsubscribing what the SA does not hold is refused.
    assert!(matches!(c.unsubscribe(&sub), Err(SaError::RequestInvalid)));
}

#[test]
fn an_unsubscribe_refused_while_the_sa_still_lists_it_is_sent_again() {
    use std::sync::atomic::Ordering;
    let (e, sa, c, sub) = subscribed_to_trap_64();
    // Refused twice although held: the third request goes through.
    e.sa_refuses.store(2, Ordering::SeqCst);
    c.unsubscribe(&sub).unwrap();
    assert_eq!(e.sa_refuses.load(Ordering::SeqCst), 0, "both refusals used");
    assert!(sa.subscribers().is_empty(), "the SA let it go");
    // Refused every time while held: three requests, then the error.
    let sub = c.subscribe(&subscription(65)).unwrap();
    e.sa_refuses.store(5, Ordering::SeqCst);
    assert!(matches!(c.unsubscribe(&sub), Err(SaError::RequestInvalid)));
    assert_eq!(
        e.sa_refuses.load(Ordering::SeqCst),
        2,
        "three requests sent"
    );
    assert_eq!(sa.subscribers().len(), 1, "still held at the SA");
}

#[test]
fn a_repeated_report_is_acknowledged_again_but_delivered_once() {
    let e = env();
    let c = client(&e);
    let (sender, _rx) = e
        .sa_rt
        .register_channel(AgentSpec::send_only("reporter", Qp::Qp1))
        .unwrap();
    let data = trap_notice(128, 3).to_vec().unwrap();
    let mad = build_request(
        Method::REPORT,
        mad_core::wire::AttributeId::NOTICE,
        0,
        0,
        &data,
    );
    for _ in 0..2 {
        let req = SendRequest::new(mad.clone(), Address::gsi(CLIENT_LID))
            .expect_response(Duration::from_secs(2), 0)
            .low_tid(77);
        let done = sender.send_and_wait(req).unwrap();
        assert_eq!(done.status, SendStatus::Success, "ReportResp received");
        let resp = done.response.unwrap();
        assert_eq!(resp.mad().raw_method(), 0x86);
        assert_eq!(
            &resp.bytes()[56..136],
            &data[..],
            "ReportResp echoes the Notice"
        );
    }
    assert!(c.next_report(Duration::from_secs(2)).is_some());
    assert!(c.next_report(Duration::from_millis(100)).is_none());
    let st = c.stats();
    assert_eq!(
        (st.reports, st.report_acks, st.reports_duplicate),
        (2, 2, 1)
    );
}

#[test]
fn client_reregister_resends_subscriptions() {
    let (e, sa, c) = sa_and_client(SaClientConfig::default());
    c.subscribe(&subscription(64)).unwrap();
    c.subscribe(&subscription(65)).unwrap();
    // The SA lost its state (a restart): the client is told to
    // re-register.
    drop(sa);
    let sa = responder(&e);
    assert!(sa.subscribers().is_empty());
    e.client_port
        .lock()
        .unwrap()
        .push_event(AsyncEvent::ClientReregister);
    wait_until("two re-registrations", || c.stats().resubscribes_ok == 2);
    assert_eq!(sa.subscribers().len(), 2);
    assert!(c
        .subscriptions()
        .iter()
        .all(|s| s.accepted == 2 && s.last_error.is_none()));
    // And reports flow again.
    assert_eq!(sa.report(&trap_notice(65, 9)), 1);
    assert_eq!(
        c.next_report(Duration::from_secs(5))
            .unwrap()
            .notice
            .trap_number_or_device_id,
        65
    );
}

#[test]
fn sm_change_moves_the_sa_address_and_resubscribes_there() {
    let (e, sa, c) = sa_and_client(SaClientConfig::default());
    assert_eq!(c.sm_address().lid, SA_LID);
    c.subscribe(&subscription(0xFFFF)).unwrap();
    // A new SM at LID 5 with SL 3 takes over; its SA knows nothing yet.
    drop(sa);
    let sa = responder(&e);
    {
        let mut p = e.sa_port.lock().unwrap();
        p.stage_attrs(Loopback::attrs("sm", 1, 5));
        p.push_event(AsyncEvent::LidChange);
    }
    {
        let mut attrs = Loopback::attrs("client", 1, CLIENT_LID);
        attrs.sm_lid = 5;
        attrs.sm_sl = 3;
        let mut p = e.client_port.lock().unwrap();
        p.stage_attrs(attrs);
        p.push_event(AsyncEvent::SmChange);
    }
    wait_until("the re-registration", || c.stats().resubscribes_ok == 1);
    let a = c.sm_address();
    assert_eq!((a.lid, a.sl, a.qpn), (5, 3, 1));
    assert!(c.stats().sm_refreshes >= 1);
    assert_eq!(sa.subscribers().len(), 1);
    // Tables still arrive over RMPP from the new SA LID.
    let nodes: Vec<NodeRecord> = (1..=20u16)
        .map(|i| NodeRecord { lid: i, ..base(i) })
        .collect();
    e.source.set_records(&nodes).unwrap();
    assert_eq!(c.all::<NodeRecord>().unwrap().records, nodes);
}

#[test]
fn lid_change_refreshes_the_sm_address_without_resubscribing() {
    let (e, _sa, c) = sa_and_client(SaClientConfig::default());
    c.subscribe(&subscription(64)).unwrap();
    let mut attrs = Loopback::attrs("client", 1, 7);
    attrs.sm_sl = 2;
    {
        let mut p = e.client_port.lock().unwrap();
        p.stage_attrs(attrs);
        p.push_event(AsyncEvent::LidChange);
    }
    wait_until("the refresh", || c.stats().sm_refreshes == 1);
    assert_eq!(c.sm_address().sl, 2);
    assert_eq!(c.stats().resubscribes, 0);
}

#[test]
fn no_sm_and_no_answer_are_clear_errors() {
    let mut attrs = Loopback::attrs("lonely", 1, 2);
    attrs.sm_lid = 0;
    let rt = Runtime::start(Loopback::new(attrs, 16), EngineConfig::default()).unwrap();
    let c = SaClient::new(&rt, SaClientConfig::default()).unwrap();
    assert!(matches!(c.all::<NodeRecord>(), Err(SaError::NoSm)));
    // An SA that never answers, counting the requests that reach it.
    let posted = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let seen = posted.clone();
    let silent = Loopback::new(Loopback::attrs("lonely", 1, 2), 16).with_responder(Box::new(
        move |qp, _mad: &[u8], to: &Address| {
            if qp == Qp::Qp1 && to.lid == 1 {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            Vec::new()
        },
    ));
    let rt = Runtime::start(silent, EngineConfig::default()).unwrap();
    let c = SaClient::new(
        &rt,
        SaClientConfig {
            timeout: Duration::from_millis(20),
            retries: 2,
            ..SaClientConfig::default()
        },
    )
    .unwrap();
    let err = c.all::<NodeRecord>().unwrap_err();
    // How many attempts fit is the real clock's business: each wait
    // starts when the runtime thread sees the send complete, and none
    // runs past (retries + 1) x timeout after the first post, so a
    // runtime thread kept off the CPU that long (a loaded machine) makes
    // fewer. The error names the SA and the attempts the wire saw.
    let wire = posted.load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..=3).contains(&wire), "{wire} posts for 2 retries");
    assert!(
        matches!(err, SaError::Timeout { lid: 1, attempts } if attempts == wire),
        "{err}, {wire} posts"
    );
    assert!(err.to_string().contains("LID 1"));
    assert!(err
        .to_string()
        .contains(&format!("after {wire} attempt(s)")));
}

#[test]
fn status_names_and_errors_name_the_sa_codes() {
    assert_eq!(status_name(0x0300), "ERR_NO_RECORDS");
    assert_eq!(status_name(0x0400), "ERR_TOO_MANY_RECORDS");
    assert_eq!(
        status_name(0x000C),
        "method/attribute combination not supported"
    );
    assert!(matches!(SaError::from_status(0x0300), SaError::NoRecords));
    assert_eq!(SaError::from_status(0x0500).status(), Some(0x0500));
    assert!(SaError::from_status(0x0500)
        .to_string()
        .contains("ERR_REQ_INVALID_GID"));
    assert!(SaError::TooManyRecords.to_string().contains("0x0400"));
}

#[test]
fn inform_selects_follows_opensm_matching() {
    let n = trap_notice(64, 10);
    let mut i = subscription(64);
    assert!(inform_selects(&i, &n));
    i.lid_range_begin = 11;
    i.lid_range_end = 20;
    assert!(!inform_selects(&i, &n), "issuer LID outside the range");
    i.lid_range_begin = 5;
    assert!(inform_selects(&i, &n));
    i.gid = [1; 16];
    assert!(!inform_selects(&i, &n), "a GID overrides the LID range");
    let mut n2 = n.clone();
    n2.issuer_gid = [1; 16];
    assert!(inform_selects(&i, &n2));
    let mut i = subscription(64);
    i.is_generic = 0;
    assert!(!inform_selects(&i, &n));
    let mut i = subscription(64);
    i.producer_type_or_vendor_id = Notice::PRODUCER_SWITCH;
    assert!(!inform_selects(&i, &n));
}

#[test]
fn client_and_responder_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<SaClient>();
    send_sync::<SaResponder>();
    send_sync::<StaticRecords>();
}

#[test]
fn an_answer_for_another_attribute_is_refused() {
    // A peer that answers every SA request with a NodeRecord GetResp.
    let (a, b) = client_and_sa_ports(64);
    let sa_rt = Runtime::start(b, EngineConfig::default()).unwrap();
    let rt = Runtime::start(a, EngineConfig::default()).unwrap();
    let (liar, rx) = sa_rt
        .register_channel(AgentSpec::requests(
            "liar",
            mad_core::wire::MgmtClass::SUBN_ADM,
            2,
            &[Method::GET],
        ))
        .unwrap();
    let c = client_on(&rt);
    let t = std::thread::spawn(move || {
        if let Some(crate::AgentEvent::Received(m)) = rx.recv_timeout(Duration::from_secs(5)) {
            let mut resp = m.bytes().to_vec();
            mad_testkit_wire::header::edit(&mut resp, |h| {
                h.method = mad_core::wire::Method::GET;
                h.response = true;
            });
            mad_testkit_wire::header::edit(&mut resp, |h| {
                h.attr_id = mad_core::wire::AttributeId(NodeRecord::ATTR_ID.0)
            });
            liar.send(SendRequest::new(resp, *m.src())).unwrap();
        }
        liar
    });
    let err = c
        .get(&PathRecord::default(), 0)
        .expect_err("a NodeRecord is no PathRecord");
    assert!(matches!(err, SaError::Malformed(_)), "{err}");
    drop(t.join().unwrap());
}

fn client_on(rt: &Runtime) -> SaClient {
    SaClient::new(rt, SaClientConfig::default()).unwrap()
}

#[test]
fn port_info_records_match_capability_masks_bitwise_when_attr_mod_bit_31_is_set() {
    // saquery -s asks for ports whose CapabilityMask has IsSM set, with
    // AttributeModifier bit 31: "every bit the template sets", as OpenSM.
    let (e, _sa, c) = sa_and_client(SaClientConfig::default());
    let rec = |lid: u16, cap: u32| {
        let mut r: PortInfoRecord = base(lid);
        r.lid = lid;
        r.port_info.capability_mask = cap;
        r
    };
    e.source
        .set_records(&[
            rec(1, 0x0000_0002),
            rec(2, 0x0251_086a),
            rec(3, 0x0000_0008),
        ])
        .unwrap();
    let mut template = PortInfoRecord::default();
    template.port_info.capability_mask = 0x0000_0002;
    let bytes = template.to_vec().unwrap();
    let lids = |attr_mod: u32| -> Vec<u16> {
        let resp = c
            .request(
                Method::GET_TABLE,
                PortInfoRecord::ATTR_ID,
                attr_mod,
                PortInfoRecord::COMP_CAPABILITY_MASK,
                &bytes,
            )
            .unwrap();
        client::parse_table::<PortInfoRecord>(resp.bytes())
            .unwrap()
            .records
            .iter()
            .map(|r| r.lid)
            .collect()
    };
    assert_eq!(lids(1 << 31), vec![1, 2], "bitwise: IsSM set");
    assert_eq!(lids(0), vec![1], "without bit 31: equality");
}

/// An SA alone on a Loopback port: requests are pushed into its receive
/// queue from any source LID, and the status of every answer it sends is
/// recorded (answer LID, status), in order.
struct LoneSa {
    port: Arc<Mutex<Loopback>>,
    answers: Arc<Mutex<Vec<(u16, u16)>>>,
    sa: SaResponder,
    _rt: Runtime,
    next_tid: u64,
}

impl LoneSa {
    fn start(cfg: SaResponderConfig) -> Self {
        let answers: Arc<Mutex<Vec<(u16, u16)>>> = Arc::default();
        let seen = answers.clone();
        let lb = Loopback::new(Loopback::attrs("sm", 1, SA_LID), 4096).with_responder(Box::new(
            move |_qp, mad: &[u8], dest: &Address| {
                let status = mad_testkit_wire::header::of(mad).status.0;
                seen.lock().unwrap().push((dest.lid, status));
                Vec::new()
            },
        ));
        let (tap, port) = Tap::new(lb);
        let rt = Runtime::start(tap, EngineConfig::default()).unwrap();
        let sa = SaResponder::start(&rt, Arc::new(StaticRecords::new()), cfg).unwrap();
        Self {
            port,
            answers,
            sa,
            _rt: rt,
            next_tid: 1,
        }
    }

    /// Sends InformInfo Sets of `infos` from `lid`, a batch at a time
    /// (within the agent's receive queue bound), and returns the status
    /// of each answer.
    fn set_all(&mut self, lid: u16, infos: &[InformInfo]) -> Vec<u16> {
        let start = self.answers.lock().unwrap().len();
        for batch in infos.chunks(256) {
            let want = self.answers.lock().unwrap().len() + batch.len();
            for info in batch {
                let data = info.to_vec().unwrap();
                let mut mad = build_request(Method::SET, InformInfo::ATTR_ID, 0, 0xFFFF, &data);
                mad_testkit_wire::header::edit(&mut mad, |h| h.tid = self.next_tid);
                self.next_tid += 1;
                self.port.lock().unwrap().push_recv(Received {
                    qp: Qp::Qp1,
                    src: Address {
                        lid,
                        qpn: 1,
                        ..Address::default()
                    },
                    mad: mad.into(),
                });
            }
            wait_until("the batch's answers", || {
                self.answers.lock().unwrap().len() >= want
            });
        }
        let answers = self.answers.lock().unwrap();
        assert!(answers[start..].iter().all(|&(to, _)| to == lid));
        answers[start..].iter().map(|&(_, s)| s).collect()
    }
}

fn unsubscription(trap: u16) -> InformInfo {
    InformInfo {
        subscribe: 0,
        ..subscription(trap)
    }
}

#[test]
fn a_flood_of_20000_subscriptions_from_one_port_is_capped_and_other_ports_still_subscribe() {
    let limits = crate::sa::SubscriptionLimits::default();
    let mut lone = LoneSa::start(SaResponderConfig::default());
    let flood: Vec<InformInfo> = (0..20_000u16)
        .map(|n| InformInfo {
            subscribe: 1,
            ..subscription(n)
        })
        .collect();
    let statuses = lone.set_all(7, &flood);
    let ok = statuses.iter().filter(|&&s| s == 0).count();
    assert_eq!(ok, limits.per_port, "the per-port cap holds");
    assert!(statuses[limits.per_port..]
        .iter()
        .all(|&s| s == MadStatus::SA_NO_RESOURCES.0));
    assert_eq!(sa_count(&lone.sa, 7), limits.per_port);
    assert_eq!(
        lone.sa.stats().subscriptions_refused,
        (20_000 - limits.per_port) as u64
    );
    // A second port subscribes.
    let s64 = InformInfo {
        subscribe: 1,
        ..subscription(64)
    };
    assert_eq!(lone.set_all(8, std::slice::from_ref(&s64)), [0]);
    // A held subscription repeated by the full port is still accepted,
    // and kept once.
    assert_eq!(lone.set_all(7, std::slice::from_ref(&flood[3])), [0]);
    assert_eq!(lone.set_all(8, std::slice::from_ref(&s64)), [0]);
    assert_eq!(sa_count(&lone.sa, 7), limits.per_port);
    assert_eq!(sa_count(&lone.sa, 8), 1);
    // Unsubscribing frees a slot of that port; unknown ones are refused.
    assert_eq!(lone.set_all(7, &[unsubscription(3)]), [0]);
    assert_eq!(
        lone.set_all(7, &[unsubscription(3)]),
        [MadStatus::SA_REQ_INVALID.0]
    );
    assert_eq!(lone.set_all(7, std::slice::from_ref(&flood[19_999])), [0]);
    assert_eq!(
        lone.set_all(7, std::slice::from_ref(&flood[19_998])),
        [MadStatus::SA_NO_RESOURCES.0]
    );
    assert_eq!(sa_count(&lone.sa, 7), limits.per_port);
}

#[test]
fn the_total_subscription_limit_refuses_every_port_once_reached() {
    let cfg = SaResponderConfig {
        subscription_limits: crate::sa::SubscriptionLimits {
            per_port: 10,
            total: 25,
        },
        ..SaResponderConfig::default()
    };
    let mut lone = LoneSa::start(cfg);
    let ten: Vec<InformInfo> = (0..10)
        .map(|n| InformInfo {
            subscribe: 1,
            ..subscription(n)
        })
        .collect();
    for lid in [10, 11] {
        assert!(lone.set_all(lid, &ten).iter().all(|&s| s == 0));
    }
    let third = lone.set_all(12, &ten);
    assert_eq!(third.iter().filter(|&&s| s == 0).count(), 5);
    assert!(third[5..]
        .iter()
        .all(|&s| s == MadStatus::SA_NO_RESOURCES.0));
    assert_eq!(lone.sa.subscribers().len(), 25);
}

fn sa_count(sa: &SaResponder, lid: u16) -> usize {
    sa.subscribers().iter().filter(|s| s.lid == lid).count()
}
