//! The SMA of the simulated fabric: PortInfo state transitions, table
//! Get/Set, M_Key protection levels 0–3 and the lease, and the statuses of
//! unsupported requests. All through a `SimPort` at Hca1 port 1 of ibsim's
//! `net` example (see `common`).

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::*;
use mad_core::transport::{AsyncEvent, Qp, Transport, PERMISSIVE_LID};
use mad_core::wire::attr::{
    GuidInfo, NodeInfo, PKeyTable, PhysPortState, PortState, SlToVlTable, SmInfo, SmState,
    SwitchInfo, VlArbTable,
};
use mad_core::wire::smp::Smp;
use mad_core::wire::{AttributeId, Method, Repr};
use mad_sim::fabric::{DropReason, SmReply};
use mad_sim::{Fabric, Topology};

fn events(t: &mut mad_sim::SimPort) -> Vec<AsyncEvent> {
    std::iter::from_fn(|| t.poll_event()).collect()
}

#[test]
fn port_state_goes_init_armed_active_in_order_and_both_ends_must_follow() {
    let (fabric, mut t) = net();
    let (_, pi) = pi_get(&mut t, &[], 0).unwrap();
    assert_eq!(
        (pi.port_state, pi.port_phys_state),
        (PortState::INIT, PhysPortState::LINK_UP)
    );
    // Init -> Active skips Armed; Init (2) is never a valid request.
    assert_eq!(set_state(&mut t, &[], 0, PortState::ACTIVE), 0x1C);
    assert_eq!(set_state(&mut t, &[], 0, PortState::INIT), 0x1C);
    assert_eq!(set_state(&mut t, &[], 0, PortState(5)), 0x1C);
    assert_eq!(
        pi_get(&mut t, &[], 0).unwrap().1.port_state,
        PortState::INIT
    );
    // Armed is fine; Active needs the other end Armed too.
    assert_eq!(set_state(&mut t, &[], 0, PortState::ARMED), 0);
    assert_eq!(set_state(&mut t, &[], 0, PortState::ACTIVE), 0x1C);
    assert_eq!(set_state(&mut t, TO_S1, 1, PortState::ARMED), 0);
    assert_eq!(set_state(&mut t, &[], 0, PortState::ACTIVE), 0);
    assert_eq!(events(&mut t), [AsyncEvent::PortActive]);
    assert_eq!(set_state(&mut t, TO_S1, 1, PortState::ACTIVE), 0);
    assert_eq!(
        fabric.port_info(H1, 1).unwrap().port_state,
        PortState::ACTIVE
    );
    assert_eq!(
        fabric.port_info(S1, 1).unwrap().port_state,
        PortState::ACTIVE
    );
    // Active -> Armed is not a transition.
    assert_eq!(set_state(&mut t, &[], 0, PortState::ARMED), 0x1C);
    // A down port cannot be armed.
    assert_eq!(set_state(&mut t, TO_S1, 5, PortState::ARMED), 0x1C);
}

#[test]
fn port_state_down_retrains_the_link_to_init_at_both_ends() {
    let (fabric, mut t) = net();
    activate(&mut t, (&[], 0), (TO_S1, 1));
    let _ = events(&mut t);
    // Clear Switch1's PortStateChange (write 1 to clear).
    let (_, d) = sim_get(&mut t, TO_S1, AttributeId::SWITCH_INFO, 0);
    let si = SwitchInfo::parse(&d).unwrap();
    assert!(si.port_state_change, "ibsim sets it when it links ports");
    let (s, d) = sim_set(&mut t, TO_S1, AttributeId::SWITCH_INFO, 0, &d);
    assert_eq!(s, 0);
    assert!(!SwitchInfo::parse(&d).unwrap().port_state_change);
    // The CA takes its own port down: both ends come back in Init.
    let (s, pi) = pi_set(&mut t, &[], 0, 0, |p| p.port_state = PortState::DOWN).unwrap();
    assert_eq!(
        (s, pi.port_state, pi.port_phys_state),
        (0, PortState::INIT, PhysPortState::LINK_UP)
    );
    assert_eq!(fabric.port_info(S1, 1).unwrap().port_state, PortState::INIT);
    assert_eq!(events(&mut t), [AsyncEvent::PortError]);
    assert_eq!(fabric.counters(H1, 1).unwrap().link_downed_counter, 1);
    assert_eq!(fabric.counters(S1, 1).unwrap().link_downed_counter, 1);
    let (_, d) = sim_get(&mut t, TO_S1, AttributeId::SWITCH_INFO, 0);
    assert!(
        SwitchInfo::parse(&d).unwrap().port_state_change,
        "remote switch saw its port change"
    );
}

/// Sets Switch1 port 2's PortPhysicalState; the answer's status, port
/// state and physical state.
fn set_s1_port2_phys(
    t: &mut mad_sim::SimPort,
    phys: PhysPortState,
) -> (u16, PortState, PhysPortState) {
    let (s, pi) = pi_set(t, TO_S1, 2, 0, |p| p.port_phys_state = phys).unwrap();
    (s, pi.port_state, pi.port_phys_state)
}

#[test]
fn disabling_a_port_takes_the_link_down_until_polling_brings_it_back() {
    let (fabric, mut t) = net();
    assert!(sim_rpc(&mut t, &Req::get(TO_H2, AttributeId::NODE_INFO, 0)).is_some());
    assert_eq!(
        set_s1_port2_phys(&mut t, PhysPortState::DISABLED),
        (0, PortState::DOWN, PhysPortState::DISABLED)
    );
    let h2 = fabric.port_info(H2, 2).unwrap();
    assert_eq!(
        (h2.port_state, h2.port_phys_state),
        (PortState::DOWN, PhysPortState::POLLING)
    );
    // Nothing crosses the disabled link; the switch counts a discard.
    let before = fabric.stats().dropped(DropReason::LinkDown);
    assert!(sim_rpc(&mut t, &Req::get(TO_H2, AttributeId::NODE_INFO, 0)).is_none());
    assert_eq!(fabric.stats().dropped(DropReason::LinkDown), before + 1);
    assert_eq!(fabric.counters(S1, 2).unwrap().port_xmit_discards, 1);
    // Polling re-enables it: both ends train to Init.
    assert_eq!(
        set_s1_port2_phys(&mut t, PhysPortState::POLLING),
        (0, PortState::INIT, PhysPortState::LINK_UP)
    );
    assert_eq!(fabric.port_info(H2, 2).unwrap().port_state, PortState::INIT);
    assert!(sim_rpc(&mut t, &Req::get(TO_H2, AttributeId::NODE_INFO, 0)).is_some());
}

#[test]
fn port_info_set_stores_writable_fields_refuses_bad_ones_atomically_and_keeps_read_only_ones() {
    let (_fabric, mut t) = net();
    let (s, pi) = pi_set(&mut t, TO_H2, 0, 0, |p| {
        p.lid = 0x22;
        p.master_sm_lid = 7;
        p.master_sm_sl = 3;
        p.subnet_timeout = 18;
        p.neighbor_mtu = 3;
        p.operational_vls = 2;
        p.gid_prefix = 0xfe80_0000_0000_0000;
        p.capability_mask = 0; // read-only: ignored
        p.local_port_num = 9; // read-only
    })
    .unwrap();
    assert_eq!(s, 0);
    assert_eq!((pi.lid, pi.master_sm_lid, pi.master_sm_sl), (0x22, 7, 3));
    assert_eq!(
        (pi.subnet_timeout, pi.neighbor_mtu, pi.operational_vls),
        (18, 3, 2)
    );
    assert_eq!(pi.gid_prefix, 0xfe80_0000_0000_0000);
    assert_eq!(pi.capability_mask, 0x0050_C048);
    assert_eq!(pi.local_port_num, 2, "the port the SMP came in on");
    // One invalid field (OperationalVLs above VLCap) and nothing changes.
    let (s, pi) = pi_set(&mut t, TO_H2, 0, 0, |p| {
        p.lid = 0x33;
        p.operational_vls = 5;
    })
    .unwrap();
    assert_eq!((s, pi.lid), (0x1C, 0x22));
    // LinkWidthEnabled outside LinkWidthSupported is refused; 255 means
    // "all supported" and the link runs at the widest common width.
    let (s, _) = pi_set(&mut t, TO_H2, 0, 0, |p| p.link_width_enabled = 0x40).unwrap();
    assert_eq!(s, 0x1C);
    // A CA sets only the port the SMP came in on.
    let (s, _) = pi_set(&mut t, TO_H2, 1, 0, |p| p.lid = 5).unwrap();
    assert_eq!(s, 0x1C);
    // PortInfo of a port beyond NumPorts.
    let (s, _) = pi_get(&mut t, TO_H2, 3).unwrap();
    assert_eq!(s, 0x1C);
}

#[test]
fn lid_and_client_reregister_changes_raise_port_events() {
    let (fabric, mut t) = net();
    assert!(events(&mut t).is_empty());
    pi_set(&mut t, &[], 0, 0, |p| {
        p.lid = 9;
        p.master_sm_lid = 4;
        p.client_reregister = true;
    })
    .unwrap();
    let ev = events(&mut t);
    assert!(ev.contains(&AsyncEvent::LidChange), "{ev:?}");
    assert!(ev.contains(&AsyncEvent::SmChange), "{ev:?}");
    assert!(ev.contains(&AsyncEvent::ClientReregister), "{ev:?}");
    assert!(
        !fabric.port_info(H1, 1).unwrap().client_reregister,
        "reads back 0"
    );
    assert_eq!(t.port_attrs().lid, 0);
    t.refresh_port_attrs().unwrap();
    assert_eq!((t.port_attrs().lid, t.port_attrs().sm_lid), (9, 4));
}

#[test]
fn lft_set_then_get_and_its_bounds() {
    let (_fabric, mut t) = net();
    let block: Vec<u8> = (0..64).map(|i| (i % 9) as u8).collect();
    let (s, d) = sim_set(&mut t, TO_S2, AttributeId::LINEAR_FWD_TABLE, 7, &block);
    assert_eq!((s, &d[..]), (0, &block[..]));
    let (s, d) = sim_get(&mut t, TO_S2, AttributeId::LINEAR_FWD_TABLE, 7);
    assert_eq!((s, &d[..]), (0, &block[..]));
    // Untouched blocks read 0xFF (no route), as in ibsim.
    let (s, d) = sim_get(&mut t, TO_S2, AttributeId::LINEAR_FWD_TABLE, 6);
    assert_eq!((s, d), (0, [0xFF; 64]));
    // Block 480 starts at LID 30720 = LinearFDBCap.
    let (s, _) = sim_get(&mut t, TO_S2, AttributeId::LINEAR_FWD_TABLE, 480);
    assert_eq!(s, 0x1C);
    let (s, _) = sim_get(&mut t, TO_S2, AttributeId::LINEAR_FWD_TABLE, 479);
    assert_eq!(s, 0);
    // A CA has no LFT, no SwitchInfo, no MFT.
    for attr in [
        AttributeId::LINEAR_FWD_TABLE,
        AttributeId::SWITCH_INFO,
        AttributeId::MCAST_FWD_TABLE,
    ] {
        let (s, _) = sim_get(&mut t, TO_H2, attr, 0);
        assert_eq!(s, 0x0C, "{attr:?}");
    }
    // MFT: Set then Get, position beyond the ports and block beyond the cap.
    let mut masks = [0u8; 64];
    masks[0..2].copy_from_slice(&0x0006u16.to_be_bytes());
    let (s, _) = sim_set(&mut t, TO_S2, AttributeId::MCAST_FWD_TABLE, 3, &masks);
    assert_eq!(s, 0);
    let (_, d) = sim_get(&mut t, TO_S2, AttributeId::MCAST_FWD_TABLE, 3);
    assert_eq!(&d[..2], &[0, 6]);
    let (s, _) = sim_get(&mut t, TO_S2, AttributeId::MCAST_FWD_TABLE, 1 << 28);
    assert_eq!(s, 0x1C, "8-port switch: one position");
    let (s, _) = sim_get(&mut t, TO_S2, AttributeId::MCAST_FWD_TABLE, 32);
    assert_eq!(s, 0x1C, "1024 entries: blocks 0-31");
}

#[test]
fn switch_info_set_writes_its_writable_fields_only() {
    let (_fabric, mut t) = net();
    let (_, d) = sim_get(&mut t, TO_S1, AttributeId::SWITCH_INFO, 0);
    let mut si = SwitchInfo::parse(&d).unwrap();
    assert_eq!(
        (
            si.linear_fdb_cap,
            si.multicast_fdb_cap,
            si.partition_enforcement_cap
        ),
        (30720, 1024, 64)
    );
    si.linear_fdb_top = 0x40;
    si.default_port = 3;
    si.life_time_value = 18;
    si.linear_fdb_cap = 5; // read-only
    si.port_state_change = false; // 0: leave it
    let (s, d) = sim_set_repr(&mut t, TO_S1, AttributeId::SWITCH_INFO, 0, &si);
    let got = SwitchInfo::parse(&d).unwrap();
    assert_eq!(s, 0);
    assert_eq!(
        (got.linear_fdb_top, got.default_port, got.life_time_value),
        (0x40, 3, 18)
    );
    assert_eq!(got.linear_fdb_cap, 30720);
    assert!(got.port_state_change);
    si.linear_fdb_top = 30720;
    let (s, _) = sim_set_repr(&mut t, TO_S1, AttributeId::SWITCH_INFO, 0, &si);
    assert_eq!(s, 0x1C);
}

#[test]
fn pkey_guid_sl2vl_and_vlarb_tables_get_set_and_bounds() {
    let (_fabric, mut t) = net();
    // P_Key: CA port has 64 entries (blocks 0-1), switch port 0 has 8,
    // switch external ports 64.
    let mut pk = PKeyTable::default();
    pk.pkeys[0] = 0xFFFF;
    pk.pkeys[1] = 0x8001;
    let (s, d) = sim_set_repr(&mut t, TO_H2, AttributeId::PKEY_TABLE, 0, &pk);
    assert_eq!((s, PKeyTable::parse(&d).unwrap()), (0, pk.clone()));
    assert_eq!(get_status(&mut t, TO_H2, AttributeId::PKEY_TABLE, 1), 0);
    assert_eq!(get_status(&mut t, TO_H2, AttributeId::PKEY_TABLE, 2), 0x1C);
    let (s, d) = sim_get(&mut t, TO_S1, AttributeId::PKEY_TABLE, 0);
    assert_eq!((s, &d[..4]), (0, &[0xFF, 0xFF, 0, 0][..]));
    assert_eq!(get_status(&mut t, TO_S1, AttributeId::PKEY_TABLE, 1), 0x1C);
    assert_eq!(
        get_status(&mut t, TO_S1, AttributeId::PKEY_TABLE, (3 << 16) | 1),
        0
    );
    assert_eq!(
        get_status(&mut t, TO_S1, AttributeId::PKEY_TABLE, 9 << 16),
        0x1C
    );

    // GUIDInfo: entry 0 is the port GUID and read-only; 32 entries on a CA.
    let mut g = GuidInfo::default();
    g.guids[0] = 0xdead;
    g.guids[1] = 0x1234;
    let (s, d) = sim_set_repr(&mut t, TO_H2, AttributeId::GUID_INFO, 0, &g);
    let got = GuidInfo::parse(&d).unwrap();
    assert_eq!((s, got.guids[0], got.guids[1]), (0, 0x10_0005, 0x1234));
    assert_eq!(get_status(&mut t, TO_H2, AttributeId::GUID_INFO, 3), 0);
    assert_eq!(get_status(&mut t, TO_H2, AttributeId::GUID_INFO, 4), 0x1C);
    assert_eq!(get_status(&mut t, TO_S1, AttributeId::GUID_INFO, 1), 0x1C);

    // SL2VL: per (in, out) port pair on a switch.
    let tbl = [0x10u8, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe];
    let (s, _) = sim_set(&mut t, TO_S1, AttributeId::SL_TO_VL_TABLE, 0x0102, &tbl);
    assert_eq!(s, 0);
    let (_, d) = sim_get(&mut t, TO_S1, AttributeId::SL_TO_VL_TABLE, 0x0102);
    assert_eq!(SlToVlTable::parse(&d).unwrap().vl[0], 1);
    let (_, d) = sim_get(&mut t, TO_S1, AttributeId::SL_TO_VL_TABLE, 0x0201);
    assert_eq!(
        &d[..8],
        &mad_sim::fabric::DEFAULT_SL2VL[..],
        "other pairs untouched"
    );
    assert_eq!(
        get_status(&mut t, TO_S1, AttributeId::SL_TO_VL_TABLE, 0x0900),
        0x1C
    );

    // VLArb: blocks 1 (low) and 3 (high) with 8 entries; 2 and 4 do not
    // exist with a capacity of 8.
    let (s, d) = sim_get(&mut t, TO_H2, AttributeId::VL_ARB_TABLE, 1 << 16);
    let v = VlArbTable::parse(&d).unwrap();
    assert_eq!(
        (s, v.vl(1), v.weight(1), v.entries[8]),
        (0, Some(1), Some(4), 0)
    );
    let mut w = VlArbTable::default();
    w.entries[0] = VlArbTable::entry(2, 9);
    let (s, d) = sim_set_repr(&mut t, TO_H2, AttributeId::VL_ARB_TABLE, 3 << 16, &w);
    assert_eq!((s, VlArbTable::parse(&d).unwrap().weight(0)), (0, Some(9)));
    assert_eq!(
        get_status(&mut t, TO_H2, AttributeId::VL_ARB_TABLE, 2 << 16),
        0x1C
    );
    assert_eq!(
        get_status(&mut t, TO_H2, AttributeId::VL_ARB_TABLE, 5 << 16),
        0x1C
    );
}

#[test]
fn unsupported_requests_get_the_status_hardware_gives() {
    let (_fabric, mut t) = net();
    // Unknown attribute (Mellanox ExtendedPortInfo), Set of read-only
    // attributes: 0x000C, "method/attribute combination not supported".
    let (s, _) = sim_get(&mut t, TO_S1, AttributeId(0xFF90), 0);
    assert_eq!(s, 0x0C);
    let (s, d) = sim_set(&mut t, TO_S1, AttributeId::NODE_INFO, 0, &[0; 40]);
    assert_eq!(s, 0x0C);
    assert_eq!(
        NodeInfo::parse(&d).unwrap().node_guid,
        0x20_0000,
        "answered with the real value"
    );
    let (s, _) = sim_set(&mut t, TO_S1, AttributeId::NODE_DESC, 0, b"x");
    assert_eq!(s, 0x0C);
    // Method Send: "method not supported"; class version 2: "bad version".
    let mut r = Req::get(TO_S1, AttributeId::NODE_INFO, 0);
    r.method = Method::SEND;
    assert_eq!(sim_rpc(&mut t, &r).unwrap().0, 0x08);
    let m = Req::get(TO_S1, AttributeId::NODE_INFO, 0)
        .builder()
        .tid(0x77)
        .class_version(2)
        .build();
    t.post_send(
        Qp::Qp0,
        &m,
        &mad_core::transport::Address::smi(PERMISSIVE_LID),
    )
    .unwrap();
    let r = drain(&mut t).pop().unwrap();
    let s = Smp::new_checked(&r.mad[..]).unwrap();
    assert_eq!((s.dr_status(), s.direction()), (0x04, true));
}

#[test]
fn sminfo_goes_to_the_sm_handler_the_sm_endpoint_or_is_unsupported() {
    let (fabric, mut t) = net();
    // No SM anywhere: the SMA says "unsupported".
    assert_eq!(get_status(&mut t, TO_S1, AttributeId::SM_INFO, 0), 0x0C);
    // A configured SMInfo is answered by the SMA, and IsSM is set.
    let info = SmInfo {
        guid: 0x77,
        priority: 3,
        sm_state: SmState::STANDBY,
        ..SmInfo::default()
    };
    fabric.set_sm_info(S2, 0, Some(info.clone()));
    let (s, d) = sim_get(&mut t, TO_S2, AttributeId::SM_INFO, 0);
    assert_eq!((s, SmInfo::parse(&d).unwrap()), (0, info));
    assert_ne!(fabric.port_info(S2, 0).unwrap().capability_mask & 2, 0);
    // A handler wins over the SMA.
    fabric.set_sm_handler(
        S2,
        Some(Box::new(|req: &mad_sim::fabric::SmRequest<'_>| {
            let mut data = [0u8; 64];
            data[0] = req.port;
            SmReply::Respond { status: 0, data }
        })),
    );
    let (s, d) = sim_get(&mut t, TO_S2, AttributeId::SM_INFO, 0);
    assert_eq!((s, d[0]), (0, 3), "the handler saw the arrival port");
    assert_eq!(fabric.stats().to_sm, 1);
    // An endpoint that declared itself SM receives the request itself.
    let mut sm = fabric.attach("Hca2", 2).unwrap();
    sm.set_is_sm(true);
    assert_ne!(fabric.port_info(H2, 2).unwrap().capability_mask & 2, 0);
    let req = Req::get(TO_H2, AttributeId::SM_INFO, 0).build(0x99);
    t.post_send(
        Qp::Qp0,
        &req,
        &mad_core::transport::Address::smi(PERMISSIVE_LID),
    )
    .unwrap();
    let got = drain(&mut sm);
    assert_eq!(got.len(), 1);
    assert_eq!(Smp::new_checked(&got[0].mad[..]).unwrap().tid(), 0x99);
    assert!(drain(&mut t).is_empty(), "nobody answered yet");
    drop(sm);
    assert_eq!(
        fabric.port_info(H2, 2).unwrap().capability_mask & 2,
        0,
        "IsSM cleared on detach"
    );
}

const KEY: u64 = 0x1122_3344_5566_7788;
const BAD: u64 = 0x0bad;

/// Sets Hca2 port 2's M_Key, protect bits and lease period (using `KEY`
/// once a key is set).
fn protect(t: &mut mad_sim::SimPort, bits: u8, lease: u16, current: u64) {
    let (s, _) = pi_set(t, TO_H2, 0, current, |p| {
        p.m_key = KEY;
        p.m_key_protect_bits = bits;
        p.m_key_lease_period = lease;
    })
    .unwrap();
    assert_eq!(s, 0);
}

fn violations(t: &mut mad_sim::SimPort) -> u16 {
    pi_get_key(t, TO_H2, 0, KEY).unwrap().1.m_key_violations
}

#[test]
fn mkey_level_0_answers_gets_with_the_key_shown_and_drops_bad_sets() {
    let (fabric, mut t) = net();
    protect(&mut t, 0, 0, 0);
    let (s, pi) = pi_get_key(&mut t, TO_H2, 0, BAD).unwrap();
    assert_eq!((s, pi.m_key), (0, KEY));
    assert!(
        pi_set(&mut t, TO_H2, 0, BAD, |p| p.lid = 5).is_none(),
        "bad Set dropped"
    );
    assert_eq!(fabric.stats().dropped(DropReason::MKey), 1);
    assert_eq!(violations(&mut t), 1);
    let (_, pi) = pi_get_key(&mut t, TO_H2, 0, KEY).unwrap();
    assert_eq!(pi.lid, 0, "the bad Set changed nothing");
    // The right key sets.
    assert_eq!(
        pi_set(&mut t, TO_H2, 0, KEY, |p| p.lid = 5).unwrap().1.lid,
        5
    );
}

#[test]
fn mkey_level_1_hides_the_key_from_bad_gets() {
    let (_fabric, mut t) = net();
    protect(&mut t, 1, 0, 0);
    let (s, pi) = pi_get_key(&mut t, TO_H2, 0, BAD).unwrap();
    assert_eq!((s, pi.m_key, pi.m_key_protect_bits), (0, 0, 1));
    assert_eq!(pi_get_key(&mut t, TO_H2, 0, KEY).unwrap().1.m_key, KEY);
    assert!(sim_rpc(&mut t, &Req::get(TO_H2, AttributeId::NODE_INFO, 0).key(BAD)).is_some());
    assert!(pi_set(&mut t, TO_H2, 0, BAD, |p| p.lid = 5).is_none());
    assert_eq!(violations(&mut t), 1, "a Get is no violation below level 2");
}

#[test]
fn mkey_levels_2_and_3_drop_every_bad_get_and_set() {
    for bits in [2, 3] {
        let (fabric, mut t) = net();
        protect(&mut t, bits, 0, 0);
        assert!(pi_get_key(&mut t, TO_H2, 0, BAD).is_none(), "level {bits}");
        assert!(sim_rpc(&mut t, &Req::get(TO_H2, AttributeId::NODE_INFO, 0).key(BAD)).is_none());
        assert!(pi_set(&mut t, TO_H2, 0, BAD, |p| p.lid = 5).is_none());
        assert_eq!(violations(&mut t), 3);
        assert_eq!(fabric.stats().mkey_violations, 3);
        // Other nodes are not protected.
        assert!(pi_get_key(&mut t, TO_S1, 1, BAD).is_some());
    }
}

#[test]
fn mkey_lease_expiry_clears_the_protection_and_a_good_key_stops_the_timer() {
    let (fabric, mut t) = net();
    protect(&mut t, 2, 5, 0);
    assert!(
        pi_get_key(&mut t, TO_H2, 0, BAD).is_none(),
        "starts the 5 s lease"
    );
    fabric.advance(Duration::from_secs(4));
    assert!(
        pi_get_key(&mut t, TO_H2, 0, BAD).is_none(),
        "still protected at 4 s"
    );
    fabric.advance(Duration::from_secs(1));
    assert_eq!(
        fabric.port_info(H2, 2).unwrap().m_key_protect_bits,
        0,
        "lease over"
    );
    let (s, pi) = pi_get_key(&mut t, TO_H2, 0, BAD).unwrap();
    assert_eq!((s, pi.m_key, pi.m_key_protect_bits), (0, KEY, 0));

    // Now: a violation starts the timer, a good key stops it.
    protect(&mut t, 2, 5, KEY);
    assert!(pi_get_key(&mut t, TO_H2, 0, BAD).is_none());
    assert!(pi_get_key(&mut t, TO_H2, 0, KEY).is_some());
    fabric.advance(Duration::from_secs(10));
    assert_eq!(fabric.port_info(H2, 2).unwrap().m_key_protect_bits, 2);
    assert!(pi_get_key(&mut t, TO_H2, 0, BAD).is_none());
}

#[test]
fn a_switch_is_protected_by_its_port_0_mkey() {
    let (_fabric, mut t) = net();
    let (s, _) = pi_set(&mut t, TO_S1, 0, 0, |p| {
        p.m_key = KEY;
        p.m_key_protect_bits = 2;
    })
    .unwrap();
    assert_eq!(s, 0);
    assert!(pi_get_key(&mut t, TO_S1, 3, BAD).is_none());
    assert!(sim_rpc(&mut t, &Req::get(TO_S1, AttributeId::SWITCH_INFO, 0)).is_none());
    assert!(pi_get_key(&mut t, TO_S1, 3, KEY).is_some());
    // Forwarding through the switch is not an SMA matter.
    assert!(sim_rpc(&mut t, &Req::get(TO_S2, AttributeId::NODE_INFO, 0)).is_some());
}

/// A topology of `switches` switches with 254 CAs each (no links between
/// the switches): `switches` + 254 × `switches` LID-bearing ports.
fn star_of_stars(switches: usize) -> Topology {
    use std::fmt::Write;
    let mut t = String::new();
    for s in 0..switches {
        writeln!(t, "Switch 254 \"S{s}\"").unwrap();
        for p in 1..=254 {
            writeln!(t, "[{p}] \"H{s}_{p}\"[1]").unwrap();
        }
        t.push('\n');
    }
    for s in 0..switches {
        for p in 1..=254 {
            writeln!(t, "Hca 1 \"H{s}_{p}\"\n[1] \"S{s}\"[{p}]\n").unwrap();
        }
    }
    Topology::parse_str(&t).unwrap()
}

#[test]
fn linear_fdb_cap_is_ibsims_unless_the_topology_needs_more_lids() {
    // `net` (a few LIDs) has ibsim's 30,720 (switch_info_set_writes_...);
    // 121 × 255 = 30,855 LIDs do not fit in it.
    let topo = star_of_stars(121);
    let fabric = Fabric::new(&topo);
    let mut t = fabric.attach("H0_1", 1).unwrap();
    let (s, d) = sim_get(&mut t, TO_S1, AttributeId::SWITCH_INFO, 0);
    assert_eq!(s, 0);
    assert_eq!(SwitchInfo::parse(&d).unwrap().linear_fdb_cap, 0xC000);
    // The last LFT block (LIDs 49,088-49,151) is taken, the next refused.
    let (s, _) = sim_set(&mut t, TO_S1, AttributeId::LINEAR_FWD_TABLE, 767, &[1; 64]);
    assert_eq!(s, 0);
    let (s, d) = sim_get(&mut t, TO_S1, AttributeId::LINEAR_FWD_TABLE, 767);
    assert_eq!((s, d), (0, [1; 64]));
    let (s, _) = sim_get(&mut t, TO_S1, AttributeId::LINEAR_FWD_TABLE, 768);
    assert_eq!(s, 0x1C);
    // A cap configured is kept, whatever the topology.
    let cfg = mad_sim::FabricConfig {
        linear_fdb_cap: Some(30720),
        ..mad_sim::FabricConfig::default()
    };
    let fabric = Fabric::with_config(&topo, cfg);
    let mut t = fabric.attach("H0_1", 1).unwrap();
    let (_, d) = sim_get(&mut t, TO_S1, AttributeId::SWITCH_INFO, 0);
    assert_eq!(SwitchInfo::parse(&d).unwrap().linear_fdb_cap, 30720);
    let (s, _) = sim_set(&mut t, TO_S1, AttributeId::LINEAR_FWD_TABLE, 480, &[1; 64]);
    assert_eq!(s, 0x1C, "block 480 starts at LID 30,720");
}
