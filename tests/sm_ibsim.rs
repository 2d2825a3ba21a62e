//! SM-lite (`mad_sm`) as the subnet manager of a real ibsim, checked
//! with infiniband-diags run under libumad2sim against the same ibsim:
//! `ibnetdiscover` (every port has a unique LID, the same ones SM-lite
//! assigned), `smpquery portinfo <LID>` (LID routing reaches every port,
//! LinkState Active), `ibroute <switch LID>` (the LFTs are min-hop by an
//! independent shortest-path computation over ibnetdiscover's links),
//! `ibtracert <LID> <LID>` between CAs, and `sminfo` (our GUID, MASTER).
//!
//! SM-lite attaches at the topology file's first node as that node's SM
//! (`issm`) and is driven by real time in a thread of its own, so that it
//! answers `sminfo` while the tools run. Outside CI a missing ibsim /
//! infiniband-diags / libumad2sim makes these tests print "NOT RUN";
//! with `CI=true` it fails them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "support/sm_lite.rs"]
mod sm_lite;
mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

use mad_sm::{SmConfig, SmEvent, NO_ROUTE};
use sm_lite::RunningSm;
use support::diags::{diag, diags_parallel, field, ibnetdiscover_lids, ibroute_entries};
use support::{ibnetdiscover, IbSim, NEEDS_DIAGS};

fn bring_up_and_check(name: &str) {
    if !support::require(NEEDS_DIAGS)
        || !support::require(&[
            ("smpquery", "infiniband-diags"),
            ("ibroute", "infiniband-diags"),
            ("ibtracert", "infiniband-diags"),
            ("sminfo", "infiniband-diags"),
        ])
    {
        return;
    }
    let netfile = support::topologies_dir().join(name);
    let sim = IbSim::start(&netfile);
    let t0 = Instant::now();
    // A generous SMP timeout: a loaded test machine must not turn a slow
    // answer into a sweep error.
    let cfg = SmConfig {
        timeout: Duration::from_secs(1),
        ..SmConfig::default()
    };
    let running = RunningSm::start(&sim, cfg);
    let events = running.wait_up(&sim);
    let up_after = t0.elapsed();
    let errors: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, SmEvent::Error(_)))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}");
    eprintln!("{name}: SubnetUp after {up_after:?}: {events:?}");

    // --- ibnetdiscover: same nodes, every port a LID, SM-lite's LIDs ---
    let text = diag(&sim, "ibnetdiscover", &[]);
    let disc = ibnetdiscover::parse(&text).unwrap();
    let lids = ibnetdiscover_lids(&text);
    // SM-lite's view is read from its thread only after stopping it, so
    // stop it last; meanwhile the fabric's own answers are the truth.
    assert!(!lids.is_empty());
    for (guid, lid) in &lids {
        assert_ne!(*lid, 0, "{name}: port {guid:#x} has no LID:\n{text}");
    }
    let distinct: BTreeSet<u16> = lids.values().copied().collect();
    assert_eq!(
        distinct.len(),
        lids.len(),
        "{name}: duplicate LIDs:\n{text}"
    );
    assert_eq!(
        distinct,
        (1..=lids.len() as u16).collect::<BTreeSet<_>>(),
        "{name}: LIDs are not 1..=n"
    );

    // --- independent min-hop distances over ibnetdiscover's links ---
    let is_switch = |g: u64| disc.nodes.get(&g).is_some_and(|n| n.kind == "Switch");
    let mut adj: HashMap<u64, Vec<(u8, u64, u8)>> = HashMap::new();
    for l in &disc.links {
        let ((a, ap), (b, bp)) = (l.0, l.1);
        adj.entry(a).or_default().push((ap, b, bp));
        adj.entry(b).or_default().push((bp, a, ap));
    }
    // LID -> (target switch GUID, egress port at it).
    let mut lid_target: BTreeMap<u16, (u64, u8)> = BTreeMap::new();
    for (guid, node) in &disc.nodes {
        if node.kind == "Switch" {
            lid_target.insert(lids[guid], (*guid, 0));
        } else {
            for (port, pg) in &node.port_guids {
                let Some(lid) = lids.get(pg) else { continue };
                if let Some((_, sw, sp)) = adj[guid]
                    .iter()
                    .find(|(p, r, _)| p == port && is_switch(*r))
                {
                    lid_target.insert(*lid, (*sw, *sp));
                }
            }
        }
    }
    let switch_dist = |from: u64| -> HashMap<u64, usize> {
        let mut d = HashMap::from([(from, 0usize)]);
        let mut q = VecDeque::from([from]);
        while let Some(u) = q.pop_front() {
            for (_, v, _) in &adj[&u] {
                if is_switch(*v) && !d.contains_key(v) {
                    d.insert(*v, d[&u] + 1);
                    q.push_back(*v);
                }
            }
        }
        d
    };
    let dist: HashMap<u64, HashMap<u64, usize>> = disc
        .nodes
        .keys()
        .filter(|g| is_switch(**g))
        .map(|g| (*g, switch_dist(*g)))
        .collect();

    // --- ibroute on every switch: min-hop, every LID routed ---
    let switches: Vec<u64> = dist.keys().copied().collect();
    let routes = diags_parallel(
        &sim,
        "ibroute",
        &switches
            .iter()
            .map(|g| vec![lids[g].to_string()])
            .collect::<Vec<_>>(),
    );
    let mut lfts: HashMap<u64, BTreeMap<u16, u8>> = HashMap::new();
    for (sw, text) in switches.iter().zip(&routes) {
        let lft = ibroute_entries(text);
        for (lid, (tsw, tport)) in &lid_target {
            let port = *lft.get(lid).unwrap_or_else(|| {
                panic!("{name}: switch {sw:#x} has no route to LID {lid}:\n{text}")
            });
            if tsw == sw {
                assert_eq!(port, *tport, "{name}: switch {sw:#x} LID {lid}");
                continue;
            }
            let (_, next, _) = adj[sw]
                .iter()
                .find(|(p, _, _)| *p == port)
                .unwrap_or_else(|| {
                    panic!("{name}: switch {sw:#x} routes LID {lid} to unlinked port {port}")
                });
            assert_eq!(
                dist[next].get(tsw).map(|d| d + 1),
                dist[sw].get(tsw).copied(),
                "{name}: switch {sw:#x} LID {lid} via port {port} is not a shortest path"
            );
        }
        lfts.insert(*sw, lft);
    }

    // --- smpquery portinfo by LID: reaches every port, Active ---
    let all: Vec<(u64, u16)> = lids.iter().map(|(g, l)| (*g, *l)).collect();
    let outs = diags_parallel(
        &sim,
        "smpquery",
        &all.iter()
            .map(|(_, l)| vec!["portinfo".to_owned(), l.to_string()])
            .collect::<Vec<_>>(),
    );
    for ((guid, lid), out) in all.iter().zip(&outs) {
        assert_eq!(
            field(out, "LinkState"),
            Some("Active"),
            "{name}: LID {lid}:\n{out}"
        );
        assert_eq!(
            field(out, "Lid"),
            Some(lid.to_string().as_str()),
            "{name} {guid:#x}"
        );
    }

    // --- ibtracert between CA ports ---
    let ca_lids: Vec<u16> = disc
        .nodes
        .iter()
        .filter(|(_, n)| n.kind != "Switch")
        .flat_map(|(_, n)| n.port_guids.values().filter_map(|g| lids.get(g).copied()))
        .collect();
    assert!(ca_lids.len() >= 2, "{name}: fewer than two CA ports");
    let pairs: Vec<(u16, u16)> = [
        (ca_lids[0], ca_lids[ca_lids.len() - 1]),
        (ca_lids[ca_lids.len() - 1], ca_lids[0]),
        (ca_lids[1], ca_lids[ca_lids.len() / 2]),
    ]
    .into_iter()
    .filter(|(a, b)| a != b)
    .collect();
    for (a, b) in pairs {
        let out = diag(&sim, "ibtracert", &[&a.to_string(), &b.to_string()]);
        assert!(
            out.lines().last().is_some_and(|l| l.starts_with("To ca")),
            "{name}: ibtracert {a} {b}:\n{out}"
        );
        let (src_sw, _) = lid_target[&a];
        let (dst_sw, _) = lid_target[&b];
        // ibtracert prints one "[out] -> ..." line per hop: the source CA
        // hop plus each switch on the way.
        let hops = out.lines().filter(|l| l.contains("->")).count();
        assert_eq!(
            hops,
            dist[&src_sw][&dst_sw] + 2,
            "{name}: ibtracert {a} {b} is not min-hop:\n{out}"
        );
    }

    // --- sminfo: our GUID, MASTER ---
    let out = diag(&sim, "sminfo", &[]);
    assert!(out.contains("SMINFO_MASTER"), "{name}: {out}");

    let sm = running.stop();
    let guid = sm.sm_info().guid;
    assert!(
        out.contains(&format!("sm guid {guid:#x}")),
        "{name}: sminfo names another SM than {guid:#x}: {out}"
    );
    assert!(
        out.contains(&format!("sm lid {}", sm.sm_lid())),
        "{name}: {out}"
    );
    // SM-lite's LIDs and tables are what the fabric holds.
    for (g, lid) in &lids {
        assert_eq!(
            sm.subnet().lid_of_port_guid(*g),
            Some(*lid),
            "{name}: {g:#x}"
        );
    }
    for (sw, lft) in &lfts {
        let (_, node) = sm.subnet().node_by_guid(*sw).unwrap();
        for (lid, port) in lft {
            assert_eq!(
                node.lft[usize::from(*lid)],
                *port,
                "{name}: {sw:#x} LID {lid}"
            );
        }
        let routed = node.lft.iter().filter(|p| **p != NO_ROUTE).count();
        assert_eq!(routed, lft.len(), "{name}: {sw:#x}");
    }
    assert_eq!(sm.subnet().nodes().len(), disc.nodes.len());
    eprintln!("{name}: checked in {:?}", t0.elapsed());
}

#[test]
fn sm_lite_brings_up_ibsim_net() {
    bring_up_and_check("net");
}

#[test]
fn sm_lite_brings_up_ibsim_net_2sw2path4hca() {
    bring_up_and_check("net.2sw2path4hca");
}

#[test]
fn sm_lite_brings_up_ibsim_net_medium() {
    bring_up_and_check("net.medium");
}
