//! LIDs given by a guid2lid list ([`SmConfig::guid2lid`]): they win over
//! the LIDs ports hold, stay reserved for absent GUIDs, and are given
//! again when the SM comes out of standby.

use super::*;

#[test]
fn guid2lid_lids_win_over_held_lids_and_stay_reserved_for_absent_guids() {
    let mut f = Fabric::ibsim_net();
    // Hca2 holds LID 7, which the list gives to Hca1; Switch2 holds 5.
    f.nodes[3].ports[2].lid = 7;
    f.nodes[1].ports[0].lid = 5;
    let hca1 = f.nodes[2].port_guid(1);
    let sw1 = f.nodes[0].port_guid(0);
    let absent = 0x00ab_cdef_0000_0001;
    let cfg = SmConfig {
        guid2lid: vec![(hca1, 7), (sw1, 12), (absent, 1), (absent + 1, 0)],
        ..SmConfig::default()
    };
    let mut h = Harness::new(f, cfg);
    h.bring_up();
    let lids: BTreeSet<u16> = fabric_lids(&h.fab).values().copied().collect();
    assert_eq!(lids, BTreeSet::from([2, 5, 7, 12]));
    assert_eq!(h.fab.nodes[2].ports[1].lid, 7);
    assert_eq!(h.fab.nodes[0].ports[0].lid, 12);
    // Switch2 keeps its own LID; Hca2 lost 7 to the list and gets the
    // lowest LID nobody holds or is promised (1 is the absent GUID's).
    assert_eq!(h.fab.nodes[1].ports[0].lid, 5);
    assert_eq!(h.fab.nodes[3].ports[2].lid, 2);
    assert_eq!(h.sm.lid_of(absent), Some(1));
    assert_eq!(h.sm.lid_of(absent + 1), None);
}

#[test]
fn a_guid2lid_lid_listed_twice_goes_to_its_first_guid() {
    let f = Fabric::ibsim_net();
    let hca1 = f.nodes[2].port_guid(1);
    let hca2 = f.nodes[3].port_guid(2);
    let cfg = SmConfig {
        guid2lid: vec![(hca1, 4), (hca2, 4)],
        ..SmConfig::default()
    };
    let mut h = Harness::new(f, cfg);
    h.bring_up();
    assert_eq!(h.fab.nodes[2].ports[1].lid, 4);
    assert_ne!(h.fab.nodes[3].ports[2].lid, 4);
}
