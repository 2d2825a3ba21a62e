//! QoS: SLtoVL and VLArbitration tables programmed by OpenSM's rules.

use super::*;
use crate::qos::{parse_sl2vl, parse_vlarb, QosConfig};

fn qos_cfg() -> SmConfig {
    let mut q = QosConfig {
        enabled: true,
        ..QosConfig::default()
    };
    q.default.sl2vl =
        Some(parse_sl2vl("qos_sl2vl", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,15,7").unwrap());
    q.ca.sl2vl = Some(parse_sl2vl("qos_ca_sl2vl", "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1").unwrap());
    q.swe.vlarb_low = Some(parse_vlarb("qos_swe_vlarb_low", "0:9,9:1").unwrap());
    q.default.high_limit = Some(4);
    SmConfig {
        qos: q,
        ..SmConfig::default()
    }
}

fn qos_sets(f: &fake::Fabric) -> usize {
    f.sets
        .iter()
        .filter(|(a, _, _)| *a == AttributeId::SL_TO_VL_TABLE || *a == AttributeId::VL_ARB_TABLE)
        .count()
}

#[test]
fn qos_tables_go_to_every_ca_port_and_every_live_switch_port_pair_masked_to_the_operational_vls() {
    let mut h = Harness::new(Fabric::ibsim_net(), qos_cfg());
    h.bring_up();
    check_configured(&h);
    // OperationalVLs 4 (VL0-7): VLs above 7 are masked with 7, VL 15 kept.
    let swe = [0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0xF7];
    for (i, n) in h.fab.nodes.iter().enumerate() {
        if n.switch {
            let live: Vec<u8> = (1..=n.num_ports())
                .filter(|&p| n.ports[usize::from(p)].state != PortState::DOWN)
                .collect();
            let mut want = BTreeMap::new();
            for &o in &live {
                for i in 0..=n.num_ports() {
                    want.insert((i, o), swe);
                }
            }
            assert_eq!(n.sl2vl, want, "switch {i}");
            for p in 0..=n.num_ports() {
                let fp = &n.ports[usize::from(p)];
                if !live.contains(&p) {
                    assert!(fp.vlarb.is_empty(), "switch {i} port {p}");
                    continue;
                }
                let low = fp.vlarb[&1];
                // 0:9, 9:1 (VL 9 masked to 1), the rest of the 8 entries 0.
                assert_eq!(&low[..4], &[0, 9, 1, 1]);
                assert!(low[4..].iter().all(|&b| b == 0));
                // The default high table: 0:4 then VLs 1-7 weight 0.
                let high = fp.vlarb[&3];
                assert_eq!(&high[..4], &[0, 4, 1, 0]);
                assert_eq!(&high[14..16], &[7, 0]);
                assert!(high[16..].iter().all(|&b| b == 0));
                assert_eq!(fp.vl_high_limit, 4, "switch {i} port {p}");
            }
        } else {
            assert_eq!(n.sl2vl.get(&(0, 0)), Some(&[0x11; 8]), "CA {i}");
            for p in 1..=n.num_ports() {
                let fp = &n.ports[usize::from(p)];
                if fp.remote.is_some() {
                    assert_eq!(fp.vlarb[&1][..4], [0, 0, 1, 4], "CA {i} port {p}");
                    assert_eq!(fp.vl_high_limit, 4);
                }
            }
        }
    }
}

#[test]
fn a_resweep_writes_no_qos_table_a_port_already_holds_and_qos_off_writes_none() {
    let mut h = Harness::new(Fabric::ibsim_net(), qos_cfg());
    h.bring_up();
    let first = qos_sets(&h.fab);
    // 2 switches: 8 + 9 ... each live out port (s1: 4, s2: 2) has 9 in
    // ports and 2 VLArb blocks; 2 CAs 1 SL2VL + 2 blocks.
    assert_eq!(first, 4 * 11 + 2 * 11 + 2 * 3);
    h.sm.resweep(h.now);
    assert!(h.run_until(Duration::from_secs(10), |e| matches!(
        e,
        SmEvent::SweepDone { .. }
    )));
    assert_eq!(qos_sets(&h.fab), first, "a second sweep rewrote tables");

    // The tables of a port that went down and came back up through
    // Initialize (it may have lost them) are written again; only those.
    h.fab.set_link(1, 3, false);
    h.fab.set_link(1, 3, true);
    h.fab.nodes[1].sl2vl.clear();
    h.fab.nodes[1].ports[3].vlarb.clear();
    h.sm.resweep(h.now);
    assert!(h.run_until(Duration::from_secs(10), |e| matches!(
        e,
        SmEvent::SweepDone { .. }
    )));
    let again: Vec<(u8, u8)> = h.fab.nodes[1].sl2vl.keys().copied().collect();
    assert_eq!(again, (0..=8).map(|i| (i, 3)).collect::<Vec<_>>());
    assert_eq!(h.fab.nodes[1].ports[3].vlarb.len(), 2);

    let mut h = Harness::new(Fabric::ibsim_net(), SmConfig::default());
    h.bring_up();
    assert_eq!(qos_sets(&h.fab), 0);
}

/// PathRecords from Hca1 (node 2) to Hca2 (node 3) the SA of `h` gives
/// for a query naming both LIDs and, if `sl` is set, the SL.
fn paths(h: &Harness, sl: Option<u8>) -> Vec<mad_core::wire::sa_records::PathRecord> {
    use mad_agents::sa::{RecordQuery, RecordSource};
    use mad_core::wire::sa_records::PathRecord;
    let sa = crate::sa::FabricSa::new(crate::sa::SubnetView::from_sm(&h.sm));
    let lids = fabric_lids(&h.fab);
    let mut t = PathRecord {
        slid: lids[&(2, 1)],
        dlid: lids[&(3, 2)],
        sl: sl.unwrap_or(0),
        ..PathRecord::default()
    }
    .to_vec()
    .unwrap();
    t.resize(64, 0);
    let mut mask = PathRecord::COMP_SLID | PathRecord::COMP_DLID;
    if sl.is_some() {
        mask |= PathRecord::COMP_SL;
    }
    let src = Address::smi(1);
    let q = RecordQuery {
        method: Method::GET_TABLE,
        attr_id: AttributeId::SA_PATH_RECORD,
        attr_mod: 0,
        comp_mask: mask,
        template: &t,
        src: &src,
    };
    sa.records(&q)
        .unwrap()
        .iter()
        .map(|r| PathRecord::parse(r).unwrap())
        .collect()
}

#[test]
fn path_records_carry_the_sl_asked_for_and_with_qos_none_for_an_sl_dropped_to_vl15() {
    // QoS off: SL 0 unless asked, any SL asked is given.
    let h = Harness::up(Fabric::ibsim_net());
    assert_eq!(
        paths(&h, None).iter().map(|p| p.sl).collect::<Vec<_>>(),
        [0]
    );
    assert_eq!(
        paths(&h, Some(15)).iter().map(|p| p.sl).collect::<Vec<_>>(),
        [15]
    );

    // QoS: the switches drop SL 14 (VL 15), the CAs do not.
    let mut h = Harness::new(Fabric::ibsim_net(), qos_cfg());
    h.bring_up();
    assert_eq!(
        paths(&h, None).iter().map(|p| p.sl).collect::<Vec<_>>(),
        [0]
    );
    assert_eq!(
        paths(&h, Some(5)).iter().map(|p| p.sl).collect::<Vec<_>>(),
        [5]
    );
    assert!(paths(&h, Some(14)).is_empty(), "SL 14 leads to VL 15");

    // Every switch port drops SL 0: a query not naming an SL gets the
    // default partition's SL 0, dropped, so no record (as OpenSM).
    let mut cfg = qos_cfg();
    cfg.qos.swe.sl2vl =
        Some(parse_sl2vl("qos_swe_sl2vl", "15,15,2,3,4,5,6,7,8,9,10,11,12,13,14,7").unwrap());
    let mut h = Harness::new(Fabric::ibsim_net(), cfg);
    h.bring_up();
    assert!(paths(&h, None).is_empty());
    assert_eq!(
        paths(&h, Some(2)).iter().map(|p| p.sl).collect::<Vec<_>>(),
        [2]
    );
}

#[test]
fn the_sa_lists_the_qos_tables_sm_lite_programmed() {
    use mad_agents::sa::{RecordQuery, RecordSource};
    use mad_core::wire::sa_records::{Sl2VlRecord, VlArbRecord};
    let mut h = Harness::new(Fabric::ibsim_net(), qos_cfg());
    h.bring_up();
    let sa = crate::sa::FabricSa::new(crate::sa::SubnetView::from_sm(&h.sm));
    let lids = fabric_lids(&h.fab);
    let src = Address::smi(1);
    let query = |attr: AttributeId, lid: u16| {
        let mut t = vec![0u8; 64];
        t[..2].copy_from_slice(&lid.to_be_bytes());
        let q = RecordQuery {
            method: Method::GET_TABLE,
            attr_id: attr,
            attr_mod: 0,
            comp_mask: 1,
            template: &t,
            src: &src,
        };
        sa.records(&q).unwrap()
    };
    // Hca1 (node 2 port 1): its SL2VL table and VLArb low block.
    let ca = lids[&(2, 1)];
    let recs = query(AttributeId::SA_SL2VL_RECORD, ca);
    let rec = Sl2VlRecord::parse(&recs[0]).unwrap();
    assert_eq!(rec.sl2vl.vl, [1; 16]);
    let blocks: Vec<VlArbRecord> = query(AttributeId::SA_VLARB_RECORD, ca)
        .iter()
        .map(|b| VlArbRecord::parse(b).unwrap())
        .collect();
    let low = blocks.iter().find(|b| b.block_num == 1).unwrap();
    assert_eq!(low.vl_arb.entries[..2], [0x0000, 0x0104]);
    // Switch1 (node 0): output port 3 (live) holds the masked table for
    // every input port; port 5 (down) the fabric's default.
    let sw = lids[&(0, 0)];
    let recs: Vec<Sl2VlRecord> = query(AttributeId::SA_SL2VL_RECORD, sw)
        .iter()
        .map(|b| Sl2VlRecord::parse(b).unwrap())
        .collect();
    let at = |i: u8, o: u8| {
        recs.iter()
            .find(|r| r.input_port == i && r.output_port == o)
            .unwrap()
            .sl2vl
            .vl
    };
    assert_eq!(at(0, 3), [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 15, 7]);
    assert_eq!(at(7, 3), at(0, 3));
    assert_eq!(
        at(0, 5),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7]
    );
}
