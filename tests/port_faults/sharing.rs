//! A port shared through the registry, receives routed by QP and class,
//! and the order and refusals of queued sends.

use super::*;

#[test]
fn port_resources_are_shared_and_released_with_the_last_handle() {
    let opens = Arc::new(AtomicUsize::new(0));
    let releases = Arc::new(AtomicUsize::new(0));
    let (o, r) = (opens.clone(), releases.clone());
    let reg = PortRegistry::new(move |ca: &str, port: u8| {
        if ca != "lo" || port > 2 {
            return Err(TransportError::Open(format!("no port {port} on CA {ca}")));
        }
        o.fetch_add(1, Ordering::SeqCst);
        let mut lo = Loopback::new(Loopback::attrs(ca, port, u16::from(port)), 16);
        let r = r.clone();
        lo.on_drop(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        }));
        Ok(lo)
    });
    let count = || {
        (
            opens.load(Ordering::SeqCst),
            releases.load(Ordering::SeqCst),
        )
    };

    let e = reg.open("mlx9", 1).unwrap_err();
    assert_eq!(e.to_string(), "no port 1 on CA mlx9");
    let e = reg.open("lo", 7).unwrap_err();
    assert!(e.to_string().contains("no port 7"));

    // Open and close in a seeded shuffle of orders; at every step the open
    // transports are exactly the ports with a live handle.
    let mut rng = 0x9e37_79b9_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut handles = Vec::new();
    let mut clock = Clock::new();
    for step in 0..400 {
        if handles.is_empty() || (handles.len() < 6 && next() % 2 == 0) {
            let port = 1 + (next() % 2) as u8;
            let h = reg.open("lo", port).unwrap();
            h.post(Qp::Qp1, &gsi_mad(step), &Address::gsi(3), step)
                .unwrap();
            handles.push(h);
        } else {
            let k = (next() % handles.len() as u64) as usize;
            let h = handles.swap_remove(k);
            h.poll(clock.advance(Duration::from_millis(1)));
            drop(h);
        }
        let live_ports: std::collections::BTreeSet<u8> =
            handles.iter().map(|h| h.port_num()).collect();
        let (o, r) = count();
        assert_eq!(o - r, live_ports.len(), "step {step}");
        assert_eq!(reg.open_ports(), live_ports.len());
        for h in &handles {
            for g in &handles {
                assert_eq!(h.shares_port_with(g), h.port_num() == g.port_num());
            }
        }
    }
    let (o, _) = count();
    assert!(o > 2, "ports were released and opened again ({o} opens)");
    // Clients of one port keep working while others come and go.
    let a = reg.open("lo", 1).unwrap();
    let b = reg.open("lo", 1).unwrap();
    fn shareable<X: Send + Sync>(_: &X) {}
    shareable(&reg); // the registry and its handles work from any thread
    shareable(&b);
    let t = b.post(Qp::Qp1, &gsi_mad(1), &Address::gsi(3), 1).unwrap();
    drop(a);
    b.poll(clock.advance(Duration::from_millis(1)));
    let ev =
        std::iter::from_fn(|| b.next_event()).find(|e| matches!(e, PortEvent::SendComplete { .. }));
    assert!(
        matches!(ev, Some(PortEvent::SendComplete { token, status: WcStatus::Success, .. }) if token == t)
    );
    drop(handles);
    drop(b);
    let (o, r) = count();
    assert_eq!(o, r, "everything released once the last handle is gone");
    assert_eq!(reg.open_ports(), 0);
}

#[test]
fn receives_go_to_the_subscribers_of_their_qp_and_class() {
    let sma = |qp: Qp, m: &[u8], dest: &Address| {
        let mut r = m.to_vec();
        mad_testkit::header::edit(&mut r, |h| {
            h.method = mad_core::wire::Method::GET;
            h.response = true;
        });
        vec![Received {
            qp,
            src: *dest,
            mad: r.into(),
        }]
    };
    let lo = Loopback::new(Loopback::attrs("lo", 1, 5), 8).with_responder(Box::new(sma));
    let mut p = Port::new(FaultInjector::new(lo, 10), PortConfig::default());
    let (sa, smp, both, none) = (p.register(), p.register(), p.register(), p.register());
    p.subscribe(sa, Qp::Qp1, MgmtClass::SUBN_ADM).unwrap();
    p.subscribe(smp, Qp::Qp0, MgmtClass(0x81)).unwrap();
    p.subscribe(both, Qp::Qp1, MgmtClass::SUBN_ADM).unwrap();
    p.subscribe(both, Qp::Qp0, MgmtClass(0x81)).unwrap();
    p.subscribe(both, Qp::Qp0, MgmtClass(0x81)).unwrap(); // idempotent
    let mut clock = Clock::new();
    let mut sent = 0u64;
    for i in 0..1000u64 {
        let (qp, m, d) = match i % 3 {
            0 => (Qp::Qp1, mad(0x03, i), Address::gsi(1)),
            1 => (Qp::Qp0, mad(0x81, i), Address::smi(0xffff)),
            _ => (Qp::Qp1, mad(0x04, i), Address::gsi(1)), // PerfMgt: nobody listens
        };
        p.post(none, qp, &m, &d, i).unwrap();
        sent += 1;
        if i % 10 == 9 {
            p.poll(clock.advance(Duration::from_millis(1)));
        }
    }
    while p.posted(Qp::Qp0) + p.posted(Qp::Qp1) + p.queued(Qp::Qp0) + p.queued(Qp::Qp1) > 0 {
        p.poll(clock.advance(Duration::from_millis(1)));
    }
    let recv = |p: &mut Port<Fi>, c| {
        std::iter::from_fn(|| p.poll_client(c))
            .filter_map(|e| match e {
                PortEvent::Received(r) => Some((r.qp(), r.class().0, r.tid())),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let got_sa = recv(&mut p, sa);
    let got_smp = recv(&mut p, smp);
    let got_both = recv(&mut p, both);
    assert_eq!(got_sa.len(), 334);
    assert!(got_sa
        .iter()
        .all(|&(qp, class, tid)| qp == Qp::Qp1 && class == 0x03 && tid % 3 == 0));
    assert_eq!(got_smp.len(), 333);
    assert!(got_smp
        .iter()
        .all(|&(qp, class, _)| qp == Qp::Qp0 && class == 0x81));
    assert_eq!(got_both.len(), 667);
    assert!(recv(&mut p, none).is_empty());
    assert_eq!(p.stats().recv_unclaimed, 333);
    assert_eq!(p.stats().succeeded, sent);
    // After unsubscribing / unregistering, nothing more arrives.
    p.unsubscribe(both, Qp::Qp0, MgmtClass(0x81));
    p.unregister(smp).unwrap();
    p.post(none, Qp::Qp0, &mad(0x81, 5), &Address::smi(0xffff), 0)
        .unwrap();
    p.poll(clock.advance(Duration::from_millis(1)));
    p.poll(clock.advance(Duration::from_millis(1)));
    assert!(recv(&mut p, both).is_empty());
    assert_eq!(p.stats().recv_unclaimed, 334);
}

#[test]
fn queued_sends_keep_order_and_bad_input_is_refused() {
    let (mut p, c, l, _) = streamed(4, 11, FaultConfig::default(), 1000, 97);
    let order: Vec<u64> = l.order.iter().map(|(t, _)| t.0).collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "completions in post order through the queue"
    );
    assert!(p.stats().queued > 0);
    assert!(matches!(
        p.post(c, Qp::Qp1, &[0u8; 10], &Address::gsi(1), 0),
        Err(PortError::BadSend(Unsendable::Truncated { len: 10 }))
    ));
    assert!(matches!(
        p.post(c, Qp::Qp1, &[0u8; 257], &Address::gsi(1), 0),
        Err(PortError::BadSend(Unsendable::TooLong {
            len: 257,
            max: 256
        }))
    ));
    p.unregister(c).unwrap();
    assert!(matches!(
        p.post(c, Qp::Qp1, &gsi_mad(1), &Address::gsi(1), 0),
        Err(PortError::UnknownClient(_))
    ));
    l.assert_exactly_once();
}
