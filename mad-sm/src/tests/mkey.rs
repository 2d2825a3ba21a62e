//! M_Key: SM-lite programs M_Key, M_KeyProtectBits and M_KeyLeasePeriod
//! and keeps managing a fabric that refuses SMPs without the key.

use super::*;

fn protected(sweep_s: u64) -> SmConfig {
    SmConfig {
        m_key: 0x00C0_FFEE_0000_0001,
        m_key_protect_bits: 2,
        m_key_lease_period: 60,
        sweep_interval: Some(Duration::from_secs(sweep_s)),
        ..SmConfig::default()
    }
}

/// Every LID-bearing port holds the key, level 2 and the lease; no SMP
/// was refused.
fn check_protected(h: &Harness) {
    for (i, n) in h.fab.nodes.iter().enumerate() {
        for (p, fp) in n.ports.iter().enumerate() {
            if (n.switch && p != 0) || (!n.switch && (p == 0 || fp.remote.is_none())) {
                continue;
            }
            assert_eq!(
                (fp.m_key, fp.mkey_protect, fp.mkey_lease),
                (0x00C0_FFEE_0000_0001, 2, 60),
                "node {i} port {p}"
            );
            assert_eq!(
                fp.mkey_violations, 0,
                "node {i} port {p}: SM-lite's SMP refused"
            );
        }
    }
}

#[test]
fn protection_level_2_is_programmed_and_the_sm_keeps_sweeping_and_rerouting_with_its_key() {
    let mut h = Harness::new(Fabric::fat_tree(2, 2, 2), protected(10));
    h.bring_up();
    check_configured(&h);
    check_protected(&h);
    // A Get without the key is now refused by a protected port (the fake
    // SMA enforces IBA 14.2.4) ...
    let lids = fabric_lids(&h.fab);
    let path = DrPath::local();
    let get = path.build_request(Method::GET, AttributeId::PORT_INFO, 0, 7, 0);
    assert!(h.fab.deliver(&get, &Address::smi(PERMISSIVE_LID)).is_none());
    let get = path.build_request(
        Method::GET,
        AttributeId::PORT_INFO,
        0,
        8,
        h.sm.config().m_key,
    );
    assert!(h.fab.deliver(&get, &Address::smi(PERMISSIVE_LID)).is_some());
    // ... while SM-lite's light sweeps, a heavy sweep and a reroute
    // around a failed link go through.
    h.fab.set_link(4, 3, false);
    assert!(h.run_until(Duration::from_secs(30), |e| *e == SmEvent::SubnetUp));
    check_configured(&h);
    assert_eq!(fabric_lids(&h.fab), lids);
    h.sm.resweep(h.now);
    assert!(h.run_until(Duration::from_secs(30), |e| *e == SmEvent::SubnetUp));
    assert!(h.errors().is_empty(), "{:?}", h.errors());
    // Only the one Get above was refused, at the SM's own CA port.
    let refused: u16 = h
        .fab
        .nodes
        .iter()
        .flat_map(|n| n.ports.iter().map(|p| p.mkey_violations))
        .sum();
    assert_eq!(refused, 1);
}

#[test]
fn a_port_whose_lease_ran_out_is_protected_again_at_the_next_light_sweep() {
    let mut h = Harness::new(Fabric::fat_tree(2, 2, 2), protected(10));
    h.bring_up();
    check_protected(&h);
    // The lease of a CA port ran out after a violation: IBA clears its
    // protect bits (the M_Key stays).
    let ca = (0..h.fab.nodes.len())
        .find(|&i| !h.fab.nodes[i].switch && i != h.fab.sm_at.0)
        .unwrap();
    h.fab.nodes[ca].ports[1].mkey_protect = 0;
    assert!(h.run_until(Duration::from_secs(15), |e| *e == SmEvent::SubnetUp));
    assert!(h
        .events
        .iter()
        .any(|e| matches!(e, SmEvent::LightSweepDone { changed: true, .. })));
    check_protected(&h);

    // Without protection a light sweep reads switches only.
    let mut h = Harness::new(
        Fabric::fat_tree(2, 2, 2),
        SmConfig {
            m_key: 5,
            m_key_protect_bits: 0,
            ..protected(10)
        },
    );
    h.bring_up();
    let answered = h.fab.answered;
    assert!(!h.run_until(Duration::from_secs(12), |_| false));
    assert_eq!(h.fab.answered - answered, 4, "one SwitchInfo per switch");
}
