//! Sweeps that follow the fabric: light sweeps of an unchanged fabric,
//! a failed inter-switch link found by a light sweep and routed around
//! with only the changed LFT blocks, the routes restored when it comes
//! back.

use super::*;

fn light(interval_s: u64) -> SmConfig {
    SmConfig {
        sweep_interval: Some(Duration::from_secs(interval_s)),
        ..SmConfig::default()
    }
}

/// Every switch's linear forwarding table in the fake fabric.
fn lfts(f: &Fabric) -> Vec<(usize, Vec<u8>)> {
    f.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.switch)
        .map(|(i, n)| (i, n.lft.clone()))
        .collect()
}

/// (switch, block) pairs whose 64 entries differ between two snapshots.
fn changed_blocks(a: &[(usize, Vec<u8>)], b: &[(usize, Vec<u8>)]) -> BTreeSet<(usize, u32)> {
    let mut out = BTreeSet::new();
    for ((i, x), (_, y)) in a.iter().zip(b) {
        let n = x.len().max(y.len()).div_ceil(64);
        for blk in 0..n {
            let get = |v: &Vec<u8>| {
                (0..64)
                    .map(|k| *v.get(blk * 64 + k).unwrap_or(&0xFF))
                    .collect::<Vec<u8>>()
            };
            if get(x) != get(y) {
                out.insert((*i, blk as u32));
            }
        }
    }
    out
}

/// LFT block Sets the fabric received since `from`, as (switch, block).
fn lft_sets(f: &Fabric, from: usize) -> Vec<(usize, u32)> {
    f.sets[from..]
        .iter()
        .filter(|(a, _, _)| *a == AttributeId::LINEAR_FWD_TABLE)
        .map(|(_, n, m)| (*n, *m))
        .collect()
}

#[test]
fn light_sweeps_of_an_unchanged_fabric_read_switch_info_only_and_set_nothing() {
    let mut h = Harness::new(Fabric::fat_tree(2, 2, 2), light(10));
    h.bring_up();
    let sets = h.fab.sets.len();
    let answered = h.fab.answered;
    assert!(!h.run_until(Duration::from_secs(35), |_| false));
    let lights: Vec<&SmEvent> = h
        .events
        .iter()
        .filter(|e| matches!(e, SmEvent::LightSweepDone { .. }))
        .collect();
    assert_eq!(lights.len(), 3, "one every 10 s");
    assert!(lights.iter().all(|e| **e
        == SmEvent::LightSweepDone {
            changed: false,
            smps: 4
        }));
    assert_eq!(h.fab.sets.len(), sets, "no Set on an unchanged fabric");
    assert_eq!(
        h.fab.answered - answered,
        3 * 4,
        "one SwitchInfo per switch"
    );
    let st = h.sm.stats();
    assert_eq!((st.heavy_sweeps, st.light_sweeps), (1, 3));
}

#[test]
fn an_inter_switch_link_down_is_routed_around_with_only_changed_blocks_and_restored_when_back() {
    // Leaves are nodes 4 and 5, spines 6 and 7; leaf 4 port 3 goes to
    // spine 6 port 1.
    let mut h = Harness::new(Fabric::fat_tree(2, 2, 2), light(10));
    h.bring_up();
    let lids = fabric_lids(&h.fab);
    let original = lfts(&h.fab);
    let from = h.fab.sets.len();
    // The link fails; no trap reaches the SM: the next light sweep sees
    // PortStateChange and a heavy sweep reroutes.
    h.fab.set_link(4, 3, false);
    assert!(h.run_until(Duration::from_secs(30), |e| *e == SmEvent::SubnetUp));
    // (Spine 6 was reached through the failed link: its SwitchInfo is
    // sent again before it counts as a change, hence more than 4 SMPs.)
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, SmEvent::LightSweepDone { changed: true, .. })),
        "{:#?}",
        h.events
    );
    assert!(h.fab.violations.is_empty(), "{:#?}", h.fab.violations);
    assert_eq!(fabric_lids(&h.fab), lids);
    check_configured(&h);
    let rerouted = lfts(&h.fab);
    assert_ne!(rerouted, original);
    for n in [4, 6] {
        let out = if n == 4 { 3 } else { 1 };
        let lft = &h.fab.nodes[n].lft;
        assert!(
            !lft.contains(&out),
            "switch {n} still routes to the dead port"
        );
    }
    // Only the blocks whose entries changed were sent, each once.
    let sent = lft_sets(&h.fab, from);
    let want = changed_blocks(&original, &rerouted);
    assert!(!want.is_empty());
    assert_eq!(sent.iter().copied().collect::<BTreeSet<_>>(), want);
    assert_eq!(sent.len(), want.len());
    assert_eq!(h.sm.stats().last_lft_blocks, want.len());

    // The link comes back, with a trap from both switches: the original
    // routes return, again only the blocks that changed.
    let from = h.fab.sets.len();
    let traps = h.fab.set_link(4, 3, true);
    assert_eq!(traps.len(), 2);
    for (t, src) in &traps {
        h.sm.handle_recv(h.now, t, src);
    }
    assert!(h.sm.is_sweeping());
    assert!(h.run_until(Duration::from_secs(30), |e| *e == SmEvent::SubnetUp));
    check_configured(&h);
    assert_eq!(lfts(&h.fab), original, "original routes restored");
    let sent = lft_sets(&h.fab, from);
    assert_eq!(
        sent.iter().copied().collect::<BTreeSet<_>>(),
        changed_blocks(&rerouted, &original)
    );
    assert_eq!(fabric_lids(&h.fab), lids);
}

#[test]
fn traps_129_to_131_and_144_are_repressed_and_start_a_sweep() {
    let mut h = Harness::up(Fabric::ibsim_net());
    for num in [129u16, 130, 131, 144] {
        let mut t = fake::trap128(2);
        t[68..70].copy_from_slice(&num.to_be_bytes());
        h.sm.handle_recv(h.now, &t, &Address::smi(2));
        let (rep, _) = h.sm.poll_transmit(h.now).expect("TrapRepress");
        assert_eq!(
            Smp::new_checked(&rep[..]).unwrap().method(),
            Method::TRAP_REPRESS
        );
        assert!(h.sm.is_sweeping(), "trap {num} starts a sweep");
        assert!(h.run_until(Duration::from_secs(60), |e| *e == SmEvent::SubnetUp));
    }
    // A trap the SM does not act on (256, bad M_Key) is only repressed.
    let mut t = fake::trap128(2);
    t[68..70].copy_from_slice(&256u16.to_be_bytes());
    h.sm.handle_recv(h.now, &t, &Address::smi(2));
    assert!(!h.sm.is_sweeping());
    assert_eq!(h.sm.stats().traps, 5);
}

#[test]
fn a_trap_128_of_an_inter_switch_link_down_reroutes_without_a_heavy_sweep() {
    // Leaf 4 port 3 to spine 6 port 1, as above; this time both switches
    // trap.
    let mut h = Harness::new(Fabric::fat_tree(2, 2, 2), light(10));
    h.bring_up();
    let lids = fabric_lids(&h.fab);
    let original = lfts(&h.fab);
    let (from, answered) = (h.fab.sets.len(), h.fab.answered);
    let heavy = h.sm.stats().heavy_sweeps;
    let traps = h.fab.set_link(4, 3, false);
    assert_eq!(traps.len(), 2);
    for (t, src) in &traps {
        h.sm.handle_recv(h.now, t, src);
    }
    assert!(h.run_until(Duration::from_secs(5), |e| *e == SmEvent::SubnetUp));
    assert!(h.fab.violations.is_empty(), "{:#?}", h.fab.violations);
    assert_eq!(fabric_lids(&h.fab), lids);
    check_configured(&h);
    let rerouted = lfts(&h.fab);
    assert!(!h.fab.nodes[4].lft.contains(&3) && !h.fab.nodes[6].lft.contains(&1));
    // No discovery: the two switches' SwitchInfo and PortInfo read again
    // (1 + ports each: the leaf has 4, the spine 2), the changed LFT
    // blocks and two SwitchInfo Sets clearing PortStateChange.
    let sent = lft_sets(&h.fab, from);
    let want = changed_blocks(&original, &rerouted);
    assert_eq!(sent.iter().copied().collect::<BTreeSet<_>>(), want);
    assert_eq!(sent.len(), want.len());
    let read = (1 + 4) + (1 + 2);
    assert_eq!(
        h.fab.answered - answered,
        read + want.len() + 2,
        "{:?}",
        &h.fab.sets[from..]
    );
    assert!(!h.fab.nodes[4].port_change && !h.fab.nodes[6].port_change);
    assert_eq!(h.sm.stats().heavy_sweeps, heavy + 1);
    assert_eq!(h.sm.subnet().nodes().len(), h.fab.nodes.len());
    // The next light sweep finds nothing to do.
    assert!(h.run_until(Duration::from_secs(15), |e| matches!(
        e,
        SmEvent::LightSweepDone { .. }
    )));
    assert!(matches!(
        h.events.last(),
        Some(SmEvent::LightSweepDone { changed: false, .. })
    ));
    // Back up: Initialize on both ends, which takes a heavy sweep; the
    // original routes return.
    for (t, src) in &h.fab.set_link(4, 3, true) {
        h.sm.handle_recv(h.now, t, src);
    }
    assert!(h.run_until(Duration::from_secs(30), |e| *e == SmEvent::SubnetUp));
    check_configured(&h);
    assert_eq!(lfts(&h.fab), original);
}
