//! The SA responder's answer to SubnAdmGetTraceTable: the TraceRecords of
//! the nodes a path crosses (IBA 15.2.5.21), walked over the source's own
//! NodeRecords, LinkRecords and LinearForwardingTableRecords.
//!
//! OpenSM 3.3.23 does not implement this method: its SA agent registers
//! Get, Set, GetTable, Delete and GetMulti only
//! (`libvendor/osm_vendor_ibumad.c`, "Add in IB_MAD_METHOD_GETTRACETABLE
//! when supported by OpenSM"), and `sa_mad_ctrl_rcv_callback`
//! (`opensm/osm_sa_mad_ctrl.c`) drops any other method with "ERR 1A05:
//! Unsupported method" and no answer. There is no peer to match, so these
//! rules are the IBA's where it has one and ours where it does not:
//!
//! - AttributeID TraceRecord with a method other than GetTraceTable:
//!   status 0x000C.
//! - The request's data is a PathRecord and its ComponentMask counts
//!   PathRecord components. Neither SGID nor SLID selected, or neither
//!   DGID nor DLID: 0x0600 (insufficient components).
//! - No path matches: 0x0300 in one MAD. Several match (NumbPath, several
//!   SLs): the first is traced.
//! - The path's hops are walked from its SLID: at a switch the LFT entry
//!   of the DLID is the exit port, the LinkRecord from that port the next
//!   node. A hop the source has no record for (an unrouted LID, a port
//!   with no link, a loop longer than 64 hops): 0x0300.
//! - Else GetTableResp (0x92: the IBA has no GetTraceTableResp; OpenSM's
//!   `ib_sa_resp_method_str` and Wireshark's SA method table name no
//!   0x93) with AttributeID TraceRecord and one record per
//!   node, source first: GIDPrefix the subnet's, IDGeneration 0 (the IDs
//!   are GUIDs, never generated anew), NodeType, NodeID = NodeGUID,
//!   ChassisID = SystemImageGUID, the port IDs = the port's GUID (a
//!   switch's ports share the GUID of its port 0) and the port numbers.
//!   The source node has EntryPort 0 and EntryPortID 0, the destination
//!   ExitPort 0 and ExitPortID 0.

use mad_core::wire::attr::NodeType;
use mad_core::wire::sa_records::{
    LftRecord, LinkRecord, NodeRecord, PathRecord, SaRecord, TraceRecord,
};
use mad_core::wire::{AttributeId, MadStatus, Method, Repr};

use super::components::{component_layout, record_matches};
use super::source::{Answer, RecordQuery, RecordSource};

/// The most nodes a trace crosses before it is taken for a loop (the
/// GRH HopLimit's range is wider, but no subnet path is this long).
const MAX_HOPS: usize = 64;

/// The answer to `q` (attribute TraceRecord) from `source`'s records, on
/// a subnet of GID prefix `prefix`.
pub(super) fn answer(source: &dyn RecordSource, prefix: u64, q: &RecordQuery<'_>) -> Answer {
    if q.method != Method::GET_TRACE_TABLE {
        return Answer::status(MadStatus::METHOD_ATTR_UNSUPPORTED.0);
    }
    let src = PathRecord::COMP_SGID | PathRecord::COMP_SLID;
    let dst = PathRecord::COMP_DGID | PathRecord::COMP_DLID;
    if q.comp_mask & src == 0 || q.comp_mask & dst == 0 {
        return Answer::status(MadStatus::SA_REQ_INSUFFICIENT_COMPONENTS.0);
    }
    let Some(template) = q.template.get(..PathRecord::LEN) else {
        return Answer::status(MadStatus::SA_REQ_INVALID.0);
    };
    let Some(layout) = component_layout(AttributeId::SA_PATH_RECORD) else {
        return Answer::status(MadStatus::METHOD_ATTR_UNSUPPORTED.0);
    };
    let pq = RecordQuery {
        method: Method::GET_TABLE,
        attr_id: AttributeId::SA_PATH_RECORD,
        ..*q
    };
    let path = source
        .records(&pq)
        .unwrap_or_default()
        .into_iter()
        .find(|r| record_matches(layout, template, r, q.comp_mask))
        .and_then(|r| PathRecord::parse(&r).ok());
    let no_records = || Answer::status(MadStatus::SA_NO_RECORDS.0);
    let Some(path) = path else {
        return no_records();
    };
    let Some(hops) = trace(source, prefix, q, path.slid, path.dlid) else {
        return no_records();
    };
    let mut data = Vec::with_capacity(hops.len() * TraceRecord::PADDED_LEN);
    for h in &hops {
        let Ok(mut b) = h.to_vec() else {
            return Answer::status(MadStatus::SA_REQ_INVALID.0);
        };
        b.resize(TraceRecord::PADDED_LEN, 0);
        data.extend_from_slice(&b);
    }
    Answer {
        attr: Some(AttributeId::SA_TRACE_RECORD),
        ..Answer::table(data, TraceRecord::PADDED_LEN)
    }
}

/// The nodes from `slid` to `dlid`, or `None` where a record is missing.
fn trace(
    source: &dyn RecordSource,
    prefix: u64,
    q: &RecordQuery<'_>,
    slid: u16,
    dlid: u16,
) -> Option<Vec<TraceRecord>> {
    let mut out = Vec::new();
    let (mut lid, mut entry_port, mut entry_id) = (slid, 0u8, 0u64);
    for _ in 0..MAX_HOPS {
        let node = node_at(source, q, lid)?;
        let ni = &node.node_info;
        let here = TraceRecord {
            gid_prefix: prefix,
            node_type: ni.node_type.0,
            node_id: ni.node_guid,
            chassis_id: ni.system_image_guid,
            entry_port_id: entry_id,
            entry_port,
            ..TraceRecord::default()
        };
        if lid == dlid {
            out.push(here);
            return Some(out);
        }
        let exit = if ni.node_type == NodeType::SWITCH {
            lft_port(source, q, lid, dlid)?
        } else if out.is_empty() {
            // The source end node leaves by its own port.
            ni.local_port_num
        } else {
            // An end node in the middle of a path: a broken route.
            return None;
        };
        out.push(TraceRecord {
            exit_port_id: ni.port_guid,
            exit_port: exit,
            ..here
        });
        let link = link_from(source, q, lid, exit)?;
        lid = link.to_lid;
        entry_port = link.to_port;
        entry_id = node_at(source, q, lid)?.node_info.port_guid;
    }
    None
}

fn query<'a>(q: &RecordQuery<'a>, attr_id: AttributeId, mask: u64, t: &'a [u8]) -> RecordQuery<'a> {
    RecordQuery {
        method: Method::GET_TABLE,
        attr_id,
        attr_mod: 0,
        comp_mask: mask,
        template: t,
        src: q.src,
    }
}

/// The NodeRecord of the port at `lid`.
fn node_at(source: &dyn RecordSource, q: &RecordQuery<'_>, lid: u16) -> Option<NodeRecord> {
    let t = NodeRecord {
        lid,
        ..NodeRecord::default()
    }
    .to_vec()
    .ok()?;
    source
        .records(&query(q, NodeRecord::ATTR_ID, NodeRecord::COMP_LID, &t))?
        .iter()
        .filter_map(|b| NodeRecord::parse(b).ok())
        .find(|n| n.lid == lid)
}

/// The port of switch `lid` that LID `dlid` leaves by (255: none).
fn lft_port(source: &dyn RecordSource, q: &RecordQuery<'_>, lid: u16, dlid: u16) -> Option<u8> {
    let block = dlid / 64;
    let t = LftRecord {
        lid,
        block_num: block,
        ..LftRecord::default()
    }
    .to_vec()
    .ok()?;
    let mask = LftRecord::COMP_LID | LftRecord::COMP_BLOCK_NUM;
    let port = source
        .records(&query(q, LftRecord::ATTR_ID, mask, &t))?
        .iter()
        .filter_map(|b| LftRecord::parse(b).ok())
        .find(|r| r.lid == lid && r.block_num == block)?
        .lft
        .ports[usize::from(dlid % 64)];
    (port != 255).then_some(port)
}

/// The link that leaves port `port` of the node at `lid`.
fn link_from(
    source: &dyn RecordSource,
    q: &RecordQuery<'_>,
    lid: u16,
    port: u8,
) -> Option<LinkRecord> {
    let t = LinkRecord {
        from_lid: lid,
        from_port: port,
        ..LinkRecord::default()
    }
    .to_vec()
    .ok()?;
    let mask = LinkRecord::COMP_FROM_LID | LinkRecord::COMP_FROM_PORT;
    source
        .records(&query(q, LinkRecord::ATTR_ID, mask, &t))?
        .iter()
        .filter_map(|b| LinkRecord::parse(b).ok())
        .find(|l| l.from_lid == lid && l.from_port == port)
}
