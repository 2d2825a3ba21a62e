//! The SA responder's answer to SubnAdmGetMulti(MultiPathRecord): the
//! PathRecords between every source and destination GID of the request,
//! by opensm's rules (`osm_sa_multipath_record.c`).
//!
//! - A method other than GetMulti: status 0x000C.
//! - SGIDCount or DGIDCount not selected in the ComponentMask: 0x0600
//!   (insufficient components).
//! - A GID that is not link-local and has another subnet prefix (or, for
//!   a source, is multicast), or whose GUID is no port's: 0x0500.
//! - No source or no destination GID: 0x0200.
//! - Else GetMultiResp with AttributeID PathRecord (o15-0.2.7) and the
//!   paths of each pair in order, at most NumbPath in all when NumbPath is
//!   selected; the request's P_Key, SL, MTU, Rate, PacketLifeTime and
//!   TClass components constrain them as a PathRecord query's would.

use std::collections::HashSet;

use mad_core::wire::sa_records::{MultiPathRecord, NodeRecord, PathRecord, SaRecord};
use mad_core::wire::{AttributeId, MadStatus, Method, Repr};

use super::components::{component_layout, record_matches};
use super::source::{Answer, RecordQuery, RecordSource};

/// MultiPathRecord components carried over to the PathRecord template,
/// each with its PathRecord component.
const CARRIED: [(u64, u64); 10] = [
    (MultiPathRecord::COMP_TCLASS, PathRecord::COMP_TCLASS),
    (
        MultiPathRecord::COMP_REVERSIBLE,
        PathRecord::COMP_REVERSIBLE,
    ),
    (MultiPathRecord::COMP_PKEY, PathRecord::COMP_PKEY),
    (MultiPathRecord::COMP_QOS_CLASS, PathRecord::COMP_QOS_CLASS),
    (MultiPathRecord::COMP_SL, PathRecord::COMP_SL),
    (
        MultiPathRecord::COMP_MTU_SELECTOR,
        PathRecord::COMP_MTU_SELECTOR,
    ),
    (MultiPathRecord::COMP_MTU, PathRecord::COMP_MTU),
    (
        MultiPathRecord::COMP_RATE_SELECTOR,
        PathRecord::COMP_RATE_SELECTOR,
    ),
    (MultiPathRecord::COMP_RATE, PathRecord::COMP_RATE),
    (
        MultiPathRecord::COMP_PACKET_LIFE_TIME,
        PathRecord::COMP_PACKET_LIFE_TIME,
    ),
];

/// The answer to `q` (a MultiPathRecord request) from `source`'s
/// PathRecords and NodeRecords, on a subnet of GID prefix `prefix`.
pub(super) fn answer(source: &dyn RecordSource, prefix: u64, q: &RecordQuery<'_>) -> Answer {
    if q.method != Method::GET_MULTI {
        return Answer::status(MadStatus::METHOD_ATTR_UNSUPPORTED.0);
    }
    let counts = MultiPathRecord::COMP_SGID_COUNT | MultiPathRecord::COMP_DGID_COUNT;
    if q.comp_mask & counts != counts {
        return Answer::status(MadStatus::SA_REQ_INSUFFICIENT_COMPONENTS.0);
    }
    let Ok(mpr) = MultiPathRecord::parse(q.template) else {
        return Answer::status(MadStatus::SA_REQ_INVALID.0);
    };
    let (sgids, dgids) = MultiPathRecord::gids(
        q.template,
        usize::from(mpr.sgid_count),
        usize::from(mpr.dgid_count),
    );
    let ports = port_guids(source, q);
    let bad = |g: &[u8; 16], source_gid: bool| {
        let link_local = g[0] == 0xFE && g[1] & 0xC0 == 0x80;
        let off_subnet = (source_gid && g[0] == 0xFF) || gid_prefix(g) != prefix;
        (!link_local && off_subnet) || !ports.contains(&gid_guid(g))
    };
    if sgids.iter().any(|g| bad(g, true)) || dgids.iter().any(|g| bad(g, false)) {
        return Answer::status(MadStatus::SA_REQ_INVALID_GID.0);
    }
    if sgids.is_empty() || dgids.is_empty() {
        return Answer::status(MadStatus::SA_REQ_INVALID.0);
    }
    let Some(layout) = component_layout(AttributeId::SA_PATH_RECORD) else {
        return Answer::status(MadStatus::METHOD_ATTR_UNSUPPORTED.0);
    };
    let limit = if q.comp_mask & MultiPathRecord::COMP_NUMB_PATH != 0 && mpr.numb_path != 0 {
        usize::from(mpr.numb_path)
    } else {
        usize::MAX
    };
    let mut comp_mask = PathRecord::COMP_SGID | PathRecord::COMP_DGID;
    for (m, p) in CARRIED {
        if q.comp_mask & m != 0 {
            comp_mask |= p;
        }
    }
    let mut data = Vec::new();
    let mut found = 0;
    'pairs: for s in &sgids {
        for d in &dgids {
            let t = PathRecord {
                sgid: *s,
                dgid: *d,
                tclass: mpr.tclass,
                reversible: mpr.reversible,
                pkey: mpr.pkey,
                qos_class: mpr.qos_class,
                sl: mpr.sl,
                mtu_selector: mpr.mtu_selector,
                mtu: mpr.mtu,
                rate_selector: mpr.rate_selector,
                rate: mpr.rate,
                packet_life_time: mpr.packet_life_time,
                ..PathRecord::default()
            };
            let Ok(template) = t.to_vec() else {
                return Answer::status(MadStatus::SA_REQ_INVALID.0);
            };
            let pq = RecordQuery {
                method: Method::GET_TABLE,
                attr_id: AttributeId::SA_PATH_RECORD,
                attr_mod: 0,
                comp_mask,
                template: &template,
                src: q.src,
            };
            for mut rec in source.records(&pq).unwrap_or_default() {
                if found == limit {
                    break 'pairs;
                }
                if record_matches(layout, &template, &rec, comp_mask) {
                    rec.resize(PathRecord::PADDED_LEN, 0);
                    data.extend_from_slice(&rec);
                    found += 1;
                }
            }
        }
    }
    Answer {
        attr: Some(AttributeId::SA_PATH_RECORD),
        ..Answer::table(data, PathRecord::PADDED_LEN)
    }
}

/// Every port GUID the source's NodeRecords name.
fn port_guids(source: &dyn RecordSource, q: &RecordQuery<'_>) -> HashSet<u64> {
    let all = RecordQuery {
        method: Method::GET_TABLE,
        attr_id: AttributeId::SA_NODE_RECORD,
        attr_mod: 0,
        comp_mask: 0,
        template: &[],
        src: q.src,
    };
    source
        .records(&all)
        .unwrap_or_default()
        .iter()
        .filter_map(|b| NodeRecord::parse(b).ok())
        .map(|n| n.node_info.port_guid)
        .collect()
}

fn gid_prefix(g: &[u8; 16]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&g[..8]);
    u64::from_be_bytes(b)
}

fn gid_guid(g: &[u8; 16]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&g[8..]);
    u64::from_be_bytes(b)
}
