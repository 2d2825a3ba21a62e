//! The PMA and the counters behind it: every port a MAD crosses counts it
//! (one packet, 72 words, each direction), PortCounters and
//! PortCountersExtended report them over GSI and Set clears them.
//! ibsim's `net` example, endpoint at Hca1 port 1 (see `common`).

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::*;
use mad_core::wire::attr::{ClassPortInfo, PortCounters, PortCountersExt};
use mad_core::wire::{AttributeId, Method, Repr};
use mad_sim::fabric::{DropReason, LinkVerdict, PortAddr};
use mad_sim::SimPort;

/// The status of the answer to a PerfMgt request (as [`pma`]).
fn pma_status(t: &mut SimPort, dlid: u16, method: Method, attr: u16, data: &[u8]) -> u16 {
    pma(t, dlid, method, attr, data).unwrap().0
}

/// The default `R` changed by `set`, encoded.
fn encode<R: Repr + Default>(set: impl FnOnce(&mut R)) -> Vec<u8> {
    let mut r = R::default();
    set(&mut r);
    r.to_vec().unwrap()
}

fn pc_req(port: u8, select: u16) -> Vec<u8> {
    encode(|r: &mut PortCounters| (r.port_select, r.counter_select) = (port, select))
}

fn pce_req(port: u8, select: u16) -> Vec<u8> {
    encode(|r: &mut PortCountersExt| (r.port_select, r.counter_select) = (port, select))
}

#[test]
fn every_port_a_mad_crosses_counts_it_in_both_directions() {
    let (fabric, mut t) = net();
    const N: u32 = 5;
    for _ in 0..N {
        assert!(sim_rpc(&mut t, &Req::get(TO_S2, AttributeId::NODE_INFO, 0)).is_some());
    }
    // Request out and answer back over Hca1.1 - Switch1.1 and
    // Switch1.3 - Switch2.3: each of those ports sent N and received N.
    for (node, port) in [(H1, 1), (S1, 1), (S1, 3), (S2, 3)] {
        let c = fabric.counters(node, port).unwrap();
        assert_eq!(
            (
                c.port_xmit_pkts,
                c.port_rcv_pkts,
                c.port_xmit_data,
                c.port_rcv_data
            ),
            (N, N, 72 * N, 72 * N),
            "node {node} port {port}"
        );
        let e = fabric.counters_ext(node, port).unwrap();
        assert_eq!(
            (
                e.port_xmit_pkts,
                e.port_rcv_pkts,
                e.port_xmit_data,
                e.port_unicast_rcv_pkts
            ),
            (u64::from(N), u64::from(N), u64::from(72 * N), u64::from(N))
        );
    }
    // Nothing else moved.
    for (node, port) in [
        (S1, 0),
        (S1, 2),
        (S1, 4),
        (S2, 0),
        (S2, 4),
        (H2, 1),
        (H2, 2),
        (H1, 2),
    ] {
        let c = fabric.counters(node, port).unwrap();
        assert_eq!(
            (c.port_xmit_pkts, c.port_rcv_pkts),
            (0, 0),
            "node {node} port {port}"
        );
    }
    // A local SMP (hop count 0) crosses no link.
    assert!(sim_rpc(&mut t, &Req::get(&[], AttributeId::NODE_INFO, 0)).is_some());
    assert_eq!(fabric.counters(H1, 1).unwrap().port_xmit_pkts, N);
}

#[test]
fn pma_reports_the_counters_of_the_selected_port_and_set_clears_them() {
    let (fabric, mut t) = net();
    configure_net(&mut t);
    // Clear Switch1 port 3 (both views), then send N SMPs across it.
    let (s, d) = pma(&mut t, 3, Method::SET, 0x0012, &pc_req(3, 0xFFFF)).unwrap();
    let c = PortCounters::parse(&d).unwrap();
    assert_eq!(
        (s, c.port_select, c.port_xmit_pkts, c.port_rcv_data),
        (0, 3, 0, 0)
    );
    let (s, _) = pma(&mut t, 3, Method::SET, 0x001D, &pce_req(3, 0xFF)).unwrap();
    assert_eq!(s, 0);
    const N: u32 = 7;
    for _ in 0..N {
        assert!(sim_rpc(&mut t, &Req::get(TO_S2, AttributeId::NODE_DESC, 0)).is_some());
    }
    // PMA traffic to Switch1 itself uses port 1 only.
    let (s, d) = pma(&mut t, 3, Method::GET, 0x0012, &pc_req(3, 0)).unwrap();
    let c = PortCounters::parse(&d).unwrap();
    assert_eq!(s, 0);
    assert_eq!(
        (
            c.port_xmit_pkts,
            c.port_rcv_pkts,
            c.port_xmit_data,
            c.port_rcv_data
        ),
        (N, N, 72 * N, 72 * N)
    );
    assert_eq!(c, {
        let mut f = fabric.counters(S1, 3).unwrap();
        f.port_select = 3;
        f
    });
    let (_, d) = pma(&mut t, 3, Method::GET, 0x001D, &pce_req(3, 0)).unwrap();
    let e = PortCountersExt::parse(&d).unwrap();
    assert_eq!(
        (
            e.port_xmit_pkts,
            e.port_rcv_pkts,
            e.port_unicast_xmit_pkts,
            e.port_xmit_data
        ),
        (u64::from(N), u64::from(N), u64::from(N), u64::from(72 * N))
    );
    // Clear only PortXmitPkts (bit 14): the rest stays.
    let (_, d) = pma(&mut t, 3, Method::SET, 0x0012, &pc_req(3, 1 << 14)).unwrap();
    let c = PortCounters::parse(&d).unwrap();
    assert_eq!((c.port_xmit_pkts, c.port_rcv_pkts), (0, N));
    // Extended bit 3 clears PortRcvPkts (not PortXmitPkts).
    let (_, d) = pma(&mut t, 3, Method::SET, 0x001D, &pce_req(3, 1 << 3)).unwrap();
    let e = PortCountersExt::parse(&d).unwrap();
    assert_eq!((e.port_xmit_pkts, e.port_rcv_pkts), (u64::from(N), 0));
    // PortSelect 0xFF on a switch sums every port.
    let (s, d) = pma(&mut t, 4, Method::GET, 0x0012, &pc_req(0xFF, 0)).unwrap();
    let all = PortCounters::parse(&d).unwrap();
    let sum: u32 = (0..=8)
        .map(|p| fabric.counters(S2, p).unwrap().port_rcv_pkts)
        .sum();
    assert_eq!((s, all.port_select, all.port_rcv_pkts), (0, 0xFF, sum));
    assert!(sum > 0);
}

#[test]
fn pma_class_port_info_and_bad_requests() {
    let (_fabric, mut t) = net();
    configure_net(&mut t);
    let (s, d) = pma(&mut t, 3, Method::GET, 0x0001, &[]).unwrap();
    let cpi = ClassPortInfo::parse(&d).unwrap();
    assert_eq!(
        (s, cpi.capability_mask, cpi.resp_time_value),
        (0, 0x1300, 18),
        "switch: AllPortSelect"
    );
    let (_, d) = pma(&mut t, 2, Method::GET, 0x0001, &[]).unwrap();
    assert_eq!(ClassPortInfo::parse(&d).unwrap().capability_mask, 0x1200);
    // A CA's PMA answers for the port asked through only.
    assert_eq!(
        pma_status(&mut t, 2, Method::GET, 0x0012, &pc_req(1, 0)),
        0x1C
    );
    assert_eq!(pma_status(&mut t, 2, Method::GET, 0x0012, &pc_req(2, 0)), 0);
    assert_eq!(
        pma_status(&mut t, 3, Method::GET, 0x0012, &pc_req(9, 0)),
        0x1C
    );
    // PortSamplesResult is not supported (PortSamplesControl is: see
    // pma_ext.rs); class version 2 is refused.
    assert_eq!(pma_status(&mut t, 3, Method::GET, 0x0011, &[]), 0x0C);
    assert_eq!(pma_status(&mut t, 3, Method::SET, 0x0001, &[]), 0x0C);
    let m = gsi_mad(0x04, 2, Method::GET, 0x0012, next_tid());
    assert_eq!(gsi_rpc(&mut t, &m, 3, 64).unwrap().0, 0x04);
}

#[test]
fn a_packet_lost_on_a_link_counts_as_sent_but_not_received() {
    let (fabric, mut t) = net();
    fabric.set_link_filter(Some(Box::new(|c: &mad_sim::fabric::LinkCrossing<'_>| {
        if c.from == (PortAddr { node: S1, port: 3 }) {
            LinkVerdict::Drop
        } else {
            LinkVerdict::Pass
        }
    })));
    assert!(sim_rpc(&mut t, &Req::get(TO_S2, AttributeId::NODE_INFO, 0)).is_none());
    assert_eq!(fabric.stats().dropped(DropReason::LinkFilter), 1);
    assert_eq!(fabric.counters(S1, 3).unwrap().port_xmit_pkts, 1);
    assert_eq!(fabric.counters(S2, 3).unwrap().port_rcv_pkts, 0);
    // Removing the filter restores the link.
    fabric.set_link_filter(None);
    assert!(sim_rpc(&mut t, &Req::get(TO_S2, AttributeId::NODE_INFO, 0)).is_some());
}
