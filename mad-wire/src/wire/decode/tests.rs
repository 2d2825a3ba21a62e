//! Tests of the generic decoder, class by class.

use super::*;
use crate::wire::attr::{ClassPortInfo, NodeInfo, Notice, PortCounters};
use crate::wire::rmpp::{RMPP_FLAG_ACTIVE, RMPP_FLAG_FIRST, RMPP_FLAG_LAST};
use crate::wire::sa_records::{InformInfo, PathRecord};
use crate::wire::smp::DrSmpRepr;
use crate::wire::Fields;

fn mad(class: u8, method: u8, attr: u16) -> Vec<u8> {
    let mut b = vec![0u8; 256];
    b[0] = 1;
    b[1] = class;
    b[2] = 1;
    b[3] = method;
    b[16..18].copy_from_slice(&attr.to_be_bytes());
    b
}

/// Sets the RMPP header of `b`.
fn rmpp(b: &mut [u8], ty: u8, flags: u8, seg: u32, payload: u32) {
    b[24] = 1;
    b[25] = ty;
    b[26] = (0x1F << 3) | flags;
    b[28..32].copy_from_slice(&seg.to_be_bytes());
    b[32..36].copy_from_slice(&payload.to_be_bytes());
}

fn path(dlid: u16) -> PathRecord {
    PathRecord {
        dlid,
        slid: 1,
        pkey: 0xFFFF,
        ..PathRecord::default()
    }
}

/// The record of layer `l` re-parsed as `R` through its Debug text.
fn same<R: core::fmt::Debug>(l: &Layer, r: &R) -> bool {
    l.fields().map(|f| format!("{f:?}")) == Some(format!("{r:?}"))
}

#[test]
fn buffer_shorter_than_the_common_header_is_an_error() {
    for n in 0..MAD_HEADER_LEN {
        assert!(matches!(
            decode_mad(&vec![0u8; n]),
            Err(Error::Truncated { need: 24, .. })
        ));
    }
}

#[test]
fn smp_node_info_is_decoded_at_byte_64() {
    let mut b = mad(0x01, 0x81, 0x0011);
    b[64 + 2] = 2; // NodeType switch
    b[64 + 3] = 36; // NumPorts
    b[64 + 12..64 + 20].copy_from_slice(&0x0002_c903_0000_1234u64.to_be_bytes());
    let d = decode_mad(&b).unwrap();
    let l = d.layer("NodeInfo").expect("NodeInfo layer");
    assert_eq!(l.offset, 64);
    assert_eq!(l.fields().unwrap().struct_name(), "NodeInfo");
    let ni = NodeInfo::parse(&b[64..]).unwrap();
    assert_eq!(ni.num_ports, 36);
    assert_eq!(ni.node_guid, 0x0002_c903_0000_1234);
    assert!(same(l, &ni));
}

/// Names of the fields of `f` that have a value (are not hidden).
fn visible(f: &dyn Fields) -> Vec<&'static str> {
    (0..f.field_descs().len())
        .filter(|i| f.field_value(*i).is_some())
        .map(|i| f.field_descs()[i].name)
        .collect()
}

#[test]
fn dr_smp_header_layer_shows_routing_fields_but_not_header_or_data_again() {
    let mut b = mad(0x81, 0x81, 0x0011);
    b[4] = 0x80; // D bit
    b[6] = 2; // hop pointer
    b[7] = 1; // hop count
    b[24..32].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
    b[32..36].copy_from_slice(&[0xFF, 0xFF, 0x00, 0x07]);
    b[129] = 3;
    let d = decode_mad(&b).unwrap();
    let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
    assert_eq!(names, ["DrSMP", "NodeInfo"]);
    let f = d.layer("DrSMP").unwrap().fields().unwrap();
    assert_eq!(
        visible(f),
        [
            "direction",
            "status",
            "hop_ptr",
            "hop_cnt",
            "m_key",
            "dr_slid",
            "dr_dlid",
            "reserved1",
            "initial_path",
            "return_path"
        ]
    );
    let dr = DrSmpRepr::parse(&b).unwrap();
    assert_eq!((dr.direction, dr.hop_ptr, dr.hop_cnt), (true, 2, 1));
    assert_eq!(
        (dr.dr_slid, dr.dr_dlid, dr.m_key),
        (0xFFFF, 7, 0x1122_3344_5566_7788)
    );
    let i = f
        .field_descs()
        .iter()
        .position(|x| x.name == "dr_dlid")
        .unwrap();
    assert!(matches!(
        f.field_value(i),
        Some(crate::wire::FieldValue::Uint(7))
    ));
}

#[test]
fn lid_routed_smp_header_layer_shows_the_m_key() {
    let mut b = mad(0x01, 0x01, 0x0015);
    b[24..32].copy_from_slice(&5u64.to_be_bytes());
    let d = decode_mad(&b).unwrap();
    let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
    assert_eq!(names, ["SMP", "PortInfo"]);
    let f = d.layer("SMP").unwrap().fields().unwrap();
    assert_eq!(visible(f), ["m_key", "reserved", "reserved1"]);
    assert!(matches!(
        f.field_value(1),
        Some(crate::wire::FieldValue::Uint(5))
    ));
}

#[test]
fn smp_shorter_than_256_bytes_is_an_error() {
    let b = mad(0x01, 0x01, 0x0015);
    assert!(matches!(
        decode_mad(&b[..200]),
        Err(Error::Truncated { need: 256, .. })
    ));
}

#[test]
fn smp_unknown_attribute_is_raw_with_a_note() {
    let b = mad(0x81, 0x01, 0xFF90);
    let d = decode_mad(&b).unwrap();
    let l = d.layer("Data").unwrap();
    assert_eq!(l.offset, 64);
    assert_eq!(l.raw().map(<[u8]>::len), Some(64));
    assert!(l.note.as_deref().unwrap_or("").contains("0xff90"));
}

#[test]
fn smp_every_known_attribute_decodes_under_its_name() {
    for (id, name) in [
        (0x02, "Notice"),
        (0x10, "NodeDescription"),
        (0x11, "NodeInfo"),
        (0x12, "SwitchInfo"),
        (0x14, "GUIDInfo"),
        (0x15, "PortInfo"),
        (0x16, "P_KeyTable"),
        (0x17, "SLtoVLMappingTable"),
        (0x18, "VLArbitrationTable"),
        (0x19, "LinearForwardingTable"),
        (0x1B, "MulticastForwardingTable"),
        (0x20, "SMInfo"),
    ] {
        for class in [0x01, 0x81] {
            let d = decode_mad(&mad(class, 0x81, id)).unwrap();
            let l = d
                .layer(name)
                .unwrap_or_else(|| panic!("{name} in {class:#x}"));
            assert_eq!(l.offset, 64);
            assert!(l.fields().is_some());
        }
    }
}

#[test]
fn sa_single_segment_get_table_response_is_split_by_attribute_offset() {
    let mut b = mad(0x03, 0x92, 0x0035);
    rmpp(
        &mut b,
        1,
        RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
        1,
        20 + 128,
    );
    b[44..46].copy_from_slice(&8u16.to_be_bytes()); // 64-byte records
    path(5).emit(&mut b[56..]).unwrap();
    path(6).emit(&mut b[120..]).unwrap();
    let d = decode_mad(&b).unwrap();
    let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
    assert_eq!(names, ["RMPP", "SA", "PathRecord", "PathRecord"]);
    let recs: Vec<_> = d.layers_named("PathRecord").collect();
    assert_eq!((recs[0].index, recs[0].offset), (Some(0), 56));
    assert_eq!((recs[1].index, recs[1].offset), (Some(1), 120));
    assert!(same(recs[0], &path(5)));
    assert!(same(recs[1], &path(6)));
}

#[test]
fn sa_rmpp_middle_and_last_segments_are_raw_with_a_note() {
    for (flags, seg) in [
        (RMPP_FLAG_ACTIVE, 2),
        (RMPP_FLAG_ACTIVE | RMPP_FLAG_LAST, 3),
    ] {
        let mut b = mad(0x03, 0x92, 0x0035);
        rmpp(&mut b, 1, flags, seg, 0);
        b[44..46].copy_from_slice(&8u16.to_be_bytes());
        path(7).emit(&mut b[56..]).unwrap();
        let d = decode_mad(&b).unwrap();
        assert!(d.layer("PathRecord").is_none());
        let raw = d.layer("Data").unwrap();
        assert_eq!((raw.offset, raw.raw().map(<[u8]>::len)), (56, Some(200)));
        let note = raw.note.as_deref().unwrap();
        assert!(note.contains(&format!("segment {seg}")), "{note}");
        assert!(note.contains("cannot be split into records"), "{note}");
        assert!(d.notes.iter().any(|n| n.contains("cannot be split")));
    }
}

#[test]
fn sa_rmpp_first_segment_shows_the_whole_records_and_the_cut_one_raw() {
    let mut b = mad(0x03, 0x92, 0x0035);
    rmpp(&mut b, 1, RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST, 1, 5 * 220);
    b[44..46].copy_from_slice(&8u16.to_be_bytes());
    for i in 0..3 {
        path(10 + i as u16).emit(&mut b[56 + 64 * i..]).unwrap();
    }
    b[56 + 192] = 0xFE; // start of the fourth record
    let d = decode_mad(&b).unwrap();
    assert_eq!(d.layers_named("PathRecord").count(), 3);
    let raw = d.layer("Data").unwrap();
    assert_eq!((raw.offset, raw.raw().map(<[u8]>::len)), (248, Some(8)));
    assert!(raw.note.as_deref().unwrap().contains("next segment"));
}

#[test]
fn sa_reassembled_message_longer_than_a_mad_gives_every_record() {
    let mut b = mad(0x03, 0x92, 0x0035);
    rmpp(&mut b, 1, RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST, 1, 0);
    b[44..46].copy_from_slice(&8u16.to_be_bytes());
    b.resize(56 + 64 * 5, 0);
    for i in 0..5 {
        path(20 + i as u16).emit(&mut b[56 + 64 * i..]).unwrap();
    }
    let d = decode_mad(&b).unwrap();
    let recs: Vec<_> = d.layers_named("PathRecord").collect();
    assert_eq!(recs.len(), 5);
    assert!(same(recs[4], &path(24)));
    assert_eq!(recs[4].offset, 56 + 256);
}

#[test]
fn sa_get_table_with_attribute_offset_zero_has_no_records() {
    let mut b = mad(0x03, 0x92, 0x0035);
    rmpp(
        &mut b,
        1,
        RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
        1,
        20,
    );
    let d = decode_mad(&b).unwrap();
    assert!(d.layer("PathRecord").is_none() && d.layer("Data").is_none());
    assert!(d.notes.iter().any(|n| n.contains("no records")));
}

#[test]
fn sa_get_response_holds_one_record_and_no_index() {
    let mut b = mad(0x03, 0x81, 0x0035);
    path(9).emit(&mut b[56..]).unwrap();
    let d = decode_mad(&b).unwrap();
    let l = d.layer("PathRecord").unwrap();
    assert_eq!((l.index, l.offset), (None, 56));
    assert!(same(l, &path(9)));
    // The zero bytes after the record are not shown.
    assert!(d.layer("Data").is_none());
}

#[test]
fn sa_inform_info_notice_and_class_port_info_decode() {
    let mut b = mad(0x03, 0x02, 0x0003);
    let ii = InformInfo {
        subscribe: 1,
        ..InformInfo::default()
    };
    ii.emit(&mut b[56..]).unwrap();
    let d = decode_mad(&b).unwrap();
    assert!(same(d.layer("InformInfo").unwrap(), &ii));

    let mut b = mad(0x03, 0x06, 0x0002);
    let n = Notice {
        issuer_lid: 0x42,
        ..Notice::default()
    };
    n.emit(&mut b[56..]).unwrap();
    let d = decode_mad(&b).unwrap();
    assert!(same(d.layer("Notice").unwrap(), &n));

    let mut b = mad(0x03, 0x81, 0x0001);
    let c = ClassPortInfo {
        capability_mask: 0x0602,
        ..ClassPortInfo::default()
    };
    c.emit(&mut b[56..]).unwrap();
    let d = decode_mad(&b).unwrap();
    assert!(same(d.layer("ClassPortInfo").unwrap(), &c));
}

#[test]
fn sa_every_record_type_decodes_in_a_get_response_and_a_table() {
    for r in crate::wire::sa_records::all_records() {
        let mut b = mad(0x03, 0x81, r.attr_id.0);
        b[56] = 0x5A;
        let d = decode_mad(&b).unwrap();
        let l = d.layer(r.name).unwrap_or_else(|| panic!("{}", r.name));
        assert_eq!((l.offset, l.index), (56, None), "{}", r.name);
        let expect = (r.parse)(&b[56..]).unwrap();
        assert_eq!(format!("{:?}", l.fields().unwrap()), format!("{expect:?}"));

        let mut t = mad(0x03, 0x92, r.attr_id.0);
        let n = 200 / r.padded_len;
        rmpp(
            &mut t,
            1,
            RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
            1,
            (20 + n * r.padded_len) as u32,
        );
        t[44..46].copy_from_slice(&((r.padded_len / 8) as u16).to_be_bytes());
        for i in 0..n {
            t[56 + i * r.padded_len] = i as u8 + 1;
        }
        let d = decode_mad(&t).unwrap();
        let recs: Vec<_> = d.layers_named(r.name).collect();
        assert_eq!(recs.len(), n, "{}", r.name);
        for (i, l) in recs.iter().enumerate() {
            assert_eq!(l.index, Some(i));
            assert_eq!(l.offset, 56 + i * r.padded_len);
            let at = 56 + i * r.padded_len;
            let expect = (r.parse)(&t[at..]).unwrap();
            assert_eq!(format!("{:?}", l.fields().unwrap()), format!("{expect:?}"));
        }
        assert!(d.layer("Data").is_none(), "{}", r.name);
    }
}

#[test]
fn sa_rmpp_ack_has_no_record_layer() {
    let mut b = mad(0x03, 0x92, 0x0035);
    rmpp(&mut b, 2, RMPP_FLAG_ACTIVE, 3, 8);
    let d = decode_mad(&b).unwrap();
    let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
    assert_eq!(names, ["RMPP", "SA"]);
    let r = d.layer("RMPP").unwrap().fields().unwrap();
    assert_eq!(r.struct_name(), "RmppHeader");
}

#[test]
fn sa_unknown_attribute_is_raw() {
    let mut b = mad(0x03, 0x81, 0x0077);
    b[60] = 1;
    let d = decode_mad(&b).unwrap();
    let l = d.layer("Data").unwrap();
    assert_eq!(l.offset, 56);
    assert!(l.note.as_deref().unwrap().contains("0x0077"));
}

#[test]
fn sa_shorter_than_its_header_is_an_error() {
    let b = mad(0x03, 0x81, 0x0035);
    assert!(matches!(
        decode_mad(&b[..50]),
        Err(Error::Truncated { need: 56, .. })
    ));
}

#[test]
fn perf_port_counters_and_class_port_info_decode_at_byte_64() {
    let mut b = mad(0x04, 0x81, 0x0012);
    let pc = PortCounters {
        port_select: 3,
        symbol_error_counter: 77,
        ..PortCounters::default()
    };
    pc.emit(&mut b[64..]).unwrap();
    let d = decode_mad(&b).unwrap();
    let l = d.layer("PortCounters").unwrap();
    assert_eq!(l.offset, 64);
    assert!(same(l, &pc));

    let d = decode_mad(&mad(0x04, 0x81, 0x0001)).unwrap();
    assert!(d.layer("ClassPortInfo").is_some());
    let d = decode_mad(&mad(0x04, 0x81, 0x001D)).unwrap();
    assert!(d.layer("PortCountersExtended").is_some());
    let d = decode_mad(&mad(0x04, 0x81, 0x0010)).unwrap();
    assert_eq!(d.layer("PortSamplesControl").map(|l| l.offset), Some(64));
    // PortSamplesResultExtended is not decoded: raw, and the note says so.
    let d = decode_mad(&mad(0x04, 0x81, 0x001E)).unwrap();
    assert!(d
        .layer("Data")
        .unwrap()
        .note
        .as_deref()
        .unwrap()
        .contains("0x001e"));
}

#[test]
fn cc_mads_show_the_cc_key_then_the_attribute_at_byte_64_or_the_log_at_32() {
    let mut b = mad(0x21, 0x81, 0x0011);
    b[24..32].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
    b[66] = 4; // ControlTableCap
    let d = decode_mad(&b).unwrap();
    let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
    assert_eq!(names, ["CC", "CongestionInfo"]);
    assert_eq!(d.layers[1].offset, 64);
    // Non-zero reserved bytes 32-63 are shown, raw.
    b[40] = 1;
    let d = decode_mad(&b).unwrap();
    assert_eq!(d.layer("Data").map(|l| l.offset), Some(32));
    // A CA's CongestionLog: its type, header and 13 events from byte 32.
    let mut b = mad(0x21, 0x81, 0x0013);
    b[32] = 2;
    let d = decode_mad(&b).unwrap();
    assert_eq!(d.layer("CongestionLogCA").map(|l| l.offset), Some(32));
    assert_eq!(d.layers_named("CongestionLogEventCA").count(), 13);
    // A short MAD: the header errors, nothing panics.
    assert!(decode_mad(&mad(0x21, 0x81, 0x0017)[..40]).is_ok());
}

#[test]
fn vendor_range2_shows_rmpp_oui_and_data_from_byte_40() {
    let mut b = mad(0x30, 0x01, 0x0000);
    rmpp(&mut b, 1, 0, 0, 0);
    b[37..40].copy_from_slice(&[0x00, 0x14, 0x05]);
    b[40] = 0x99;
    let d = decode_mad(&b).unwrap();
    let names: Vec<_> = d.layers.iter().map(|l| l.name).collect();
    assert_eq!(names, ["RMPP", "Vendor", "Data"]);
    let v = d.layer("Vendor").unwrap().fields().unwrap();
    assert_eq!(visible(v), ["reserved", "oui"]);
    assert!(matches!(
        v.field_value(2),
        Some(crate::wire::FieldValue::Uint(0x1405))
    ));
    let raw = d.layer("Data").unwrap();
    assert_eq!((raw.offset, raw.raw().map(|r| r[0])), (40, Some(0x99)));
    assert!(matches!(decode_mad(&b[..39]), Err(Error::Truncated { .. })));
}

#[test]
fn openib_ping_and_sysstat_data_is_their_text_other_ouis_stay_raw() {
    for class in [0x32, 0x33] {
        let mut b = mad(class, 0x81, 0x0011);
        b[37..40].copy_from_slice(&[0x00, 0x14, 0x05]);
        b[40..46].copy_from_slice(b"host.d");
        let d = decode_mad(&b).unwrap();
        let t = d.layer("OpenIBText").unwrap();
        assert_eq!(t.offset, 40);
        assert!(matches!(
            t.fields().unwrap().field_value(0),
            Some(crate::wire::FieldValue::Bytes(s)) if s.starts_with(b"host.d\0")
        ));
        // Another OUI's data means something else: raw.
        b[39] = 0x06;
        let d = decode_mad(&b).unwrap();
        assert!(d.layer("OpenIBText").is_none() && d.layer("Data").is_some());
    }
}

#[test]
fn perf_reserved_header_bytes_show_only_when_set() {
    let mut b = mad(0x04, 0x81, 0x0012);
    assert!(decode_mad(&b).unwrap().layer("Data").is_none());
    b[30] = 1;
    let d = decode_mad(&b).unwrap();
    let l = d.layer("Data").unwrap();
    assert_eq!((l.offset, l.raw().map(<[u8]>::len)), (24, Some(40)));
    assert!(matches!(
        decode_mad(&b[..255]),
        Err(Error::Truncated { need: 256, .. })
    ));
}

#[test]
fn other_rmpp_classes_show_the_rmpp_header() {
    for class in [0x06, 0x10, 0x12] {
        let mut b = mad(class, 0x01, 0x0010);
        rmpp(
            &mut b,
            1,
            RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST,
            1,
            220,
        );
        let d = decode_mad(&b).unwrap();
        assert_eq!(d.layers[0].name, "RMPP", "class {class:#x}");
        assert!(d.layers.iter().any(|l| l.raw().is_some()));
    }
}

#[test]
fn unknown_class_gives_header_and_raw_data() {
    let mut buf = [0u8; 256];
    buf[0] = 1;
    buf[1] = 0x08; // SNMP
    buf[255] = 0xAB;
    let d = decode_mad(&buf).unwrap();
    assert_eq!(d.header.mgmt_class, MgmtClass::SNMP);
    assert_eq!(d.layers.len(), 1);
    assert_eq!(d.layers[0].offset, 24);
    assert_eq!(d.layers[0].raw().map(<[u8]>::len), Some(232));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    #[test]
    fn never_panics_on_any_bytes_of_any_class(
        class_pick in 0usize..12,
        method in proptest::prelude::any::<u8>(),
        attr_pick in 0usize..40,
        flags in 0u8..8,
        mut bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..700),
    ) {
        const CLASSES: [u8; 12] = [1, 0x81, 3, 4, 5, 6, 7, 0x10, 0x12, 0x30, 0x4F, 0x21];
        const ATTRS: [u16; 12] = [1, 2, 3, 0x10, 0x11, 0x12, 0x14, 0x15, 0x1D, 0x20, 0x35, 0xF3];
        if bytes.len() >= 27 {
            bytes[1] = CLASSES[class_pick];
            bytes[3] = method;
            if attr_pick < ATTRS.len() {
                bytes[16..18].copy_from_slice(&ATTRS[attr_pick].to_be_bytes());
            }
            bytes[26] = (bytes[26] & 0xF8) | flags;
        }
        let _ = decode_mad(&bytes);
    }
}

#[test]
fn sa_get_trace_table_request_shows_its_path_record_and_the_answer_trace_records() {
    let mut b = mad(0x03, 0x13, 0x0039);
    b[56 + 36..56 + 38].copy_from_slice(&7u16.to_be_bytes()); // DLID
    let d = decode_mad(&b).unwrap();
    let l = d.layer("PathRecord").expect("the request's PathRecord");
    assert_eq!(l.offset, 56);
    assert!(d.layer("TraceRecord").is_none());
    let r = mad(0x03, 0x81, 0x0039);
    assert!(decode_mad(&r).unwrap().layer("TraceRecord").is_some());
}
