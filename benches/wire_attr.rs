//! Parse and emit of every common SMP and PerfMgt attribute (`Repr` of
//! mad_core::wire::attr). Inputs are fixed-seed random bytes: parsing is
//! lossless, so every bit pattern is a valid attribute. One element = one
//! attribute.
// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]
use criterion::measurement::WallTime;
use criterion::{black_box, BenchmarkGroup, Criterion, Throughput};
use mad_core::wire::attr::{
    ClassPortInfo, GuidInfo, LinearFwdTable, MulticastFwdTable, NodeDescription, NodeInfo, Notice,
    PKeyTable, PortCounters, PortCountersExt, PortInfo, SlToVlTable, SmInfo, SwitchInfo,
    VlArbTable,
};
use mad_core::wire::Repr;

#[path = "support/mod.rs"]
mod support;

/// Benches `T::parse` and `T::emit` on `T::LEN` random bytes.
fn repr<T: Repr>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, seed: u64) {
    let buf = support::Rng::new(seed).bytes(T::LEN);
    let value = T::parse(&buf).expect("every bit pattern parses");
    let mut out = vec![0u8; T::LEN];
    g.bench_function(format!("{name}/parse"), |b| {
        b.iter(|| T::parse(black_box(&buf)))
    });
    g.bench_function(format!("{name}/emit"), |b| {
        b.iter(|| black_box(&value).emit(black_box(&mut out)))
    });
}

fn attrs(c: &mut Criterion) {
    let mut g = c.benchmark_group("attr");
    g.throughput(Throughput::Elements(1));
    repr::<NodeInfo>(&mut g, "NodeInfo", 11);
    repr::<NodeDescription>(&mut g, "NodeDescription", 12);
    repr::<PortInfo>(&mut g, "PortInfo", 13);
    repr::<SwitchInfo>(&mut g, "SwitchInfo", 14);
    repr::<SmInfo>(&mut g, "SMInfo", 15);
    repr::<GuidInfo>(&mut g, "GUIDInfo", 16);
    repr::<PKeyTable>(&mut g, "P_KeyTable", 17);
    repr::<SlToVlTable>(&mut g, "SLtoVLMappingTable", 18);
    repr::<VlArbTable>(&mut g, "VLArbitrationTable", 19);
    repr::<LinearFwdTable>(&mut g, "LinearForwardingTable", 20);
    repr::<MulticastFwdTable>(&mut g, "MulticastForwardingTable", 21);
    repr::<Notice>(&mut g, "Notice", 22);
    repr::<ClassPortInfo>(&mut g, "ClassPortInfo", 23);
    repr::<PortCounters>(&mut g, "PortCounters", 24);
    repr::<PortCountersExt>(&mut g, "PortCountersExtended", 25);
    g.finish();
}

support::bench_main!(attrs);
