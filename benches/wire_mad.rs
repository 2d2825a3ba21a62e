//! Parse and emit of the MAD headers and SMPs: `MadHeader` (Repr), the
//! zero-copy `Mad` and `Smp` views, `SmpRepr`, `DrSmpRepr`, and building a
//! directed-route request. One element = one MAD.
// criterion_group!/criterion_main! generate undocumented items.
#![allow(missing_docs)]
use criterion::{black_box, Criterion, Throughput};
use mad_core::wire::smp::{dr_make_response, DrPath, DrSmpRepr, Smp, SmpRepr};
use mad_core::wire::{AttributeId, Mad, MadHeader, Method, MgmtClass, Repr};

#[path = "support/mod.rs"]
mod support;

/// A LID-routed SMP GetResp(NodeInfo) with random data.
fn lid_smp(rng: &mut support::Rng) -> [u8; 256] {
    let mut b = [0u8; 256];
    rng.fill(&mut b);
    let mut m = Mad::new_unchecked(&mut b[..]);
    m.set_base_version(1);
    m.set_mgmt_class(MgmtClass::SUBN_LID_ROUTED);
    m.set_class_version(1);
    m.set_method(Method::GET, true);
    m.set_attr_id(AttributeId::NODE_INFO);
    b
}

/// A directed-route SMP Get(PortInfo) over 3 hops, then its response.
fn dr_smp() -> [u8; 256] {
    let path = DrPath::from_hops(&[1, 3, 5]).expect("3 hops is a valid route");
    path.build_request(Method::GET, AttributeId::PORT_INFO, 1, 0x1234_5678_9abc, 0)
}

fn header(c: &mut Criterion) {
    let mut rng = support::Rng::new(0x4d41_4401);
    let buf = lid_smp(&mut rng);
    let hdr = MadHeader::parse(&buf).expect("24 bytes present");
    let mut out = [0u8; 256];
    let mut g = c.benchmark_group("mad_header");
    g.throughput(Throughput::Elements(1));
    g.bench_function("parse", |b| b.iter(|| MadHeader::parse(black_box(&buf))));
    g.bench_function("emit", |b| {
        b.iter(|| black_box(&hdr).emit(black_box(&mut out)))
    });
    g.bench_function("view_read", |b| {
        b.iter(|| {
            let m = Mad::new_checked(black_box(&buf[..]))?;
            Ok::<_, mad_core::wire::Error>((
                m.mgmt_class(),
                m.class_version(),
                m.method(),
                m.is_response(),
                m.status(),
                m.tid(),
                m.attr_id(),
                m.attr_mod(),
            ))
        })
    });
    g.bench_function("view_write", |b| {
        b.iter(|| {
            let mut m = Mad::new_unchecked(&mut out[..]);
            m.set_base_version(1);
            m.set_mgmt_class(MgmtClass::SUBN_LID_ROUTED);
            m.set_class_version(1);
            m.set_method(Method::GET, false);
            m.set_tid(black_box(0x0102_0304_0506_0708));
            m.set_attr_id(AttributeId::NODE_INFO);
            m.set_attr_mod(black_box(0));
            black_box(&mut out);
        })
    });
    g.finish();
}

fn smp(c: &mut Criterion) {
    let mut rng = support::Rng::new(0x534d_5002);
    let lid = lid_smp(&mut rng);
    let dr = dr_smp();
    let lid_repr = SmpRepr::parse(&lid).expect("256 bytes");
    let dr_repr = DrSmpRepr::parse(&dr).expect("256 bytes");
    let mut out = [0u8; 256];
    let mut g = c.benchmark_group("smp");
    g.throughput(Throughput::Elements(1));
    g.bench_function("SmpRepr/parse", |b| {
        b.iter(|| SmpRepr::parse(black_box(&lid)))
    });
    g.bench_function("SmpRepr/emit", |b| {
        b.iter(|| black_box(&lid_repr).emit(black_box(&mut out)))
    });
    g.bench_function("DrSmpRepr/parse", |b| {
        b.iter(|| DrSmpRepr::parse(black_box(&dr)))
    });
    g.bench_function("DrSmpRepr/emit", |b| {
        b.iter(|| black_box(&dr_repr).emit(black_box(&mut out)))
    });
    g.bench_function("Smp_view/read_dr", |b| {
        b.iter(|| {
            let s = Smp::new_checked(black_box(&dr[..]))?;
            Ok::<_, mad_core::wire::Error>((
                s.is_directed_route(),
                s.tid(),
                s.attr_id(),
                s.attr_mod(),
                s.hop_ptr(),
                s.hop_cnt(),
                s.direction(),
                s.dr_status(),
                s.dr_slid(),
                s.dr_dlid(),
                s.data()[0],
            ))
        })
    });
    let path = DrPath::from_hops(&[1, 3, 5]).expect("3 hops is a valid route");
    g.bench_function("DrPath/build_request", |b| {
        b.iter(|| {
            black_box(&path).build_request(
                Method::GET,
                AttributeId::PORT_INFO,
                black_box(1),
                black_box(0x1234),
                0,
            )
        })
    });
    g.bench_function("dr_make_response", |b| {
        b.iter(|| {
            let mut s = Smp::new_unchecked(black_box(dr));
            s.set_hop_ptr(4);
            dr_make_response(&mut s).map(|()| s.into_inner())
        })
    });
    g.finish();
}

support::bench_main!(header, smp);
