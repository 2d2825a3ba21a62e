//! Dispatch of received requests, registration conflicts, the bounded
//! receive queue, deregistration and async events.

use super::*;

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
    recv_and_poll(
        &mut e,
        t0,
        Received {
            qp: Qp::Qp0,
            src: Address::smi(0xFFFF),
            mad: dr.into(),
        },
    );
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
        .register(perf_requests("pma", &[Method::GET, Method::SET]))
        .unwrap();
    let err = e
        .register(perf_requests("intruder", &[Method::SET]))
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
    e.register(perf_requests("trap", &[Method::TRAP])).unwrap();
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
    e.register(perf_requests("pma2", &[Method::SET])).unwrap();
}

#[test]
fn requests_dispatch_by_class_version_method_and_oui() {
    let (lb, _far) = port(5);
    let mut e = engine(lb);
    let get = e.register(perf_requests("get", &[Method::GET])).unwrap();
    let set = e.register(perf_requests("set", &[Method::SET])).unwrap();
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
    let push = |e: &mut Stack<Loopback>, m: Vec<u8>| {
        e.handle_recv(t0, gsi_from(3, m)).unwrap();
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
    let mut e = Stack::new(
        lb,
        EngineConfig {
            recv_queue_bound: 4,
            ..EngineConfig::default()
        },
    );
    let a = e.register(perf_requests("pma", &[Method::GET])).unwrap();
    for _ in 0..10 {
        e.handle_recv(Instant::now(), gsi_from(3, perf_get()))
            .unwrap();
    }
    e.poll(Instant::now());
    assert_eq!(drain(&mut e).len(), 4);
    let st = e.agent_stats(a).unwrap();
    assert_eq!((st.received, st.recv_dropped), (4, 6));
    assert_eq!(e.stats().recv_dropped, 6);
    // Once drained, there is room again.
    recv_and_poll(&mut e, Instant::now(), gsi_from(3, perf_get()));
    assert_eq!(drain(&mut e).len(), 1);
}

#[test]
fn responses_go_to_the_sending_agent_only() {
    let (lb, _far) = port(5);
    let mut e = engine(lb);
    let a = perf_agent(&mut e);
    let b = e.register(perf_requests("pma", &[Method::GET])).unwrap();
    let t0 = Instant::now();
    e.send(a, perf_request(MS, 0), t0).unwrap();
    e.poll(t0);
    let evs = drain(&mut e);
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].0, a);
    assert_ne!(evs[0].0, b);
}

#[test]
fn deregistration_flushes_waiting_sends_and_waits_for_posted_ones() {
    let (mut e, _far, a, t0) = rig(Mode::Silent, false);
    let waiting = e.send(a, perf_request(9 * SEC, 0), t0).unwrap();
    e.poll(t0);
    e.transport_mut().set_stalled(true);
    let posted = e.send(a, perf_request(9 * SEC, 0), t0).unwrap();
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
    e.transport_mut().set_stalled(false);
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
    let (mut e, _far, a, t0) = rig(Mode::Silent, false);
    let n = 100_000usize;
    let mut ids = std::collections::HashSet::new();
    let start = Instant::now();
    for i in 0..n {
        let s = e
            .send(a, perf_request(3600 * SEC, 1).cookie(i as u64), t0)
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

/// The port reports `ev`; the events the engine then hands out.
fn event_and_drain(
    e: &mut Stack<Loopback>,
    ev: AsyncEvent,
    now: Instant,
) -> Vec<(AgentId, AgentEvent)> {
    e.transport_mut().push_event(ev);
    e.poll(now);
    drain(e)
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
    let evs = event_and_drain(&mut e, AsyncEvent::SmChange, t0);
    for a in [holder, other] {
        assert!(
            evs.contains(&(a, AgentEvent::Async(AsyncEvent::SmChange))),
            "{evs:?}"
        );
    }
    let evs = event_and_drain(&mut e, AsyncEvent::SoftResetRequest, t0);
    for a in [holder, other] {
        assert!(evs.contains(&(a, AgentEvent::ResetPending)), "{evs:?}");
    }
    assert!(e.port().is_reset_pending());
    // A send made meanwhile waits, it is not lost.
    let s = e.send(other, perf_request(1 * SEC, 0), t0).unwrap();
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
