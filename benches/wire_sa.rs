//! Parse and emit of the SA header and the common SA records
//! (mad_core::wire::sa_records), plus parsing a whole GetTable answer: a
//! reassembled 1 MiB NodeRecord table split by AttributeOffset and every
//! record parsed. One element = one record.
// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]
use criterion::{black_box, Criterion, Throughput};
use mad_core::wire::sa::{split_records, SaHeader, SaMad};
use mad_core::wire::sa_records::{
    GuidInfoRecord, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord, NodeRecord,
    PKeyTableRecord, PathRecord, PortInfoRecord, SaRecord, ServiceRecord, SmInfoRecord,
    SwitchInfoRecord,
};
use mad_core::wire::Repr;

#[path = "support/mod.rs"]
mod support;

fn records(c: &mut Criterion) {
    let mut g = c.benchmark_group("sa_record");
    g.throughput(Throughput::Elements(1));
    support::repr::<SaHeader>(&mut g, "SaHeader", 31);
    support::repr::<NodeRecord>(&mut g, "NodeRecord", 32);
    support::repr::<PortInfoRecord>(&mut g, "PortInfoRecord", 33);
    support::repr::<PathRecord>(&mut g, "PathRecord", 34);
    support::repr::<McMemberRecord>(&mut g, "MCMemberRecord", 35);
    support::repr::<ServiceRecord>(&mut g, "ServiceRecord", 36);
    support::repr::<LinkRecord>(&mut g, "LinkRecord", 37);
    support::repr::<SwitchInfoRecord>(&mut g, "SwitchInfoRecord", 38);
    support::repr::<GuidInfoRecord>(&mut g, "GUIDInfoRecord", 39);
    support::repr::<PKeyTableRecord>(&mut g, "P_KeyTableRecord", 40);
    support::repr::<LftRecord>(&mut g, "LinearForwardingTableRecord", 41);
    support::repr::<SmInfoRecord>(&mut g, "SMInfoRecord", 42);
    support::repr::<InformInfoRecord>(&mut g, "InformInfoRecord", 43);
    g.finish();
}

/// A reassembled GetTableResp of NodeRecords with about `data_len` bytes
/// of records: 56-byte header, then records at `PADDED_LEN` stride.
fn node_table(data_len: usize) -> (Vec<u8>, usize) {
    let n = data_len / NodeRecord::PADDED_LEN;
    let mut rng = support::Rng::new(0x7461_626c);
    let mut msg = rng.bytes(56 + n * NodeRecord::PADDED_LEN);
    mad_testkit::header::edit(&mut msg, |h| {
        h.base_version = 1;
        h.mgmt_class = mad_core::wire::MgmtClass::SUBN_ADM;
        h.class_version = 2;
        h.response = true;
        h.method = mad_core::wire::Method::GET_TABLE;
        h.attr_id = mad_core::wire::AttributeId::SA_NODE_RECORD;
    });
    let mut sa = SaMad::new_unchecked(&mut msg[..]);
    sa.set_attr_offset(NodeRecord::ATTR_OFFSET);
    (msg, n)
}

fn table(c: &mut Criterion) {
    let (msg, n) = node_table(1 << 20);
    let mut g = c.benchmark_group("sa_table");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("NodeRecord_1MiB/split_and_parse", |b| {
        b.iter(|| {
            let sa = SaMad::new_checked(black_box(&msg[..]))?;
            let mut guid_xor = 0u64;
            for r in split_records(sa.data(), sa.attr_offset())? {
                guid_xor ^= NodeRecord::parse(r)?.node_info.node_guid;
            }
            Ok::<_, mad_core::wire::Error>(guid_xor)
        })
    });
    g.finish();
}

support::bench_main!(records, table);
