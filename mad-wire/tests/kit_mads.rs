//! mad-wire's views read the MADs the test kit's lower tier builds from
//! `Repr`s: the header, the SMP, SA and RMPP views agree with what was
//! asked for. An integration test (one `mad-wire` on both sides, so kit
//! types and these types are the same; see `mad_testkit_wire`'s docs for
//! why unit tests pass bytes instead).

use mad_testkit_wire::{header, MadBuilder};
use mad_wire::wire::rmpp::{RmppType, RmppView, RMPP_FLAG_FIRST};
use mad_wire::wire::sa::SaMad;
use mad_wire::wire::sa_records::NodeRecord;
use mad_wire::wire::smp::Smp;
use mad_wire::wire::{AttributeId, Mad, MadHeader, MadStatus, Method, MgmtClass};

#[test]
fn mad_view_and_header_repr_read_the_built_header() {
    let m = MadBuilder::perf_get(2, AttributeId::PM_PORT_COUNTERS)
        .tid(0x0102_0304_0506_0708)
        .attr_mod(5)
        .response(MadStatus::INVALID_FIELD)
        .build();
    let want = MadHeader {
        base_version: 1,
        mgmt_class: MgmtClass::PERF_MGT,
        class_version: 1,
        response: true,
        method: Method::GET,
        status: MadStatus::INVALID_FIELD,
        tid: 0x0102_0304_0506_0708,
        attr_id: AttributeId::PM_PORT_COUNTERS,
        attr_mod: 5,
        ..MadHeader::default()
    };
    assert_eq!(header::of(&m), want);
    assert_eq!(
        Mad::new_checked(&m[..]).expect("256 bytes").header(),
        Ok(want)
    );
}

#[test]
fn smp_sa_and_rmpp_views_read_the_built_parts() {
    let dr = MadBuilder::dr(&[2, 4, 6], Method::GET, AttributeId::PORT_INFO).build();
    let s = Smp::new_checked(&dr[..]).expect("an SMP");
    assert!(s.is_directed_route());
    assert_eq!(s.hop_cnt(), 3);

    let sa = MadBuilder::sa_get_table(AttributeId(0x11), &NodeRecord::default(), 0b101).build();
    let h = SaMad::new_checked(&sa[..])
        .expect("an SA MAD")
        .header()
        .expect("SA header");
    assert_eq!(h.comp_mask, 0b101);

    let seg = MadBuilder::rmpp_data(
        MgmtClass::SUBN_ADM,
        2,
        Method::GET_TABLE,
        AttributeId(0x11),
        1,
        RMPP_FLAG_FIRST,
        400,
    )
    .build();
    let r = RmppView::new_checked(&seg[..]).expect("an RMPP MAD");
    assert_eq!(r.rmpp_type(), RmppType::DATA);
    assert!(r.is_active() && r.is_first());
    assert_eq!((r.seg_num(), r.payload_len()), (1, 400));
}
