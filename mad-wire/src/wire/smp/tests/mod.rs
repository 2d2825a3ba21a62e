//! Tests of the SMP views, `Repr`s, directed-route rules and routes.

use super::*;
use crate::wire::{AttributeId, Error, Method, MgmtClass};

crate::repr_roundtrip_tests!(SmpRepr, DrSmpRepr);

const IS_SWITCH: bool = true;
const IS_CA: bool = false;

/// A DR SMP with the given HopCount, HopPointer, D bit and path
/// entries (index 1 onward), both DR LIDs permissive.
fn dr(hc: u8, hp: u8, d: bool, ip: &[u8], rp: &[u8]) -> Smp<[u8; 256]> {
    let mut s = Smp::new_checked([0u8; 256]).unwrap();
    s.mad_mut().set_mgmt_class(MgmtClass::SUBN_DIRECTED_ROUTE);
    s.set_hop_cnt(hc);
    s.set_hop_ptr(hp);
    s.set_direction(d);
    s.set_dr_slid(PERMISSIVE_LID);
    s.set_dr_dlid(PERMISSIVE_LID);
    s.initial_path_mut()[1..=ip.len()].copy_from_slice(ip);
    s.return_path_mut()[1..=rp.len()].copy_from_slice(rp);
    s
}

use DrVerdict::{Discard, Handle};

mod rules;
mod walk;

// ---- views and reprs

#[test]
fn lid_routed_view_agrees_with_smp_repr() {
    let mut buf = [0u8; 256];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(13).wrapping_add(1);
    }
    buf[1] = 0x01;
    let v = Smp::new_checked(&buf[..]).unwrap();
    let r = v.to_repr().unwrap();
    assert_eq!(v.mgmt_class(), r.header.mgmt_class);
    assert_eq!(v.method(), r.header.method);
    assert_eq!(v.tid(), r.header.tid);
    assert_eq!(v.attr_id(), r.header.attr_id);
    assert_eq!(v.attr_mod(), r.header.attr_mod);
    assert_eq!(v.m_key(), r.m_key);
    assert_eq!(v.data(), &r.data[..]);
    assert!(!v.is_directed_route());
}

#[test]
fn directed_route_view_agrees_with_dr_smp_repr() {
    let mut buf = [0u8; 256];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(9);
    }
    buf[1] = 0x81;
    buf[4] = 0xC1; // D set, status high bits 0x41
    let v = Smp::new_checked(&buf[..]).unwrap();
    let r = v.to_dr_repr().unwrap();
    assert_eq!(v.direction(), r.direction);
    assert!(r.direction);
    assert_eq!(v.dr_status(), r.status);
    assert_eq!(v.dr_status(), u16::from_be_bytes([0x41, buf[5]]));
    assert_eq!(v.hop_ptr(), r.hop_ptr);
    assert_eq!(v.hop_cnt(), r.hop_cnt);
    assert_eq!(v.hop_ptr(), buf[6]);
    assert_eq!(v.hop_cnt(), buf[7]);
    assert_eq!(v.m_key(), r.m_key);
    assert_eq!(v.dr_slid(), r.dr_slid);
    assert_eq!(v.dr_dlid(), r.dr_dlid);
    assert_eq!(v.dr_slid(), u16::from_be_bytes([buf[32], buf[33]]));
    assert_eq!(v.data(), &r.data[..]);
    assert_eq!(v.initial_path(), &r.initial_path[..]);
    assert_eq!(v.return_path(), &r.return_path[..]);
    assert_eq!(v.tid(), r.tid);
    assert_eq!(v.attr_mod(), r.attr_mod);
    assert!(v.is_directed_route());
    // The common header agrees too: status word = D bit + status.
    let h = v.mad().header().unwrap();
    assert_eq!(h.status.0, 0x8000 | r.status);
    assert_eq!(h.class_specific, u16::from_be_bytes([r.hop_ptr, r.hop_cnt]));
}

#[test]
fn setters_write_the_libibmad_offsets() {
    let mut s = Smp::new_checked([0u8; 256]).unwrap();
    s.set_m_key(0x1122_3344_5566_7788);
    s.set_dr_slid(0x0102);
    s.set_dr_dlid(0x0304);
    s.set_hop_ptr(5);
    s.set_hop_cnt(6);
    s.set_dr_status(0xFFFF);
    assert_eq!(s.dr_status(), 0x7FFF);
    assert!(!s.direction(), "status setter must not set D");
    s.set_direction(true);
    assert_eq!(s.dr_status(), 0x7FFF, "D setter must keep the status");
    s.set_dr_status(0x001C);
    assert!(s.direction(), "status setter must keep D");
    s.data_mut()[0] = 0xAA;
    s.initial_path_mut()[1] = 7;
    s.return_path_mut()[63] = 9;
    let b = s.into_inner();
    assert_eq!(&b[4..8], &[0x80, 0x1C, 5, 6]);
    assert_eq!(
        &b[24..32],
        &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
    );
    assert_eq!(&b[32..36], &[1, 2, 3, 4]);
    assert_eq!((b[64], b[129], b[255]), (0xAA, 7, 9));
}

#[test]
fn lid_routed_view_needs_128_bytes_and_dr_view_needs_256() {
    assert!(Smp::new_checked(&[0u8; 128][..]).is_ok());
    assert!(matches!(
        Smp::new_checked(&[0u8; 127][..]),
        Err(Error::Truncated { need: 128, .. })
    ));
    let mut dr = [0u8; 200];
    dr[1] = 0x81;
    assert!(matches!(
        Smp::new_checked(&dr[..]),
        Err(Error::Truncated {
            need: 256,
            got: 200,
            ..
        })
    ));
    // A short LID-routed view has no paths and DR rules discard it.
    let mut s = Smp::new_checked([0u8; 128]).unwrap();
    assert!(s.initial_path().is_empty() && s.return_path().is_empty());
    assert!(!s.has_paths());
    s.set_hop_cnt(1);
    assert_eq!(dr_handle_send(&mut s, IS_CA, 1), Discard);
    assert_eq!(dr_handle_recv(&mut s, IS_CA, 1, 1), Discard);
    assert_eq!(dr_fwd_port(&s), 0);
    assert!(s.to_repr().is_err());
}

#[test]
fn hop_count_check_on_repr() {
    let r = DrSmpRepr {
        hop_cnt: 63,
        ..Default::default()
    };
    assert!(r.check_hop_cnt().is_ok());
    let r = DrSmpRepr {
        hop_cnt: 64,
        ..Default::default()
    };
    assert!(r.check_hop_cnt().is_err());
}
