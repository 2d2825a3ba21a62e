//! Unit tests of the ibsim transport that need no ibsim.

use super::*;
use crate::transport::loopback::qp_transition_allowed;
use crate::wire::{AttributeId, Method, MgmtClass};
use mad_testkit_wire::{header, MadBuilder};

#[test]
fn config_reads_libumad2sim_variables() {
    let vars = |k: &str| -> Option<String> {
        match k {
            "IBSIM_SOCKNAME" => Some("fab1".into()),
            "IBSIM_SERVER_NAME" => Some("simhost".into()),
            "IBSIM_SERVER_PORT" => Some("9000".into()),
            "SIM_HOST" => Some("Hca2".into()),
            "SIM_SET_ISSM" => Some("".into()),
            _ => None,
        }
    };
    let c = IbSimConfig::from_vars(vars);
    assert_eq!(c.sockname, "fab1");
    assert_eq!(c.server, Some(("simhost".to_owned(), 9000)));
    assert_eq!(c.node.as_deref(), Some("Hca2"));
    assert!(c.issm);
    let d = IbSimConfig::from_vars(|k| (k == "IBSIM_SERVER_NAME").then(String::new));
    assert_eq!(d, IbSimConfig::default());
    assert_eq!(d.sockname, "sim");
}

#[test]
fn bad_server_port_falls_back_to_default_like_atoi() {
    let c = IbSimConfig::from_vars(|k| match k {
        "IBSIM_SERVER_NAME" => Some("h".into()),
        "IBSIM_SERVER_PORT" => Some("x".into()),
        _ => None,
    });
    assert_eq!(c.server, Some(("h".to_owned(), 7070)));
}

#[test]
fn missing_ibsim_is_named_in_the_error() {
    let name = format!("madstack-nonexistent-{}", std::process::id());
    let err = IbSimTransport::attach(IbSimConfig::local(name.clone())).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("not running"), "{msg}");
    assert!(msg.contains(&format!("@{name}:ctl")), "{msg}");
}

#[test]
fn over_long_node_name_is_refused_before_any_io() {
    let cfg = IbSimConfig::local("unused").node("n".repeat(32));
    let msg = IbSimTransport::attach(cfg).unwrap_err().to_string();
    assert!(msg.contains(&"n".repeat(32)), "{msg}");
}

#[test]
fn attrs_follow_ibsim_port_guid_rule() {
    let mut ni = [0u8; 64];
    ni[2] = 1;
    ni[3] = 2;
    ni[12..20].copy_from_slice(&0x10_0000u64.to_be_bytes());
    ni[28..30].copy_from_slice(&2u16.to_be_bytes());
    let mut pi = [0u8; 64];
    pi[16..18].copy_from_slice(&7u16.to_be_bytes());
    pi[28] = 1;
    pi[32] = 0x24;
    pi[33] = 0x52;
    let mut pk = [0u8; 64];
    pk[0..4].copy_from_slice(&[0xff, 0xff, 0x80, 0x01]);
    let a = attrs_from_ctl("Hca1", &ni, &pi, &pk);
    assert_eq!(a.port_num, 1);
    assert_eq!(a.port_guid, 0x10_0001);
    assert_eq!(a.lid, 7);
    assert_eq!((a.state, a.phys_state), (4, 5));
    assert_eq!(a.pkeys, vec![0xffff, 0x8001]);
    assert!(!a.is_switch);
    ni[2] = 2;
    let s = attrs_from_ctl("Switch1", &ni, &pi, &pk);
    assert_eq!((s.port_num, s.port_guid), (0, 0x10_0000));
    assert!(s.is_switch);
}

#[test]
fn attr_changes_become_events() {
    let old = PortAttrs {
        state: 2,
        ..PortAttrs::default()
    };
    let new = PortAttrs {
        state: 4,
        lid: 3,
        sm_lid: 1,
        ..PortAttrs::default()
    };
    assert_eq!(
        attr_events(&old, &new),
        vec![
            AsyncEvent::PortActive,
            AsyncEvent::LidChange,
            AsyncEvent::SmChange
        ]
    );
    assert_eq!(attr_events(&new, &old)[0], AsyncEvent::PortError);
    assert!(attr_events(&new, &new).is_empty());
}

#[test]
fn qp_transitions_follow_verbs() {
    assert!(qp_transition_allowed(QpState::Rts, QpState::Err));
    assert!(qp_transition_allowed(QpState::Err, QpState::Reset));
    assert!(qp_transition_allowed(QpState::Reset, QpState::Init));
    assert!(qp_transition_allowed(QpState::Rtr, QpState::Rts));
    assert!(!qp_transition_allowed(QpState::Err, QpState::Rts));
    assert!(!qp_transition_allowed(QpState::Reset, QpState::Rts));
}

#[test]
fn a_segment_served_at_its_used_length_is_delivered_whole_anything_else_as_declared() {
    use crate::wire::rmpp::{
        RmppType, RmppView, RMPP_FLAG_ACTIVE, RMPP_FLAG_FIRST, RMPP_FLAG_LAST,
    };
    let mut whole = [0u8; 256];
    whole[1] = 0x03; // SA
    whole[3] = 0x92;
    {
        let mut v = RmppView::new_unchecked(&mut whole[..]);
        v.set_version(1);
        v.set_rmpp_type(RmppType::DATA);
        v.set_flags(RMPP_FLAG_ACTIVE | RMPP_FLAG_FIRST | RMPP_FLAG_LAST);
        v.set_seg_num(1);
        v.set_payload_len(20 + 64);
    }
    // A single segment cut to 36 + PayloadLength: given back whole.
    assert_eq!(whole_segment(&whole[..120], &whole).len(), 256);
    // A MAD without RMPP (OpenSM's answers through libumad2sim carry the
    // Active flag only): as declared.
    let mut plain = whole;
    plain[24..36].fill(0);
    assert_eq!(whole_segment(&plain[..120], &plain).len(), 120);
    let mut active_only = plain;
    active_only[26] = RMPP_FLAG_ACTIVE;
    assert_eq!(whole_segment(&active_only[..120], &active_only).len(), 120);
    // Not an RMPP class (an SMP): as declared.
    let mut smp = whole;
    header::edit(&mut smp, |h| h.mgmt_class = MgmtClass::SUBN_DIRECTED_ROUTE);
    assert_eq!(whole_segment(&smp[..120], &smp).len(), 120);
}

#[test]
fn an_unsegmented_active_request_is_delivered_as_a_single_mad_anything_else_as_it_came() {
    use crate::wire::rmpp::RMPP_FLAG_ACTIVE;
    // osmtest's GetMulti under libumad2sim: SA class, method 0x14,
    // Active with RMPP version 0.
    let mut m = MadBuilder::new(MgmtClass::SUBN_ADM, 2, Method::GET_MULTI, AttributeId(0)).build();
    m[26] = RMPP_FLAG_ACTIVE;
    m[60] = 7;
    let d = super::unsegmented_request(&m);
    assert_eq!(d[24..28], [0, 0, 0, 0], "RMPP header cleared");
    assert_eq!(
        (&d[..24], &d[28..]),
        (&m[..24], &m[28..]),
        "the rest as it came"
    );
    // A segment (version 1), a response, a class without RMPP: untouched.
    let mut seg = m;
    seg[24] = 1;
    let mut resp = m;
    header::edit(&mut resp, |h| h.response = true);
    let mut smp = m;
    header::edit(&mut smp, |h| h.mgmt_class = MgmtClass::SUBN_DIRECTED_ROUTE);
    for x in [seg, resp, smp] {
        assert_eq!(&*super::unsegmented_request(&x), &x[..]);
    }
}
