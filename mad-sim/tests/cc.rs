//! The Congestion Control agent of the built-in fabric (class 0x21):
//! what switches and CAs answer, Sets stored under their Control_Map /
//! Valid bits, the CC_Key guard, and refusals. ibsim's `net` example,
//! endpoint at Hca1 port 1 (LIDs: Hca1 1, Hca2 2, Switch1 3, Switch2 4).

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::*;
use mad_core::wire::cc::{
    cc_attr, CaCongestionEntry, CaCongestionSetting, CctEntry, CongestionControlTable,
    CongestionInfo, CongestionKeyInfo, CongestionLogCommon, SwitchCongestionSetting,
    SwitchPortCongestionElement, CC_DATA_OFFSET, CC_LOG_DATA_OFFSET,
};
use mad_core::wire::{Mad, Method, Repr};
use mad_sim::SimPort;

/// A CC request (`key`, attribute modifier `amod`, `data` at the
/// attribute's offset) to `lid`: `None` when unanswered, else (status,
/// the answer's data from that offset).
fn cc(
    t: &mut SimPort,
    lid: u16,
    method: Method,
    (attr, amod): (u16, u32),
    key: u64,
    data: &[u8],
) -> Option<(u16, Vec<u8>)> {
    let mut m = gsi_mad(0x21, 2, method, attr, next_tid());
    Mad::new_unchecked(&mut m[..]).set_attr_mod(amod);
    m[24..32].copy_from_slice(&key.to_be_bytes());
    let off = if attr == cc_attr::CONGESTION_LOG {
        CC_LOG_DATA_OFFSET
    } else {
        CC_DATA_OFFSET
    };
    m[off..off + data.len()].copy_from_slice(data);
    gsi_rpc(t, &m, lid, off)
}

#[test]
fn switches_and_cas_answer_their_attributes() {
    let (_fabric, mut t) = net();
    configure_net(&mut t);
    let get = Method::GET;
    let (s, d) = cc(&mut t, 2, get, (cc_attr::CONGESTION_INFO, 0), 0, &[]).unwrap();
    assert_eq!(
        (s, CongestionInfo::parse(&d).unwrap().control_table_cap),
        (0, 2)
    );
    let (s, d) = cc(&mut t, 3, get, (cc_attr::CONGESTION_INFO, 0), 0, &[]).unwrap();
    assert_eq!(
        (s, CongestionInfo::parse(&d).unwrap().control_table_cap),
        (0, 0)
    );
    // The log sits at byte 32: LogType 1 on a switch, 2 on a CA.
    for (lid, ty) in [(3, 1), (2, 2)] {
        let (s, d) = cc(&mut t, lid, get, (cc_attr::CONGESTION_LOG, 0), 0, &[]).unwrap();
        assert_eq!(
            (s, CongestionLogCommon::parse(&d).unwrap().log_type),
            (0, ty)
        );
    }
    // Switch-only and CA-only attributes.
    let ss = (cc_attr::SWITCH_CONGESTION_SETTING, 0);
    let cs = (cc_attr::CA_CONGESTION_SETTING, 0);
    assert_eq!(cc(&mut t, 3, get, ss, 0, &[]).unwrap().0, 0);
    assert_eq!(cc(&mut t, 2, get, ss, 0, &[]).unwrap().0, 0x0C);
    assert_eq!(cc(&mut t, 2, get, cs, 0, &[]).unwrap().0, 0);
    assert_eq!(cc(&mut t, 3, get, cs, 0, &[]).unwrap().0, 0x0C);
    // Blocks past the end, Sets of read-only attributes, version 1.
    let spcs = (cc_attr::SWITCH_PORT_CONGESTION_SETTING, 1);
    assert_eq!(cc(&mut t, 3, get, spcs, 0, &[]).unwrap().0, 0x1C);
    let cct = (cc_attr::CONGESTION_CONTROL_TABLE, 2);
    assert_eq!(cc(&mut t, 2, get, cct, 0, &[]).unwrap().0, 0x1C);
    let ts = (cc_attr::TIMESTAMP, 0);
    assert_eq!(cc(&mut t, 2, Method::SET, ts, 0, &[]).unwrap().0, 0x0C);
    let m = gsi_mad(0x21, 1, get, cc_attr::TIMESTAMP, next_tid());
    assert_eq!(gsi_rpc(&mut t, &m, 2, CC_DATA_OFFSET).unwrap().0, 0x04);
}

#[test]
fn sets_store_what_their_maps_name() {
    let (_fabric, mut t) = net();
    configure_net(&mut t);
    let set = Method::SET;
    // SwitchCongestionSetting: only Marking_Rate (bit 4) is applied.
    let s = SwitchCongestionSetting {
        control_map: 1 << 4,
        marking_rate: 77,
        threshold: 9,
        ..SwitchCongestionSetting::default()
    };
    let ss = (cc_attr::SWITCH_CONGESTION_SETTING, 0);
    let (st, d) = cc(&mut t, 3, set, ss, 0, &s.to_vec().unwrap()).unwrap();
    let got = SwitchCongestionSetting::parse(&d).unwrap();
    assert_eq!((st, got.marking_rate, got.threshold), (0, 77, 0));
    // SwitchPortCongestionSetting: the Valid element (port 2) only.
    let mut req = vec![0u8; 48 * 4];
    let e = SwitchPortCongestionElement {
        valid: 1,
        threshold: 5,
        packet_size: 8,
        ..SwitchPortCongestionElement::default()
    };
    e.emit(&mut req[8..]).unwrap();
    let bogus = SwitchPortCongestionElement {
        threshold: 3,
        ..SwitchPortCongestionElement::default()
    };
    bogus.emit(&mut req[12..]).unwrap();
    let spcs = (cc_attr::SWITCH_PORT_CONGESTION_SETTING, 0);
    let (_, d) = cc(&mut t, 3, set, spcs, 0, &req).unwrap();
    assert_eq!(SwitchPortCongestionElement::parse(&d[8..]).unwrap(), e);
    assert_eq!(
        SwitchPortCongestionElement::parse(&d[12..])
            .unwrap()
            .threshold,
        0
    );
    // CACongestionSetting: SL 3's entry only.
    let mut req = CaCongestionSetting {
        port_control: 1,
        control_map: 1 << 3,
    }
    .to_vec()
    .unwrap();
    req.resize(4 + 16 * 8, 0);
    let en = CaCongestionEntry {
        ccti_timer: 10,
        ccti_increase: 2,
        ..CaCongestionEntry::default()
    };
    for sl in [3, 4] {
        en.emit(&mut req[4 + sl * 8..]).unwrap();
    }
    let cs = (cc_attr::CA_CONGESTION_SETTING, 0);
    cc(&mut t, 2, set, cs, 0, &req).unwrap();
    let (_, d) = cc(&mut t, 2, Method::GET, cs, 0, &[]).unwrap();
    assert_eq!(CaCongestionSetting::parse(&d).unwrap().port_control, 1);
    assert_eq!(CaCongestionEntry::parse(&d[4 + 3 * 8..]).unwrap(), en);
    assert_eq!(
        CaCongestionEntry::parse(&d[4 + 4 * 8..])
            .unwrap()
            .ccti_timer,
        0
    );
    // CongestionControlTable block 1 and CCTI_Limit; a limit past the
    // table is refused.
    let mut req = CongestionControlTable {
        ccti_limit: 70,
        ..CongestionControlTable::default()
    }
    .to_vec()
    .unwrap();
    req.resize(4 + 128, 0);
    CctEntry {
        shift: 2,
        multiplier: 300,
    }
    .emit(&mut req[4 + 6 * 2..])
    .unwrap();
    let cct1 = (cc_attr::CONGESTION_CONTROL_TABLE, 1);
    assert_eq!(cc(&mut t, 2, set, cct1, 0, &req).unwrap().0, 0);
    let (_, d) = cc(&mut t, 2, Method::GET, cct1, 0, &[]).unwrap();
    assert_eq!(CongestionControlTable::parse(&d).unwrap().ccti_limit, 70);
    assert_eq!(
        CctEntry::parse(&d[4 + 12..]).unwrap(),
        CctEntry {
            shift: 2,
            multiplier: 300
        }
    );
    req[0..2].copy_from_slice(&128u16.to_be_bytes());
    assert_eq!(cc(&mut t, 2, set, cct1, 0, &req).unwrap().0, 0x1C);
}

#[test]
fn a_cc_key_drops_mads_with_another_key_and_counts_them() {
    let (_fabric, mut t) = net();
    configure_net(&mut t);
    let k = CongestionKeyInfo {
        cc_key: 0x1234,
        cc_key_lease_period: 60,
        ..CongestionKeyInfo::default()
    };
    let ck = (cc_attr::CONGESTION_KEY_INFO, 0);
    assert_eq!(
        cc(&mut t, 2, Method::SET, ck, 0, &k.to_vec().unwrap())
            .unwrap()
            .0,
        0
    );
    let ts = (cc_attr::TIMESTAMP, 0);
    assert!(cc(&mut t, 2, Method::GET, ts, 0, &[]).is_none());
    assert!(cc(&mut t, 2, Method::GET, ts, 0x9999, &[]).is_none());
    let (s, d) = cc(&mut t, 2, Method::GET, ck, 0x1234, &[]).unwrap();
    let got = CongestionKeyInfo::parse(&d).unwrap();
    assert_eq!(
        (
            s,
            got.cc_key,
            got.cc_key_lease_period,
            got.cc_key_violations
        ),
        (0, 0x1234, 60, 2)
    );
}
