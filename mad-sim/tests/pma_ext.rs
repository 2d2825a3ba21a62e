//! The PMA's attributes beyond PortCounters (perfquery's `-X -S -D -E
//! -T -c` and long options): per-SL and per-VL counters that add up to
//! PortCounters, the discard details that break PortXmitDiscards down,
//! Set clearing what CounterSelect names, and the attributes a node does
//! not have refused. ibsim's `net` example, endpoint at Hca1 port 1.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::*;
use mad_core::transport::{Address, Qp, Transport};
use mad_core::wire::attr::{
    pm_attr, PortCounters, PortOpRcvCounters, PortRcvDataSl, PortSamplesControl, PortState,
    PortVlOpPackets, PortXmitDataSl, PortXmitDiscardDetails,
};
use mad_core::wire::{AttributeId, Method, Repr};
use mad_sim::SimPort;

/// `method` of `attr` at `lid` with OpCode `op`, PortSelect `port` and
/// CounterSelect `select`: the status and the answer's status is 0 and
/// its data decoded (`T`), or the status alone.
fn ask<T: Repr>(
    t: &mut SimPort,
    lid: u16,
    method: Method,
    attr: u16,
    (op, port, select): (u8, u8, u16),
) -> Result<T, u16> {
    let mut req = vec![op, port];
    req.extend_from_slice(&select.to_be_bytes());
    let (s, d) = pma(t, lid, method, attr, &req).unwrap();
    if s == 0 {
        Ok(T::parse(&d).unwrap())
    } else {
        Err(s)
    }
}

#[test]
fn per_sl_and_per_vl_counters_add_up_to_port_counters() {
    let (fabric, mut t) = net();
    configure_net(&mut t);
    for _ in 0..5 {
        assert!(sim_rpc(&mut t, &Req::get(TO_S2, AttributeId::NODE_DESC, 0)).is_some());
    }
    let pc = fabric.counters(S1, 3).unwrap();
    let get = Method::GET;
    let x: PortXmitDataSl = ask(&mut t, 3, get, pm_attr::PORT_XMIT_DATA_SL, (0, 3, 0)).unwrap();
    assert_eq!(x.port_select, 3);
    assert_eq!(x.data.iter().sum::<u32>(), pc.port_xmit_data);
    let r: PortRcvDataSl = ask(&mut t, 3, get, pm_attr::PORT_RCV_DATA_SL, (0, 3, 0)).unwrap();
    assert_eq!(r.data.iter().sum::<u32>(), pc.port_rcv_data);
    assert!(pc.port_rcv_data > 0);
    // Every MAD is a UD SEND_ONLY (0x64); the directed-route SMPs ride VL15.
    let ud = (0x64, 3, 0);
    let v: PortVlOpPackets = ask(&mut t, 3, get, pm_attr::PORT_VL_OP_PACKETS, ud).unwrap();
    assert_eq!(
        (v.op_code, u32::from(v.packets[15])),
        (0x64, pc.port_rcv_pkts)
    );
    let o: PortOpRcvCounters = ask(&mut t, 3, get, pm_attr::PORT_OP_RCV_COUNTERS, ud).unwrap();
    assert_eq!(
        (o.op_rcv_pkts, o.op_rcv_data),
        (pc.port_rcv_pkts, pc.port_rcv_data)
    );
    // Another opcode was never received.
    let o: PortOpRcvCounters =
        ask(&mut t, 3, get, pm_attr::PORT_OP_RCV_COUNTERS, (0x04, 3, 0)).unwrap();
    assert_eq!(o.op_rcv_pkts, 0);
    // A Set clears what CounterSelect names (VL15 here), nothing else.
    let v: PortVlOpPackets = ask(
        &mut t,
        3,
        Method::SET,
        pm_attr::PORT_VL_OP_PACKETS,
        (0x64, 3, 1 << 15),
    )
    .unwrap();
    assert_eq!(v.packets[15], 0);
    let o: PortOpRcvCounters = ask(&mut t, 3, get, pm_attr::PORT_OP_RCV_COUNTERS, ud).unwrap();
    assert_eq!(o.op_rcv_pkts, pc.port_rcv_pkts);
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
    let m = gsi_mad(0x04, 1, Method::GET, 0x0012, next_tid());
    t.post_send(Qp::Qp1, &m, &Address::gsi(4)).unwrap();
    let _ = drain(&mut t);
    let discards = fabric.counters(S1, 3).unwrap().port_xmit_discards;
    assert!(discards >= 1);
    let attr = pm_attr::PORT_XMIT_DISCARD_DETAILS;
    for select in [3, 0xFF] {
        // One port, and PortSelect 0xFF: the sum over the switch's ports.
        let x: PortXmitDiscardDetails = ask(&mut t, 3, Method::GET, attr, (0, select, 0)).unwrap();
        assert_eq!(x.inactive_discards, discards, "PortSelect {select}");
    }
    // Cleared by a Set with its bit (0), PortCounters untouched.
    let x: PortXmitDiscardDetails = ask(&mut t, 3, Method::SET, attr, (0, 3, 1)).unwrap();
    assert_eq!(x.inactive_discards, 0);
    assert_eq!(fabric.counters(S1, 3).unwrap().port_xmit_discards, discards);
}

#[test]
fn attributes_a_node_lacks_and_bad_selects_are_refused() {
    let (_fabric, mut t) = net();
    configure_net(&mut t);
    let raw = |t: &mut SimPort, lid, method, attr, port| {
        ask::<PortCounters>(t, lid, method, attr, (0, port, 0))
            .err()
            .unwrap_or(0)
    };
    // SwPortVLCongestion on a switch, not on a CA.
    assert_eq!(
        raw(&mut t, 3, Method::GET, pm_attr::SW_PORT_VL_CONGESTION, 1),
        0
    );
    assert_eq!(
        raw(&mut t, 2, Method::GET, pm_attr::SW_PORT_VL_CONGESTION, 1),
        0x0C
    );
    // A CA answers for the port asked through only; a switch for its ports.
    assert_eq!(
        raw(&mut t, 2, Method::GET, pm_attr::PORT_RCV_ERROR_DETAILS, 1),
        0x1C
    );
    assert_eq!(
        raw(&mut t, 3, Method::GET, pm_attr::PORT_RCV_ERROR_DETAILS, 9),
        0x1C
    );
    // PortSamplesControl: Get only; PortSamplesResult is not answered.
    let c: PortSamplesControl = ask(
        &mut t,
        3,
        Method::GET,
        pm_attr::PORT_SAMPLES_CONTROL,
        (0, 1, 0),
    )
    .unwrap();
    assert_eq!((c.port_select, c.counter_width), (1, 4));
    assert_eq!(
        raw(&mut t, 3, Method::SET, pm_attr::PORT_SAMPLES_CONTROL, 1),
        0x0C
    );
    assert_eq!(raw(&mut t, 3, Method::GET, 0x0011, 1), 0x0C);
}
