//! SM-lite against a scripted subnet ([`fake::Fabric`]) in simulated
//! time: bring-up, LIDs, min-hop routes, port states, re-sweeps, traps,
//! SMInfo, loss and duplication.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod engines;
mod fake;
mod lids;
mod lmc;
mod mkey;
mod qos;
mod routing_ref;
mod sweeps;
mod two_sms;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use fake::Fabric;
use mad_core::transport::{Address, PortAttrs, PERMISSIVE_LID};
use mad_core::wire::attr::{PhysPortState, PortState, SmInfo, SmState};
use mad_core::wire::smp::Smp;
use mad_core::wire::{AttributeId, Method, MgmtClass, Repr};

use super::*;

/// Drives an SM against a fake fabric: random latency, loss and
/// duplication from a seeded generator.
struct Harness {
    fab: Fabric,
    sm: SubnetManager,
    now: Instant,
    inflight: Vec<(Instant, Vec<u8>)>,
    rng: mad_core::transport::fault::Rng,
    drop_pct: u64,
    dup_pct: u64,
    max_latency_us: u64,
    /// Answers the harness corrupts (low TID bits changed) instead of
    /// delivering.
    corrupt_tid: bool,
    events: Vec<SmEvent>,
    max_inflight: usize,
    sent: usize,
    /// Most PortInfo / LinearForwardingTable Sets waiting in SM-lite's
    /// queue at once.
    max_sets_queued: usize,
}

impl Harness {
    fn new(fab: Fabric, cfg: SmConfig) -> Self {
        let (n, p) = fab.sm_at;
        let node = &fab.nodes[n];
        let attrs = PortAttrs {
            ca_name: node.desc.clone(),
            port_num: p,
            node_guid: node.guid,
            port_guid: node.port_guid(p),
            is_switch: node.switch,
            ..PortAttrs::default()
        };
        let now = Instant::now();
        Self {
            sm: SubnetManager::new(cfg, &attrs),
            fab,
            now,
            inflight: Vec::new(),
            rng: mad_core::transport::fault::Rng::new(0x9E37_79B9_7F4A_7C15),
            drop_pct: 0,
            dup_pct: 0,
            max_latency_us: 50,
            corrupt_tid: false,
            events: Vec::new(),
            max_inflight: 0,
            sent: 0,
            max_sets_queued: 0,
        }
    }

    fn rand(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Runs until an event satisfies `done` (true) or nothing can happen
    /// any more / `limit` of simulated time passed (false).
    fn run_until(&mut self, limit: Duration, done: impl Fn(&SmEvent) -> bool) -> bool {
        let deadline = self.now + limit;
        loop {
            while let Some((mad, to)) = self.sm.poll_transmit(self.now) {
                self.sent += 1;
                if self.rand() % 100 < self.drop_pct {
                    continue;
                }
                let Some(mut rep) = self.fab.deliver(&mad, &to) else {
                    continue;
                };
                if self.corrupt_tid {
                    mad_testkit_wire::header::edit(&mut rep, |h| h.tid ^= 0x55);
                }
                let lat = Duration::from_micros(self.rand() % (self.max_latency_us + 1));
                if self.rand() % 100 < self.dup_pct {
                    let lat2 = Duration::from_micros(self.rand() % (self.max_latency_us + 1));
                    self.inflight.push((self.now + lat2, rep.clone()));
                }
                self.inflight.push((self.now + lat, rep));
            }
            self.max_inflight = self.max_inflight.max(self.inflight.len());
            let sets_queued = self
                .sm
                .ready
                .iter()
                .filter(|r| matches!(r.kind, Kind::SetLft { .. } | Kind::SetPortInfo { .. }))
                .count();
            self.max_sets_queued = self.max_sets_queued.max(sets_queued);
            self.inflight.sort_by_key(|(t, _)| *t);
            let due = self.inflight.partition_point(|(t, _)| *t <= self.now);
            let now_due: Vec<_> = self.inflight.drain(..due).collect();
            let delivered = !now_due.is_empty();
            for (_, rep) in now_due {
                self.sm
                    .handle_recv(self.now, &rep, &Address::smi(PERMISSIVE_LID));
            }
            let mut hit = false;
            while let Some(e) = self.sm.poll_event() {
                hit |= done(&e);
                self.events.push(e);
            }
            if hit {
                return true;
            }
            if delivered {
                continue;
            }
            let next = match (self.inflight.first().map(|x| x.0), self.sm.poll_timeout()) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => return false,
                },
            };
            if next > deadline {
                return false;
            }
            self.now = self.now.max(next);
            if self.sm.poll_timeout().is_some_and(|t| t <= self.now) {
                self.sm.handle_timeout(self.now);
            }
        }
    }

    /// A harness on `fab` with the default configuration, brought up.
    fn up(fab: Fabric) -> Self {
        let mut h = Self::new(fab, SmConfig::default());
        h.bring_up();
        h
    }

    /// [`Harness::up`], checked with [`check_configured`].
    fn configured(fab: Fabric) -> Self {
        let h = Self::up(fab);
        check_configured(&h);
        h
    }

    fn bring_up(&mut self) {
        self.sm.start(self.now);
        let up = self.run_until(Duration::from_secs(60), |e| *e == SmEvent::SubnetUp);
        assert!(
            up,
            "no SubnetUp; events: {:#?}\nviolations: {:#?}",
            self.events, self.fab.violations
        );
        assert!(self.fab.violations.is_empty(), "{:#?}", self.fab.violations);
    }

    fn last_sweep(&self) -> &SmEvent {
        self.events
            .iter()
            .rev()
            .find(|e| matches!(e, SmEvent::SweepDone { .. }))
            .expect("a SweepDone")
    }

    fn errors(&self) -> Vec<&SmError> {
        self.events
            .iter()
            .filter_map(|e| match e {
                SmEvent::Error(x) => Some(x),
                _ => None,
            })
            .collect()
    }
}

/// Every LID-bearing port of the fake fabric (switch port 0, cabled CA
/// ports with the link up): (node, port) -> LID.
fn fabric_lids(f: &Fabric) -> BTreeMap<(usize, u8), u16> {
    let mut m = BTreeMap::new();
    for (i, n) in f.nodes.iter().enumerate() {
        for (p, fp) in n.ports.iter().enumerate() {
            let bearing = if n.switch {
                p == 0
            } else {
                p > 0 && fp.phys == PhysPortState::LINK_UP
            };
            if bearing {
                m.insert((i, p as u8), fp.lid);
            }
        }
    }
    m
}

/// The checks every configured fabric must pass: LIDs unique, non-zero
/// and consecutive from 1; every port with its link up Active; MasterSMLID
/// the SM's LID everywhere; every CA port reaches every LID by LID
/// routing in as few links as a breadth-first search finds; every switch
/// routes its own LID to port 0.
fn check_configured(h: &Harness) {
    let f = &h.fab;
    let lids = fabric_lids(f);
    let set: BTreeSet<u16> = lids.values().copied().collect();
    assert_eq!(set.len(), lids.len(), "duplicate LIDs: {lids:?}");
    assert!(!set.contains(&0), "a port without a LID: {lids:?}");
    let want: BTreeSet<u16> = (1..=lids.len() as u16).collect();
    assert_eq!(set, want, "LIDs not 1..=n");
    let sm_lid = h.sm.sm_lid();
    assert_eq!(lids[&f.sm_at], sm_lid);
    for (i, n) in f.nodes.iter().enumerate() {
        for (p, fp) in n.ports.iter().enumerate().skip(usize::from(!n.switch)) {
            if fp.phys == PhysPortState::LINK_UP {
                assert_eq!(
                    fp.state,
                    PortState::ACTIVE,
                    "{} port {p} not Active",
                    n.desc
                );
            }
            if lids.contains_key(&(i, p as u8)) {
                assert_eq!(fp.smlid, sm_lid, "{} port {p}: MasterSMLID", n.desc);
                assert_eq!(fp.timeout, 18);
                assert_eq!(fp.gid_prefix, 0xfe80_0000_0000_0000);
            }
        }
        if n.switch {
            assert_eq!(n.lft[usize::from(n.ports[0].lid)], 0, "{}: own LID", n.desc);
            assert_eq!(n.fdb_top, *set.last().unwrap());
        }
    }
    // The SM's view agrees with the fabric.
    let sub = h.sm.subnet();
    assert_eq!(sub.lids().len(), lids.len());
    for ((i, p), lid) in &lids {
        let guid = f.nodes[*i].port_guid(*p);
        assert_eq!(h.sm.lid_of(guid), Some(*lid));
        assert_eq!(sub.lid_of_port_guid(guid), Some(*lid));
    }
    // Min-hop routes between every CA port and every LID.
    let by_lid: BTreeMap<u16, (usize, u8)> = lids.iter().map(|(k, v)| (*v, *k)).collect();
    for (&(i, p), _) in lids.iter().filter(|((i, _), _)| !f.nodes[*i].switch) {
        for (&dlid, &target) in &by_lid {
            let got = f
                .lid_route(i, p, dlid)
                .unwrap_or_else(|e| panic!("{} port {p} -> LID {dlid}: {e}", f.nodes[i].desc));
            let best = f.shortest(i, p, target).expect("connected");
            assert_eq!(
                got, best,
                "{} port {p} -> LID {dlid}: not min-hop",
                f.nodes[i].desc
            );
        }
    }
}

#[test]
fn ibsim_net_comes_up_with_lids_one_to_four_and_every_port_active() {
    let h = Harness::configured(Fabric::ibsim_net());
    // Switch1 (the SM's node) is found first and gets LID 1.
    assert_eq!(h.sm.sm_lid(), 1);
    assert_eq!(h.fab.nodes[0].ports[0].lid, 1);
    match h.last_sweep() {
        SmEvent::SweepDone {
            nodes,
            switches,
            lids,
            errors,
            ..
        } => assert_eq!((*nodes, *switches, *lids, *errors), (4, 2, 4, 0)),
        e => panic!("{e:?}"),
    }
    // Unconnected CA ports are left alone.
    assert_eq!(h.fab.nodes[2].ports[2].state, PortState::DOWN);
    assert_eq!(h.fab.nodes[2].ports[2].lid, 0);
    assert_eq!(h.sm.sm_info().sm_state, SmState::MASTER);
    // The SM's subnet view: links and descriptions.
    let sub = h.sm.subnet();
    assert_eq!(sub.links().len(), 4);
    let descs: BTreeSet<&str> = sub.nodes().iter().map(|n| n.desc.as_str()).collect();
    assert_eq!(
        descs,
        BTreeSet::from(["Switch1", "Switch2", "Hca1", "Hca2"])
    );
}

#[test]
fn parallel_links_between_two_switches_share_the_routes() {
    let mut f = Fabric::new();
    let s1 = f.switch("S1", 8);
    let s2 = f.switch("S2", 8);
    f.link(s1, 1, s2, 1);
    f.link(s1, 2, s2, 2);
    let mut cas = Vec::new();
    for k in 0..4u8 {
        let c = f.ca(&format!("C{k}"), 1);
        f.link(s2, 3 + k, c, 1);
        cas.push(c);
    }
    let h0 = f.ca("C-local", 1);
    f.link(s1, 3, h0, 1);
    f.sm_at = (s1, 0);
    let h = Harness::configured(f);
    let sw = &h.fab.nodes[s1];
    let mut per_port = BTreeMap::new();
    for c in cas {
        let lid = h.fab.nodes[c].ports[1].lid;
        *per_port.entry(sw.lft[usize::from(lid)]).or_insert(0) += 1;
    }
    assert_eq!(per_port, BTreeMap::from([(1, 2), (2, 2)]));
}

#[test]
fn fat_tree_with_the_sm_on_a_ca_routes_min_hop_and_balances_uplinks() {
    let h = Harness::configured(Fabric::fat_tree(4, 3, 6));
    // On each leaf, the 18 CAs of the other leaves are spread evenly over
    // the 3 spine uplinks (ports 7, 8, 9).
    for leaf in h.fab.nodes.iter().filter(|n| n.desc.starts_with('L')) {
        let mut per_port: BTreeMap<u8, usize> = BTreeMap::new();
        for n in h.fab.nodes.iter().filter(|n| !n.switch) {
            let lid = n.ports[1].lid;
            let out = leaf.lft[usize::from(lid)];
            if out > 6 {
                *per_port.entry(out).or_default() += 1;
            }
        }
        assert_eq!(
            per_port,
            BTreeMap::from([(7, 6), (8, 6), (9, 6)]),
            "{}",
            leaf.desc
        );
    }
}

#[test]
fn a_ring_of_switches_is_discovered_once_and_routed_both_ways() {
    let h = Harness::configured(Fabric::ring(7, 2));
    match h.last_sweep() {
        SmEvent::SweepDone {
            nodes, switches, ..
        } => assert_eq!((*nodes, *switches), (21, 7)),
        e => panic!("{e:?}"),
    }
    assert_eq!(h.sm.subnet().links().len(), 7 + 14);
}

#[test]
fn a_ca_with_both_ports_cabled_gets_a_lid_per_port_reached_through_each() {
    let mut f = Fabric::new();
    let s1 = f.switch("S1", 4);
    let s2 = f.switch("S2", 4);
    let dual = f.ca("Dual", 2);
    let other = f.ca("Other", 1);
    f.link(s1, 1, s2, 1);
    f.link(s1, 2, dual, 1);
    f.link(s2, 2, dual, 2);
    f.link(s2, 3, other, 1);
    f.sm_at = (s1, 0);
    let h = Harness::configured(f);
    let d = &h.fab.nodes[dual];
    assert_ne!(d.ports[1].lid, d.ports[2].lid);
    assert_eq!(d.ports[2].state, PortState::ACTIVE);
    // S2 reaches Dual's port 2 directly, its port 1 through S1.
    let s2n = &h.fab.nodes[s2];
    assert_eq!(s2n.lft[usize::from(d.ports[2].lid)], 2);
    assert_eq!(s2n.lft[usize::from(d.ports[1].lid)], 1);
}

#[test]
fn a_resweep_of_an_unchanged_subnet_sends_no_set_and_keeps_every_lid() {
    let mut h = Harness::up(Fabric::fat_tree(3, 2, 3));
    let before = fabric_lids(&h.fab);
    let sets = h.fab.sets.len();
    h.sm.resweep(h.now);
    assert!(h.run_until(Duration::from_secs(60), |e| *e == SmEvent::SubnetUp));
    assert_eq!(fabric_lids(&h.fab), before);
    assert_eq!(h.fab.sets.len(), sets, "Sets on an unchanged subnet");
    match h.last_sweep() {
        SmEvent::SweepDone { sets, errors, .. } => assert_eq!((*sets, *errors), (0, 0)),
        e => panic!("{e:?}"),
    }
    assert!(h.fab.violations.is_empty(), "{:#?}", h.fab.violations);
}

#[test]
fn trap_128_is_repressed_and_the_resweep_reprograms_only_what_changed() {
    let mut h = Harness::up(Fabric::fat_tree(3, 2, 3));
    let before = fabric_lids(&h.fab);
    let first_sets = h.fab.sets.len();
    // CA 4 (on leaf 1) loses its link.
    let (leaf, leaf_port) = h.fab.nodes[4].ports[1].remote.unwrap();
    let lost_lid = h.fab.nodes[4].ports[1].lid;
    let traps = h.fab.set_link(leaf, leaf_port, false);
    assert_eq!(traps.len(), 1, "the leaf switch traps");
    for (t, src) in &traps {
        h.sm.handle_recv(h.now, t, src);
    }
    // The repress goes back to the issuer, LID-routed, same TID.
    let (rep, to) = h.sm.poll_transmit(h.now).expect("TrapRepress");
    let r = Smp::new_checked(&rep[..]).unwrap();
    assert_eq!(r.method(), Method::TRAP_REPRESS);
    assert!(!r.response_bit());
    assert_eq!(r.tid(), Smp::new_checked(&traps[0].0[..]).unwrap().tid());
    assert_eq!(to.lid, traps[0].1.lid);
    assert!(h.sm.is_sweeping(), "a trap 128 starts a sweep");
    assert!(h.run_until(Duration::from_secs(60), |e| *e == SmEvent::SubnetUp));
    assert!(h.events.iter().any(|e| *e
        == SmEvent::Trap {
            number: Some(128),
            issuer_lid: h.fab.nodes[leaf].ports[0].lid
        }));
    assert!(h.fab.violations.is_empty(), "{:#?}", h.fab.violations);
    // Everybody else keeps the LID; the lost CA is no longer routed.
    let mut now_lids = fabric_lids(&h.fab);
    now_lids.insert((4, 1), lost_lid);
    assert_eq!(now_lids, before);
    assert_eq!(h.sm.subnet().nodes().len(), h.fab.nodes.len() - 1);
    for n in h.fab.nodes.iter().filter(|n| n.switch) {
        assert_eq!(n.lft[usize::from(lost_lid)], NO_ROUTE, "{}", n.desc);
    }
    // Only the LFT block holding the lost LID changed (one per switch),
    // and the leaf's PortStateChange was cleared.
    let resweep_sets = &h.fab.sets[first_sets..];
    let lft_sets = resweep_sets
        .iter()
        .filter(|(a, _, m)| *a == AttributeId::LINEAR_FWD_TABLE && *m == 0)
        .count();
    assert_eq!(lft_sets, 5, "{resweep_sets:?}");
    assert!(resweep_sets.contains(&(AttributeId::SWITCH_INFO, leaf, 0)));
    assert_eq!(resweep_sets.len(), 6, "{resweep_sets:?}");
    assert!(!h.fab.nodes[leaf].port_change);

    // The link comes back: same LID as before, Active again, routed.
    let sets_before = h.fab.sets.len();
    let traps = h.fab.set_link(leaf, leaf_port, true);
    for (t, src) in &traps {
        h.sm.handle_recv(h.now, t, src);
    }
    assert!(h.run_until(Duration::from_secs(60), |e| *e == SmEvent::SubnetUp));
    assert!(h.fab.violations.is_empty(), "{:#?}", h.fab.violations);
    assert_eq!(fabric_lids(&h.fab), before);
    check_configured(&h);
    // Arm + Active on both link ends, the CA's LID, 5 LFT blocks.
    let back: Vec<_> = h.fab.sets[sets_before..].to_vec();
    let port_sets = back
        .iter()
        .filter(|(a, _, _)| *a == AttributeId::PORT_INFO)
        .count();
    assert_eq!(port_sets, 4, "{back:?}");
}

#[test]
fn a_trap_before_start_is_repressed_but_starts_no_sweep() {
    let mut h = Harness::new(Fabric::ibsim_net(), SmConfig::default());
    h.sm.handle_recv(h.now, &fake::trap128(7), &Address::smi(7));
    let (rep, to) = h.sm.poll_transmit(h.now).expect("TrapRepress");
    let head = mad_testkit_wire::header::of(&rep);
    assert_eq!((head.method, head.response), (Method::TRAP_REPRESS, false));
    assert_eq!(to.lid, 7);
    assert!(!h.sm.is_sweeping());
    assert!(h.sm.poll_transmit(h.now).is_none());
    assert_eq!(
        h.sm.poll_event(),
        Some(SmEvent::Trap {
            number: Some(128),
            issuer_lid: 7
        })
    );
}

#[test]
fn lost_and_duplicated_answers_are_retried_and_ignored() {
    let mut h = Harness::new(
        Fabric::fat_tree(3, 2, 4),
        SmConfig {
            timeout: Duration::from_millis(5),
            retries: 8,
            ..SmConfig::default()
        },
    );
    h.drop_pct = 20;
    h.dup_pct = 20;
    h.max_latency_us = 3000;
    h.bring_up();
    check_configured(&h);
    match h.last_sweep() {
        SmEvent::SweepDone {
            retries, errors, ..
        } => {
            assert!(*retries > 0);
            assert_eq!(*errors, 0);
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn never_more_smps_outstanding_than_the_window() {
    let mut h = Harness::new(
        Fabric::fat_tree(4, 2, 6),
        SmConfig {
            max_in_flight: 5,
            ..SmConfig::default()
        },
    );
    h.max_latency_us = 500;
    h.bring_up();
    check_configured(&h);
    assert_eq!(h.max_inflight, 5);
}

#[test]
fn sets_are_made_as_the_window_frees_not_queued_all_at_once() {
    // 8 leaves x 24 CAs: 200+ LIDs, 4 LFT blocks on each of 12 switches,
    // 200+ ports to arm and activate.
    let mut h = Harness::new(Fabric::fat_tree(8, 4, 24), SmConfig::default());
    h.bring_up();
    check_configured(&h);
    let count = |attr| h.fab.sets.iter().filter(|(a, _, _)| *a == attr).count();
    assert_eq!(
        count(AttributeId::LINEAR_FWD_TABLE),
        12 * 4,
        "{:?}",
        h.fab.sets
    );
    assert!(count(AttributeId::PORT_INFO) > 400, "{:?}", h.fab.sets);
    assert!(
        h.max_sets_queued <= 1,
        "{} PortInfo / LFT Sets queued at once",
        h.max_sets_queued
    );
}

#[test]
fn answers_whose_low_tid_bits_differ_are_not_taken() {
    let mut h = Harness::new(
        Fabric::ibsim_net(),
        SmConfig {
            retries: 1,
            error_resweep_delay: None,
            ..SmConfig::default()
        },
    );
    h.corrupt_tid = true;
    h.sm.start(h.now);
    assert!(!h.run_until(Duration::from_secs(10), |e| *e == SmEvent::SubnetUp));
    let errs = h.errors();
    assert!(matches!(
        errs[0],
        SmError::Timeout {
            attr: AttributeId::NODE_INFO,
            tries: 2,
            ..
        }
    ));
    assert!(errs.contains(&&SmError::LocalUnreachable));
    assert_eq!(h.sm.sm_info().sm_state, SmState::DISCOVERING);
    assert!(!h.sm.is_sweeping());
    assert_eq!(h.sm.poll_timeout(), None, "no resweep without a delay");
}

#[test]
fn a_sweep_with_errors_raises_no_subnet_up_and_is_repeated_later() {
    let mut h = Harness::new(
        Fabric::ibsim_net(),
        SmConfig {
            retries: 0,
            timeout: Duration::from_millis(10),
            error_resweep_delay: Some(Duration::from_millis(500)),
            ..SmConfig::default()
        },
    );
    h.drop_pct = 100;
    h.sm.start(h.now);
    assert!(!h.run_until(Duration::from_millis(100), |e| *e == SmEvent::SubnetUp));
    assert!(h.errors().contains(&&SmError::LocalUnreachable));
    let t0 = h.now;
    assert_eq!(h.sm.poll_timeout(), Some(t0 + Duration::from_millis(500)));
    // The fabric heals; the repeated sweep brings it up.
    h.drop_pct = 0;
    assert!(h.run_until(Duration::from_secs(5), |e| *e == SmEvent::SubnetUp));
    check_configured(&h);
}

#[test]
fn more_ports_than_unicast_lids_is_reported_once_and_not_reswept_by_itself() {
    // Two LIDs left above 0xBFFD for four LID-bearing ports.
    let cfg = SmConfig {
        first_lid: 0xBFFE,
        honor_existing_lids: false,
        ..SmConfig::default()
    };
    let mut h = Harness::new(Fabric::ibsim_net(), cfg);
    h.sm.start(h.now);
    assert!(!h.run_until(Duration::from_secs(600), |e| *e == SmEvent::SubnetUp));
    let sweeps = h
        .events
        .iter()
        .filter(|e| matches!(e, SmEvent::SweepDone { .. }))
        .count();
    assert_eq!(sweeps, 1, "{:#?}", h.events);
    assert!(
        h.errors()
            .iter()
            .any(|e| matches!(e, SmError::LidsExhausted { ports: 2 })),
        "{:#?}",
        h.errors()
    );
    assert_eq!(h.sm.poll_timeout(), None);
}

#[test]
fn ports_already_configured_keep_their_lids_and_are_not_rearmed() {
    let mut f = Fabric::ibsim_net();
    // Hca1 already holds LID 9 and both ends of its link are Active.
    f.nodes[2].ports[1].lid = 9;
    f.nodes[2].ports[1].state = PortState::ACTIVE;
    f.nodes[0].ports[1].state = PortState::ACTIVE;
    // One end of the first inter-switch link is Armed already.
    f.nodes[0].ports[3].state = PortState::ARMED;
    let h = Harness::up(f);
    assert_eq!(h.fab.nodes[2].ports[1].lid, 9);
    let lids: BTreeSet<u16> = fabric_lids(&h.fab).values().copied().collect();
    assert_eq!(lids, BTreeSet::from([1, 2, 3, 9]));
    for (n, p) in [(0, 1), (2, 1), (0, 3), (1, 3)] {
        assert_eq!(h.fab.nodes[n].ports[p].state, PortState::ACTIVE);
    }
}

#[test]
fn without_honoring_existing_lids_they_are_reassigned_from_one() {
    let mut f = Fabric::ibsim_net();
    f.nodes[2].ports[1].lid = 9;
    let mut h = Harness::new(
        f,
        SmConfig {
            honor_existing_lids: false,
            ..SmConfig::default()
        },
    );
    h.bring_up();
    check_configured(&h);
}

fn sm_info_request(class: MgmtClass, method: Method, key: u64) -> Vec<u8> {
    let directed = class == MgmtClass::SUBN_DIRECTED_ROUTE;
    let mut m = mad_testkit_wire::MadBuilder::new(class, 1, method, AttributeId::SM_INFO)
        .tid(0x0005_0000_0000_7777)
        .class_specific(u16::from(directed)) // hop pointer 0, one hop
        .to_vec();
    if directed {
        m[32..36].copy_from_slice(&[0xFF; 4]);
        m[129] = 1;
        m[193] = 3;
    }
    m[72..80].copy_from_slice(&key.to_be_bytes());
    m
}

#[test]
fn sminfo_get_is_answered_with_guid_priority_state_and_activity() {
    let mut h = Harness::new(
        Fabric::ibsim_net(),
        SmConfig {
            priority: 7,
            sm_key: 0x1234,
            hide_sm_key: true,
            ..SmConfig::default()
        },
    );
    // Before start: NotActive.
    h.sm.handle_recv(
        h.now,
        &sm_info_request(MgmtClass::SUBN_LID_ROUTED, Method::GET, 0),
        &Address::smi(5),
    );
    let (rep, _) = h.sm.poll_transmit(h.now).unwrap();
    let s = SmInfo::parse(&rep[64..]).unwrap();
    assert_eq!(s.sm_state, SmState::NOT_ACTIVE);

    h.bring_up();
    let guid = h.fab.nodes[0].guid;
    // LID-routed Get from LID 3 without the key.
    h.sm.handle_recv(
        h.now,
        &sm_info_request(MgmtClass::SUBN_LID_ROUTED, Method::GET, 0),
        &Address::smi(3),
    );
    let (rep, to) = h.sm.poll_transmit(h.now).unwrap();
    assert_eq!((to.lid, to.qpn), (3, 0));
    let r = Smp::new_checked(&rep[..]).unwrap();
    assert_eq!(r.method(), Method::GET);
    assert!(r.response_bit());
    assert_eq!(r.mad().status().0, 0);
    assert_eq!(r.tid(), 0x0005_0000_0000_7777);
    let s = SmInfo::parse(r.data()).unwrap();
    assert_eq!(s.guid, guid);
    assert_eq!(s.priority, 7);
    assert_eq!(s.sm_state, SmState::MASTER);
    assert_eq!(s.sm_key, 0, "SM_Key hidden from a requester without it");
    assert!(s.act_count > 0);
    // Directed-route Get presenting the key, from no SM a sweep found:
    // an SM starting up, so the master sweeps (it may be better), and
    // holds the answer while it discovers (at most 100 ms). Answered
    // returning, DR.
    h.sm.handle_recv(
        h.now,
        &sm_info_request(MgmtClass::SUBN_DIRECTED_ROUTE, Method::GET, 0x1234),
        &Address::smi(PERMISSIVE_LID),
    );
    assert!(h.sm.is_sweeping(), "an unknown SM's Get starts a sweep");
    while let Some((m, _)) = h.sm.poll_transmit(h.now) {
        let smp = Smp::new_checked(&m[..]).unwrap();
        assert!(!smp.response_bit(), "answered before 100 ms");
    }
    h.now += Duration::from_millis(100);
    h.sm.handle_timeout(h.now);
    let (rep, to) = h.sm.poll_transmit(h.now).unwrap();
    assert_eq!(to.lid, PERMISSIVE_LID);
    let r = Smp::new_checked(&rep[..]).unwrap();
    assert!(r.direction(), "D bit set");
    assert_eq!(r.dr_status(), 0);
    assert_eq!(r.return_path()[1], 3, "return path kept");
    let s2 = SmInfo::parse(r.data()).unwrap();
    assert_eq!(s2.sm_key, 0x1234);
    assert!(s2.act_count > s.act_count, "ActCount advances");
}

#[test]
fn other_requests_to_the_sm_get_an_unsupported_status() {
    let mut h = Harness::new(Fabric::ibsim_net(), SmConfig::default());
    let mut req = sm_info_request(MgmtClass::SUBN_LID_ROUTED, Method::GET, 0);
    req[16..18].copy_from_slice(&AttributeId::NODE_INFO.0.to_be_bytes());
    h.sm.handle_recv(h.now, &req, &Address::smi(2));
    let (rep, to) = h.sm.poll_transmit(h.now).unwrap();
    assert_eq!(to.lid, 2);
    let r = Smp::new_checked(&rep[..]).unwrap();
    assert!(r.response_bit());
    assert_eq!(
        r.mad().status(),
        mad_core::wire::MadStatus::METHOD_ATTR_UNSUPPORTED
    );
    // Garbage and non-SMP classes are ignored.
    h.sm.handle_recv(h.now, &[1, 2, 3], &Address::smi(2));
    let mut gsi = req.clone();
    gsi[1] = MgmtClass::PERF_MGT.0;
    h.sm.handle_recv(h.now, &gsi, &Address::smi(2));
    assert!(h.sm.poll_transmit(h.now).is_none());
}

#[test]
fn a_switch_whose_table_is_too_small_is_reported() {
    let mut f = Fabric::fat_tree(2, 1, 40);
    for n in f.nodes.iter_mut().filter(|n| n.switch) {
        n.fdb_cap = 64;
    }
    let mut h = Harness::new(f, SmConfig::default());
    h.sm.start(h.now);
    assert!(!h.run_until(Duration::from_secs(10), |e| *e == SmEvent::SubnetUp));
    // Not swept again by itself: the tables stay too small.
    assert_eq!(h.sm.poll_timeout(), None);
    assert!(h.errors().iter().any(|e| matches!(
        e,
        SmError::FdbCap {
            cap: 64,
            max_lid: 83,
            ..
        }
    )));
}
