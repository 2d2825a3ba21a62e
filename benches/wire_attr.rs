//! Parse and emit of every common SMP and PerfMgt attribute (`Repr` of
//! mad_core::wire::attr). Inputs are fixed-seed random bytes: parsing is
//! lossless, so every bit pattern is a valid attribute. One element = one
//! attribute.
// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]
use criterion::{Criterion, Throughput};
use mad_core::wire::attr::{
    ClassPortInfo, GuidInfo, LinearFwdTable, MulticastFwdTable, NodeDescription, NodeInfo, Notice,
    PKeyTable, PortCounters, PortCountersExt, PortInfo, SlToVlTable, SmInfo, SwitchInfo,
    VlArbTable,
};

#[path = "support/mod.rs"]
mod support;

fn attrs(c: &mut Criterion) {
    let mut g = c.benchmark_group("attr");
    g.throughput(Throughput::Elements(1));
    support::repr::<NodeInfo>(&mut g, "NodeInfo", 11);
    support::repr::<NodeDescription>(&mut g, "NodeDescription", 12);
    support::repr::<PortInfo>(&mut g, "PortInfo", 13);
    support::repr::<SwitchInfo>(&mut g, "SwitchInfo", 14);
    support::repr::<SmInfo>(&mut g, "SMInfo", 15);
    support::repr::<GuidInfo>(&mut g, "GUIDInfo", 16);
    support::repr::<PKeyTable>(&mut g, "P_KeyTable", 17);
    support::repr::<SlToVlTable>(&mut g, "SLtoVLMappingTable", 18);
    support::repr::<VlArbTable>(&mut g, "VLArbitrationTable", 19);
    support::repr::<LinearFwdTable>(&mut g, "LinearForwardingTable", 20);
    support::repr::<MulticastFwdTable>(&mut g, "MulticastForwardingTable", 21);
    support::repr::<Notice>(&mut g, "Notice", 22);
    support::repr::<ClassPortInfo>(&mut g, "ClassPortInfo", 23);
    support::repr::<PortCounters>(&mut g, "PortCounters", 24);
    support::repr::<PortCountersExt>(&mut g, "PortCountersExtended", 25);
    g.finish();
}

support::bench_main!(attrs);
