//! The routing engines on fabrics SM-lite brings up (the in-memory fake
//! fabric): `updn` and `ftree` routes have no cycle in the channel
//! dependency graph ([`check`]), min-hop's on a torus do, and an engine
//! that cannot route falls back to the next with a note saying why.

use super::fake::Fabric;
use super::{Harness, SmConfig};
use crate::routing::check::{check, Tables};
use crate::routing::engines::{Engine, RoutingConfig};
use crate::SmEvent;

/// A `w` × `h` torus of switches (ports 1 east, 2 west, 3 south, 4
/// north, 5 a CA); the SM on switch 0.
pub(super) fn torus(w: usize, h: usize) -> Fabric {
    let mut f = Fabric::new();
    let sw: Vec<usize> = (0..w * h)
        .map(|k| f.switch(&format!("T{}x{}", k / w, k % w), 5))
        .collect();
    for r in 0..h {
        for c in 0..w {
            let k = r * w + c;
            f.link(sw[k], 1, sw[r * w + (c + 1) % w], 2);
            f.link(sw[k], 3, sw[((r + 1) % h) * w + c], 4);
            let ca = f.ca(&format!("T{r}x{c} host"), 1);
            f.link(sw[k], 5, ca, 1);
        }
    }
    f.sm_at = (sw[0], 0);
    f
}

/// Brings `fab` up with `engines` and returns the check of the routes
/// and the routing event.
fn route(
    fab: Fabric,
    engines: &[Engine],
    roots: &[u64],
) -> (crate::routing::check::Report, Option<SmEvent>) {
    let cfg = SmConfig {
        routing: RoutingConfig {
            engines: engines.to_vec(),
            root_guids: roots.to_vec(),
        },
        ..SmConfig::default()
    };
    let mut h = Harness::new(fab, cfg);
    h.bring_up();
    let routed = h
        .events
        .iter()
        .rev()
        .find(|e| matches!(e, SmEvent::Routed { .. }))
        .cloned();
    (check(&Tables::from_subnet(h.sm.subnet())), routed)
}

#[test]
fn min_hop_on_a_torus_has_a_cycle_and_updn_has_none() {
    let (minhop, ev) = route(torus(4, 4), &[Engine::MinHop], &[]);
    assert_eq!(minhop.unreachable, 0);
    assert!(
        !minhop.cycle.is_empty(),
        "min-hop on a 4x4 torus: no cycle found"
    );
    assert!(ev.is_none(), "min-hop alone reports no routing event");
    let (updn, ev) = route(torus(4, 4), &[Engine::UpDown], &[]);
    assert_eq!(updn.unreachable, 0);
    assert!(updn.cycle.is_empty(), "updn cycle {:?}", updn.cycle);
    // OpenSM's rule finds no root on a torus: the most central switch is
    // taken and named.
    let Some(SmEvent::Routed { engine, notes }) = ev else {
        panic!("no Routed event");
    };
    assert_eq!(engine, Engine::UpDown);
    assert!(
        notes.iter().any(|n| n.contains("most central switch")),
        "{notes:?}"
    );
}

#[test]
fn ftree_on_a_torus_falls_back_to_updn() {
    let (r, ev) = route(torus(3, 3), &[Engine::FatTree, Engine::UpDown], &[]);
    assert!(r.cycle.is_empty() && r.unreachable == 0);
    let Some(SmEvent::Routed { engine, notes }) = ev else {
        panic!("no Routed event");
    };
    assert_eq!(engine, Engine::UpDown);
    assert!(
        notes[0].starts_with("ftree: not a fat tree") && notes[0].contains("falling back"),
        "{notes:?}"
    );
}

#[test]
fn ftree_alone_on_a_ring_falls_back_to_min_hop() {
    let (r, ev) = route(Fabric::ring(5, 1), &[Engine::FatTree], &[]);
    assert_eq!(r.unreachable, 0);
    let Some(SmEvent::Routed { engine, .. }) = ev else {
        panic!("no Routed event");
    };
    assert_eq!(engine, Engine::MinHop);
}

#[test]
fn ftree_and_updn_route_a_fat_tree_without_cycles_and_balanced() {
    for engine in [Engine::FatTree, Engine::UpDown] {
        let (r, ev) = route(Fabric::fat_tree(6, 4, 4), &[engine], &[]);
        assert!(r.cycle.is_empty(), "{engine:?}: {:?}", r.cycle);
        assert_eq!(r.unreachable, 0);
        let Some(SmEvent::Routed {
            engine: used,
            notes,
        }) = ev
        else {
            panic!("no Routed event");
        };
        assert_eq!(used, engine, "{notes:?}");
        // Each leaf sends the 20 other CAs' LIDs up its 4 uplinks: 5 each.
        for b in &r.balance {
            let (lo, hi) = b.switch_port_range().unwrap_or((0, 0));
            assert!(
                hi - lo <= 1,
                "{engine:?}: switch {} ports {:?}",
                b.sw,
                b.ports
            );
        }
    }
}

#[test]
fn updn_takes_its_roots_from_the_guid_list() {
    let fab = torus(4, 4);
    // The fake fabric's first switch: node 0.
    let root = fab.nodes[0].guid;
    let (r, ev) = route(fab, &[Engine::UpDown], &[root, 0xdead]);
    assert!(r.cycle.is_empty() && r.unreachable == 0);
    let Some(SmEvent::Routed { notes, .. }) = ev else {
        panic!("no Routed event");
    };
    assert!(
        notes
            .iter()
            .any(|n| n.contains("0x000000000000dead") && n.contains("no switch")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n == &format!("updn: roots {root:#018x}")),
        "{notes:?}"
    );
}

#[test]
fn updn_takes_only_the_top_of_roots_found_on_two_levels() {
    // 21 pods of one leaf (one CA) and one aggregation switch, one core
    // over them: OpenSM's rule takes the core (every CA 2 hops away) and
    // each aggregation switch too (its own CA is under 5 %); roots on
    // two levels would leave pairs without an up/down route.
    let mut f = Fabric::new();
    let mut cas = Vec::new();
    for p in 0..21 {
        cas.push(f.ca(&format!("P{p} host"), 1));
    }
    let core = f.switch("core", 21);
    for (p, &ca) in cas.iter().enumerate() {
        let leaf = f.switch(&format!("P{p} leaf"), 2);
        let agg = f.switch(&format!("P{p} agg"), 2);
        f.link(ca, 1, leaf, 1);
        f.link(leaf, 2, agg, 1);
        f.link(agg, 2, core, p as u8 + 1);
    }
    f.sm_at = (cas[0], 1);
    let core_guid = f.nodes[core].guid;
    let (r, ev) = route(f, &[Engine::UpDown], &[]);
    assert!(r.cycle.is_empty() && r.unreachable == 0);
    let Some(SmEvent::Routed { engine, notes }) = ev else {
        panic!("no Routed event");
    };
    assert_eq!(engine, Engine::UpDown, "{notes:?}");
    assert_eq!(notes, vec![format!("updn: roots {core_guid:#018x}")]);
}

/// A 3-level k-ary fat tree of `pods` pods as
/// `gen_fattree.py 3level --radix k --pods pods` lays it out: per pod
/// k/2 leaves ("PpLi", ports 1..k/2 to one CA each, k/2+1+a to
/// aggregation switch a) and k/2 aggregation switches ("PpAa", port 1+i
/// to leaf i, k/2+1+j to core a·k/2+j); (k/2)² cores ("Cc", port 1+p to
/// pod p). The SM on the first CA.
fn k_ary_tree(k: u8, pods: u8) -> Fabric {
    let half = k / 2;
    let mut f = Fabric::new();
    let cores: Vec<usize> = (0..usize::from(half) * usize::from(half))
        .map(|c| f.switch(&format!("C{c}"), k))
        .collect();
    let mut first_ca = None;
    for p in 0..pods {
        let mut leaves = Vec::new();
        let mut aggs = Vec::new();
        for i in 0..half {
            leaves.push(f.switch(&format!("P{p}L{i}"), k));
            aggs.push(f.switch(&format!("P{p}A{i}"), k));
        }
        for (i, &leaf) in leaves.iter().enumerate() {
            for hp in 1..=half {
                let ca = f.ca(&format!("P{p}L{i}H{hp}"), 1);
                first_ca.get_or_insert(ca);
                f.link(leaf, hp, ca, 1);
            }
            for (a, &agg) in aggs.iter().enumerate() {
                f.link(leaf, half + 1 + a as u8, agg, 1 + i as u8);
            }
        }
        for (a, &agg) in aggs.iter().enumerate() {
            for j in 0..half {
                let core = cores[a * usize::from(half) + usize::from(j)];
                f.link(agg, half + 1 + j, core, 1 + p);
            }
        }
    }
    f.sm_at = (first_ca.unwrap_or(0), 1);
    f
}

#[test]
fn ftree_gives_every_aggregation_up_port_its_share_of_lids_and_pairs() {
    // Each aggregation switch sends the CAs of the other pods up its k/2
    // core links: (pods - 1)·(k/2)² LIDs over k/2 ports, and the pod's
    // (k/2)² sources share the k/2 aggregation switches: (pods - 1)·(k/2)²
    // pairs per up port. A free LID (no source sends it through the
    // switch) put on the port with the fewest pairs left that port a LID
    // over its share, and another one under (e.g. [5, 3] for k = 4, 3
    // pods), as on the 11,664-CA tree of k = 36, 36 pods (631 / 629).
    for (k, pods) in [(4u8, 3u8), (4, 4), (6, 6), (8, 5), (10, 8)] {
        let mut h = Harness::new(
            k_ary_tree(k, pods),
            SmConfig {
                routing: RoutingConfig {
                    engines: vec![Engine::FatTree],
                    root_guids: Vec::new(),
                },
                ..SmConfig::default()
            },
        );
        h.bring_up();
        let tables = Tables::from_subnet(h.sm.subnet());
        let r = check(&tables);
        assert!(
            r.cycle.is_empty() && r.unreachable == 0,
            "k={k} pods={pods}"
        );
        let half = u32::from(k / 2);
        let share = (u32::from(pods) - 1) * half;
        let pair_share = u64::from(share * half);
        let mut aggs = 0;
        for b in &r.balance {
            if !tables.switches[b.sw].name.contains('A') {
                continue;
            }
            let ups: Vec<_> = b.ports.iter().filter(|p| p.port > k / 2).collect();
            assert_eq!(ups.len(), usize::from(k / 2));
            aggs += 1;
            let lids: Vec<u32> = ups.iter().map(|p| p.routes).collect();
            let pairs: Vec<u64> = ups.iter().map(|p| p.pairs).collect();
            assert!(
                lids.iter().all(|&l| l == share),
                "k={k} pods={pods} switch {}: LIDs per up port {lids:?}, want {share} each",
                b.sw
            );
            assert!(
                pairs.iter().all(|&p| p == pair_share),
                "k={k} pods={pods} switch {}: pairs per up port {pairs:?}, want {pair_share} each",
                b.sw
            );
        }
        assert_eq!(aggs, u32::from(pods) * half);
    }
}
