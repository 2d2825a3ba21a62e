//! SubnAdmGetMulti(MultiPathRecord) between the client and the responder
//! (a double-sided RMPP transaction).

use mad_core::wire::sa_records::MultiPathRecord;
use mad_core::wire::AttributeId;

use super::*;

const PREFIX: u64 = 0xfe80_0000_0000_0000;

fn gid(guid: u64) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&PREFIX.to_be_bytes());
    g[8..].copy_from_slice(&guid.to_be_bytes());
    g
}

/// Three ports (GUIDs 0x10, 0x20, 0x30 at LIDs 1-3) and a path between
/// every two of them, SL = source LID.
fn three_ports(e: &Env) {
    let nodes: Vec<NodeRecord> = (1..=3u16)
        .map(|l| {
            let mut n = NodeRecord {
                lid: l,
                ..NodeRecord::default()
            };
            n.node_info.port_guid = u64::from(l) * 0x10;
            n
        })
        .collect();
    e.source.set_records(&nodes).unwrap();
    let mut paths = Vec::new();
    for s in 1..=3u16 {
        for d in 1..=3u16 {
            paths.push(PathRecord {
                sgid: gid(u64::from(s) * 0x10),
                dgid: gid(u64::from(d) * 0x10),
                slid: s,
                dlid: d,
                sl: s as u8,
                ..PathRecord::default()
            });
        }
    }
    e.source.set_records(&paths).unwrap();
}

#[test]
fn multipath_answers_the_paths_of_every_source_and_destination_pair() {
    let (e, _sa, c) = sa_and_client(SaClientConfig::default());
    three_ports(&e);
    let t = c
        .multipath(
            &MultiPathRecord::default(),
            &[gid(0x10), gid(0x20)],
            &[gid(0x30)],
            0,
        )
        .unwrap();
    let pairs: Vec<(u16, u16)> = t.records.iter().map(|p| (p.slid, p.dlid)).collect();
    assert_eq!(pairs, [(1, 3), (2, 3)]);
    // NumbPath bounds the paths in all; SL narrows them.
    let two = MultiPathRecord {
        numb_path: 1,
        ..MultiPathRecord::default()
    };
    let t = c
        .multipath(
            &two,
            &[gid(0x10), gid(0x20)],
            &[gid(0x30)],
            MultiPathRecord::COMP_NUMB_PATH,
        )
        .unwrap();
    assert_eq!(t.records.len(), 1);
    let sl2 = MultiPathRecord {
        sl: 2,
        ..MultiPathRecord::default()
    };
    let t = c
        .multipath(
            &sl2,
            &[gid(0x10), gid(0x20)],
            &[gid(0x30)],
            MultiPathRecord::COMP_SL,
        )
        .unwrap();
    assert_eq!(t.records.len(), 1);
    assert_eq!(t.records[0].slid, 2);
}

#[test]
fn multipath_refuses_as_opensm_does() {
    let (e, _sa, c) = sa_and_client(SaClientConfig::default());
    three_ports(&e);
    let data = MultiPathRecord::default()
        .with_gids(&[gid(0x10)], &[gid(0x20)])
        .unwrap();
    // Without SGIDCount and DGIDCount: insufficient components.
    assert!(matches!(
        c.multipath_request(MultiPathRecord::COMP_SGID_COUNT, &data),
        Err(SaError::InsufficientComponents)
    ));
    // A multicast destination, a site-local (not link-local) prefix other
    // than the subnet's, an unknown GUID: 0x0500.
    let mut mgid = gid(0xFFFF_FFFF);
    mgid[..8].copy_from_slice(&0xff12_401b_ffff_0000u64.to_be_bytes());
    let mut foreign = gid(0x20);
    foreign[1] = 0xC0;
    for bad in [mgid, foreign, gid(0x99)] {
        let e = c
            .multipath(&MultiPathRecord::default(), &[gid(0x10)], &[bad], 0)
            .unwrap_err();
        assert!(matches!(e, SaError::Status { status: 0x0500, .. }), "{e}");
    }
    // No GID at all: request invalid.
    assert!(matches!(
        c.multipath(&MultiPathRecord::default(), &[], &[], 0),
        Err(SaError::RequestInvalid)
    ));
    // GetTable of a MultiPathRecord: not a method it takes.
    let r = c
        .request(
            Method::GET_TABLE,
            AttributeId::SA_MULTIPATH_RECORD,
            0,
            0,
            &data,
        )
        .unwrap();
    assert_eq!(r.mad().status(), MadStatus::METHOD_ATTR_UNSUPPORTED);
}
