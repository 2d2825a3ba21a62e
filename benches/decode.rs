//! `decode_mad`: the generic decoder behind `mad decode` (header, class
//! header, attribute or records as reflective layers) on one MAD of each
//! common kind. One element = one MAD decoded.
// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]
use criterion::{black_box, Criterion, Throughput};
use mad_core::wire::decode::decode_mad;
use mad_core::wire::smp::DrPath;
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass};

#[path = "support/mod.rs"]
mod support;

fn mad(class: MgmtClass, version: u8, method: Method, attr: AttributeId, seed: u64) -> Vec<u8> {
    let mut b = support::Rng::new(seed).bytes(256);
    b[4..36].fill(0);
    let mut m = Mad::new_unchecked(&mut b[..]);
    m.set_base_version(1);
    m.set_mgmt_class(class);
    m.set_class_version(version);
    m.set_method(method, true);
    m.set_tid(seed);
    m.set_attr_id(attr);
    b
}

fn decode(c: &mut Criterion) {
    let nodeinfo = mad(
        MgmtClass::SUBN_LID_ROUTED,
        1,
        Method::GET,
        AttributeId::NODE_INFO,
        51,
    );
    let mut dr_portinfo = DrPath::from_hops(&[1, 3])
        .expect("valid route")
        .build_request(Method::GET, AttributeId::PORT_INFO, 1, 52, 0)
        .to_vec();
    dr_portinfo[3] = 0x81;
    dr_portinfo[64..128].copy_from_slice(&support::Rng::new(52).bytes(64));
    // A single-MAD SA GetResp(PathRecord) with AttributeOffset 8.
    let mut path = mad(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET,
        AttributeId::SA_PATH_RECORD,
        53,
    );
    path[36..56].fill(0);
    path[44..46].copy_from_slice(&8u16.to_be_bytes());
    let counters = mad(
        MgmtClass::PERF_MGT,
        1,
        Method::GET,
        AttributeId::PM_PORT_COUNTERS,
        54,
    );
    let mut g = c.benchmark_group("decode_mad");
    g.throughput(Throughput::Elements(1));
    for (name, buf) in [
        ("SMP_NodeInfo", &nodeinfo),
        ("DR_SMP_PortInfo", &dr_portinfo),
        ("SA_PathRecord", &path),
        ("PerfMgt_PortCounters", &counters),
    ] {
        assert!(decode_mad(buf).is_ok(), "{name} must decode");
        g.bench_function(name, |b| b.iter(|| decode_mad(black_box(buf))));
    }
    g.finish();
}

support::bench_main!(decode);
