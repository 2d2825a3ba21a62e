//! SubnAdmGetTraceTable between the client and the responder: the
//! TraceRecords of a path walked over the source's NodeRecords,
//! LinkRecords and LFT records, and the statuses of requests it cannot
//! answer.

use mad_core::wire::attr::{LinearFwdTable, NodeType};
use mad_core::wire::sa_records::{LftRecord, LinkRecord};
use mad_core::wire::AttributeId;

use super::*;

const PREFIX: u64 = 0xfe80_0000_0000_0000;

fn gid(guid: u64) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&PREFIX.to_be_bytes());
    g[8..].copy_from_slice(&guid.to_be_bytes());
    g
}

fn node(lid: u16, kind: NodeType, guid: u64, port: u8) -> NodeRecord {
    let mut n = NodeRecord {
        lid,
        ..NodeRecord::default()
    };
    n.node_info.node_type = kind;
    n.node_info.node_guid = guid;
    n.node_info.port_guid = guid + u64::from(kind == NodeType::CA);
    n.node_info.system_image_guid = guid | 0xC000;
    n.node_info.local_port_num = port;
    n
}

fn link(from_lid: u16, from_port: u8, to_lid: u16, to_port: u8) -> [LinkRecord; 2] {
    [
        LinkRecord {
            from_lid,
            from_port,
            to_port,
            to_lid,
            ..LinkRecord::default()
        },
        LinkRecord {
            from_lid: to_lid,
            from_port: to_port,
            to_port: from_port,
            to_lid: from_lid,
            ..LinkRecord::default()
        },
    ]
}

fn lft(lid: u16, routes: &[(u16, u8)]) -> LftRecord {
    let mut t = LinearFwdTable { ports: [255; 64] };
    for &(dlid, port) in routes {
        t.ports[usize::from(dlid)] = port;
    }
    LftRecord {
        lid,
        block_num: 0,
        lft: t,
        ..LftRecord::default()
    }
}

/// host A (LID 1, GUID 0x100) port 1 — port 1 switch S1 (LID 2) port 2 —
/// port 5 switch S2 (LID 3) port 3 — port 1 host B (LID 4, GUID 0x400);
/// host C (LID 5) hangs off S2 port 4 (S2 may lack a route to B). A path
/// between every two hosts.
fn line(e: &Env, with_s2_route_to_b: bool) {
    e.source
        .set_records(&[
            node(1, NodeType::CA, 0x100, 1),
            node(2, NodeType::SWITCH, 0x200, 0),
            node(3, NodeType::SWITCH, 0x300, 0),
            node(4, NodeType::CA, 0x400, 1),
            node(5, NodeType::CA, 0x500, 1),
        ])
        .unwrap();
    let links: Vec<LinkRecord> = [
        link(1, 1, 2, 1),
        link(2, 2, 3, 5),
        link(3, 3, 4, 1),
        link(3, 4, 5, 1),
    ]
    .into_iter()
    .flatten()
    .collect();
    e.source.set_records(&links).unwrap();
    let s2: &[(u16, u8)] = if with_s2_route_to_b {
        &[(1, 5), (2, 5), (3, 0), (4, 3), (5, 4)]
    } else {
        &[(1, 5), (2, 5), (3, 0), (5, 4)]
    };
    e.source
        .set_records(&[
            lft(2, &[(1, 1), (2, 0), (3, 2), (4, 2), (5, 2)]),
            lft(3, s2),
        ])
        .unwrap();
    let mut paths = Vec::new();
    for (s, sg) in [(1u16, 0x101u64), (4, 0x401), (5, 0x501)] {
        for (d, dg) in [(1u16, 0x101u64), (4, 0x401), (5, 0x501)] {
            paths.push(PathRecord {
                sgid: gid(sg),
                dgid: gid(dg),
                slid: s,
                dlid: d,
                ..PathRecord::default()
            });
        }
    }
    e.source.set_records(&paths).unwrap();
}

fn by_lids(slid: u16, dlid: u16) -> PathRecord {
    PathRecord {
        slid,
        dlid,
        ..PathRecord::default()
    }
}

const LIDS: u64 = PathRecord::COMP_SLID | PathRecord::COMP_DLID;

#[test]
fn trace_table_lists_every_node_of_the_path_with_its_entry_and_exit_ports() {
    let (e, _sa, c) = sa_and_client(SaClientConfig::default());
    line(&e, true);
    let t = c.trace_table(&by_lids(1, 4), LIDS).unwrap();
    assert_eq!(t.attr_offset, 6, "48-byte stride");
    let hops: Vec<(u8, u64, u8, u8, u64, u64)> = t
        .records
        .iter()
        .map(|r| {
            (
                r.node_type,
                r.node_id,
                r.entry_port,
                r.exit_port,
                r.entry_port_id,
                r.exit_port_id,
            )
        })
        .collect();
    assert_eq!(
        hops,
        [
            (1, 0x100, 0, 1, 0, 0x101),
            (2, 0x200, 1, 2, 0x200, 0x200),
            (2, 0x300, 5, 3, 0x300, 0x300),
            (1, 0x400, 1, 0, 0x401, 0),
        ]
    );
    for r in &t.records {
        assert_eq!(r.gid_prefix, PREFIX);
        assert_eq!(r.chassis_id, r.node_id | 0xC000);
    }
    // The reverse path, named by GIDs.
    let back = PathRecord {
        sgid: gid(0x401),
        dgid: gid(0x101),
        ..PathRecord::default()
    };
    let t = c
        .trace_table(&back, PathRecord::COMP_SGID | PathRecord::COMP_DGID)
        .unwrap();
    let nodes: Vec<u64> = t.records.iter().map(|r| r.node_id).collect();
    assert_eq!(nodes, [0x400, 0x300, 0x200, 0x100]);
    // A path to itself: one node, no port crossed.
    let t = c.trace_table(&by_lids(4, 4), LIDS).unwrap();
    assert_eq!(t.records.len(), 1);
    assert_eq!((t.records[0].entry_port, t.records[0].exit_port), (0, 0));
}

#[test]
fn trace_table_answers_no_records_for_an_unknown_or_unrouted_path() {
    let (e, _sa, c) = sa_and_client(SaClientConfig::default());
    line(&e, false);
    // No PathRecord from LID 1 to LID 9.
    assert!(matches!(
        c.trace_table(&by_lids(1, 9), LIDS),
        Err(SaError::NoRecords)
    ));
    // S2 has no LFT entry for host B: the walk stops there.
    assert!(matches!(
        c.trace_table(&by_lids(1, 4), LIDS),
        Err(SaError::NoRecords)
    ));
    // Host C is routed.
    assert_eq!(
        c.trace_table(&by_lids(1, 5), LIDS).unwrap().records.len(),
        4
    );
}

#[test]
fn trace_table_refuses_a_request_that_names_no_end_or_uses_another_method() {
    let (e, _sa, c) = sa_and_client(SaClientConfig::default());
    line(&e, true);
    assert!(matches!(
        c.trace_table(&by_lids(1, 4), PathRecord::COMP_SLID),
        Err(SaError::InsufficientComponents)
    ));
    assert!(matches!(
        c.trace_table(&by_lids(1, 4), 0),
        Err(SaError::InsufficientComponents)
    ));
    // Get and GetTable of TraceRecord: not methods it takes.
    for m in [Method::GET, Method::GET_TABLE] {
        let r = c
            .request(
                m,
                AttributeId::SA_TRACE_RECORD,
                0,
                LIDS,
                &by_lids(1, 4).to_vec().unwrap(),
            )
            .unwrap();
        assert_eq!(
            r.mad().status(),
            MadStatus::METHOD_ATTR_UNSUPPORTED,
            "{m:?}"
        );
    }
    // A request too short for a PathRecord.
    let r = c
        .request(
            Method::GET_TRACE_TABLE,
            AttributeId::SA_TRACE_RECORD,
            0,
            LIDS,
            &[],
        )
        .unwrap();
    assert_eq!(r.mad().raw_method(), 0x92, "answered with GetTableResp");
    assert_eq!(
        r.mad().status(),
        MadStatus::SA_NO_RECORDS,
        "zero LIDs name no path"
    );
}
