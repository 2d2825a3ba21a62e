//! Shared bodies of the madstack fuzz targets.
//!
//! Every target under `fuzz_targets/` is a one-line wrapper around one of
//! these functions, so the checks live in one place:
//! - [`repr_roundtrip`]: parse → emit → compare with the input prefix
//!   (`emit(parse(b)) == b[..LEN]` exactly), parse again → equal value, and
//!   walk the field reflection;
//! - the view functions: every accessor of a checked view agrees with the
//!   `Repr` of the same bytes, and setters write what getters read;
//! - [`decode`]: the generic decoder and both printers never panic;
//! - [`pcap`]: the pcap reader never panics and ends;
//! - [`hex`]: the `mad decode` hex parser never panics and reads back what
//!   its own formatting of the bytes says;
//! - stateful targets, driving a state machine with a sequence of
//!   operations decoded from the input ([`arbitrary`], [`ops::Ops`]) on a virtual
//!   [`clock::Clock`], with its invariants checked after every step:
//!   [`rmpp_sender_ops`] (one RMPP `Sender` against a hostile receiver),
//!   [`rmpp_receiver_ops`] (a `ReceiverTable` fed by several peers) and
//!   [`engine_ops`] (the agent `Engine` over an in-memory transport),
//!   [`sa_subscriptions::run`] (the SA responder's InformInfo
//!   subscriptions against a plain list), [`cm::run`] (two CMs over a
//!   lossy wire) and [`cm_peers::run`] (one CM under attack from many
//!   peers while an honest one connects) and [`cm_service::run`] (the
//!   same attack on `CmService` itself, through the whole stack on the
//!   built-in fabric).
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a fuzz finding")]

use mad_wire::wire::{FieldValue, Fields, Repr};

pub mod clock;
pub mod cm;
pub mod cm_peers;
pub mod cm_service;
pub mod engine;
pub mod ops;
pub mod raw_rmpp;
pub mod rmpp_receiver;
pub mod rmpp_sender;
pub mod sa_subscriptions;
pub mod sm_lite;

/// Operation sequences on an RMPP `Sender`; see [`rmpp_sender`].
pub fn rmpp_sender_ops(data: &[u8]) {
    rmpp_sender::run(data);
}

/// Operation sequences on an RMPP `ReceiverTable`; see [`rmpp_receiver`].
pub fn rmpp_receiver_ops(data: &[u8]) {
    rmpp_receiver::run(data);
}

/// Operation sequences on the agent `Engine`; see [`engine`].
pub fn engine_ops(data: &[u8]) {
    engine::run(data);
}

/// Reads every field of `f` (recursively), as printers do.
pub fn walk(f: &dyn Fields) {
    let descs = f.field_descs();
    for i in 0..descs.len() {
        if let Some(FieldValue::Nested(n)) = f.field_value(i) {
            walk(n);
        }
    }
    assert!(f.field_value(descs.len()).is_none());
}

/// parse → emit → compare, for one `wire_struct` type.
pub fn repr_roundtrip<R: Repr + Fields + PartialEq + core::fmt::Debug>(data: &[u8]) {
    match R::parse(data) {
        Ok(r) => {
            assert!(data.len() >= R::LEN);
            let mut out = vec![0u8; R::LEN];
            r.emit(&mut out).expect("a parsed value emits");
            assert_eq!(&out[..], &data[..R::LEN], "emit(parse(b)) != b");
            let again = R::parse(&out).expect("emitted bytes parse");
            assert_eq!(again, r, "parse(emit(r)) != r");
            assert!(r.emit(&mut out[..R::LEN - 1]).is_err());
            walk(&r);
        }
        Err(_) => assert!(data.len() < R::LEN, "parse failed on a long enough buffer"),
    }
}

/// The common-header view against [`mad_wire::wire::MadHeader`].
pub fn mad_view(data: &[u8]) {
    use mad_wire::wire::{Mad, MadHeader};
    let Ok(m) = Mad::new_checked(data) else {
        assert!(data.len() < 24);
        return;
    };
    let h = MadHeader::parse(data).unwrap();
    assert_eq!(m.header().unwrap(), h);
    assert_eq!(m.base_version(), h.base_version);
    assert_eq!(m.mgmt_class(), h.mgmt_class);
    assert_eq!(m.class_version(), h.class_version);
    assert_eq!(m.method(), h.method);
    assert_eq!(m.response_bit(), h.response);
    assert_eq!(m.is_response(), h.is_response());
    assert_eq!(m.status(), h.status);
    assert_eq!(m.class_specific(), h.class_specific);
    assert_eq!(m.tid(), h.tid);
    assert_eq!(m.attr_id(), h.attr_id);
    assert_eq!(m.attr_mod(), h.attr_mod);
    assert_eq!(m.payload(), &data[24..]);
    // Setters write what the getters read, on a copy.
    let mut copy = data.to_vec();
    let mut w = Mad::new_checked(&mut copy[..]).unwrap();
    w.set_tid(!h.tid);
    w.set_attr_mod(!h.attr_mod);
    w.set_method(h.method, !h.response);
    assert_eq!(
        (w.tid(), w.attr_mod(), w.response_bit()),
        (!h.tid, !h.attr_mod, !h.response)
    );
}

/// The SMP view: accessors against the `Repr`s, and the directed-route
/// hop-pointer rules on arbitrary input.
pub fn smp_view(data: &[u8]) {
    use mad_wire::wire::smp::{
        dr_arrive, dr_check_forward, dr_check_send, dr_fwd_port, dr_handle_recv,
        dr_handle_send, dr_make_response, is_local_returning_smp, is_local_smp, Smp,
    };
    let Some((&ctl, data)) = data.split_first() else {
        return;
    };
    let Ok(s) = Smp::new_checked(data) else {
        return;
    };
    let _ = (
        s.mgmt_class(),
        s.method(),
        s.response_bit(),
        s.tid(),
        s.attr_id(),
    );
    let _ = (s.attr_mod(), s.direction(), s.dr_status(), s.data());
    if s.has_paths() {
        let r = s.to_repr().unwrap();
        assert_eq!(r.m_key, s.m_key());
        assert_eq!(&r.data[..], s.data());
        let dr = s.to_dr_repr().unwrap();
        assert_eq!((dr.dr_slid, dr.dr_dlid), (s.dr_slid(), s.dr_dlid()));
        assert_eq!((dr.hop_ptr, dr.hop_cnt), (s.hop_ptr(), s.hop_cnt()));
        assert_eq!(dr.direction, s.direction());
        assert_eq!(&dr.initial_path[..], s.initial_path());
        assert_eq!(&dr.return_path[..], s.return_path());
    } else {
        assert!(s.to_repr().is_err());
    }
    let _ = (
        dr_check_forward(&s),
        dr_fwd_port(&s),
        is_local_smp(&s),
        is_local_returning_smp(&s),
    );
    let mut copy = data.to_vec();
    let mut w = Smp::new_checked(&mut copy[..]).unwrap();
    let is_switch = ctl & 1 != 0;
    let port = ctl >> 1;
    if ctl & 0x80 != 0 {
        // The verdict without writing is the verdict of the send.
        let verdict = dr_check_send(&s, is_switch, port);
        assert_eq!(dr_handle_send(&mut w, is_switch, port), verdict);
    } else {
        // The one-pass arrival decision on a copy, then the receive rule.
        let mut arrive = data.to_vec();
        let mut a = Smp::new_checked(&mut arrive[..]).unwrap();
        let _ = dr_arrive(&mut a, is_switch, port, ctl & 0x3F);
        let _ = dr_handle_recv(&mut w, is_switch, port, ctl & 0x3F);
    }
    let _ = dr_make_response(&mut w);
    w.set_hop_ptr(7);
    w.set_m_key(0x1234);
    assert_eq!((w.hop_ptr(), w.m_key()), (7, 0x1234));
}

/// The SA view: header against [`mad_wire::wire::sa::SaHeader`], records
/// iterate to the end and stay inside the data.
pub fn sa_view(data: &[u8]) {
    use mad_wire::wire::sa::{split_records, SaHeader, SaMad};
    let Ok(sa) = SaMad::new_checked(data) else {
        assert!(data.len() < 56);
        return;
    };
    let h = SaHeader::parse(&data[36..]).unwrap();
    assert_eq!(sa.header().unwrap(), h);
    assert_eq!(
        (sa.sm_key(), sa.attr_offset(), sa.comp_mask()),
        (h.sm_key, h.attr_offset, h.comp_mask)
    );
    assert_eq!(sa.data(), &data[56..]);
    let _ = sa.is_table_response();
    if let Ok(used) = sa.used_data() {
        assert!(used.len() <= sa.data().len());
    }
    if let Ok(recs) = sa.records() {
        let mut total = 0usize;
        for r in recs {
            assert!(!r.is_empty());
            total += r.len();
        }
        assert!(total <= sa.data().len());
    }
    if let Ok(recs) = split_records(sa.data(), h.attr_offset) {
        for r in recs {
            assert_eq!(r.len(), usize::from(h.attr_offset) * 8);
        }
    }
}

/// The RMPP view against [`mad_wire::wire::rmpp::RmppHeader`].
pub fn rmpp_view(data: &[u8]) {
    use mad_wire::wire::rmpp::{RmppHeader, RmppView};
    let Ok(v) = RmppView::new_checked(data) else {
        assert!(data.len() < 36);
        return;
    };
    let h = RmppHeader::parse(&data[24..]).unwrap();
    assert_eq!(v.header().unwrap(), h);
    assert_eq!(
        (v.version(), v.rmpp_type(), v.status()),
        (h.version, h.rmpp_type, h.status)
    );
    assert_eq!((v.resp_time(), v.flags()), (h.resp_time, h.flags));
    assert_eq!((v.data1(), v.data2()), (h.data1, h.data2));
    assert_eq!(
        (v.is_active(), v.is_first(), v.is_last()),
        (h.is_active(), h.is_first(), h.is_last())
    );
    let _ = (
        v.seg_num(),
        v.payload_len(),
        v.new_window_last(),
        v.payload(),
    );
    let _ = (
        h.resp_time_duration(),
        h.data1_label(),
        h.data2_label(),
        h.status_is_valid(),
    );
    let mut copy = data.to_vec();
    let mut w = RmppView::new_checked(&mut copy[..]).unwrap();
    w.set_first(!h.is_first());
    w.set_data2(!h.data2);
    assert_eq!((w.is_first(), w.data2()), (!h.is_first(), !h.data2));
    assert_eq!(w.flags() & !0x02, h.flags & !0x02);
}

/// The PerfMgt and vendor views.
pub fn perf_vendor_view(data: &[u8]) {
    use mad_wire::wire::perf::PerfMad;
    use mad_wire::wire::vendor::{VendorHeader, VendorMad};
    if let Ok(p) = PerfMad::new_checked(data) {
        assert_eq!(p.reserved(), &data[24..64]);
        assert_eq!(p.data(), &data[64..256]);
    } else {
        assert!(data.len() < 256);
    }
    if let Ok(v) = VendorMad::new_checked(data) {
        let h = VendorHeader::parse(&data[24..]).unwrap();
        assert_eq!(v.header().unwrap(), h);
        assert_eq!(v.oui(), h.oui);
        assert_eq!(v.data(), &data[40..]);
        let _ = v.is_vendor_range2();
        let mut copy = data.to_vec();
        let mut w = VendorMad::new_checked(&mut copy[..]).unwrap();
        w.set_oui(0x00_1405).unwrap();
        assert_eq!(w.oui(), 0x00_1405);
        assert!(w.set_oui(0x100_0000).is_err());
    }
}

/// The generic decoder and both `mad decode` printers.
pub fn decode(data: &[u8]) {
    let Ok(d) = mad_wire::wire::decode::decode_mad(data) else {
        return;
    };
    walk(&d.header);
    for l in &d.layers {
        if let Some(f) = l.fields() {
            walk(f);
        }
        assert!(l.offset <= data.len());
    }
    let mut text = String::new();
    mad_tools::print::write_mad_text(&mut text, "fuzz", &d);
    let json = mad_tools::json::JsonExt::to_text(&mad_tools::print::mad_json("fuzz", &d));
    assert!(json.starts_with('{') && json.ends_with('}'));
}

/// `-d`'s libibmad line for a request going out (tools'
/// `session::debug::debug_line`): any bytes, any destination LID, either
/// route naming; never panics, and a line names the function it is for.
pub fn mad_debug_line(data: &[u8]) {
    let (lid, walk, mad) = match data {
        [a, b, c, rest @ ..] => (u16::from_be_bytes([*a, *b]), c & 1 == 1, rest),
        _ => return,
    };
    let dest = mad_core::transport::Address::smi(lid);
    if let Some((func, text)) = mad_tools::session::debug::debug_line(mad, &dest, walk) {
        assert!(!func.is_empty() && !text.contains('\n'));
    }
}

/// The pcap reader: never panics, always ends.
pub fn pcap(data: &[u8]) {
    let Ok(mut r) = mad_wire::pcap::PcapReader::new(data) else {
        return;
    };
    // Each record consumes at least its 16-byte header.
    for _ in 0..=data.len() / 16 + 1 {
        match r.next_record() {
            Ok(None) => return,
            Ok(Some(rec)) => assert!(rec.mad.len() <= data.len()),
            Err(_) => {}
        }
    }
    assert!(matches!(r.next_record(), Ok(None)), "reader did not end");
}

/// The `mad decode` hex parser: never panics; what it reads formats back
/// to hex that parses to the same bytes.
pub fn hex(data: &[u8]) {
    use mad_tools::hex::{parse_hex_mads, to_hex};
    let Ok(text) = core::str::from_utf8(data) else {
        return;
    };
    let Ok(mads) = parse_hex_mads(text) else {
        return;
    };
    for m in mads {
        assert!(!m.bytes.is_empty());
        let again = parse_hex_mads(&to_hex(&m.bytes)).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].bytes, m.bytes);
    }
}

/// libibnetdisc's fabric cache file (`ibnetdiscover --load-cache`): a
/// file is refused or read; what was read writes and reads back, and
/// from then on stays the same.
pub fn ibnetdisc_cache(data: &[u8]) {
    use mad_tools::discover::cache::{decode, encode};
    let Ok(f) = decode(data) else {
        return;
    };
    let once = decode(&encode(&f).expect("a read fabric encodes")).expect("and reads back");
    let twice = decode(&encode(&once).expect("encodes")).expect("reads back");
    assert_eq!(once, twice);
}

/// mad-sm's routing inputs and route check: the engine list (`-R`) and
/// a `root_guid_file` from the text, and the deadlock check over tables
/// made from the bytes (up to 8 switches of 6 ports, 8 CAs, any links
/// and entries): never panics, and a cycle it reports is one.
pub fn routing_check(data: &[u8]) {
    use mad_sm::routing::check::{check, CaPort, Peer, SwitchTables, Tables};
    use mad_sm::routing::engines::{parse_guid_file, Engine};
    let text = String::from_utf8_lossy(data);
    let _ = Engine::parse_list(&text);
    let _ = parse_guid_file(&text);
    let mut b = data.iter().copied();
    let mut next = || b.next().unwrap_or(0);
    let (nsw, nca) = (usize::from(next() % 8) + 1, usize::from(next() % 8));
    let mut t = Tables::default();
    for k in 0..nsw {
        let links = (0..7)
            .map(|p| {
                let v = next();
                if p == 0 || v % 4 == 0 {
                    None
                } else if v % 4 == 1 {
                    Some(Peer::Ca(usize::from(v >> 2) % (nca + 1)))
                } else {
                    Some(Peer::Switch { sw: usize::from(v >> 2) % (nsw + 1), port: v % 7 })
                }
            })
            .collect();
        let lft = (0..20).map(|_| next() % 9).collect();
        t.switches.push(SwitchTables { guid: k as u64, name: String::new(), lft, links });
    }
    for k in 0..nca {
        let (lid, lmc, sw, port) = (next() % 20, next() % 3, next(), next());
        t.cas.push(CaPort {
            guid: k as u64,
            name: String::new(),
            lid: u16::from(lid),
            lmc,
            attach: (sw % 2 == 0).then_some((usize::from(sw >> 1) % (nsw + 1), port % 7)),
        });
    }
    let r = check(&t);
    for (k, c) in r.cycle.iter().enumerate() {
        let next = r.cycle[(k + 1) % r.cycle.len()];
        assert!(matches!(
            t.switches[c.sw].links[usize::from(c.port)],
            Some(Peer::Switch { sw, .. }) if sw == next.sw
        ));
    }
}

/// check_lft_balance over an arbitrary forwarding-table dump, without
/// and with a fabric, plain, `-v` and `-e`: never panics, and `-v`
/// prints at least what the plain form prints.
pub fn lft_balance(data: &[u8]) {
    use mad_tools::cmd::check_lft_balance::report;
    let text = String::from_utf8_lossy(data);
    let fabric = mad_tools::discover::cache::decode(data).ok();
    for f in [None, fabric.as_ref()] {
        for e in [false, true] {
            let plain = report(&text, f, false, e).expect("the patterns compile");
            let all = report(&text, f, true, e).expect("the patterns compile");
            assert!(all.len() >= plain.len());
        }
    }
}

/// `mad sm -x`'s guid2lid parser over any text: never panics; what it
/// accepts has unicast LIDs, no GUID 0 and no GUID or LID twice.
pub fn sm_guid2lid(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(v) = mad_tools::cmd::sm::guid2lid::parse(&text, "fuzz") {
        let mut guids = std::collections::HashSet::new();
        let mut lids = std::collections::HashSet::new();
        for (g, l) in v {
            assert!(g != 0 && (1..=0xBFFF).contains(&l));
            assert!(guids.insert(g) && lids.insert(l));
        }
    }
}

/// The partitions.conf parser (`mad sm --Pconfig`) over any text: never
/// panics; an error names a line of the text; what it accepts has one
/// partition per P_Key, every P_Key in 1-0x7fff, the default partition
/// 0x7fff among them, and P_Keys two of its partitions' full members
/// share are found by [`mad_sm::partitions::shared_pkey`].
pub fn sm_partitions(data: &[u8]) {
    use mad_sm::partitions::{shared_pkey, PartitionConfig, DEFAULT_PKEY, FULL_MEMBER};
    let text = String::from_utf8_lossy(data);
    match PartitionConfig::parse(&text) {
        Ok(c) => {
            let mut seen = std::collections::HashSet::new();
            for p in &c.partitions {
                assert!((1..=0x7FFF).contains(&p.pkey), "{:#x}", p.pkey);
                assert!(seen.insert(p.pkey), "P_Key {:#x} twice", p.pkey);
                let full = p.pkey | FULL_MEMBER;
                assert_eq!(shared_pkey(&[full], &[p.pkey], None), Some(full));
                assert_eq!(shared_pkey(&[p.pkey], &[p.pkey], None), None);
            }
            assert!(c.partition(DEFAULT_PKEY).is_some());
        }
        Err(e) => {
            let lines = text.lines().count().max(1);
            assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}", e.line);
            assert!(e.to_string().starts_with(&format!("line {}: ", e.line)));
        }
    }
}

/// ibfindnodesusing over an arbitrary topology file: the switch named by
/// the first line's words (GUID or pattern) and port; never panics, and
/// a found switch's GUID is `0x` and the file's text. Host lists of the
/// remaining lines compress to entries that are each a name's prefix
/// followed by its number or a range of numbers (`prefixA-B`).
pub fn perl_topology(data: &[u8]) {
    use mad_tools::cmd::ibfindnodesusing::{compress, format_guid, switch_port};
    let text = String::from_utf8_lossy(data);
    let mut words = text.lines().next().unwrap_or("").split(' ');
    let target = format_guid(words.next().unwrap_or(""));
    let port = words.next().unwrap_or("1");
    if let Some(sp) = switch_port(&text, &target, port).expect("the patterns compile") {
        assert!(sp.guid.starts_with("0x"));
    }
    let hosts: Vec<Option<String>> = text.lines().skip(1).map(|l| Some(l.to_owned())).collect();
    let commas = hosts.iter().flatten().any(|n| n.contains(','));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    for h in compress(&hosts) {
        // The script splits the joined list at commas, names' too.
        assert!(
            commas
                || h.is_empty()
                || hosts.iter().flatten().any(|n| {
                    let prefix = n.trim_end_matches(|c: char| c.is_ascii_digit());
                    h.strip_prefix(prefix).is_some_and(|rest| {
                        let (a, b) = rest.split_once('-').unwrap_or((rest, ""));
                        digits(a) && digits(b)
                    })
                }),
            "{h:?} is no name's prefix and number(s)"
        );
    }
}

/// The OpenIB vendor classes' helpers (ibping, ibsysstat): the class
/// tests, the /proc/cpuinfo parser and the C-string text of any data area
/// never panic, and text round-trips.
pub fn openib_view(data: &[u8]) {
    use mad_wire::wire::openib::{
        c_text, cpu_info_text, is_openib_ping, is_openib_sysstat, text_data,
        VENDOR_RANGE2_DATA_SIZE,
    };
    let _ = (is_openib_ping(data), is_openib_sysstat(data));
    let cpus = cpu_info_text(&String::from_utf8_lossy(data));
    assert!(cpus.is_empty() || cpus.ends_with('\n'));
    let t = c_text(data);
    assert!(!t.contains('\0'));
    let d = text_data(&t);
    assert_eq!(d.len(), VENDOR_RANGE2_DATA_SIZE);
    assert_eq!(d[VENDOR_RANGE2_DATA_SIZE - 1], 0);
    if t.len() < VENDOR_RANGE2_DATA_SIZE && !t.contains('\u{fffd}') {
        assert_eq!(c_text(&d), t);
    }
}

/// `mad sm`'s QoS option parsers (`qos_vlarb_*`, `qos_sl2vl`, and the
/// opensm.conf lines that carry them) over any text: never panic; an
/// accepted VLArbitration list has at most 64 entries of VL 0-14, an
/// accepted SL2VL list 16 VLs of 0-15, and the tables they build mask
/// to 4-bit VLs; an error names the key.
pub fn sm_qos_options(data: &[u8]) {
    use mad_sm::qos::{parse_sl2vl, parse_vlarb, QosConfig};
    let text = String::from_utf8_lossy(data);
    match parse_vlarb("qos_vlarb_high", &text) {
        Ok(v) => {
            assert!(v.len() <= 64);
            assert!(v.iter().all(|(vl, _)| *vl <= 14));
        }
        Err(e) => assert!(e.to_string().starts_with("qos_vlarb_high: ")),
    }
    match parse_sl2vl("qos_ca_sl2vl", &text) {
        Ok(t) => assert!(t.iter().all(|vl| *vl <= 15)),
        Err(e) => assert!(e.to_string().starts_with("qos_ca_sl2vl: ")),
    }
    let mut o = mad_tools::cmd::sm::conf::SmOpts::default();
    if mad_tools::cmd::sm::conf::read_config(&mut o, &text, "fuzz").is_ok() {
        let q: QosConfig = o.qos;
        for class in [
            mad_sm::qos::PortClass::Ca,
            mad_sm::qos::PortClass::SwitchPort0,
            mad_sm::qos::PortClass::SwitchExternal,
            mad_sm::qos::PortClass::Router,
        ] {
            let t = q.tables(class);
            assert!(t.sl2vl.iter().all(|vl| *vl <= 15));
        }
    }
}
