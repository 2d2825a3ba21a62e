//! LMC ([`SmConfig::lmc`]): every CA port gets an aligned range of 2^LMC
//! LIDs (a switch's port 0 one LID), PortInfo.LMC is programmed, every
//! LID of a range is routed, the LIDs of one port leave a switch by
//! different neighbours where it has them (distinct paths through a fat
//! tree), the SA lists a PathRecord per (SLID, DLID) pair and finds a
//! port by any LID of its range, and a fabric without room for the
//! ranges is reported.

use std::collections::BTreeSet;

use mad_agents::sa::{RecordQuery, RecordSource};
use mad_core::wire::sa_records::{NodeRecord, PathRecord};

use super::fake::Fabric;
use super::*;
use crate::routing::check::{check, Tables};
use crate::routing::engines::{Engine, RoutingConfig};
use crate::sa::{FabricSa, SubnetView};

fn up_with(fab: Fabric, lmc: u8, engine: Engine) -> Harness {
    let cfg = SmConfig {
        lmc,
        routing: RoutingConfig {
            engines: vec![engine],
            root_guids: Vec::new(),
        },
        ..SmConfig::default()
    };
    let mut h = Harness::new(fab, cfg);
    h.bring_up();
    h
}

/// A 3-level k-ary fat tree, k = 4: 4 pods of 2 edge and 2 aggregation
/// switches, 4 cores, 2 CAs per edge switch; 4 paths between pods. Each
/// switch-to-switch connection is `w` parallel links (ports in
/// neighbour order).
fn k4_tree(w: usize) -> Fabric {
    let mut f = Fabric::new();
    let mut hosts = Vec::new();
    for p in 0..4 {
        for e in 0..2 {
            for h in 0..2 {
                hosts.push((f.ca(&format!("P{p}E{e}H{h}"), 1), p, e, h));
            }
        }
    }
    let wp = w as u8;
    let cores: Vec<usize> = (0..4).map(|c| f.switch(&format!("C{c}"), 4 * wp)).collect();
    for p in 0..4u8 {
        let edges: Vec<usize> = (0..2)
            .map(|e| f.switch(&format!("P{p}E{e}"), 2 + 2 * wp))
            .collect();
        let aggs: Vec<usize> = (0..2)
            .map(|a| f.switch(&format!("P{p}A{a}"), 4 * wp))
            .collect();
        for (e, &en) in edges.iter().enumerate() {
            for (a, &an) in aggs.iter().enumerate() {
                for k in 0..wp {
                    f.link(en, 3 + a as u8 * wp + k, an, 1 + e as u8 * wp + k);
                }
            }
        }
        for (a, &an) in aggs.iter().enumerate() {
            for j in 0..2u8 {
                for k in 0..wp {
                    f.link(
                        an,
                        1 + 2 * wp + j * wp + k,
                        cores[a * 2 + usize::from(j)],
                        1 + p * wp + k,
                    );
                }
            }
        }
        for &(ca, hp, e, h) in &hosts {
            if hp == usize::from(p) {
                f.link(ca, 1, edges[e], 1 + h as u8);
            }
        }
    }
    f.sm_at = (hosts[0].0, 1);
    f
}

/// A 2-level fat tree of 4 leaves (2 CAs each) and 4 spines, each leaf
/// linked to each spine twice (ports in spine order: a least-loaded
/// pick in port order alone would send two LIDs of one range up the two
/// links to one spine).
fn doubled_tree() -> Fabric {
    let mut f = Fabric::new();
    let mut cas = Vec::new();
    for l in 0..4 {
        for h in 0..2 {
            cas.push((f.ca(&format!("H{l}-{h}"), 1), l, h));
        }
    }
    let leaf: Vec<usize> = (0..4).map(|l| f.switch(&format!("L{l}"), 10)).collect();
    let spine: Vec<usize> = (0..4).map(|s| f.switch(&format!("S{s}"), 8)).collect();
    for (ca, l, h) in cas {
        f.link(ca, 1, leaf[l], h as u8 + 1);
    }
    for (l, &ln) in leaf.iter().enumerate() {
        for (s, &sn) in spine.iter().enumerate() {
            for k in 0..2 {
                f.link(ln, (3 + 2 * s + k) as u8, sn, (2 * l + k) as u8 + 1);
            }
        }
    }
    f.sm_at = (0, 1);
    f
}

/// The CA ports of the fake fabric that hold LIDs: (node, port).
fn ca_ports(f: &Fabric) -> Vec<(usize, u8)> {
    fabric_lids(f)
        .into_keys()
        .filter(|&(n, _)| !f.nodes[n].switch)
        .collect()
}

/// The switch a CA port hangs on.
fn leaf_of(f: &Fabric, (n, p): (usize, u8)) -> usize {
    f.nodes[n].ports[usize::from(p)]
        .remote
        .map_or(usize::MAX, |r| r.0)
}

#[test]
fn lmc_2_gives_ca_ports_four_aligned_lids_and_switches_one() {
    let h = up_with(Fabric::fat_tree(4, 4, 2), 2, Engine::MinHop);
    let mut taken = BTreeSet::new();
    for (i, n) in h.fab.nodes.iter().enumerate() {
        for (p, fp) in n.ports.iter().enumerate() {
            let lid_bearing = if n.switch {
                p == 0
            } else {
                p > 0 && fp.lid != 0
            };
            if !lid_bearing {
                continue;
            }
            let want = if n.switch { 0 } else { 2 };
            assert_eq!(fp.lmc, want, "{} port {p}: LMC", n.desc);
            let count = 1u16 << fp.lmc;
            assert_eq!(
                fp.lid % count,
                0,
                "{} port {p}: LID {} not aligned",
                n.desc,
                fp.lid
            );
            for l in fp.lid..fp.lid + count {
                assert!(taken.insert(l), "LID {l} given twice ({i}:{p})");
            }
        }
    }
    // 8 CA ports x 4 + 8 switches.
    assert_eq!(taken.len(), 8 * 4 + 8);
    // The SM's model agrees and finds a port by any LID of its range.
    let sub = h.sm.subnet();
    let (base, port) = sub
        .lids()
        .into_iter()
        .find(|&(_, (n, _))| !sub.nodes()[n].is_switch())
        .unwrap();
    assert_eq!(sub.port_by_lid(base + 3), Some(port));
    assert_eq!(sub.all_lids().len(), 40);
}

#[test]
fn every_lid_of_a_range_is_routed_and_takes_its_own_spine() {
    for (engine, fab) in [Engine::MinHop, Engine::UpDown, Engine::FatTree]
        .into_iter()
        .flat_map(|e| [(e, Fabric::fat_tree(4, 4, 2)), (e, doubled_tree())])
    {
        let h = up_with(fab, 2, engine);
        let f = &h.fab;
        let r = check(&Tables::from_subnet(h.sm.subnet()));
        assert_eq!(r.unreachable, 0, "{engine:?}");
        // 8 CAs, 7 others each, 4 LIDs each.
        assert_eq!(r.pairs, 8 * 7 * 4, "{engine:?}");
        if engine != Engine::MinHop {
            assert!(r.cycle.is_empty(), "{engine:?}: {:?}", r.cycle);
        }
        let cas = ca_ports(f);
        for &src in &cas {
            for &dst in &cas {
                if src == dst {
                    continue;
                }
                let base = f.nodes[dst.0].ports[usize::from(dst.1)].lid;
                let paths: Vec<Vec<(usize, u8)>> = (base..base + 4)
                    .map(|l| {
                        f.lid_path(src.0, src.1, l)
                            .unwrap_or_else(|e| panic!("{engine:?}: {e}"))
                    })
                    .collect();
                assert!(paths.iter().all(|p| p.last() == Some(&dst)), "{engine:?}");
                if leaf_of(f, src) != leaf_of(f, dst) {
                    // Leaf, spine, leaf, CA: the spine differs for each of
                    // the four LIDs.
                    let spines: BTreeSet<usize> = paths.iter().map(|p| p[1].0).collect();
                    assert_eq!(spines.len(), 4, "{engine:?}: {src:?} -> {dst:?}: {paths:?}");
                }
            }
        }
    }
}

#[test]
fn four_lids_take_four_paths_between_pods_of_a_3_level_fat_tree() {
    for (engine, w) in [Engine::FatTree, Engine::UpDown]
        .into_iter()
        .flat_map(|e| [(e, 1), (e, 2)])
    {
        let h = up_with(k4_tree(w), 2, engine);
        let f = &h.fab;
        let r = check(&Tables::from_subnet(h.sm.subnet()));
        assert!(
            r.cycle.is_empty() && r.unreachable == 0,
            "{engine:?}: {r:?}"
        );
        let cas = ca_ports(f);
        let pod = |c: (usize, u8)| f.nodes[c.0].desc[1..2].to_owned();
        let mut checked = 0;
        for &src in &cas {
            for &dst in cas.iter().filter(|&&d| pod(d) != pod(src)) {
                let base = f.nodes[dst.0].ports[usize::from(dst.1)].lid;
                let paths: BTreeSet<Vec<(usize, u8)>> = (base..base + 4)
                    .map(|l| f.lid_path(src.0, src.1, l).unwrap())
                    .collect();
                assert_eq!(
                    paths.len(),
                    4,
                    "{engine:?} x{w}: {src:?} -> {dst:?}: {paths:?}"
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 16 * 12);
    }
}

#[test]
fn too_few_lids_for_the_ranges_is_reported_not_a_panic() {
    // 16 LIDs from 0xBFF0 for two switches and three CA ports of 8 LIDs.
    let cfg = SmConfig {
        first_lid: 0xBFF0,
        honor_existing_lids: false,
        lmc: 3,
        ..SmConfig::default()
    };
    let mut h = Harness::new(Fabric::ibsim_net(), cfg);
    h.sm.start(h.now);
    assert!(!h.run_until(Duration::from_secs(600), |e| *e == SmEvent::SubnetUp));
    assert!(
        h.errors()
            .iter()
            .any(|e| matches!(e, SmError::LidsExhausted { ports } if *ports > 0)),
        "{:#?}",
        h.errors()
    );
}

fn query<'a>(
    attr: AttributeId,
    comp_mask: u64,
    template: &'a [u8],
    src: &'a Address,
) -> RecordQuery<'a> {
    RecordQuery {
        method: Method::GET_TABLE,
        attr_id: attr,
        attr_mod: 0,
        comp_mask,
        template,
        src,
    }
}

#[test]
fn the_sa_lists_a_path_per_lid_pair_and_finds_ports_by_any_lid_of_their_range() {
    let h = up_with(Fabric::fat_tree(2, 2, 2), 2, Engine::MinHop);
    let sa = FabricSa::new(SubnetView::from_sm(&h.sm));
    let sub = h.sm.subnet();
    let cas: Vec<(u16, (usize, u8))> = sub
        .lids()
        .into_iter()
        .filter(|&(_, (n, _))| !sub.nodes()[n].is_switch())
        .collect();
    let ((s_lid, s), (d_lid, d)) = (cas[0], cas[3]);
    let gid = |r: (usize, u8)| {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        g[8..].copy_from_slice(&sub.nodes()[r.0].port(r.1).unwrap().guid.to_be_bytes());
        g
    };
    let from = Address::default();
    // By GIDs: every (SLID, DLID) pair, the equal offsets first.
    let t = PathRecord {
        sgid: gid(s),
        dgid: gid(d),
        ..PathRecord::default()
    }
    .to_vec()
    .unwrap();
    let q = query(
        AttributeId::SA_PATH_RECORD,
        PathRecord::COMP_SGID | PathRecord::COMP_DGID,
        &t,
        &from,
    );
    let recs: Vec<PathRecord> = sa
        .records(&q)
        .unwrap()
        .iter()
        .map(|b| PathRecord::parse(b).unwrap())
        .collect();
    let pairs: Vec<(u16, u16)> = recs.iter().map(|r| (r.slid, r.dlid)).collect();
    assert_eq!(pairs.len(), 16);
    assert_eq!(
        pairs[..4],
        [
            (s_lid, d_lid),
            (s_lid + 1, d_lid + 1),
            (s_lid + 2, d_lid + 2),
            (s_lid + 3, d_lid + 3)
        ]
    );
    let all: BTreeSet<(u16, u16)> = pairs.iter().copied().collect();
    assert_eq!(all.len(), 16);
    assert!(all
        .iter()
        .all(|&(a, b)| (s_lid..s_lid + 4).contains(&a) && (d_lid..d_lid + 4).contains(&b)));
    // By LIDs: that pair alone.
    let t = PathRecord {
        slid: s_lid + 1,
        dlid: d_lid + 2,
        ..PathRecord::default()
    }
    .to_vec()
    .unwrap();
    let q = query(
        AttributeId::SA_PATH_RECORD,
        PathRecord::COMP_SLID | PathRecord::COMP_DLID,
        &t,
        &from,
    );
    let recs = sa.records(&q).unwrap();
    assert_eq!(recs.len(), 1);
    let r = PathRecord::parse(&recs[0]).unwrap();
    assert_eq!((r.slid, r.dlid), (s_lid + 1, d_lid + 2));
    // A NodeRecord by the last LID of the range: the port's record, with
    // its base LID, and the LID component left to the source.
    let t = NodeRecord {
        lid: d_lid + 3,
        ..NodeRecord::default()
    }
    .to_vec()
    .unwrap();
    let q = query(AttributeId::SA_NODE_RECORD, 1, &t, &from);
    let recs = sa.records(&q).unwrap();
    assert_eq!(recs.len(), 1);
    let r = NodeRecord::parse(&recs[0]).unwrap();
    assert_eq!(r.lid, d_lid);
    assert_eq!(
        r.node_info.port_guid,
        sub.nodes()[d.0].port(d.1).unwrap().guid
    );
    assert_eq!(sa.matched_components(&q), 1);
    // The PortInfoRecord carries LMC 2.
    let q = query(AttributeId::SA_PORTINFO_RECORD, 1, &t, &from);
    let recs = sa.records(&q).unwrap();
    let pi = mad_core::wire::sa_records::PortInfoRecord::parse(&recs[0]).unwrap();
    assert_eq!((pi.lid, pi.port_info.lmc), (d_lid, 2));
}
