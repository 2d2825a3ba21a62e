//! Partitions on the built-in fabric: SM-lite given a `partitions.conf`
//! with two tenants programs the P_Key tables of the CA ports and of the
//! switch ports facing them (with partition enforcement there, none
//! between switches); the SA gives PathRecords only within a partition,
//! with its P_Key, and refuses a join to a group of another partition;
//! a packet from one tenant to the other is dropped at the switch and
//! counted, while one within a tenant crosses the fabric.
#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use common::{client, drain, gsi_mad};
use mad_agents::sa::SaError;
use mad_core::transport::{Address, Qp, Transport};
use mad_core::wire::sa_records::{McMemberRecord, PKeyTableRecord, PathRecord};
use mad_core::wire::Method;
use mad_sim::fabric::DropReason;
use mad_sim::{Fabric, Subnet, SubnetOptions};
use mad_sm::partitions::PartitionConfig;

fn port_guid(f: &Fabric, node: &str) -> u64 {
    f.node(f.find(node).unwrap()).unwrap().node_guid + 1
}

fn lid(f: &Fabric, node: &str) -> u16 {
    f.port_info(f.find(node).unwrap(), 1).unwrap().lid
}

/// Tenant A: host-2 and host-5; tenant B: host-3 and host-6 (each pair
/// on two leaves); the default partition as OpenSM implies it.
fn two_tenants() -> Subnet {
    let topo = mad_sim::default_topology();
    let f = Fabric::new(&topo);
    let g = |n: &str| port_guid(&f, n);
    let text = format!(
        "# two tenants\n\
         tenantA=0x0001 : {:#x}=full,\n    {:#x}=full ;\n\
         tenantB=0x0002, defmember=full : {:#x}, {:#x} ;\n",
        g("host-2"),
        g("host-5"),
        g("host-3"),
        g("host-6")
    );
    let mut opts = SubnetOptions::default();
    opts.sm.partitions = Some(PartitionConfig::parse(&text).unwrap());
    Subnet::on_fabric(f, "default", opts).unwrap()
}

#[test]
fn sm_lite_programs_p_key_tables_and_enforcement_from_the_partitions() {
    let s = two_tenants();
    let f = s.fabric();
    let pk = |node: &str, port: u8| f.pkeys(f.find(node).unwrap(), port).unwrap();
    assert_eq!(pk("host-1", 1), vec![0xFFFF], "the SM's port: full default");
    assert_eq!(pk("host-2", 1), vec![0x7FFF, 0x8001]);
    assert_eq!(pk("host-5", 1), vec![0x7FFF, 0x8001]);
    assert_eq!(pk("host-3", 1), vec![0x7FFF, 0x8002]);
    assert_eq!(
        pk("host-4", 1),
        vec![0x7FFF],
        "in no tenant: limited default"
    );
    // Switch ports facing a CA: the CA's keys, with enforcement.
    let leaf1 = f.find("leaf-1").unwrap();
    assert_eq!(f.pkeys(leaf1, 2).unwrap(), vec![0x7FFF, 0x8001]);
    assert_eq!(f.pkeys(leaf1, 3).unwrap(), vec![0x7FFF, 0x8002]);
    for port in 1..=4 {
        let pi = f.port_info(leaf1, port).unwrap();
        assert!(
            pi.partition_enforcement_inbound && pi.partition_enforcement_outbound,
            "leaf-1 port {port}"
        );
    }
    // Toward the spines: no enforcement.
    for port in 5..=8 {
        let pi = f.port_info(leaf1, port).unwrap();
        if pi.port_phys_state == mad_core::wire::attr::PhysPortState::LINK_UP {
            assert!(!pi.partition_enforcement_inbound && !pi.partition_enforcement_outbound);
        }
    }
    // The SA's P_KeyTableRecords are those tables.
    let c = client(&s, "host-7");
    let recs = c.sa.all::<PKeyTableRecord>().unwrap().records;
    let h2 = recs.iter().find(|r| r.lid == lid(f, "host-2")).unwrap();
    assert_eq!(&h2.pkey_table.pkeys[..3], &[0x7FFF, 0x8001, 0]);
}

#[test]
fn the_sa_gives_paths_within_a_partition_only() {
    let s = two_tenants();
    let f = s.fabric().clone();
    let c = client(&s, "host-7");
    let p =
        c.sa.path_record(lid(&f, "host-2"), lid(&f, "host-5"))
            .unwrap();
    assert_eq!(p.pkey, 0x8001, "tenant A's P_Key");
    let p =
        c.sa.path_record(lid(&f, "host-3"), lid(&f, "host-6"))
            .unwrap();
    assert_eq!(p.pkey, 0x8002);
    // Between tenants: both only limited members of the default.
    assert!(matches!(
        c.sa.path_record(lid(&f, "host-2"), lid(&f, "host-3")),
        Err(SaError::NoRecords)
    ));
    // To the SM: the default partition (the SM is a full member).
    let p = c.sa.path_record(lid(&f, "host-2"), s.sm_lid()).unwrap();
    assert_eq!(p.pkey, 0x7FFF);
    // A query naming a P_Key the ends do not share gets nothing.
    let t = PathRecord {
        slid: lid(&f, "host-2"),
        dlid: lid(&f, "host-5"),
        pkey: 0x8002,
        ..PathRecord::default()
    };
    let mask = PathRecord::COMP_SLID | PathRecord::COMP_DLID | PathRecord::COMP_PKEY;
    assert!(c.sa.get_table(&t, mask).unwrap().records.is_empty());
    // A join to a group of tenant A by a port of tenant B is refused;
    // by a port of tenant A it is taken.
    let join = |node: &str| {
        let mut gid = [0u8; 16];
        gid[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        gid[8..].copy_from_slice(&port_guid(&f, node).to_be_bytes());
        let r = McMemberRecord {
            mgid: [
                0xFF, 0x12, 0x40, 0x1B, 0x80, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42,
            ],
            port_gid: gid,
            pkey: 0x8001,
            join_state: 1,
            ..McMemberRecord::default()
        };
        c.sa.set(
            &r,
            McMemberRecord::COMP_MGID
                | McMemberRecord::COMP_PORT_GID
                | McMemberRecord::COMP_PKEY
                | McMemberRecord::COMP_JOIN_STATE,
        )
    };
    assert!(matches!(join("host-3"), Err(SaError::RequestInvalid)));
    assert_eq!(join("host-2").unwrap().pkey, 0x8001);
    assert!(matches!(join("host-6"), Err(SaError::RequestInvalid)));
}

#[test]
fn a_packet_between_tenants_is_dropped_at_the_switch_and_counted() {
    let s = two_tenants();
    let f = s.fabric().clone();
    let mut a = f.attach("host-2", 1).unwrap();
    let mut b = f.attach("host-3", 1).unwrap();
    let mut a2 = f.attach("host-5", 1).unwrap();
    a.refresh_port_attrs().unwrap();
    assert_eq!(a.port_attrs().pkeys, vec![0x7FFF, 0x8001]);
    // host-2 → host-3 (tenant B) as tenant A (P_Key index 1).
    let mut to_b = Address::gsi(lid(&f, "host-3"));
    to_b.pkey_index = 1;
    a.post_send(Qp::Qp1, &gsi_mad(0x09, 1, Method::SEND, 1, 1), &to_b)
        .unwrap();
    assert!(drain(&mut b).is_empty(), "dropped");
    assert_eq!(f.stats().dropped(DropReason::PKeyEnforcement), 1);
    let leaf1 = f.find("leaf-1").unwrap();
    assert_eq!(
        f.counters(leaf1, 3).unwrap().port_xmit_constraint_errors,
        1,
        "counted on leaf-1's port to host-3"
    );
    // host-2 → host-5 (tenant A, over the spines): delivered.
    let mut to_a = Address::gsi(lid(&f, "host-5"));
    to_a.pkey_index = 1;
    a.post_send(Qp::Qp1, &gsi_mad(0x09, 1, Method::SEND, 1, 2), &to_a)
        .unwrap();
    let got = drain(&mut a2);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].src.pkey_index, 1, "0x8001 at index 1 of host-5");
    assert_eq!(f.stats().dropped(DropReason::PKeyEnforcement), 1);
    // host-2 → host-3 as a limited member of the default: the switch
    // (which compares the low 15 bits only) lets it by, but host-3 is a
    // limited member too, so its port refuses it (P_KeyViolations).
    to_b.pkey_index = 0;
    a.post_send(Qp::Qp1, &gsi_mad(0x09, 1, Method::SEND, 1, 3), &to_b)
        .unwrap();
    assert!(drain(&mut b).is_empty());
    assert_eq!(f.stats().dropped(DropReason::PKeyEnforcement), 1);
    assert_eq!(f.stats().dropped(DropReason::PKey), 1);
    assert_eq!(
        f.port_info(f.find("host-3").unwrap(), 1)
            .unwrap()
            .p_key_violations,
        1
    );
}

#[test]
fn without_partitions_nothing_changes() {
    let s = Subnet::builtin().unwrap();
    let f = s.fabric();
    assert_eq!(f.pkeys(f.find("host-2").unwrap(), 1).unwrap(), vec![0xFFFF]);
    let pi = f.port_info(f.find("leaf-1").unwrap(), 2).unwrap();
    assert!(!pi.partition_enforcement_inbound);
}
