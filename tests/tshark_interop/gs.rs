//! Cases: PerfMgt and the other GS classes, and vendor range 2.

use mad_core::pcap::Direction;
use mad_core::wire::attr::*;
use mad_core::wire::perf::{PerfMad, PERF_CLASS_VERSION};
use mad_core::wire::rmpp::{RmppHeader, RmppStatus, RmppType, RMPP_FLAG_ACTIVE};
use mad_core::wire::sa::SaHeader;
use mad_core::wire::sa_records::*;
use mad_core::wire::vendor::{VendorHeader, VendorMad, IB_OPENIB_OUI};
use mad_core::wire::{AttributeId, Method, MgmtClass, Repr};

use crate::attrs::*;
use crate::expect::*;
use crate::sa::*;

pub(crate) fn gs_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    // PerfMgt: class header is 40 reserved bytes, attribute at 64.
    let perf = |rng: &mut Rng, attr: AttributeId, data: &[u8]| {
        let mut m = vec![0u8; 256];
        header(
            MgmtClass::PERF_MGT,
            PERF_CLASS_VERSION,
            Method::GET,
            true,
            attr,
            0,
            rng.next_u64(),
        )
        .emit(&mut m)
        .expect("emit");
        let mut pm = PerfMad::new_checked(&mut m[..]).expect("PerfMgt MAD");
        pm.data_mut()[..data.len()].copy_from_slice(data);
        m
    };
    let pc: PortCounters = varied(rng);
    let mut c = Case::new(
        "PerfMgt PortCounters",
        perf(
            rng,
            AttributeId::PM_PORT_COUNTERS,
            &pc.to_vec().expect("emit"),
        ),
        5,
        6,
        Direction::Received,
    );
    let reserved = PerfMad::new_checked(&c.mad[..])
        .expect("PerfMgt MAD")
        .reserved()
        .to_vec();
    let e = &mut c.expect;
    e.bytes(
        &at(P_PC, "infiniband.reserved"),
        &reserved,
        "PerfMad::reserved (bytes 24..64)",
    );
    e.field(&pc, &at(P_PC, "infiniband.reserved"), "reserved");
    e.fields(&pc, "", PORT_COUNTERS);
    // tshark shows IBA 1.2's CounterSelect2 and QP1Dropped as "Reserved".
    e.bytes(
        &at(P_PC, "infiniband.reserved"),
        &[pc.counter_select2],
        "PortCounters.counter_select2",
    );
    e.bytes(
        &at(P_PC, "infiniband.reserved"),
        &pc.qp1_dropped.to_be_bytes(),
        "PortCounters.qp1_dropped",
    );
    out.push(c);

    let px: PortCountersExt = varied(rng);
    let mut c = Case::new(
        "PerfMgt PortCountersExtended",
        perf(
            rng,
            AttributeId::PM_PORT_COUNTERS_EXT,
            &px.to_vec().expect("emit"),
        ),
        5,
        6,
        Direction::Received,
    );
    let reserved = PerfMad::new_checked(&c.mad[..])
        .expect("PerfMgt MAD")
        .reserved()
        .to_vec();
    let e = &mut c.expect;
    e.bytes(
        &at(P_PCX, "infiniband.reserved"),
        &reserved,
        "PerfMad::reserved (bytes 24..64)",
    );
    e.field(&px, &at(P_PCX, "infiniband.reserved"), "reserved");
    e.fields(&px, "", PORT_COUNTERS_EXT);
    e.bytes(
        &at(P_PCX, "infiniband.reserved"),
        &px.counter_select2.to_be_bytes(),
        "PortCountersExt.counter_select2",
    );
    out.push(c);

    let cpi: ClassPortInfo = varied(rng);
    let mut c = Case::new(
        "PerfMgt ClassPortInfo",
        perf(
            rng,
            AttributeId::CLASS_PORT_INFO,
            &cpi.to_vec().expect("emit"),
        ),
        5,
        6,
        Direction::Received,
    );
    c.expect.fields(&cpi, "", CLASS_PORT_INFO);
    out.push(c);

    let cpi: ClassPortInfo = varied(rng);
    let hdr = header(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET,
        true,
        AttributeId::CLASS_PORT_INFO,
        0,
        rng.next_u64(),
    );
    let rmpp = RmppHeader::default();
    let sa = sa_header(rng, 0);
    let m = sa_mad(&hdr, &rmpp, &sa, &[cpi.to_vec().expect("emit")], 72);
    let mut c = Case::new("SA ClassPortInfo", m.clone(), 5, 6, Direction::Received);
    expect_rmpp(&mut c.expect, &m);
    expect_sa_header(&mut c.expect, &m);
    c.expect
        .bytes("infiniband.sa.drdlid", &m[56..], "SA data (ClassPortInfo)");
    c.expect.fields(&cpi, "", CLASS_PORT_INFO);
    out.push(c);

    // SA Report(Notice) to a subscriber: a Notice as SA data.
    let mut n: Notice = varied(rng);
    n.is_generic = true;
    n.trap_number_or_device_id = 64;
    let hdr = header(
        MgmtClass::SUBN_ADM,
        2,
        Method::REPORT,
        false,
        AttributeId::NOTICE,
        0,
        rng.next_u64(),
    );
    let m = sa_mad(
        &hdr,
        &RmppHeader::default(),
        &sa_header(rng, 0),
        &[n.to_vec().expect("emit")],
        80,
    );
    let mut c = Case::new("SA Report Notice", m.clone(), 1, 0x33, Direction::Received);
    expect_rmpp(&mut c.expect, &m);
    expect_sa_header(&mut c.expect, &m);
    let e = &mut c.expect;
    e.bytes("infiniband.sa.drdlid", &m[56..], "SA data (Notice)");
    e.bytes(
        "infiniband.smplid.smpdata",
        &m[56..120],
        "Notice bytes 0..64",
    );
    e.fields(&n, "", NOTICE);
    e.field(&n, "infiniband.notice.datadetails", "data_details");
    e.field(&n, "infiniband.smplid.smpdata", "data_details");
    expect_trap_details(e, &n);
    out.push(c);

    // An RMPP ACK on the SA (segment 3, window up to 7).
    let hdr = header(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET_TABLE,
        true,
        AttributeId::SA_PATH_RECORD,
        0,
        rng.next_u64(),
    );
    let ack = RmppHeader {
        version: 1,
        rmpp_type: RmppType::ACK,
        resp_time: 0x1F,
        flags: RMPP_FLAG_ACTIVE,
        status: RmppStatus(0),
        data1: 3,
        data2: 7,
    };
    let m = sa_mad(&hdr, &ack, &SaHeader::default(), &[], 64);
    let mut c = Case::new("SA RMPP ACK", m.clone(), 0x33, 1, Direction::Sent);
    expect_rmpp(&mut c.expect, &m);
    // tshark still decodes the (all-zero) rest as SA header and PathRecord.
    expect_sa_header(&mut c.expect, &m);
    c.expect
        .bytes("infiniband.sa.drdlid", &m[56..], "SA data (zero)");
    expect_path_record(&mut c.expect, &PathRecord::default(), &m[56..120]);
    out.push(c);

    // An RMPP ABORT (status 118, total time too long) on a vendor-range-2
    // style transfer is shown with Data1/Data2 and the error data.
    let hdr = header(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET_TABLE,
        true,
        AttributeId::SA_NODE_RECORD,
        0,
        rng.next_u64(),
    );
    let abort = RmppHeader {
        version: 1,
        rmpp_type: RmppType::ABORT,
        resp_time: 0x1F,
        flags: RMPP_FLAG_ACTIVE,
        status: RmppStatus(118),
        data1: 0,
        data2: 0,
    };
    let mut m = sa_mad(&hdr, &abort, &SaHeader::default(), &[], 112);
    m[56 + 44..56 + 44 + 20].copy_from_slice(b"abort: time too long");
    let mut c = Case::new("SA RMPP ABORT", m.clone(), 0x33, 1, Direction::Sent);
    expect_rmpp(&mut c.expect, &m);
    // tshark still decodes the rest as SA header and NodeRecord.
    expect_sa_header(&mut c.expect, &m);
    c.expect
        .bytes("infiniband.sa.drdlid", &m[56..], "SA data (error data)");
    expect_node_record(&mut c.expect, &NodeRecord::parse(&m[56..]).expect("parse"));
    out.push(c);
}

pub(crate) fn vendor_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    // Vendor range 2: VendorHeader (RMPP header, reserved byte, OUI) at 24,
    // vendor data at 40.
    for (class, oui) in [(0x30u8, 0x00_02C9), (0x4F, IB_OPENIB_OUI)] {
        let mut m = vec![0u8; 256];
        header(
            MgmtClass(class),
            1,
            Method::GET,
            false,
            AttributeId(0xFF10),
            0x1234_5678,
            rng.next_u64(),
        )
        .emit(&mut m)
        .expect("emit");
        let vh = VendorHeader {
            rmpp: rmpp_single(rng, 216),
            reserved: 0,
            oui,
        };
        vh.emit(&mut m[24..]).expect("emit vendor header");
        let data = rng.bytes(216);
        {
            let mut v = VendorMad::new_checked(&mut m[..]).expect("vendor MAD");
            v.data_mut().copy_from_slice(&data);
        }
        let back = VendorMad::new_checked(&m[..]).expect("vendor MAD");
        assert_eq!((back.oui(), back.data()), (oui, &data[..]));
        let mut c = Case::new(
            &format!("Vendor class {class:#04x}"),
            m.clone(),
            5,
            6,
            Direction::Sent,
        );
        // tshark 4.0 does not dissect vendor classes: it shows the bytes
        // after the common header (our VendorHeader and the vendor data).
        c.expect.bytes(
            "infiniband.smplid.smpdata",
            &m[24..],
            "VendorHeader (RMPP, OUI) + vendor data",
        );
        out.push(c);
    }
}
