//! SM-lite over the built-in fabric ([`mad_sim::Fabric`]) through a
//! [`SimPort`] endpoint, on the shared topology files: after SubnetUp,
//! LID-routed SMPs and PerfMgt GSI MADs from another endpoint reach every
//! LID, every switch's LFT (read back by LID routing) is min-hop by an
//! independent breadth-first search over the fabric's links, and a
//! re-sweep of the unchanged fabric sends no Set.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::time::Instant;

use mad_core::transport::{Address, Qp, Transport};
use mad_core::wire::attr::{LinearFwdTable, NodeInfo, PhysPortState, PortState};
use mad_core::wire::smp::Smp;
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass, Repr, MAD_LEN};

use mad_sim::{Fabric, SimPort};
use mad_sm::{routing, SmConfig, SmDriver, SmEvent, SubnetManager};

fn topology(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/topologies")
        .join(name)
}

/// Pumps `sm` over `port` in virtual time until an event satisfies
/// `done`; panics when the SM stalls.
fn run(
    sm: &mut SubnetManager,
    port: &mut SimPort,
    now: &mut Instant,
    done: fn(&SmEvent) -> bool,
) -> Vec<SmEvent> {
    let mut drv = SmDriver::new();
    let mut events = Vec::new();
    for _ in 0..10_000_000 {
        let busy = drv.pump(sm, port, *now).expect("pump");
        let mut hit = false;
        while let Some(e) = sm.poll_event() {
            hit |= done(&e);
            events.push(e);
        }
        if hit {
            return events;
        }
        if !busy {
            match sm.poll_timeout() {
                Some(t) => *now = (*now).max(t),
                None => panic!("SM stalled; events {events:#?}"),
            }
        }
    }
    panic!("SM did not finish; events {events:#?}");
}

/// One request/answer on `ep` (auto-delivered at once).
fn ask(ep: &mut SimPort, qp: Qp, mad: &[u8], to: Address) -> Option<Vec<u8>> {
    ep.post_send(qp, mad, &to).expect("post");
    let mut c = Vec::new();
    ep.poll_send_completions(&mut c).expect("completions");
    let tid = Mad::new_checked(mad).unwrap().tid();
    while let Some(r) = ep.poll_recv().expect("recv") {
        if Mad::new_checked(&r.mad[..]).unwrap().tid() == tid {
            return Some(r.mad.into());
        }
    }
    None
}

fn lid_routed_get(attr: AttributeId, attr_mod: u32, tid: u64) -> Vec<u8> {
    let mut m = vec![0u8; MAD_LEN];
    let mut mad = Mad::new_unchecked(&mut m[..]);
    mad.set_base_version(1);
    mad.set_mgmt_class(MgmtClass::SUBN_LID_ROUTED);
    mad.set_class_version(1);
    mad.set_method(Method::GET, false);
    mad.set_tid(tid);
    mad.set_attr_id(attr);
    mad.set_attr_mod(attr_mod);
    m
}

fn perf_class_port_info(tid: u64) -> Vec<u8> {
    let mut m = lid_routed_get(AttributeId::CLASS_PORT_INFO, 0, tid);
    mad_testkit::header::edit(&mut m, |h| h.mgmt_class = MgmtClass::PERF_MGT);
    m
}

fn bring_up_and_check(name: &str) {
    bring_up_and_check_with(name, routing::BACKGROUND_ENTRIES);
}

/// [`bring_up_and_check`] with SM-lite routing on its routing thread
/// fabrics from `background_entries` table entries.
fn bring_up_and_check_with(name: &str, background_entries: usize) {
    let fabric = Fabric::load(topology(name)).unwrap();
    let mut port = fabric.attach_default().unwrap();
    port.set_is_sm(true);
    let mut sm = SubnetManager::new(SmConfig::default(), port.port_attrs());
    sm.set_background_entries(background_entries);
    let mut now = Instant::now();
    sm.start(now);
    let events = run(&mut sm, &mut port, &mut now, |e| *e == SmEvent::SubnetUp);
    assert!(
        !events.iter().any(|e| matches!(e, SmEvent::Error(_))),
        "{name}: {events:#?}"
    );

    // Every LID-bearing port has a unique LID 1..=n; linked ports Active.
    let nodes = fabric.nodes();
    let mut lids: BTreeMap<u16, (usize, u8)> = BTreeMap::new();
    let mut graph: HashMap<usize, Vec<(u8, usize, u8)>> = HashMap::new();
    let is_switch = |i: usize| nodes[i].kind == mad_sim::topology::NodeKind::Switch;
    for n in &nodes {
        let first = u8::from(!is_switch(n.index));
        for p in first..=n.num_ports {
            let pi = fabric.port_info(n.index, p).unwrap();
            let linked = pi.port_phys_state == PhysPortState::LINK_UP;
            if p != 0 && linked {
                assert_eq!(
                    pi.port_state,
                    PortState::ACTIVE,
                    "{name}: {} port {p}",
                    n.id
                );
                let r = fabric.remote(n.index, p).unwrap();
                graph.entry(n.index).or_default().push((p, r.node, r.port));
            }
            if (p == 0) == is_switch(n.index) && (p == 0 || linked) {
                assert_ne!(pi.lid, 0, "{name}: {} port {p} has no LID", n.id);
                assert_eq!(pi.master_sm_lid, sm.sm_lid());
                assert!(
                    lids.insert(pi.lid, (n.index, p)).is_none(),
                    "{name}: LID {} twice",
                    pi.lid
                );
            }
        }
    }
    let want: BTreeSet<u16> = (1..=lids.len() as u16).collect();
    assert_eq!(
        lids.keys().copied().collect::<BTreeSet<_>>(),
        want,
        "{name}"
    );

    // A second endpoint (the last CA port with a link) queries every LID.
    let (ca, ca_port) = *lids
        .values()
        .rev()
        .find(|(n, p)| !is_switch(*n) && (*n, *p) != (port.node(), port.port()))
        .expect("a second CA");
    let mut ep = fabric.attach(ca, ca_port).unwrap();
    let mut tid = 0x100u64;
    for (lid, (n, p)) in &lids {
        tid += 1;
        let ans = ask(
            &mut ep,
            Qp::Qp0,
            &lid_routed_get(AttributeId::NODE_INFO, 0, tid),
            Address::smi(*lid),
        )
        .unwrap_or_else(|| panic!("{name}: NodeInfo to LID {lid} unanswered"));
        let smp = Smp::new_checked(&ans[..]).unwrap();
        assert_eq!(smp.mad().status().0, 0);
        let ni = NodeInfo::parse(smp.data()).unwrap();
        assert_eq!(ni.node_guid, nodes[*n].node_guid, "{name}: LID {lid}");
        if !is_switch(*n) {
            assert_eq!(ni.local_port_num, *p);
        }
        tid += 1;
        let ans = ask(
            &mut ep,
            Qp::Qp1,
            &perf_class_port_info(tid),
            Address::gsi(*lid),
        )
        .unwrap_or_else(|| panic!("{name}: PerfMgt to LID {lid} unanswered"));
        assert_eq!(Mad::new_checked(&ans[..]).unwrap().status().0, 0);
    }

    // Min-hop: every switch's LFT, read back by LID routing, moves every
    // LID one switch hop closer (independent BFS over the fabric links).
    let bfs = |from: usize| -> HashMap<usize, usize> {
        let mut d = HashMap::from([(from, 0)]);
        let mut q = VecDeque::from([from]);
        while let Some(u) = q.pop_front() {
            for &(_, v, _) in graph.get(&u).map_or(&[][..], Vec::as_slice) {
                if is_switch(v) && !d.contains_key(&v) {
                    d.insert(v, d[&u] + 1);
                    q.push_back(v);
                }
            }
        }
        d
    };
    let max_lid = *lids.keys().last().unwrap();
    for (sw_lid, (sw, _)) in lids.iter().filter(|(_, (n, _))| is_switch(*n)) {
        let mut lft = Vec::new();
        for block in 0..=u32::from(max_lid) / 64 {
            tid += 1;
            let ans = ask(
                &mut ep,
                Qp::Qp0,
                &lid_routed_get(AttributeId::LINEAR_FWD_TABLE, block, tid),
                Address::smi(*sw_lid),
            )
            .unwrap();
            lft.extend(
                LinearFwdTable::parse(Smp::new_checked(&ans[..]).unwrap().data())
                    .unwrap()
                    .ports,
            );
        }
        let here = bfs(*sw);
        for (lid, (n, p)) in &lids {
            let out = lft[usize::from(*lid)];
            // The switch a LID hangs on, and the port there.
            let (tsw, tport) = if is_switch(*n) {
                (*n, 0)
            } else {
                let (_, r, rp) = graph[n].iter().find(|(q, _, _)| q == p).copied().unwrap();
                (r, rp)
            };
            if tsw == *sw {
                assert_eq!(out, tport, "{name}: switch {sw} LID {lid}");
                continue;
            }
            let (_, next, _) = graph[sw]
                .iter()
                .find(|(q, _, _)| *q == out)
                .copied()
                .unwrap_or_else(|| panic!("{name}: switch {sw} LID {lid} -> port {out}"));
            assert_eq!(
                bfs(next)[&tsw] + 1,
                here[&tsw],
                "{name}: switch {sw} LID {lid} port {out}"
            );
        }
    }

    // A re-sweep of the unchanged fabric changes nothing.
    sm.resweep(now);
    let events = run(&mut sm, &mut port, &mut now, |e| *e == SmEvent::SubnetUp);
    let done = events
        .iter()
        .find(|e| matches!(e, SmEvent::SweepDone { .. }));
    assert!(
        matches!(
            done,
            Some(SmEvent::SweepDone {
                sets: 0,
                errors: 0,
                ..
            })
        ),
        "{name}: {events:#?}"
    );
}

#[test]
fn sm_lite_brings_up_the_built_in_fabric_on_the_small_ibsim_examples() {
    for name in [
        "net",
        "net.1",
        "net.2sw2path",
        "net.2sw2path4hca",
        "net.2sw2path4hca2port",
    ] {
        bring_up_and_check(name);
    }
}

#[test]
fn sm_lite_brings_up_the_built_in_fabric_on_net_medium() {
    bring_up_and_check("net.medium");
}

#[test]
fn sm_lite_routing_on_its_thread_during_the_sets_brings_up_net_medium_min_hop() {
    bring_up_and_check_with("net.medium", 0);
}

/// Every LID-bearing port of `fabric`: LID -> node GUID.
fn lid_guids(fabric: &Fabric) -> BTreeMap<u16, u64> {
    let mut m = BTreeMap::new();
    for n in fabric.nodes() {
        let switch = n.kind == mad_sim::topology::NodeKind::Switch;
        for p in u8::from(!switch)..=if switch { 0 } else { n.num_ports } {
            let lid = fabric.port_info(n.index, p).map_or(0, |pi| pi.lid);
            if lid != 0 {
                m.insert(lid, n.node_guid);
            }
        }
    }
    m
}

/// LID-routed NodeInfo from `ep` to every LID answers with its node.
fn every_lid_answers(ep: &mut SimPort, lids: &BTreeMap<u16, u64>, tid: &mut u64) {
    for (lid, guid) in lids {
        *tid += 1;
        let ans = ask(
            ep,
            Qp::Qp0,
            &lid_routed_get(AttributeId::NODE_INFO, 0, *tid),
            Address::smi(*lid),
        )
        .unwrap_or_else(|| panic!("NodeInfo to LID {lid} unanswered"));
        let ni = NodeInfo::parse(Smp::new_checked(&ans[..]).unwrap().data()).unwrap();
        assert_eq!(ni.node_guid, *guid, "LID {lid}");
    }
}

#[test]
fn an_inter_switch_link_down_is_rerouted_from_its_traps_without_rediscovery() {
    let fabric = Fabric::load(topology("net.medium")).unwrap();
    let mut port = fabric.attach_default().unwrap();
    port.set_is_sm(true);
    let cfg = SmConfig {
        sweep_interval: Some(std::time::Duration::from_secs(10)),
        ..SmConfig::default()
    };
    let mut sm = SubnetManager::new(cfg, port.port_attrs());
    let mut now = Instant::now();
    sm.start(now);
    run(&mut sm, &mut port, &mut now, |e| *e == SmEvent::SubnetUp);
    let heavy_smps = sm.stats().last_sweep_smps;
    let lids = lid_guids(&fabric);
    // The first inter-switch link of the file.
    let nodes = fabric.nodes();
    let is_switch = |i: usize| nodes[i].kind == mad_sim::topology::NodeKind::Switch;
    let (sw, p) = nodes
        .iter()
        .filter(|n| is_switch(n.index))
        .find_map(|n| {
            (1..=n.num_ports).find_map(|p| {
                let r = fabric.remote(n.index, p)?;
                is_switch(r.node).then_some((n.index, p))
            })
        })
        .unwrap();
    let ca = nodes
        .iter()
        .rev()
        .find(|n| !is_switch(n.index))
        .unwrap()
        .index;
    let mut ep = fabric.attach(ca, 1).unwrap();
    let mut tid = 0x1000;
    fabric.link_down(sw, p).unwrap();
    let events = run(&mut sm, &mut port, &mut now, |e| *e == SmEvent::SubnetUp);
    assert!(
        events.iter().any(|e| matches!(
            e,
            SmEvent::Trap {
                number: Some(128),
                ..
            }
        )),
        "{events:#?}"
    );
    let st = sm.stats();
    // The two switches read again and the changed blocks: no discovery.
    assert!(
        st.last_sweep_smps < heavy_smps / 10,
        "{} SMPs after the trap, {heavy_smps} in the heavy sweep",
        st.last_sweep_smps
    );
    assert!(st.last_lft_blocks > 0);
    assert_eq!(lid_guids(&fabric), lids, "no LID changed");
    every_lid_answers(&mut ep, &lids, &mut tid);
    // The next light sweep finds nothing to do.
    let events = run(&mut sm, &mut port, &mut now, |e| {
        matches!(e, SmEvent::LightSweepDone { .. })
    });
    assert!(
        matches!(
            events.last(),
            Some(SmEvent::LightSweepDone { changed: false, .. })
        ),
        "{events:#?}"
    );
    // Plugged back: a heavy sweep arms it; every LID still answers.
    fabric.link_up(sw, p).unwrap();
    run(&mut sm, &mut port, &mut now, |e| *e == SmEvent::SubnetUp);
    assert_eq!(
        fabric.port_info(sw, p).unwrap().port_state,
        PortState::ACTIVE
    );
    every_lid_answers(&mut ep, &lids, &mut tid);
}
