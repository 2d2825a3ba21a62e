//! Fabric-level faults on the built-in fabric: seeded per-link drop,
//! duplication, reordering and delay (repeatable: same seed, same
//! delivered sequence), and cables pulled / plugged back with the
//! PortInfo changes, counters, events and Trap 128 a real fabric shows,
//! after which SM-lite re-sweeps.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::time::Duration;

use mad_core::transport::{Address, AsyncEvent, Qp, Transport};
use mad_core::wire::attr::{trap, NodeInfo, PhysPortState, PortState};
use mad_core::wire::smp::Smp;
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass, Repr};
use mad_sim::fabric::DropReason;
use mad_sim::{default_topology, Fabric, LinkFaults, SimPort, Subnet, SubnetOptions};
use mad_sm::SmEvent;
use mad_testkit::MadBuilder;

fn subnet() -> Subnet {
    Subnet::up_with(
        &default_topology(),
        SubnetOptions {
            sa: false,
            ..SubnetOptions::default()
        },
    )
    .unwrap()
}

fn lid_of(f: &Fabric, node: &str) -> u16 {
    let n = f.find(node).unwrap();
    f.port_info(n, 1).unwrap().lid
}

/// A vendor-class (0x09) GSI Send with this TID.
fn vendor_mad(tid: u64) -> Vec<u8> {
    MadBuilder::new(MgmtClass(0x09), 1, Method::SEND, AttributeId(0))
        .tid(tid)
        .to_vec()
}

/// host-2's and host-7's ports on `f` and host-7's GSI address.
fn host2_to_host7(f: &Fabric) -> (SimPort, SimPort, Address) {
    let a = f.attach("host-2", 1).unwrap();
    let b = f.attach("host-7", 1).unwrap();
    (a, b, Address::gsi(lid_of(f, "host-7")))
}

/// Puts `faults` on host-2's link.
fn fault_host2(f: &Fabric, faults: LinkFaults) {
    f.set_link_faults("host-2", 1, faults).unwrap();
}

/// host-2 sends TID 1 to host-7 with `faults` on host-2's link; asserts
/// that it has not arrived (yet) and returns the two ports and host-7's
/// address.
fn first_packet_held(f: &Fabric, faults: LinkFaults) -> (SimPort, SimPort, Address) {
    let (mut a, mut b, to) = host2_to_host7(f);
    fault_host2(f, faults);
    a.post_send(Qp::Qp1, &vendor_mad(1), &to).unwrap();
    assert!(drain_tids(&mut b).is_empty(), "TID 1 is held");
    (a, b, to)
}

fn drain_tids(ep: &mut SimPort) -> Vec<u64> {
    let mut v = Vec::new();
    while let Some(r) = ep.poll_recv().unwrap() {
        v.push(Mad::new_checked(&r.mad[..]).unwrap().tid());
    }
    v
}

/// host-2 sends 300 MADs to host-7 with every fault on host-2's link and
/// host-7's link; returns the TIDs host-7 received, in order, and the
/// fault counters of host-2's link.
fn faulty_run(seed: u64) -> (Vec<u64>, mad_sim::fabric::LinkFaultStats) {
    let s = subnet();
    let f = s.fabric();
    f.set_fault_seed(seed);
    let faults = LinkFaults {
        drop: 0.1,
        duplicate: 0.1,
        reorder: 0.15,
        delay_probability: 0.1,
        delay: Duration::from_millis(3),
    };
    f.set_link_faults("host-2", 1, faults).unwrap();
    f.set_link_faults("host-7", 1, faults).unwrap();
    let (mut a, mut b, to) = host2_to_host7(f);
    let mut got = Vec::new();
    for tid in 1..=300u64 {
        a.post_send(Qp::Qp1, &vendor_mad(tid), &to).unwrap();
        if tid % 25 == 0 {
            f.advance(Duration::from_millis(1));
        }
        got.extend(drain_tids(&mut b));
    }
    // A packet released on one link may be held again on the next.
    for _ in 0..10 {
        f.advance(Duration::from_millis(10));
        got.extend(drain_tids(&mut b));
    }
    assert_eq!(f.held(), 0, "everything held was released");
    let (_, stats) = f.link_faults(f.find("host-2").unwrap(), 1).unwrap();
    (got, stats)
}

#[test]
fn link_faults_are_repeatable_for_a_seed_and_differ_between_seeds() {
    let (a, stats) = faulty_run(7);
    let (b, _) = faulty_run(7);
    let (c, _) = faulty_run(8);
    assert_eq!(a, b, "same seed, same delivered sequence");
    assert_ne!(a, c, "another seed, other faults");

    // Each kind of fault shows in the delivered sequence.
    assert!(stats.dropped > 0 && stats.duplicated > 0 && stats.delayed > 0 && stats.reordered > 0);
    assert_eq!(stats.packets, 300);
    let mut seen = std::collections::HashMap::<u64, usize>::new();
    for t in &a {
        assert!((1..=300).contains(t));
        *seen.entry(*t).or_default() += 1;
    }
    assert!(seen.len() < 300, "some were dropped");
    assert!(seen.values().any(|n| *n > 1), "some arrived twice");
    assert!(
        a.windows(2).any(|w| w[0] > w[1]),
        "some arrived out of order"
    );
}

#[test]
fn drop_rate_one_loses_everything_and_counts_it_and_clearing_restores_the_link() {
    let s = subnet();
    let f = s.fabric();
    let (mut a, mut b, to) = host2_to_host7(f);
    f.set_link_faults("host-7", 1, LinkFaults::drop_rate(1.0))
        .unwrap();
    let before = f.stats().dropped(DropReason::LinkFault);
    let h7 = f.find("host-7").unwrap();
    let leaf = f.remote(h7, 1).unwrap();
    let rcv0 = f.counters(h7, 1).unwrap().port_rcv_pkts;
    let xmit0 = f.counters(leaf.node, leaf.port).unwrap().port_xmit_pkts;
    for tid in 1..=5 {
        a.post_send(Qp::Qp1, &vendor_mad(tid), &to).unwrap();
    }
    assert!(drain_tids(&mut b).is_empty());
    assert_eq!(f.stats().dropped(DropReason::LinkFault) - before, 5);
    // The sends still complete with success, as a lost UD send does.
    let mut c = Vec::new();
    a.poll_send_completions(&mut c).unwrap();
    assert_eq!(c.len(), 5);
    assert!(c
        .iter()
        .all(|c| c.status == mad_core::transport::WcStatus::Success));
    // Counted as sent by the leaf port, not as received by host-7.
    assert_eq!(f.counters(h7, 1).unwrap().port_rcv_pkts, rcv0);
    assert_eq!(
        f.counters(leaf.node, leaf.port).unwrap().port_xmit_pkts,
        xmit0 + 5
    );
    f.clear_link_faults();
    a.post_send(Qp::Qp1, &vendor_mad(99), &to).unwrap();
    assert_eq!(drain_tids(&mut b), vec![99]);
}

#[test]
fn a_delayed_packet_arrives_only_when_virtual_time_has_passed_its_delay() {
    let s = subnet();
    let f = s.fabric();
    let (_a, mut b, _) = first_packet_held(
        f,
        LinkFaults {
            delay_probability: 1.0,
            delay: Duration::from_millis(5),
            ..LinkFaults::default()
        },
    );
    assert_eq!(f.held(), 1);
    f.advance(Duration::from_millis(4));
    assert!(drain_tids(&mut b).is_empty(), "not yet due");
    f.advance(Duration::from_millis(1));
    assert_eq!(drain_tids(&mut b), vec![1]);
}

#[test]
fn a_reordered_packet_crosses_right_after_the_next_one() {
    let s = subnet();
    let f = s.fabric();
    // With reorder 1.0 every packet waits for the next: 1 waits, 2 takes
    // its place and releases... nothing (it is held itself).
    let (mut a, mut b, to) = first_packet_held(
        f,
        LinkFaults {
            reorder: 1.0,
            ..LinkFaults::default()
        },
    );
    fault_host2(
        f,
        LinkFaults {
            reorder: 0.0,
            duplicate: 1.0,
            ..LinkFaults::default()
        },
    );
    a.post_send(Qp::Qp1, &vendor_mad(2), &to).unwrap();
    // 2 arrives, then its duplicate and the held 1 behind it.
    assert_eq!(drain_tids(&mut b), vec![2, 2, 1]);
}

fn port_state(f: &Fabric, node: &str, port: u8) -> (PortState, PhysPortState) {
    let pi = f.port_info(f.find(node).unwrap(), port).unwrap();
    (pi.port_state, pi.port_phys_state)
}

#[test]
fn without_an_sm_a_replugged_link_stays_in_init() {
    let f = Fabric::builtin();
    f.link_down("host-3", 1).unwrap();
    assert_eq!(
        port_state(&f, "host-3", 1),
        (PortState::DOWN, PhysPortState::POLLING)
    );
    f.link_up("host-3", 1).unwrap();
    assert_eq!(
        port_state(&f, "host-3", 1),
        (PortState::INIT, PhysPortState::LINK_UP)
    );
    // No SM, no LID: the switch sends no trap.
    assert_eq!(f.traps_sent(), 0);
}

#[test]
fn pulling_and_replugging_a_host_cable_traps_and_sm_lite_resweeps_the_port_back_to_active() {
    let s = subnet();
    let f = s.fabric().clone();
    let host = f.find("host-3").unwrap();
    let leaf = f.remote(host, 1).unwrap();
    let lid = lid_of(&f, "host-3");
    let leaf_lid = f.port_info(leaf.node, 0).unwrap().lid;
    let mut ep = f.attach(host, 1).unwrap();
    let st0 = s.sm_status();
    let _ = s.take_sm_events();

    f.link_down("host-3", 1).unwrap();
    // Both ends: Down, physically Polling; LinkDowned counted once each.
    assert_eq!(
        port_state(&f, "host-3", 1),
        (PortState::DOWN, PhysPortState::POLLING)
    );
    let lp = f.port_info(leaf.node, leaf.port).unwrap();
    assert_eq!(
        (lp.port_state, lp.port_phys_state),
        (PortState::DOWN, PhysPortState::POLLING)
    );
    assert_eq!(f.counters(host, 1).unwrap().link_downed_counter, 1);
    assert_eq!(
        f.counters(leaf.node, leaf.port)
            .unwrap()
            .link_downed_counter,
        1
    );
    assert_eq!(ep.poll_event(), Some(AsyncEvent::PortError));
    // The leaf switch trapped to the SM, which repressed it and re-swept.
    assert_eq!(f.traps_sent(), 1);
    let ev = s.take_sm_events();
    assert!(
        ev.contains(&SmEvent::Trap {
            number: Some(trap::LINK_STATE_CHANGE),
            issuer_lid: leaf_lid
        }),
        "{ev:?}"
    );
    let st1 = s.sm_status();
    assert_eq!(st1.traps, st0.traps + 1);
    assert!(st1.sweeps > st0.sweeps, "a re-sweep ran");
    assert_eq!(st1.lids, st0.lids - 1, "host-3 is gone from the subnet");
    // The SM cleared the leaf's PortStateChange in that sweep.
    assert!(s.with_sm(|sm| sm.subnet().lids().len()) == st1.lids);

    f.link_up("host-3", 1).unwrap();
    // The link trained (Init) and SM-lite, told by Trap 128, made it
    // Active again with the same LID.
    assert_eq!(
        port_state(&f, "host-3", 1),
        (PortState::ACTIVE, PhysPortState::LINK_UP)
    );
    assert_eq!(lid_of(&f, "host-3"), lid);
    assert_eq!(
        f.port_info(leaf.node, leaf.port).unwrap().port_state,
        PortState::ACTIVE
    );
    let st2 = s.sm_status();
    assert_eq!(f.traps_sent(), 2);
    assert_eq!(st2.traps, st0.traps + 2);
    assert!(st2.sweeps > st1.sweeps);
    assert!(st2.subnet_ups > st1.subnet_ups);
    assert_eq!(st2.lids, st0.lids);
    let evs: Vec<_> = std::iter::from_fn(|| ep.poll_event()).collect();
    assert!(evs.contains(&AsyncEvent::PortActive), "{evs:?}");
}

/// NodeInfo of `lid` by a LID-routed SMP from `ep`.
fn node_info_by_lid(ep: &mut SimPort, lid: u16, tid: u64) -> Option<NodeInfo> {
    let m = MadBuilder::smp_get(AttributeId::NODE_INFO).tid(tid).build();
    ep.post_send(Qp::Qp0, &m, &Address::smi(lid)).unwrap();
    while let Some(r) = ep.poll_recv().unwrap() {
        let smp = Smp::new_checked(&r.mad[..]).unwrap();
        if smp.tid() == tid {
            return NodeInfo::parse(smp.data()).ok();
        }
    }
    None
}

#[test]
fn a_pulled_uplink_is_routed_around_after_the_resweep_both_switches_trap() {
    let s = subnet();
    let f = s.fabric().clone();
    let mut ep = f.attach("host-2", 1).unwrap();
    let h8 = lid_of(&f, "host-8");
    let guid8 = f.node(f.find("host-8").unwrap()).unwrap().node_guid;
    assert_eq!(node_info_by_lid(&mut ep, h8, 1).unwrap().node_guid, guid8);
    // Pull both uplinks of leaf-1 but one, one after the other: whichever
    // spine the route used, traffic must still reach host-8.
    for (port, tid) in [(7u8, 2u64), (8, 3)] {
        f.link_up("leaf-1", 7).unwrap();
        f.link_up("leaf-1", 8).unwrap();
        let traps = f.traps_sent();
        f.link_down("leaf-1", port).unwrap();
        // leaf-1 and the spine at the other end both trap.
        assert_eq!(f.traps_sent(), traps + 2);
        let ni = node_info_by_lid(&mut ep, h8, tid)
            .unwrap_or_else(|| panic!("host-8 unreachable with leaf-1 port {port} down"));
        assert_eq!(ni.node_guid, guid8);
    }
}

#[test]
fn a_switch_port_disabled_by_set_port_info_traps_and_the_sm_leaves_it_disabled() {
    let s = subnet();
    let f = s.fabric().clone();
    let leaf = f.find("leaf-1").unwrap();
    let leaf_lid = f.port_info(leaf, 0).unwrap().lid;
    let mut ep = f.attach("host-2", 1).unwrap();
    let sweeps = s.sm_status().sweeps;
    // Set(PortInfo) of leaf-1 port 3: PortState NoChange, PhysState Disabled.
    let mut pi = f.port_info(leaf, 3).unwrap();
    pi.port_state = PortState::NO_CHANGE;
    pi.port_phys_state = PhysPortState::DISABLED;
    let m = MadBuilder::smp_set(AttributeId::PORT_INFO, &pi)
        .tid(77)
        .attr_mod(3)
        .build();
    ep.post_send(Qp::Qp0, &m, &Address::smi(leaf_lid)).unwrap();
    let r = ep.poll_recv().unwrap().unwrap();
    assert_eq!(Smp::new_checked(&r.mad[..]).unwrap().mad().status().0, 0);
    assert_eq!(
        port_state(&f, "leaf-1", 3),
        (PortState::DOWN, PhysPortState::DISABLED)
    );
    assert_eq!(
        port_state(&f, "host-3", 1),
        (PortState::DOWN, PhysPortState::POLLING)
    );
    assert_eq!(f.traps_sent(), 1, "leaf-1 trapped");
    let st = s.sm_status();
    assert!(st.sweeps > sweeps);
    assert_eq!(st.lids, 11);
    // SM-lite does not enable what was disabled.
    s.resweep();
    assert_eq!(
        port_state(&f, "leaf-1", 3),
        (PortState::DOWN, PhysPortState::DISABLED)
    );
}
