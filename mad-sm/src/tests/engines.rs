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
