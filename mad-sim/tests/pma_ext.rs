//! The PMA's attributes beyond PortCounters (perfquery's `-X -S -D -E
//! -T -c` and long options): per-SL and per-VL counters that add up to
//! PortCounters, the discard details that break PortXmitDiscards down,
//! Set clearing what CounterSelect names, and the attributes a node does
//! not have refused. ibsim's `net` example, endpoint at Hca1 port 1.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::*;
use mad_core::transport::{Address, Qp, Transport};
use mad_core::wire::attr::PortState;
use mad_core::wire::attr::{
    pm_attr, PortCounters, PortOpRcvCounters, PortRcvDataSl, PortSamplesControl, PortVlOpPackets,
    PortXmitDataSl, PortXmitDiscardDetails,
};
use mad_core::wire::{AttributeId, Mad, Method, Repr};
use mad_sim::SimPort;

/// A PerfMgt request to `dlid`: (status, attribute data).
fn pma(t: &mut SimPort, dlid: u16, method: Method, attr: u16, data: &[u8]) -> (u16, Vec<u8>) {
    let tid = next_tid();
    let mut m = gsi_mad(0x04, 1, method, attr, tid);
    m[64..64 + data.len()].copy_from_slice(data);
    t.post_send(Qp::Qp1, &m, &Address::gsi(dlid)).unwrap();
    drain(t)
        .into_iter()
        .find(|r| Mad::new_unchecked(&r.mad[..]).tid() == tid)
        .map(|r| {
            (
                Mad::new_unchecked(&r.mad[..]).status().0,
                r.mad[64..].to_vec(),
            )
        })
        .unwrap()
}

/// OpCode, PortSelect, CounterSelect.
fn req(op: u8, port: u8, select: u16) -> Vec<u8> {
    let mut b = vec![op, port];
    b.extend_from_slice(&select.to_be_bytes());
    b
}

#[test]
fn per_sl_and_per_vl_counters_add_up_to_port_counters() {
    let (fabric, mut t) = net();
    configure_net(&mut t);
    for _ in 0..5 {
        assert!(sim_rpc(&mut t, &Req::get(TO_S2, AttributeId::NODE_DESC, 0)).is_some());
    }
    let pc = fabric.counters(S1, 3).unwrap();
    let (s, d) = pma(
        &mut t,
        3,
        Method::GET,
        pm_attr::PORT_XMIT_DATA_SL,
        &req(0, 3, 0),
    );
    let x = PortXmitDataSl::parse(&d).unwrap();
    assert_eq!((s, x.port_select), (0, 3));
    assert_eq!(x.data.iter().sum::<u32>(), pc.port_xmit_data);
    let (_, d) = pma(
        &mut t,
        3,
        Method::GET,
        pm_attr::PORT_RCV_DATA_SL,
        &req(0, 3, 0),
    );
    let r = PortRcvDataSl::parse(&d).unwrap();
    assert_eq!(r.data.iter().sum::<u32>(), pc.port_rcv_data);
    assert!(pc.port_rcv_data > 0);
    // Every MAD is a UD SEND_ONLY (0x64); the directed-route SMPs ride VL15.
    let (_, d) = pma(
        &mut t,
        3,
        Method::GET,
        pm_attr::PORT_VL_OP_PACKETS,
        &req(0x64, 3, 0),
    );
    let v = PortVlOpPackets::parse(&d).unwrap();
    assert_eq!(
        (v.op_code, u32::from(v.packets[15])),
        (0x64, pc.port_rcv_pkts)
    );
    let (_, d) = pma(
        &mut t,
        3,
        Method::GET,
        pm_attr::PORT_OP_RCV_COUNTERS,
        &req(0x64, 3, 0),
    );
    let o = PortOpRcvCounters::parse(&d).unwrap();
    assert_eq!(
        (o.op_rcv_pkts, o.op_rcv_data),
        (pc.port_rcv_pkts, pc.port_rcv_data)
    );
    // Another opcode was never received.
    let (_, d) = pma(
        &mut t,
        3,
        Method::GET,
        pm_attr::PORT_OP_RCV_COUNTERS,
        &req(0x04, 3, 0),
    );
    assert_eq!(PortOpRcvCounters::parse(&d).unwrap().op_rcv_pkts, 0);
    // A Set clears what CounterSelect names (VL15 here), nothing else.
    let (s, d) = pma(
        &mut t,
        3,
        Method::SET,
        pm_attr::PORT_VL_OP_PACKETS,
        &req(0x64, 3, 1 << 15),
    );
    assert_eq!((s, PortVlOpPackets::parse(&d).unwrap().packets[15]), (0, 0));
    let (_, d) = pma(
        &mut t,
        3,
        Method::GET,
        pm_attr::PORT_OP_RCV_COUNTERS,
        &req(0x64, 3, 0),
    );
    assert_eq!(
        PortOpRcvCounters::parse(&d).unwrap().op_rcv_pkts,
        pc.port_rcv_pkts
    );
    assert_eq!(
        fabric.counters(S1, 3).unwrap().port_rcv_pkts,
        pc.port_rcv_pkts
    );
}

#[test]
fn inactive_discards_break_down_port_xmit_discards() {
    let (fabric, mut t) = net();
    configure_net(&mut t);
    // Switch1 port 3 (the route to LID 4) down: a PerfMgt MAD for LID 4
    // is discarded there.
    assert_eq!(set_state(&mut t, TO_S1, 3, PortState::DOWN), 0);
    let tid = next_tid();
    let m = gsi_mad(0x04, 1, Method::GET, 0x0012, tid);
    t.post_send(Qp::Qp1, &m, &Address::gsi(4)).unwrap();
    let _ = drain(&mut t);
    let discards = fabric.counters(S1, 3).unwrap().port_xmit_discards;
    assert!(discards >= 1);
    let (s, d) = pma(
        &mut t,
        3,
        Method::GET,
        pm_attr::PORT_XMIT_DISCARD_DETAILS,
        &req(0, 3, 0),
    );
    let x = PortXmitDiscardDetails::parse(&d).unwrap();
    assert_eq!((s, x.inactive_discards), (0, discards));
    // PortSelect 0xFF sums the switch's ports.
    let (_, d) = pma(
        &mut t,
        3,
        Method::GET,
        pm_attr::PORT_XMIT_DISCARD_DETAILS,
        &req(0, 0xFF, 0),
    );
    assert_eq!(
        PortXmitDiscardDetails::parse(&d).unwrap().inactive_discards,
        discards
    );
    // Cleared by a Set with its bit (0), PortCounters untouched.
    let (_, d) = pma(
        &mut t,
        3,
        Method::SET,
        pm_attr::PORT_XMIT_DISCARD_DETAILS,
        &req(0, 3, 1),
    );
    assert_eq!(
        PortXmitDiscardDetails::parse(&d).unwrap().inactive_discards,
        0
    );
    assert_eq!(fabric.counters(S1, 3).unwrap().port_xmit_discards, discards);
}

#[test]
fn attributes_a_node_lacks_and_bad_selects_are_refused() {
    let (_fabric, mut t) = net();
    configure_net(&mut t);
    // SwPortVLCongestion on a switch, not on a CA.
    assert_eq!(
        pma(
            &mut t,
            3,
            Method::GET,
            pm_attr::SW_PORT_VL_CONGESTION,
            &req(0, 1, 0)
        )
        .0,
        0
    );
    assert_eq!(
        pma(
            &mut t,
            2,
            Method::GET,
            pm_attr::SW_PORT_VL_CONGESTION,
            &req(0, 1, 0)
        )
        .0,
        0x0C
    );
    // A CA answers for the port asked through only; a switch for its ports.
    assert_eq!(
        pma(
            &mut t,
            2,
            Method::GET,
            pm_attr::PORT_RCV_ERROR_DETAILS,
            &req(0, 1, 0)
        )
        .0,
        0x1C
    );
    assert_eq!(
        pma(
            &mut t,
            3,
            Method::GET,
            pm_attr::PORT_RCV_ERROR_DETAILS,
            &req(0, 9, 0)
        )
        .0,
        0x1C
    );
    // PortSamplesControl: Get only; PortSamplesResult is not answered.
    let (s, d) = pma(
        &mut t,
        3,
        Method::GET,
        pm_attr::PORT_SAMPLES_CONTROL,
        &req(0, 1, 0),
    );
    let c = PortSamplesControl::parse(&d).unwrap();
    assert_eq!((s, c.port_select, c.counter_width), (0, 1, 4));
    assert_eq!(
        pma(
            &mut t,
            3,
            Method::SET,
            pm_attr::PORT_SAMPLES_CONTROL,
            &req(0, 1, 0)
        )
        .0,
        0x0C
    );
    assert_eq!(pma(&mut t, 3, Method::GET, 0x0011, &req(0, 1, 0)).0, 0x0C);
    // A short PortCounters read is unaffected by the new attributes.
    let (s, d) = pma(&mut t, 3, Method::GET, 0x0012, &req(0, 1, 0));
    assert_eq!((s, PortCounters::parse(&d).unwrap().port_select), (0, 1));
}
