//! [`routing::compute_lfts`] against a plain reference of the same
//! min-hop rule (a breadth-first search toward each switch, every
//! candidate port scanned for every LID): both must give every switch the
//! same table, on fat trees, rings, parallel links and mixed fabrics
//! drawn from a seeded generator.

use std::collections::{HashMap, VecDeque};

use super::fake::Fabric;
use super::{Harness, SmConfig};
use crate::routing::{compute_lfts, compute_lfts_on, NO_ROUTE};
use crate::subnet::{NodeIdx, Subnet};

/// The min-hop rule written the obvious way (see the routing module
/// docs): per switch, per LID in LID order, among the ports on a
/// shortest path the one with the fewest CA LIDs so far, lowest port on
/// a tie.
fn reference(subnet: &Subnet) -> HashMap<NodeIdx, Vec<u8>> {
    let nodes = subnet.nodes();
    let switches: Vec<NodeIdx> = (0..nodes.len()).filter(|&i| nodes[i].is_switch()).collect();
    let pos: HashMap<NodeIdx, usize> = switches.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let adj: Vec<Vec<(u8, usize)>> = switches
        .iter()
        .map(|&i| {
            (1..=nodes[i].info.num_ports)
                .filter_map(|p| {
                    let (r, _) = subnet.remote((i, p))?;
                    Some((p, *pos.get(&r)?))
                })
                .collect()
        })
        .collect();
    // dist[t][u]: hops from u to t.
    let dist: Vec<Vec<u16>> = (0..switches.len())
        .map(|t| {
            let mut d = vec![u16::MAX; switches.len()];
            d[t] = 0;
            let mut q = VecDeque::from([t]);
            while let Some(u) = q.pop_front() {
                for &(_, v) in &adj[u] {
                    if d[v] == u16::MAX {
                        d[v] = d[u] + 1;
                        q.push_back(v);
                    }
                }
            }
            d
        })
        .collect();
    let mut out = HashMap::new();
    for (s, &node) in switches.iter().enumerate() {
        let mut lft = vec![NO_ROUTE; usize::from(subnet.max_lid()) + 1];
        let mut load: HashMap<u8, u32> = HashMap::new();
        for (lid, (n, p)) in subnet.lids() {
            let (t, egress, is_ca) = match pos.get(&n) {
                Some(&t) => (t, 0, false),
                None => match subnet
                    .remote((n, p))
                    .and_then(|(r, rp)| Some((*pos.get(&r)?, rp)))
                {
                    Some((t, rp)) => (t, rp, true),
                    None => continue,
                },
            };
            if t == s {
                lft[usize::from(lid)] = egress;
                continue;
            }
            let here = dist[t][s];
            if here == u16::MAX {
                continue;
            }
            let mut cands: Vec<u8> = adj[s]
                .iter()
                .filter(|(_, nb)| dist[t][*nb].saturating_add(1) == here)
                .map(|(p, _)| *p)
                .collect();
            cands.sort_unstable();
            let best = cands
                .iter()
                .copied()
                .min_by_key(|p| (load.get(p).copied().unwrap_or(0), *p));
            if let Some(p) = best {
                lft[usize::from(lid)] = p;
                if is_ca {
                    *load.entry(p).or_default() += 1;
                }
            }
        }
        out.insert(node, lft);
    }
    out
}

/// Brings `fab` up and checks SM-lite's tables against the reference.
fn same_as_reference(fab: Fabric) {
    let mut h = Harness::new(fab.clone(), SmConfig::default());
    h.bring_up();
    let mut sub = h.sm.subnet().clone();
    let want = reference(&sub);
    assert!(!want.is_empty());
    // On the caller's thread, and split over routing threads (as a big
    // fabric is): the same tables.
    let mut threaded = sub.clone();
    compute_lfts(&mut sub);
    compute_lfts_on(&mut threaded, 3);
    for sub in [&sub, &threaded] {
        for (i, n) in sub.nodes().iter().enumerate() {
            if let Some(w) = want.get(&i) {
                assert_eq!(
                    n.lft.iter().copied().collect::<Vec<u8>>(),
                    *w,
                    "switch {}",
                    n.desc
                );
            }
        }
    }
    // And what SM-lite programmed is that table, whether it routed the
    // fabric before its Sets or on a routing thread while they went out
    // (as it does a big fabric): the same SMPs too.
    let mut bg = Harness::new(fab, SmConfig::default());
    bg.sm.background_entries = 0;
    bg.bring_up();
    assert_eq!(bg.sent, h.sent, "SMPs sent with the routing thread");
    for sm in [&h.sm, &bg.sm] {
        for (i, n) in sm.subnet().nodes().iter().enumerate() {
            if let Some(w) = want.get(&i) {
                assert_eq!(
                    n.lft.iter().copied().collect::<Vec<u8>>(),
                    *w,
                    "switch {} (programmed)",
                    n.desc
                );
            }
        }
    }
    let lfts = |f: &Fabric| f.nodes.iter().map(|n| n.lft.clone()).collect::<Vec<_>>();
    assert_eq!(lfts(&bg.fab), lfts(&h.fab), "the switches' tables");
}

#[test]
fn routes_equal_the_reference_on_fat_trees_rings_and_parallel_links() {
    same_as_reference(Fabric::fat_tree(8, 4, 24));
    same_as_reference(Fabric::fat_tree(5, 3, 7));
    // Spines with more than 64 neighbours (two words per bit set).
    same_as_reference(Fabric::fat_tree(70, 3, 2));
    same_as_reference(Fabric::ring(7, 2));
    let mut f = Fabric::new();
    let s1 = f.switch("S1", 8);
    let s2 = f.switch("S2", 8);
    f.link(s1, 1, s2, 1);
    f.link(s1, 2, s2, 2);
    f.link(s1, 4, s2, 4);
    for k in 0..4u8 {
        let c = f.ca(&format!("C{k}"), 1);
        f.link(s2, 5 + k, c, 1);
    }
    let h0 = f.ca("C-local", 1);
    f.link(s1, 3, h0, 1);
    f.sm_at = (h0, 1);
    same_as_reference(f);
}

#[test]
fn routes_equal_the_reference_on_random_mixed_fabrics() {
    let mut rng = mad_core::transport::fault::Rng::new(0x5CA1_AB1E);
    for round in 0..6 {
        let nsw = 3 + (rng.next_u64() % 10) as usize;
        let mut f = Fabric::new();
        let sw: Vec<usize> = (0..nsw)
            .map(|k| f.switch(&format!("S{round}-{k}"), 16))
            .collect();
        let mut next = vec![1u8; nsw];
        // A spanning chain keeps it connected; extra links (parallel ones
        // too) make several shortest paths.
        for k in 1..nsw {
            let a = (rng.next_u64() % k as u64) as usize;
            f.link(sw[a], next[a], sw[k], next[k]);
            next[a] += 1;
            next[k] += 1;
        }
        for _ in 0..nsw {
            let a = (rng.next_u64() % nsw as u64) as usize;
            let b = (rng.next_u64() % nsw as u64) as usize;
            if a != b && next[a] < 12 && next[b] < 12 {
                f.link(sw[a], next[a], sw[b], next[b]);
                next[a] += 1;
                next[b] += 1;
            }
        }
        let mut first = None;
        for k in 0..nsw {
            while next[k] <= 16 && !rng.next_u64().is_multiple_of(3) {
                let c = f.ca(&format!("C{round}-{k}-{}", next[k]), 1);
                f.link(sw[k], next[k], c, 1);
                next[k] += 1;
                first.get_or_insert(c);
            }
        }
        let Some(c) = first else { continue };
        f.sm_at = (c, 1);
        same_as_reference(f);
    }
}
