//! Forwarding in the simulated fabric: directed-route paths a switch
//! would drop, LID routing by the LFTs, QP0 / VL15 rules, P_Key checks on
//! QP1, and delivery between endpoints attached at different nodes.
//! ibsim's `net` example, endpoint at Hca1 port 1 (see `common`).

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::*;
use mad_core::transport::{Address, Qp, Transport, TransportError, Unsendable, PERMISSIVE_LID};
use mad_core::wire::attr::{NodeInfo, PKeyTable};
use mad_core::wire::smp::{DrPath, Smp};
use mad_core::wire::{AttributeId, Mad, MadStatus, Method, MgmtClass, Repr};
use mad_sim::fabric::DropReason;
use mad_sim::{Fabric, NodeSel, SimError, Topology};

fn dropped(f: &Fabric, r: DropReason) -> u64 {
    f.stats().dropped(r)
}

#[test]
fn directed_routes_a_switch_would_not_follow_are_dropped() {
    let (fabric, mut t) = net();
    // Through a CA in the middle of the path.
    assert!(sim_rpc(&mut t, &Req::get(&[1, 2, 1], AttributeId::NODE_INFO, 0)).is_none());
    assert_eq!(dropped(&fabric, DropReason::DrPath), 1);
    // Out of a port the switch does not have (Switch1 has 8).
    assert!(sim_rpc(&mut t, &Req::get(&[1, 9], AttributeId::NODE_INFO, 0)).is_none());
    assert_eq!(dropped(&fabric, DropReason::DrPath), 2);
    // Out of port 0 of a switch.
    assert!(sim_rpc(&mut t, &Req::get(&[1, 0], AttributeId::NODE_INFO, 0)).is_none());
    assert_eq!(dropped(&fabric, DropReason::DrPath), 3);
    assert_eq!(
        fabric.counters(S1, 1).unwrap().port_rcv_switch_relay_errors,
        1
    );
    // Out of an unconnected switch port: a transmit discard.
    assert!(sim_rpc(&mut t, &Req::get(&[1, 5], AttributeId::NODE_INFO, 0)).is_none());
    assert_eq!(dropped(&fabric, DropReason::LinkDown), 1);
    assert_eq!(fabric.counters(S1, 5).unwrap().port_xmit_discards, 1);
    // Good paths still work, and the sweep-like walk comes back.
    let (s, d) = sim_get(&mut t, &[1, 3, 4, 3], AttributeId::NODE_INFO, 0);
    assert_eq!((s, NodeInfo::parse(&d).unwrap().node_guid), (0, 0x20_0001));
}

#[test]
fn posts_the_kernel_would_refuse_are_refused() {
    let (_fabric, mut t) = net();
    let smi = Address::smi(PERMISSIVE_LID);
    // A CA's first hop must be its own port (InitialPath[1] == 1).
    let m = Req::get(&[2], AttributeId::NODE_INFO, 0).build(1);
    assert!(matches!(
        t.post_send(Qp::Qp0, &m, &smi),
        Err(TransportError::BadSend(Unsendable::InvalidRoute {
            hop_ptr: 0,
            hop_cnt: 1,
            direction: 0,
            ..
        }))
    ));
    // A request must start with HopPointer 0.
    let m = Req::get(&[1, 3], AttributeId::NODE_INFO, 0)
        .builder()
        .tid(1)
        .class_specific(0x0102) // HopPointer 1, HopCount 2
        .build();
    assert!(matches!(
        t.post_send(Qp::Qp0, &m, &smi),
        Err(TransportError::BadSend(Unsendable::InvalidRoute {
            hop_ptr: 1,
            hop_cnt: 2,
            ..
        }))
    ));
    // LID-routed parts of a directed route are not supported.
    let mut m = Req::get(&[1, 3], AttributeId::NODE_INFO, 0).build(1);
    m[32..34].copy_from_slice(&1u16.to_be_bytes());
    assert!(matches!(
        t.post_send(Qp::Qp0, &m, &smi),
        Err(TransportError::BadSend(Unsendable::DrLidRouted))
    ));
    // SMP classes only on QP0, others only on QP1.
    let gsi = gsi_mad(0x04, 1, Method::GET, 0x0001, 1);
    assert!(matches!(
        t.post_send(Qp::Qp0, &gsi, &smi),
        Err(TransportError::BadSend(Unsendable::WrongQp {
            class: MgmtClass::PERF_MGT,
            qp: Qp::Qp0
        }))
    ));
    let m = Req::get(&[1], AttributeId::NODE_INFO, 0).build(1);
    assert!(matches!(
        t.post_send(Qp::Qp1, &m, &Address::gsi(1)),
        Err(TransportError::BadSend(Unsendable::WrongQp {
            class: MgmtClass::SUBN_DIRECTED_ROUTE,
            qp: Qp::Qp1
        }))
    ));
    // Lengths, P_Key index.
    assert!(matches!(
        t.post_send(Qp::Qp1, &gsi[..20], &Address::gsi(1)),
        Err(TransportError::BadSend(Unsendable::Truncated { len: 20 }))
    ));
    let mut long = gsi.to_vec();
    long.resize(300, 0);
    assert!(matches!(
        t.post_send(Qp::Qp1, &long, &Address::gsi(1)),
        Err(TransportError::BadSend(Unsendable::TooLong {
            len: 300,
            max: 256
        }))
    ));
    let mut a = Address::gsi(1);
    a.pkey_index = 5;
    assert!(matches!(
        t.post_send(Qp::Qp1, &gsi, &a),
        Err(TransportError::BadSend(Unsendable::NoPKey { index: 5 }))
    ));
    assert_eq!(completions_ok(&mut t), 0, "refused posts complete nothing");
}

#[test]
fn a_switch_endpoint_sends_directed_routes_out_of_the_path_s_first_port() {
    let topo = Topology::load(topo("net")).unwrap();
    let fabric = Fabric::new(&topo);
    let mut sw = fabric.attach_default().unwrap();
    assert_eq!((sw.node(), sw.port()), (S1, 0));
    assert!(sw.port_attrs().is_switch);
    let (_, d) = sim_rpc(&mut sw, &Req::get(&[], AttributeId::NODE_INFO, 0)).unwrap();
    let ni = NodeInfo::parse(&d).unwrap();
    assert_eq!((ni.node_guid, ni.local_port_num), (0x20_0000, 0));
    let (_, d) = sim_rpc(&mut sw, &Req::get(&[3], AttributeId::NODE_INFO, 0)).unwrap();
    assert_eq!(NodeInfo::parse(&d).unwrap().node_guid, 0x20_0001);
    let (_, d) = sim_rpc(&mut sw, &Req::get(&[2], AttributeId::NODE_INFO, 0)).unwrap();
    let ni = NodeInfo::parse(&d).unwrap();
    assert_eq!(
        (ni.node_guid, ni.port_guid, ni.local_port_num),
        (0x10_0003, 0x10_0005, 2)
    );
}

#[test]
fn lid_routed_smps_follow_the_lfts_and_vl15_crosses_ports_in_init() {
    let (fabric, mut t) = net();
    // LIDs and LFTs, but leave the Switch1-Hca2 link in Init.
    for (hops, lid) in [(&[][..], 1u16), (TO_H2, 2), (TO_S1, 3), (TO_S2, 4)] {
        pi_set(&mut t, hops, 0, 0, |p| p.lid = lid).unwrap();
    }
    let mut lft = [0xFFu8; 64];
    let ports: [u8; 4] = [1, 2, 0, 3]; // of LIDs 1-4
    lft[1..5].copy_from_slice(&ports);
    sim_set(&mut t, TO_S1, AttributeId::LINEAR_FWD_TABLE, 0, &lft);
    let mut lft = [0xFFu8; 64];
    lft[1..5].copy_from_slice(&[3, 3, 3, 0]);
    sim_set(&mut t, TO_S2, AttributeId::LINEAR_FWD_TABLE, 0, &lft);
    let lid_get = |t: &mut mad_sim::SimPort, dlid: u16, tid: u64| {
        let m = MadBuilder::smp_get(AttributeId::NODE_INFO).tid(tid).build();
        t.post_send(Qp::Qp0, &m, &Address::smi(dlid)).unwrap();
        drain(t)
            .into_iter()
            .find(|r| Mad::new_unchecked(&r.mad[..]).tid() == tid)
            .map(|r| (r.src.lid, NodeInfo::parse(&r.mad[64..]).unwrap().node_guid))
    };
    // LinearFDBTop is still 0: the switch routes nothing.
    assert_eq!(lid_get(&mut t, 4, 1), None);
    assert_eq!(dropped(&fabric, DropReason::NoRoute), 1);
    assert_eq!(
        fabric.counters(S1, 1).unwrap().port_rcv_switch_relay_errors,
        1
    );
    for hops in [TO_S1, TO_S2] {
        let (_, d) = sim_get(&mut t, hops, AttributeId::SWITCH_INFO, 0);
        let mut si = mad_core::wire::attr::SwitchInfo::parse(&d).unwrap();
        si.linear_fdb_top = 4;
        sim_set_repr(&mut t, hops, AttributeId::SWITCH_INFO, 0, &si);
    }
    assert_eq!(lid_get(&mut t, 4, 2), Some((4, 0x20_0001)));
    assert_eq!(lid_get(&mut t, 3, 3), Some((3, 0x20_0000)));
    assert_eq!(
        lid_get(&mut t, 2, 4),
        Some((2, 0x10_0003)),
        "through Init ports"
    );
    assert_eq!(
        lid_get(&mut t, 1, 5),
        Some((1, 0x10_0000)),
        "to itself: loopback"
    );
    // No LFT entry: dropped at the first switch.
    assert_eq!(lid_get(&mut t, 9, 6), None);
    assert_eq!(dropped(&fabric, DropReason::NoRoute), 2);
    // GSI needs Active ports: nothing through Init links.
    let gsi = gsi_mad(0x04, 1, Method::GET, 0x0001, 7);
    t.post_send(Qp::Qp1, &gsi, &Address::gsi(2)).unwrap();
    assert!(drain(&mut t).is_empty());
    assert_eq!(dropped(&fabric, DropReason::PortNotActive), 1);
    assert_eq!(fabric.counters(H1, 1).unwrap().port_xmit_discards, 1);
}

/// `net` configured from Hca1 port 1 (LIDs, routes, ports Active), and an
/// endpoint on Hca2 port 2 too.
fn configured_hca1_and_hca2() -> (mad_sim::Fabric, mad_sim::SimPort, mad_sim::SimPort) {
    let (fabric, mut a) = net();
    configure_net(&mut a);
    let b = fabric.attach("Hca2", 2).unwrap();
    (fabric, a, b)
}

#[test]
fn configured_fabric_carries_gsi_between_endpoints_with_source_address() {
    let (fabric, mut a, mut b) = configured_hca1_and_hca2();
    let _ = drain(&mut a);
    completions_ok(&mut a);
    let m = MadBuilder::new(MgmtClass(0x09), 1, Method::SEND, AttributeId(0x0010))
        .tid(0x5151)
        .bytes_at(100, &[0xAB])
        .build();
    let mut dest = Address::gsi(2);
    dest.sl = 3;
    a.post_send(Qp::Qp1, &m, &dest).unwrap();
    assert_eq!(completions_ok(&mut a), 1);
    let got = drain(&mut b);
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(r.qp, Qp::Qp1);
    assert_eq!(
        (r.src.lid, r.src.qpn, r.src.sl, r.src.pkey_index),
        (1, 1, 3, 0)
    );
    assert_eq!(r.src.qkey, mad_core::transport::GSI_QKEY);
    assert_eq!(&r.mad[..], &m[..]);
    // And back, to the LID the receive names.
    let reply = MadBuilder::parse(&m)
        .unwrap()
        .response(MadStatus::SUCCESS)
        .build();
    b.post_send(Qp::Qp1, &reply, &Address::gsi(r.src.lid))
        .unwrap();
    let back = drain(&mut a);
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].src.lid, 2);
    // A GSI request to a node nobody listens at is answered "unsupported".
    let get = gsi_mad(0x09, 1, Method::GET, 0x0010, 0x6161);
    a.post_send(Qp::Qp1, &get, &Address::gsi(4)).unwrap();
    let back = drain(&mut a);
    assert_eq!(back.len(), 1);
    let v = Mad::new_unchecked(&back[0].mad[..]);
    assert_eq!(
        (v.raw_method(), v.status().0, v.tid()),
        (0x81, 0x0C, 0x6161)
    );
    assert_eq!(fabric.stats().unmatched, 1);
    // With a GRH the receiver sees the sender's GID.
    let mut dest = Address::gsi(2);
    dest.grh = Some(mad_core::transport::Grh::default());
    a.post_send(Qp::Qp1, &m, &dest).unwrap();
    let got = drain(&mut b);
    assert_eq!(got[0].src.grh.unwrap().gid[8..], 0x10_0001u64.to_be_bytes());
}

#[test]
fn qp0_takes_only_vl15_and_vl15_only_goes_to_qp0() {
    let (fabric, mut a, mut b) = configured_hca1_and_hca2();
    // A GSI MAD from QP1 to QP0 travels on a data VL: QP0 refuses it.
    let mut dest = Address::gsi(2);
    dest.qpn = 0;
    a.post_send(Qp::Qp1, &gsi_mad(0x09, 1, Method::SEND, 1, 1), &dest)
        .unwrap();
    assert!(drain(&mut b).is_empty());
    assert_eq!(dropped(&fabric, DropReason::Qp0NotVl15), 1);
    // An SMP (VL15) to QP1 is dropped and counted as VL15Dropped.
    let mut dest = Address::smi(2);
    dest.qpn = 1;
    let lr = Req::get(&[], AttributeId::NODE_INFO, 0)
        .builder()
        .tid(2)
        .class(MgmtClass::SUBN_LID_ROUTED)
        .build();
    a.post_send(Qp::Qp0, &lr, &dest).unwrap();
    assert!(drain(&mut b).is_empty());
    assert_eq!(dropped(&fabric, DropReason::Vl15NotQp0), 1);
    assert_eq!(fabric.counters(H2, 2).unwrap().vl15_dropped, 1);
}

#[test]
fn qp1_admits_only_p_keys_in_the_port_table_with_one_full_member() {
    let (fabric, mut a, mut b) = configured_hca1_and_hca2();
    let set_pkeys = |t: &mut mad_sim::SimPort, hops: &[u8], keys: &[u16]| {
        let mut p = PKeyTable::default();
        p.pkeys[..keys.len()].copy_from_slice(keys);
        let (s, _) = sim_set_repr(t, hops, AttributeId::PKEY_TABLE, 0, &p);
        assert_eq!(s, 0);
    };
    // Hca2 knows only 0x8001; Hca1 sends with index 0 = 0xFFFF: dropped.
    set_pkeys(&mut a, TO_H2, &[0x8001]);
    assert_eq!(
        b.poll_event(),
        Some(mad_core::transport::AsyncEvent::PkeyChange)
    );
    a.post_send(
        Qp::Qp1,
        &gsi_mad(0x09, 1, Method::SEND, 1, 1),
        &Address::gsi(2),
    )
    .unwrap();
    assert!(drain(&mut b).is_empty());
    assert_eq!(dropped(&fabric, DropReason::PKey), 1);
    assert_eq!(fabric.port_info(H2, 2).unwrap().p_key_violations, 1);
    // Hca1 sends as a limited member of 0x0001: Hca2 is a full member.
    set_pkeys(&mut a, &[], &[0xFFFF, 0x0001]);
    a.refresh_port_attrs().unwrap();
    assert_eq!(a.port_attrs().pkeys, vec![0xFFFF, 0x0001]);
    let mut dest = Address::gsi(2);
    dest.pkey_index = 1;
    a.post_send(Qp::Qp1, &gsi_mad(0x09, 1, Method::SEND, 1, 2), &dest)
        .unwrap();
    let got = drain(&mut b);
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].src.pkey_index, 0,
        "index of the key in the receiver's table"
    );
    // Both limited: dropped.
    set_pkeys(&mut a, TO_H2, &[0x0001]);
    a.post_send(Qp::Qp1, &gsi_mad(0x09, 1, Method::SEND, 1, 3), &dest)
        .unwrap();
    assert!(drain(&mut b).is_empty());
    assert_eq!(fabric.port_info(H2, 2).unwrap().p_key_violations, 2);
    // SMPs are not P_Key checked.
    assert!(sim_rpc(&mut a, &Req::get(TO_H2, AttributeId::NODE_INFO, 0)).is_some());
}

#[test]
fn endpoints_attach_at_end_ports_once_each() {
    let (fabric, _t) = net();
    assert!(matches!(
        fabric.attach("Hca1", 1),
        Err(SimError::PortInUse { .. })
    ));
    // Port 0 of a CA, past its last port, a switch's external port.
    for (node, port) in [("Hca1", 0), ("Hca1", 3), ("Switch1", 1)] {
        assert!(
            matches!(fabric.attach(node, port), Err(SimError::NoSuchPort { .. })),
            "{node} port {port}"
        );
    }
    assert!(matches!(
        fabric.attach("Nope", 1),
        Err(SimError::NoSuchNode(_))
    ));
    let by_guid = fabric.attach(NodeSel::Guid(0x10_0003), 1).unwrap();
    assert_eq!(
        (by_guid.node(), by_guid.port_attrs().port_guid),
        (H2, 0x10_0004)
    );
    drop(by_guid);
    // Detached: the port is free again.
    let again = fabric.attach(H2, 1).unwrap();
    assert_eq!(again.port_attrs().ca_name, "Hca2");
    assert_eq!(fabric.find("Switch2"), Some(S2));
    assert_eq!(fabric.node(S2).unwrap().node_guid, 0x20_0001);
}

#[test]
fn a_directed_route_response_built_by_an_endpoint_returns_along_the_path() {
    // An endpoint acting as responder (an SM answering SMInfo) sends the
    // answer back by the return path recorded on the way in.
    let (fabric, mut a) = net();
    let mut sm = fabric.attach("Hca2", 2).unwrap();
    sm.set_is_sm(true);
    let req = Req::get(TO_H2, AttributeId::SM_INFO, 0).build(0x4242);
    a.post_send(Qp::Qp0, &req, &Address::smi(PERMISSIVE_LID))
        .unwrap();
    let got = drain(&mut sm);
    assert_eq!(got.len(), 1);
    let mut resp = got[0].mad.clone();
    let mut s = Smp::new_checked(&mut resp[..]).unwrap();
    mad_core::wire::smp::dr_make_response(&mut s).unwrap();
    s.data_mut()[0] = 0x5A;
    sm.post_send(Qp::Qp0, &resp, &Address::smi(PERMISSIVE_LID))
        .unwrap();
    let back = drain(&mut a);
    assert_eq!(back.len(), 1);
    let s = Smp::new_checked(&back[0].mad[..]).unwrap();
    assert_eq!(
        (s.tid(), s.data()[0], s.hop_ptr(), s.direction()),
        (0x4242, 0x5A, 0, true)
    );
    // The path was "0,1,2": the return path recorded the arrival ports.
    assert_eq!(&s.return_path()[..3], &[0, 1, 2]);
    assert_eq!(
        DrPath::from_hops(TO_H2).unwrap().hops(),
        &s.initial_path()[1..3]
    );
}
