//! `Subnet`: the built-in fabric brought up by SM-lite with the SA at the
//! SM's port; an SA client elsewhere on the fabric (the mad-agents stack
//! over a `SimPort`) gets every record type, checked against the fabric
//! itself; services and multicast members register and go; a subscriber
//! gets a Report of Trap 128 when a cable is pulled; the SA follows
//! re-sweeps.
#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::client;
use mad_agents::sa::SaError;
use mad_core::wire::attr::{trap, NodeType, PortState, SmState};
use mad_core::wire::sa_records::{
    GuidInfoRecord, InformInfo, LftRecord, LinkRecord, McMemberRecord, NodeRecord, PKeyTableRecord,
    PathRecord, PortInfoRecord, ServiceRecord, Sl2VlRecord, SmInfoRecord, SwitchInfoRecord,
    VlArbRecord,
};
use mad_sim::topology::NodeKind;
use mad_sim::{Fabric, Subnet};

/// (LID, node GUID, port GUID) of every LID-bearing port, from the fabric.
fn fabric_lids(f: &Fabric) -> BTreeSet<(u16, u64, u64)> {
    let mut v = BTreeSet::new();
    for n in f.nodes() {
        if n.kind == NodeKind::Switch {
            v.insert((
                f.port_info(n.index, 0).unwrap().lid,
                n.node_guid,
                n.node_guid,
            ));
        } else {
            for p in 1..=n.num_ports {
                let lid = f.port_info(n.index, p).unwrap().lid;
                if lid != 0 {
                    v.insert((lid, n.node_guid, n.node_guid + u64::from(p)));
                }
            }
        }
    }
    v
}

fn lid(f: &Fabric, node: &str) -> u16 {
    f.port_info(f.find(node).unwrap(), 1).unwrap().lid
}

#[test]
fn the_sa_answers_every_record_type_from_sm_lites_view() {
    let s = Subnet::builtin().unwrap();
    let f = s.fabric().clone();
    let c = client(&s, "host-2");
    let sa = &c.sa;
    assert_eq!(sa.sm_address().lid, s.sm_lid());

    // NodeRecords: one per LID-bearing port, LIDs and GUIDs as the fabric has them.
    let nodes = sa.all::<NodeRecord>().unwrap().records;
    assert_eq!(nodes.len(), 12);
    let got: BTreeSet<_> = nodes
        .iter()
        .map(|r| (r.lid, r.node_info.node_guid, r.node_info.port_guid))
        .collect();
    assert_eq!(got, fabric_lids(&f));
    let h8 = nodes.iter().find(|r| r.lid == lid(&f, "host-8")).unwrap();
    assert_eq!(h8.node_desc.text(), "host-8 HCA-1");
    assert_eq!(h8.node_info.node_type, NodeType::CA);
    assert_eq!(h8.node_info.local_port_num, 1);
    assert_eq!(sa.node_record(lid(&f, "host-8")).unwrap(), *h8);

    // PortInfoRecords: every switch port (4 x 9) and each cabled CA port.
    let pirs = sa.all::<PortInfoRecord>().unwrap().records;
    assert_eq!(pirs.len(), 4 * 9 + 8);
    for r in &pirs {
        let (node, port) = if r.port_num == 0 || pirs.iter().filter(|x| x.lid == r.lid).count() > 1
        {
            let sw = f
                .nodes()
                .into_iter()
                .find(|n| {
                    n.kind == NodeKind::Switch && f.port_info(n.index, 0).unwrap().lid == r.lid
                })
                .unwrap();
            (sw.index, r.port_num)
        } else {
            let n = f
                .nodes()
                .into_iter()
                .find(|n| n.kind == NodeKind::Ca && f.port_info(n.index, 1).unwrap().lid == r.lid)
                .unwrap();
            (n.index, r.port_num)
        };
        let truth = f.port_info(node, port).unwrap();
        assert_eq!(
            r.port_info.port_state, truth.port_state,
            "LID {} port {}",
            r.lid, r.port_num
        );
        assert_eq!(r.port_info.port_phys_state, truth.port_phys_state);
        if r.port_num == 0 || f.node(node).unwrap().kind == NodeKind::Ca {
            assert_eq!(r.port_info.lid, truth.lid);
            assert_eq!(r.port_info.master_sm_lid, s.sm_lid());
        }
    }
    let active_ca = sa.port_info_records(lid(&f, "host-5")).unwrap().records;
    assert_eq!(active_ca.len(), 1);
    assert_eq!(active_ca[0].port_info.port_state, PortState::ACTIVE);

    // SwitchInfo: 4 switches, LinearFDBTop = the highest LID.
    let sw = sa.all::<SwitchInfoRecord>().unwrap().records;
    assert_eq!(sw.len(), 4);
    assert!(sw.iter().all(|r| r.switch_info.linear_fdb_top == 12));

    // Links: 12 cables, each both ways.
    let links = sa.all::<LinkRecord>().unwrap().records;
    assert_eq!(links.len(), 24);
    for l in &links {
        assert!(links.iter().any(|m| m.from_lid == l.to_lid
            && m.from_port == l.to_port
            && m.to_port == l.from_port));
    }

    // LFTs: one block per switch (LIDs 1-12), entries as the switches hold them.
    let lfts = sa.all::<LftRecord>().unwrap().records;
    assert_eq!(lfts.len(), 4);
    for r in &lfts {
        let swn = f
            .nodes()
            .into_iter()
            .find(|n| n.kind == NodeKind::Switch && f.port_info(n.index, 0).unwrap().lid == r.lid)
            .unwrap();
        // Port 0 for its own LID.
        assert_eq!(r.lft.ports[usize::from(r.lid)], 0, "switch {}", swn.id);
    }

    // PathRecords: host-2 -> host-8 crosses leaf, spine, leaf.
    let p = sa
        .path_record(lid(&f, "host-2"), lid(&f, "host-8"))
        .unwrap();
    assert_eq!(
        (p.slid, p.dlid, p.pkey),
        (lid(&f, "host-2"), lid(&f, "host-8"), 0xFFFF)
    );
    assert_eq!(
        &p.sgid[8..],
        &(f.node(f.find("host-2").unwrap()).unwrap().node_guid + 1).to_be_bytes()
    );
    assert!(p.reversible);
    assert_eq!(p.mtu, 4, "2048, every port's MTUCap");
    assert_eq!(p.rate, 3, "4X SDR = 10 Gb/s");
    let all_from_h2 = sa
        .get_table(
            &PathRecord {
                slid: lid(&f, "host-2"),
                ..PathRecord::default()
            },
            PathRecord::COMP_SLID,
        )
        .unwrap()
        .records;
    assert_eq!(all_from_h2.len(), 12, "to every LID, itself included");

    // GUIDInfo, P_Key tables, SL2VL, VLArb, SMInfo.
    let g = sa.all::<GuidInfoRecord>().unwrap().records;
    assert_eq!(g.len(), 12);
    assert!(g.iter().all(|r| fabric_lids(&f)
        .iter()
        .any(|(l, _, pg)| *l == r.lid && *pg == r.guid_info.guids[0])));
    let pk = sa.all::<PKeyTableRecord>().unwrap().records;
    // 12 LID-bearing ports + the cabled switch ports (2 x 6 + 2 x 2).
    assert_eq!(pk.len(), 12 + 16);
    assert!(pk.iter().all(|r| r.pkey_table.pkeys[0] == 0xFFFF));
    // SL2VL and VLArb by OpenSM's rules: one SL2VL per CA port and one
    // per (output, input) pair of a switch's ports, port 0 included;
    // blocks 1-4 of every CA port and of every switch port.
    let switch_ports: Vec<usize> = f
        .nodes()
        .iter()
        .filter(|n| n.kind == mad_sim::topology::NodeKind::Switch)
        .map(|n| usize::from(n.num_ports) + 1)
        .collect();
    let sl2vl = sa.all::<Sl2VlRecord>().unwrap().records;
    assert_eq!(
        sl2vl.len(),
        8 + switch_ports.iter().map(|p| p * p).sum::<usize>()
    );
    let vlarb = sa.all::<VlArbRecord>().unwrap().records;
    assert_eq!(vlarb.len(), (8 + switch_ports.iter().sum::<usize>()) * 4);
    // A CA's VLArb asked at port 0 is its own port's (OpenSM's reading).
    let h2 = lid(&f, "host-2");
    let t = sa
        .get_table(
            &VlArbRecord {
                lid: h2,
                output_port: 0,
                block_num: 1,
                ..VlArbRecord::default()
            },
            VlArbRecord::COMP_LID | VlArbRecord::COMP_OUTPUT_PORT | VlArbRecord::COMP_BLOCK_NUM,
        )
        .unwrap()
        .records;
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].lid, t[0].output_port, t[0].block_num), (h2, 1, 1));
    // A switch port's SL2VL for one input port.
    let sw = f.port_info(f.find("spine-1").unwrap(), 0).unwrap().lid;
    let t = sa
        .get_table(
            &Sl2VlRecord {
                lid: sw,
                input_port: 2,
                output_port: 1,
                ..Sl2VlRecord::default()
            },
            Sl2VlRecord::COMP_LID | Sl2VlRecord::COMP_INPUT_PORT | Sl2VlRecord::COMP_OUTPUT_PORT,
        )
        .unwrap()
        .records;
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].lid, t[0].input_port, t[0].output_port), (sw, 2, 1));
    let smi = sa.all::<SmInfoRecord>().unwrap().records;
    assert_eq!(smi.len(), 1);
    assert_eq!(smi[0].lid, s.sm_lid());
    assert_eq!(smi[0].sm_info.sm_state, SmState::MASTER);
    assert_eq!(smi[0].sm_info.guid, f.node(0).unwrap().node_guid + 1);

    // A Get that matches nothing, and the SA's ClassPortInfo.
    assert!(matches!(sa.node_record(999), Err(SaError::NoRecords)));
    assert_eq!(sa.class_port_info().unwrap().class_version, 2);
    assert!(
        s.sa_stats().unwrap().multi_segment > 0,
        "large tables went over RMPP"
    );
}

#[test]
fn services_and_multicast_members_are_registered_listed_and_deleted() {
    let s = Subnet::builtin().unwrap();
    let c = client(&s, "host-3");
    let sa = &c.sa;
    let mut name = [0u8; 64];
    name[..7].copy_from_slice(b"madtest");
    let svc = ServiceRecord {
        service_id: 0x1234,
        service_pkey: 0xFFFF,
        service_name: name,
        ..ServiceRecord::default()
    };
    assert_eq!(sa.set(&svc, ServiceRecord::COMP_SERVICE_ID).unwrap(), svc);
    let t = sa.all::<ServiceRecord>().unwrap().records;
    assert_eq!(t, vec![svc.clone()]);
    let got = sa
        .get(
            &ServiceRecord {
                service_name: name,
                ..ServiceRecord::default()
            },
            ServiceRecord::COMP_SERVICE_NAME,
        )
        .unwrap();
    assert_eq!(got.service_id, 0x1234);
    sa.delete(&svc, ServiceRecord::COMP_SERVICE_ID).unwrap();
    assert!(sa.all::<ServiceRecord>().unwrap().records.is_empty());
    assert!(matches!(
        sa.delete(&svc, ServiceRecord::COMP_SERVICE_ID),
        Err(SaError::RequestInvalid)
    ));

    let mut gid = [0u8; 16];
    gid[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
    gid[8..].copy_from_slice(&0x10_0009u64.to_be_bytes());
    let join = McMemberRecord {
        port_gid: gid,
        join_state: 1,
        qkey: 0x11,
        ..McMemberRecord::default()
    };
    let m = sa
        .set(
            &join,
            McMemberRecord::COMP_PORT_GID | McMemberRecord::COMP_JOIN_STATE,
        )
        .unwrap();
    assert_eq!(m.mlid, 0xC001);
    assert_ne!(m.mgid, [0u8; 16]);
    // The member, and the IPoIB broadcast group (no members: PortGID 0).
    let all = sa.all::<McMemberRecord>().unwrap().records;
    assert_eq!(all.len(), 2);
    assert!(all.iter().any(|r| r.port_gid == gid && r.mlid == 0xC001));
    sa.delete(
        &m,
        McMemberRecord::COMP_MGID | McMemberRecord::COMP_PORT_GID,
    )
    .unwrap();
    let all = sa.all::<McMemberRecord>().unwrap().records;
    assert_eq!(all.len(), 1);
    assert_eq!((all[0].mlid, all[0].port_gid), (0xC000, [0u8; 16]));
}

#[test]
fn a_subscriber_gets_a_report_of_trap_128_when_a_cable_is_pulled() {
    let s = Subnet::builtin().unwrap();
    let f = s.fabric().clone();
    let c = client(&s, "host-6");
    c.sa.subscribe(&InformInfo {
        lid_range_begin: InformInfo::LID_RANGE_ALL,
        is_generic: 1,
        trap_type: InformInfo::TYPE_ALL,
        trap_number_or_device_id: trap::LINK_STATE_CHANGE,
        producer_type_or_vendor_id: InformInfo::PRODUCER_TYPE_ALL,
        ..InformInfo::default()
    })
    .unwrap();
    assert_eq!(s.sa_responder().unwrap().subscribers().len(), 1);
    let leaf1 = f.find("leaf-1").unwrap();
    let leaf_lid = f.port_info(leaf1, 0).unwrap().lid;
    f.link_down("host-3", 1).unwrap();
    let r = c.sa.next_report(Duration::from_secs(5)).expect("a Report");
    assert_eq!(r.notice.trap_number(), Some(trap::LINK_STATE_CHANGE));
    assert_eq!(r.notice.issuer_lid, leaf_lid);
    assert_eq!(
        &r.notice.issuer_gid[8..],
        &f.node(leaf1).unwrap().node_guid.to_be_bytes()
    );
    // The SA's view followed the re-sweep: host-3 is gone, then back.
    assert_eq!(c.sa.all::<NodeRecord>().unwrap().records.len(), 11);
    f.link_up("host-3", 1).unwrap();
    assert!(c.sa.next_report(Duration::from_secs(5)).is_some());
    assert_eq!(c.sa.all::<NodeRecord>().unwrap().records.len(), 12);
}

#[test]
fn sa_clients_on_several_threads_keep_getting_tables_while_cables_flap() {
    let s = Subnet::builtin().unwrap();
    let f = s.fabric().clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut threads = Vec::new();
    for host in ["host-2", "host-4", "host-5", "host-7"] {
        let c = client(&s, host);
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            // The whole client (its runtime too) moves to the thread.
            let c = c;
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) || n == 0 {
                let t = c.sa.all::<NodeRecord>().unwrap().records.len();
                assert!(t == 11 || t == 12, "{t}");
                n += 1;
            }
            n
        }));
    }
    for _ in 0..20 {
        f.link_down("host-8", 1).unwrap();
        f.link_up("host-8", 1).unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for t in threads {
        assert!(t.join().unwrap() > 0);
    }
    let st = s.sm_status();
    assert_eq!(st.traps, 40);
    assert_eq!(st.lids, 12);
    assert!(st.up);
}

#[test]
fn trace_table_follows_the_fabrics_cables_from_every_host_to_every_other() {
    let s = Subnet::builtin().unwrap();
    let f = s.fabric().clone();
    let c = client(&s, "host-2");
    let hosts: Vec<_> = f
        .nodes()
        .into_iter()
        .filter(|n| n.kind != NodeKind::Switch && f.remote(n.index, 1).is_some())
        .collect();
    assert_eq!(hosts.len(), 8);
    let by_guid = |g: u64| f.nodes().into_iter().find(|n| n.node_guid == g).unwrap();
    let mask = PathRecord::COMP_SLID | PathRecord::COMP_DLID;
    for a in &hosts {
        for b in &hosts {
            let path = PathRecord {
                slid: lid(&f, &a.id),
                dlid: lid(&f, &b.id),
                ..PathRecord::default()
            };
            let t = c.sa.trace_table(&path, mask).unwrap().records;
            let (first, last) = (&t[0], &t[t.len() - 1]);
            assert_eq!((first.node_id, first.entry_port), (a.node_guid, 0));
            assert_eq!((last.node_id, last.exit_port), (b.node_guid, 0));
            if a.index == b.index {
                assert_eq!(t.len(), 1);
                continue;
            }
            assert_eq!(first.exit_port_id, a.node_guid + 1, "host port 1's GUID");
            for w in t.windows(2) {
                let (here, next) = (by_guid(w[0].node_id), by_guid(w[1].node_id));
                assert_eq!(
                    f.remote(here.index, w[0].exit_port),
                    Some(mad_sim::fabric::PortAddr {
                        node: next.index,
                        port: w[1].entry_port,
                    }),
                    "{} -> {}: hop {} port {}",
                    a.id,
                    b.id,
                    here.id,
                    w[0].exit_port
                );
                assert_eq!(w[0].chassis_id, here.system_image_guid);
            }
            for mid in &t[1..t.len() - 1] {
                assert_eq!(mid.node_type, NodeType::SWITCH.0);
            }
        }
    }
}

/// With LMC 2 ([`mad_sm::SmConfig::lmc`]) every CA port of the built-in
/// fabric holds four LIDs, the SA lists a PathRecord for each (SLID,
/// DLID) pair of two ports asked by GIDs (the four of equal path bits
/// first; the whole table over RMPP), one for a pair asked by LIDs, and
/// a NodeRecord / PortInfoRecord asked by any LID of a range (through the
/// responder's ComponentMask match) answers with the base LID and LMC 2.
#[test]
fn with_lmc_2_the_sa_lists_a_path_per_lid_pair_and_finds_ports_by_any_lid_of_a_range() {
    let mut opts = mad_sim::SubnetOptions::default();
    opts.sm.lmc = 2;
    let s = Subnet::load(None, opts).unwrap();
    let f = s.fabric().clone();
    let (h2, h8) = (f.find("host-2").unwrap(), f.find("host-8").unwrap());
    for h in [h2, h8] {
        let pi = f.port_info(h, 1).unwrap();
        assert_eq!((pi.lmc, pi.lid % 4), (2, 0), "{pi:?}");
    }
    let c = client(&s, "host-2");
    let sa = &c.sa;
    let gid = |n: usize| {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        g[8..].copy_from_slice(&(f.node(n).unwrap().node_guid + 1).to_be_bytes());
        g
    };
    let (a, b) = (lid(&f, "host-2"), lid(&f, "host-8"));
    let paths = sa.path_records_by_gid(gid(h2), gid(h8)).unwrap().records;
    let pairs: Vec<(u16, u16)> = paths.iter().map(|p| (p.slid, p.dlid)).collect();
    assert_eq!(pairs.len(), 16, "{pairs:?}");
    assert_eq!(
        pairs[..4],
        [(a, b), (a + 1, b + 1), (a + 2, b + 2), (a + 3, b + 3)]
    );
    let distinct: BTreeSet<(u16, u16)> = pairs.iter().copied().collect();
    assert_eq!(distinct.len(), 16);
    let p = sa.path_record(a + 3, b + 1).unwrap();
    assert_eq!((p.slid, p.dlid), (a + 3, b + 1));
    let n = sa.node_record(b + 3).unwrap();
    assert_eq!(
        (n.lid, n.node_info.port_guid),
        (b, f.node(h8).unwrap().node_guid + 1)
    );
    let pir = sa.port_info_records(b + 2).unwrap().records;
    assert_eq!(pir.len(), 1, "{pir:?}");
    assert_eq!((pir[0].lid, pir[0].port_info.lmc), (b, 2));
    // A LID past the range is nobody's.
    assert!(sa.node_record(b + 4).map_or(true, |r| r.lid != b));
}
