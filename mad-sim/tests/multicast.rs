//! Multicast on the built-in fabric: joins and leaves through the SA make
//! SM-lite program the switches' MulticastForwardingTables along a
//! spanning tree, and the fabric forwards a packet to a multicast LID to
//! each member exactly once (the default topology has a loop through the
//! two spines), never to a non-member; a leave prunes the tree.
#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use common::{client, drain, gsi_mad, sim_rpc, Client, Req};
use mad_core::transport::{Address, Qp, Transport};
use mad_core::wire::attr::{MulticastFwdTable, SwitchInfo};
use mad_core::wire::sa_records::{McMemberRecord, MftRecord};
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass, Repr};
use mad_sim::fabric::DropReason;
use mad_sim::{SimPort, Subnet};
use mad_sm::{mcast_tables, McGroup, SmEvent};

fn port_gid(s: &Subnet, node: &str) -> [u8; 16] {
    let n = s.fabric().find(node).unwrap();
    let guid = s.fabric().nodes()[n].node_guid + 1;
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
    g[8..].copy_from_slice(&guid.to_be_bytes());
    g
}

/// The full-member record of `node`'s port 1 in `mgid`, and the
/// components a join or leave names.
fn membership(s: &Subnet, node: &str, mgid: [u8; 16]) -> (McMemberRecord, u64) {
    let r = McMemberRecord {
        mgid,
        port_gid: port_gid(s, node),
        join_state: 1,
        ..McMemberRecord::default()
    };
    let mask =
        McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE;
    (r, mask)
}

fn join(c: &Client, s: &Subnet, node: &str, mgid: [u8; 16]) -> McMemberRecord {
    let (r, mask) = membership(s, node, mgid);
    c.sa.set(&r, mask).unwrap()
}

fn leave(c: &Client, s: &Subnet, node: &str, mgid: [u8; 16]) {
    let (r, mask) = membership(s, node, mgid);
    c.sa.delete(&r, mask).unwrap();
}

/// Waits until SM-lite has taken the SA's groups and written them (it
/// programs asynchronously, as a real SM does: the SA answers a join
/// before the switches are written).
fn settle(s: &Subnet) {
    for _ in 0..10_000 {
        s.fabric().pump();
        let want = s.sa().unwrap().mc_groups();
        if s.with_sm(|sm| sm.mcast_groups() == want.as_slice() && !sm.is_sweeping()) {
            return;
        }
        std::thread::yield_now();
    }
    panic!("SM-lite did not take the SA's groups");
}

/// Sends one GSI MAD from `from` to `mlid` and returns how many copies
/// each of `to` received.
fn send_and_count(s: &Subnet, from: &mut SimPort, mlid: u16, to: &mut [SimPort]) -> Vec<usize> {
    settle(s);
    for t in to.iter_mut() {
        drain(t);
    }
    let mad = gsi_mad(0x0A, 1, Method::SEND, 0x0010, 0x4D43);
    let a = Address::gsi(mlid);
    from.post_send(Qp::Qp1, &mad, &a).unwrap();
    s.fabric().pump();
    to.iter_mut().map(|t| drain(t).len()).collect()
}

#[test]
fn joins_program_a_tree_that_reaches_each_member_once_and_a_leave_prunes_it() {
    let s = Subnet::builtin().unwrap();
    let c = client(&s, "host-8");
    let first = join(&c, &s, "host-2", [0; 16]);
    let mlid = first.mlid;
    assert!(
        (0xC001..0xFFFF).contains(&mlid),
        "a new group's MLID {mlid:#x}"
    );
    join(&c, &s, "host-5", first.mgid);
    join(&c, &s, "host-6", first.mgid);

    // SM-lite programmed what the SA's members ask for.
    settle(&s);
    let groups = s.with_sm(|sm| sm.mcast_groups().to_vec());
    let g = groups.iter().find(|g| g.mlid == mlid).unwrap();
    assert_eq!(g.members.len(), 3);
    // The SA serves the MFT blocks in use: leaf-1, one spine, leaf-2.
    let mftr = c.sa.all::<MftRecord>().unwrap().records;
    assert_eq!(mftr.len(), 3, "{mftr:?}");
    let entry = usize::from(mlid - 0xC000) % MulticastFwdTable::ENTRIES;
    assert!(mftr.iter().all(|r| r.mft.masks[entry] != 0));

    let mut sender = s.attach("host-3", 1).unwrap();
    let mut rx: Vec<SimPort> = ["host-2", "host-5", "host-6", "host-4", "host-7"]
        .iter()
        .map(|n| s.attach(*n, 1).unwrap())
        .collect();
    // host-3 is not a member but on a tree switch: the members get one
    // copy each (no duplicate through the second spine), the others none.
    assert_eq!(
        send_and_count(&s, &mut sender, mlid, &mut rx),
        [1, 1, 1, 0, 0]
    );
    // A member sends: the others get it, not itself.
    let (a, rest) = rx.split_at_mut(1);
    assert_eq!(send_and_count(&s, &mut a[0], mlid, rest), [1, 1, 0, 0]);

    // host-5 and host-6 leave: leaf-2 and the spine drop out of the tree.
    leave(&c, &s, "host-5", first.mgid);
    leave(&c, &s, "host-6", first.mgid);
    assert_eq!(
        send_and_count(&s, &mut sender, mlid, &mut rx),
        [1, 0, 0, 0, 0]
    );
    let mftr = c.sa.all::<MftRecord>().unwrap().records;
    assert_eq!(mftr.len(), 1, "only leaf-1 still forwards: {mftr:?}");

    // An MLID nobody joined goes nowhere: counted as a multicast drop.
    let before = s.fabric().stats().dropped(DropReason::Multicast);
    assert_eq!(send_and_count(&s, &mut sender, 0xC0FE, &mut rx), [0; 5]);
    assert!(s.fabric().stats().dropped(DropReason::Multicast) > before);
}

#[test]
fn the_ipoib_broadcast_group_exists_from_the_start_without_members() {
    let s = Subnet::builtin().unwrap();
    let c = client(&s, "host-8");
    let recs = c.sa.all::<McMemberRecord>().unwrap().records;
    assert_eq!(recs.len(), 1, "{recs:?}");
    let b = &recs[0];
    assert_eq!(b.mlid, 0xC000);
    assert_eq!(
        b.mgid,
        [0xFF, 0x12, 0x40, 0x1B, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]
    );
    assert_eq!((b.port_gid, b.join_state, b.qkey), ([0; 16], 0, 0x0B1B));
    assert!(c.sa.all::<MftRecord>().unwrap().records.is_empty());
    // Joining it gives its MLID, and leaving keeps the group.
    let j = join(&c, &s, "host-3", b.mgid);
    assert_eq!((j.mlid, j.qkey), (0xC000, 0x0B1B));
    assert_eq!(c.sa.all::<McMemberRecord>().unwrap().records.len(), 1);
    leave(&c, &s, "host-3", b.mgid);
    let recs = c.sa.all::<McMemberRecord>().unwrap().records;
    assert_eq!((recs.len(), recs[0].join_state), (1, 0));
}

#[test]
fn the_tree_spans_only_the_switches_between_members() {
    let s = Subnet::builtin().unwrap();
    let (tables, sub) = s.with_sm(|sm| {
        let sub = sm.subnet().clone();
        let guid = |name: &str| {
            let n = s.fabric().find(name).unwrap();
            s.fabric().nodes()[n].node_guid + 1
        };
        let groups = [
            McGroup {
                mlid: 0xC010,
                members: vec![guid("host-1"), guid("host-2")],
            },
            McGroup {
                mlid: 0xC011,
                members: vec![guid("host-1"), guid("host-8")],
            },
        ];
        (mcast_tables(&sub, &groups), sub)
    });
    let name = |i: usize| sub.nodes()[i].desc.split(' ').next().unwrap().to_owned();
    let of = |mlid: u16| -> Vec<(String, Vec<u8>)> {
        tables
            .iter()
            .filter_map(|(i, m)| Some((name(*i), m.get(&mlid)?.iter().copied().collect())))
            .collect()
    };
    // Two hosts on one leaf: that leaf only.
    assert_eq!(of(0xC010), [("leaf-1".to_owned(), vec![1, 2])]);
    // Across the fabric: both leaves and exactly one spine.
    let across = of(0xC011);
    assert_eq!(across.len(), 3, "{across:?}");
    assert!(
        across
            .iter()
            .filter(|(n, _)| n.starts_with("spine"))
            .count()
            == 1
    );
    assert!(across.contains(&("leaf-2".to_owned(), vec![4, across_port(&across)])));
}

/// The uplink port leaf-2 uses in `t` (7 to spine-1, 8 to spine-2).
fn across_port(t: &[(String, Vec<u8>)]) -> u8 {
    if t.iter().any(|(n, _)| n == "spine-1") {
        7
    } else {
        8
    }
}

#[test]
fn the_sa_serves_the_programmed_mft_block_of_a_leaf() {
    let s = Subnet::builtin().unwrap();
    let c = client(&s, "host-8");
    let first = join(&c, &s, "host-1", [0; 16]);
    join(&c, &s, "host-4", first.mgid);
    let recs = c.sa.all::<MftRecord>().unwrap().records;
    let r = &recs[0];
    let entry = usize::from(first.mlid - 0xC000) % MulticastFwdTable::ENTRIES;
    // leaf-1: ports 1 and 4.
    assert_eq!(r.mft.masks[entry], (1 << 1) | (1 << 4));
    assert_eq!(r.to_vec().unwrap().len(), 72);
}

/// A hostile MFT: every switch of the default topology (whose spines
/// make loops) forwards MLID 0xC005 to every port. A packet to it ends
/// (each copy's hop limit, and a bound on the copies in all), counted as
/// hop-limit drops, and the members receive a bounded number of copies.
#[test]
fn an_mft_with_loops_ends_with_bounded_copies() {
    let s = Subnet::builtin().unwrap();
    let mut ep = s.attach("host-3", 1).unwrap();
    let mut masks = [0u16; 32];
    masks[5] = 0x01FE;
    let mft = MulticastFwdTable { masks }.to_vec().unwrap();
    for hops in [&[1u8][..], &[1, 7], &[1, 8], &[1, 7, 2]] {
        let (st, _) = sim_rpc(
            &mut ep,
            &Req::set(hops, AttributeId::MCAST_FWD_TABLE, 0, &mft),
        )
        .unwrap();
        assert_eq!(st, 0);
        let (_, si) = sim_rpc(&mut ep, &Req::get(hops, AttributeId::SWITCH_INFO, 0)).unwrap();
        let mut si = SwitchInfo::parse(&si).unwrap();
        si.multicast_fdb_top = 0xC01F;
        let b = si.to_vec().unwrap();
        assert_eq!(
            sim_rpc(&mut ep, &Req::set(hops, AttributeId::SWITCH_INFO, 0, &b))
                .unwrap()
                .0,
            0
        );
    }
    let mut rx: Vec<SimPort> = ["host-2", "host-6"]
        .iter()
        .map(|n| s.attach(*n, 1).unwrap())
        .collect();
    let before = s.fabric().stats().dropped(DropReason::HopLimit);
    let got = send_and_count(&s, &mut ep, 0xC005, &mut rx);
    assert!(s.fabric().stats().dropped(DropReason::HopLimit) > before);
    assert!(got.iter().all(|n| (1..=1025).contains(n)), "{got:?}");
}

/// A change of membership rewrites only what changed, without a sweep:
/// the first member on a leaf costs that leaf's MFT block and its
/// MulticastFDBTop; the same join again costs nothing; a second member on
/// the same leaf one block; a re-sweep of the unchanged subnet no MFT.
#[test]
fn a_join_rewrites_only_the_blocks_that_changed_and_starts_no_sweep() {
    let s = Subnet::builtin().unwrap();
    let c = client(&s, "host-8");
    let status = || {
        settle(&s);
        s.sm_status()
    };
    let st0 = status();
    let first = join(&c, &s, "host-2", [0; 16]);
    let st1 = status();
    assert_eq!(st1.sweeps, st0.sweeps, "no sweep");
    assert_eq!(
        st1.smps_sent - st0.smps_sent,
        2,
        "one MFT block and one SwitchInfo"
    );
    join(&c, &s, "host-2", first.mgid);
    assert_eq!(status().smps_sent, st1.smps_sent, "nothing changed");
    join(&c, &s, "host-3", first.mgid);
    let st2 = status();
    assert_eq!(st2.smps_sent - st1.smps_sent, 1, "one MFT block");
    s.resweep();
    let st3 = status();
    assert_eq!(st3.sweeps, st2.sweeps + 1);
    let events = s.take_sm_events();
    let last = events
        .iter()
        .rev()
        .find_map(|e| match e {
            SmEvent::SweepDone { sets, errors, .. } => Some((*sets, *errors)),
            _ => None,
        })
        .unwrap();
    assert_eq!(last, (0, 0), "the re-sweep sets nothing: {events:?}");
    // Members still receive after the re-sweep.
    let mut sender = s.attach("host-4", 1).unwrap();
    let mut rx: Vec<SimPort> = ["host-2", "host-3"]
        .iter()
        .map(|n| s.attach(*n, 1).unwrap())
        .collect();
    assert_eq!(send_and_count(&s, &mut sender, first.mlid, &mut rx), [1, 1]);
}

/// MFT Sets lost on the wire: SM-lite resends them, reports the error
/// when they stay lost, and a re-sweep (scheduled for the error) writes
/// them once the link carries them again; then the members receive.
#[test]
fn lost_mft_sets_are_written_by_the_re_sweep_after_the_error() {
    let s = Subnet::builtin().unwrap();
    let c = client(&s, "host-8");
    s.fabric()
        .set_link_filter(Some(Box::new(|x: &mad_sim::fabric::LinkCrossing<'_>| {
            // SubnSet(MulticastForwardingTable) requests, directed route.
            let h = Mad::new_unchecked(x.mad);
            let mft = h.mgmt_class() == MgmtClass::SUBN_DIRECTED_ROUTE
                && h.raw_method() == Method::SET.0
                && h.attr_id() == AttributeId::MCAST_FWD_TABLE;
            if mft {
                mad_sim::fabric::LinkVerdict::Drop
            } else {
                mad_sim::fabric::LinkVerdict::Pass
            }
        })));
    let first = join(&c, &s, "host-2", [0; 16]);
    join(&c, &s, "host-6", first.mgid);
    // Past every retry: the Sets fail. SM-lite takes the SA's groups
    // asynchronously, so advance until the error shows (at most 30 s of
    // virtual time; a fixed 3 s failed about one run in twenty).
    let mut errors = Vec::new();
    for _ in 0..100 {
        s.fabric().advance(std::time::Duration::from_millis(300));
        errors.extend(s.take_sm_events());
        if errors.iter().any(|e| matches!(e, SmEvent::Error(_))) {
            break;
        }
    }
    assert!(
        errors.iter().any(|e| matches!(e, SmEvent::Error(_))),
        "{errors:?}"
    );
    s.fabric().set_link_filter(None);
    for _ in 0..10 {
        s.fabric().advance(std::time::Duration::from_millis(300));
    }
    let mut sender = s.attach("host-4", 1).unwrap();
    let mut rx: Vec<SimPort> = ["host-2", "host-6", "host-7"]
        .iter()
        .map(|n| s.attach(*n, 1).unwrap())
        .collect();
    assert_eq!(
        send_and_count(&s, &mut sender, first.mlid, &mut rx),
        [1, 1, 0]
    );
}
