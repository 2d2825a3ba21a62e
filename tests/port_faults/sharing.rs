//! Receives go to the clients that take them; the order and refusals of
//! queued sends.

use super::*;

#[test]
fn receives_go_to_every_client_that_takes_them_and_to_no_other() {
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
    let mut p = PortPair::new(FaultInjector::new(lo, 10), PortConfig::default());
    let (first, second, none) = (p.register(), p.register(), p.register());
    p.subscribe_all(first).unwrap();
    p.subscribe_all(second).unwrap();
    p.subscribe_all(second).unwrap(); // idempotent
    let mut clock = Clock::new();
    let mut sent = 0u64;
    for i in 0..1000u64 {
        let (qp, m, d) = match i % 3 {
            0 => (Qp::Qp1, mad(0x03, i), Address::gsi(1)),
            1 => (Qp::Qp0, mad(0x81, i), Address::smi(0xffff)),
            _ => (Qp::Qp1, mad(0x04, i), Address::gsi(1)), // PerfMgt: nobody listens
        };
        p.post(none, Unsendable::check_post(&m, qp).unwrap(), &d, i)
            .unwrap();
        sent += 1;
        if i % 10 == 9 {
            p.poll(clock.advance(Duration::from_millis(1)));
        }
    }
    while p.posted(Qp::Qp0) + p.posted(Qp::Qp1) + p.queued(Qp::Qp0) + p.queued(Qp::Qp1) > 0 {
        p.poll(clock.advance(Duration::from_millis(1)));
    }
    let recv = |p: &mut PortPair<Fi>, c| {
        std::iter::from_fn(|| p.poll_client(c))
            .filter_map(|e| match e {
                PortEvent::Received(r) => Some((r.qp(), r.class().0, r.tid())),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let got_first = recv(&mut p, first);
    let got_second = recv(&mut p, second);
    // Every MAD of every class and QP, in the order it arrived, to both.
    assert_eq!(got_first.len(), 1000);
    assert_eq!(got_first, got_second);
    assert_eq!(
        got_first
            .iter()
            .filter(|&&(qp, class, _)| qp == Qp::Qp0 && class == 0x81)
            .count(),
        333
    );
    assert!(recv(&mut p, none).is_empty());
    assert_eq!(p.stats().recv_unclaimed, 0);
    assert_eq!(p.stats().recv_delivered, 2000);
    assert_eq!(p.stats().succeeded, sent);
    // After unregistering, nothing more arrives; with no client taking
    // receives, a MAD is counted as unclaimed.
    p.unregister(second).unwrap();
    p.post(
        none,
        Unsendable::check_post(&mad(0x81, 5), Qp::Qp0).unwrap(),
        &Address::smi(0xffff),
        0,
    )
    .unwrap();
    p.poll(clock.advance(Duration::from_millis(1)));
    p.poll(clock.advance(Duration::from_millis(1)));
    assert_eq!(recv(&mut p, first).len(), 1);
    p.unregister(first).unwrap();
    p.post(
        none,
        Unsendable::check_post(&mad(0x81, 6), Qp::Qp0).unwrap(),
        &Address::smi(0xffff),
        0,
    )
    .unwrap();
    p.poll(clock.advance(Duration::from_millis(1)));
    p.poll(clock.advance(Duration::from_millis(1)));
    assert!(recv(&mut p, second).is_empty());
    assert_eq!(p.stats().recv_unclaimed, 1);
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
    // A bad MAD never reaches the port: the port takes only a checked
    // one, and the check names the cause.
    assert_eq!(
        Unsendable::check_post(&[0u8; 10], Qp::Qp1),
        Err(Unsendable::Truncated { len: 10 })
    );
    assert_eq!(
        Unsendable::check_post(&[0u8; 257], Qp::Qp1),
        Err(Unsendable::TooLong { len: 257, max: 256 })
    );
    p.unregister(c).unwrap();
    assert!(matches!(
        p.post(
            c,
            Unsendable::check_post(&gsi_mad(1), Qp::Qp1).unwrap(),
            &Address::gsi(1),
            0
        ),
        Err(PortError::UnknownClient(_))
    ));
    l.assert_exactly_once();
}
