//! The SA client against an SA that answers inconsistently (issue 13):
//! every answer whose method, status, AttributeOffset or length do not
//! fit together is an error naming the field, never a silently empty or
//! short table.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use mad_agents::sa::{SaClient, SaClientConfig, SaError, TableMode};
use mad_agents::{EngineConfig, Runtime};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Received};
use mad_core::wire::sa_records::{NodeRecord, PathRecord};
use mad_core::wire::{MadStatus, Method, Repr, METHOD_RESPONSE_BIT, SA_DATA_OFFSET};

/// What the hostile SA puts in its answer.
#[derive(Clone)]
struct Answer {
    /// Byte 3 as sent.
    method: u8,
    status: u16,
    attr_offset: u16,
    data: Vec<u8>,
    rmpp: Rmpp,
}

/// The answer's RMPP header.
#[derive(Clone, Copy)]
enum Rmpp {
    /// Inactive: a plain 256-byte MAD.
    Off,
    /// Single segment (First|Last|Active) with PayloadLength 20 + data.
    Single,
    /// Active only, in 256 bytes: one MAD of a longer answer, as an SA
    /// behind a path without RMPP sends it.
    ActiveOnly,
}

fn build(req: &[u8], a: &Answer) -> Vec<u8> {
    let mut m = req[..SA_DATA_OFFSET].to_vec();
    mad_testkit::header::edit(&mut m, |h| {
        h.response = a.method & METHOD_RESPONSE_BIT != 0;
        h.method = Method(a.method & !METHOD_RESPONSE_BIT);
        h.status = MadStatus(a.status);
    });
    m[24..36].fill(0);
    match a.rmpp {
        Rmpp::Off => {}
        Rmpp::Single => {
            m[24] = 1; // RMPP version
            m[25] = 1; // DATA
            m[26] = 0x07; // First | Last | Active
            m[32..36].copy_from_slice(&(20 + a.data.len() as u32).to_be_bytes());
        }
        Rmpp::ActiveOnly => {
            m[24] = 1;
            m[25] = 1;
            m[26] = 0x01;
        }
    }
    m[44..46].copy_from_slice(&a.attr_offset.to_be_bytes());
    m.extend_from_slice(&a.data);
    m.resize(256.max(m.len()), 0);
    m
}

/// A client whose SA answers every request with `answer`.
fn client_of(answer: Answer) -> (Runtime, SaClient) {
    let answer = Arc::new(Mutex::new(answer));
    let lb = Loopback::new(Loopback::attrs("lb0", 1, 5), 64).with_responder(Box::new(
        move |qp, mad: &[u8], _dest: &Address| {
            if mad_testkit::header::of(mad).response {
                return Vec::new();
            }
            vec![Received {
                qp,
                src: Address {
                    lid: 1,
                    qpn: 1,
                    ..Address::default()
                },
                mad: build(mad, &answer.lock().unwrap()).into(),
            }]
        },
    ));
    let rt = Runtime::start(lb, EngineConfig::default()).unwrap();
    let c = SaClient::new(
        &rt,
        SaClientConfig {
            table_mode: TableMode::SingleMad,
            receive_reports: false,
            retries: 0,
            ..SaClientConfig::default()
        },
    )
    .unwrap();
    (rt, c)
}

fn path(dlid: u16) -> Vec<u8> {
    PathRecord {
        dlid,
        slid: 5,
        ..PathRecord::default()
    }
    .to_vec()
    .unwrap()
}

/// Two PathRecords, as a well-formed GetTableResp carries them.
fn two_paths() -> Answer {
    let mut data = path(1);
    data.extend(path(2));
    Answer {
        method: 0x92,
        status: 0,
        attr_offset: (PathRecord::LEN / 8) as u16,
        data,
        rmpp: Rmpp::Single,
    }
}

fn field_of(e: &SaError) -> Option<&'static str> {
    match e {
        SaError::Inconsistent { field, .. } => Some(field),
        _ => None,
    }
}

fn table_error(a: Answer) -> SaError {
    let (_rt, c) = client_of(a);
    match c.all::<PathRecord>() {
        Ok(t) => panic!("an inconsistent answer was taken as a table of {t:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_well_formed_table_and_an_empty_no_records_answer_are_accepted() {
    let (_rt, c) = client_of(two_paths());
    let t = c.all::<PathRecord>().unwrap();
    assert_eq!(t.records.iter().map(|p| p.dlid).collect::<Vec<_>>(), [1, 2]);
    let (_rt, c) = client_of(Answer {
        status: 0x0300,
        data: Vec::new(),
        ..two_paths()
    });
    assert!(c.all::<PathRecord>().unwrap().records.is_empty());
}

#[test]
fn a_table_answer_with_the_get_resp_method_is_refused_naming_the_method() {
    let e = table_error(Answer {
        method: 0x81,
        ..two_paths()
    });
    assert_eq!(field_of(&e), Some("Method"), "{e}");
    assert!(e.to_string().contains("0x81"), "{e}");
}

#[test]
fn a_table_answer_with_the_get_trace_table_resp_method_is_refused() {
    // GetTableResp is 0x92 (GetTable 0x12 | 0x80); 0x93 is no SA method
    // (GetTraceTable is answered with GetTableResp too: OpenSM's
    // ib_sa_resp_method_str and Wireshark's SUBA_Methods name no 0x93).
    let e = table_error(Answer {
        method: 0x93,
        ..two_paths()
    });
    assert_eq!(field_of(&e), Some("Method"), "{e}");
}

#[test]
fn a_get_answered_with_get_table_resp_is_refused_naming_the_method() {
    let mut data = NodeRecord {
        lid: 3,
        ..NodeRecord::default()
    }
    .to_vec()
    .unwrap();
    data.resize(200, 0);
    let (_rt, c) = client_of(Answer {
        method: 0x92,
        status: 0,
        attr_offset: 0,
        data,
        rmpp: Rmpp::Off,
    });
    let e = c.node_record(3).unwrap_err();
    assert_eq!(field_of(&e), Some("Method"), "{e}");
}

#[test]
fn attribute_offset_zero_with_records_present_is_refused_not_read_as_empty() {
    let e = table_error(Answer {
        attr_offset: 0,
        ..two_paths()
    });
    assert_eq!(field_of(&e), Some("AttributeOffset"), "{e}");
}

#[test]
fn attribute_offset_zero_with_data_in_a_plain_mad_is_refused() {
    let mut a = Answer {
        attr_offset: 0,
        rmpp: Rmpp::Off,
        ..two_paths()
    };
    a.data.resize(200, 0);
    let e = table_error(a);
    assert_eq!(field_of(&e), Some("AttributeOffset"), "{e}");
}

#[test]
fn no_records_status_with_records_attached_is_refused_naming_the_status() {
    let e = table_error(Answer {
        status: 0x0300,
        ..two_paths()
    });
    assert_eq!(field_of(&e), Some("Status"), "{e}");
}

#[test]
fn data_that_is_not_a_whole_number_of_records_is_refused() {
    let mut a = two_paths();
    a.data.truncate(PathRecord::LEN + 10);
    let e = table_error(a);
    assert_eq!(field_of(&e), Some("AttributeOffset"), "{e}");
    assert!(e.to_string().contains("74"), "names the length: {e}");
}

#[test]
fn a_plain_mad_with_a_partial_record_after_the_last_is_refused() {
    // RMPP inactive: the 200 data bytes hold 3 PathRecords (192 bytes);
    // the 8 bytes after them must be padding, not the start of a record.
    let mut a = two_paths();
    a.rmpp = Rmpp::Off;
    a.data.extend(path(3));
    a.data.resize(200, 0);
    a.data[195] = 0xAA;
    let e = table_error(a);
    assert_eq!(field_of(&e), Some("AttributeOffset"), "{e}");
}

#[test]
fn a_plain_mad_with_zero_padding_after_the_records_is_a_table() {
    let mut a = two_paths();
    a.rmpp = Rmpp::Off;
    a.data.resize(200, 0);
    let (_rt, c) = client_of(a);
    let t = c.all::<PathRecord>().unwrap();
    // 200 bytes hold three 64-byte strides: the third is all zero, which is
    // what an SA leaves in an unused slot; taken as a record it would be
    // a PathRecord to LID 0, so it must not be there.
    assert_eq!(t.records.iter().map(|p| p.dlid).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn zero_slots_after_the_records_of_a_cut_answer_are_not_records() {
    let mut a = two_paths();
    a.rmpp = Rmpp::ActiveOnly;
    a.data.truncate(PathRecord::LEN);
    a.data.resize(200, 0);
    let (_rt, c) = client_of(a);
    let t = c.all::<PathRecord>().unwrap();
    assert!(t.truncated);
    assert_eq!(t.records.iter().map(|p| p.dlid).collect::<Vec<_>>(), [1]);
}
