//! Client ↔ responder in one process over a Loopback pair, each side on
//! its own Runtime: every record type, tables of 0, 1 and many records
//! (multi-segment RMPP), component-mask matching, Get statuses,
//! InformInfo subscriptions, Reports and their acknowledgement, and
//! re-registration after injected port events.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mad_core::transport::fault::{FaultConfig, FaultInjector};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{
    Address, AsyncEvent, OutMad, PortAttrs, Posted, Qp, QpState, Received, SendCompletion,
    Transport, TransportError,
};
use mad_core::wire::attr::Notice;
use mad_core::wire::sa_records::{
    GuidInfoRecord, InformInfo, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord,
    NodeRecord, PKeyTableRecord, PathRecord, PortInfoRecord, SaRecord, ServiceRecord, SmInfoRecord,
    SwitchInfoRecord,
};
use mad_core::wire::{MadStatus, Method, Repr, SA_DATA_OFFSET};

use super::*;
use crate::{AgentSpec, EngineConfig, Runtime, SendRequest, SendStatus};

/// A transport shared with the test, so that events and new port
/// attributes can be injected while a Runtime owns it.
struct Tap<T: Transport> {
    inner: Arc<Mutex<T>>,
    attrs: PortAttrs,
    /// While above zero, an InformInfo unsubscribe arriving here is
    /// answered ERR_REQ_INVALID by the tap itself (the SA never sees it),
    /// as OpenSM does now and then for one it still holds.
    refuse_unsubscribes: Arc<std::sync::atomic::AtomicUsize>,
}

impl<T: Transport> Tap<T> {
    fn new(t: T) -> (Self, Arc<Mutex<T>>) {
        let attrs = t.port_attrs().clone();
        let inner = Arc::new(Mutex::new(t));
        (
            Self {
                inner: inner.clone(),
                attrs,
                refuse_unsubscribes: Arc::default(),
            },
            inner,
        )
    }
}

impl<T: Transport> Transport for Tap<T> {
    fn port_attrs(&self) -> &PortAttrs {
        &self.attrs
    }
    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        let mut t = self.inner.lock().unwrap();
        t.refresh_port_attrs()?;
        self.attrs = t.port_attrs().clone();
        Ok(())
    }
    fn send_queue_depth(&self) -> usize {
        self.inner.lock().unwrap().send_queue_depth()
    }
    fn post(&mut self, mad: OutMad<'_>, dest: &Address, wait: Duration) -> Posted {
        self.inner.lock().unwrap().post(mad, dest, wait)
    }
    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError> {
        self.inner.lock().unwrap().poll_send_completions(out)
    }
    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        use std::sync::atomic::Ordering;
        loop {
            let mut t = self.inner.lock().unwrap();
            let Some(r) = t.poll_recv()? else {
                return Ok(None);
            };
            let m = &r.mad;
            let unsubscribe = m.len() >= SA_DATA_OFFSET + 24 && {
                let h = mad_testkit_wire::header::of(m);
                h.mgmt_class == mad_core::wire::MgmtClass::SUBN_ADM
                    && (h.method, h.response) == (Method::SET, false)
                    && h.attr_id == InformInfo::ATTR_ID
                    && m[SA_DATA_OFFSET + 23] == 0
            };
            let refuse = unsubscribe
                && self
                    .refuse_unsubscribes
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
            if !refuse {
                return Ok(Some(r));
            }
            let mut resp = m.to_vec();
            mad_testkit_wire::header::edit(&mut resp, |h| {
                h.method = mad_core::wire::Method::GET;
                h.response = true;
                h.status = MadStatus::SA_REQ_INVALID;
            });
            t.post_send(Qp::Qp1, &resp, &r.src)?;
        }
    }
    fn poll_event(&mut self) -> Option<AsyncEvent> {
        self.inner.lock().unwrap().poll_event()
    }
    fn qp_state(&self, qp: Qp) -> QpState {
        self.inner.lock().unwrap().qp_state(qp)
    }
    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
        self.inner.lock().unwrap().modify_qp(qp, to)
    }
    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        self.inner.lock().unwrap().recreate_queues()
    }
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
}

const CLIENT_LID: u16 = 2;
const SA_LID: u16 = 1;

struct Env {
    client_rt: Runtime,
    sa_rt: Runtime,
    client_port: Arc<Mutex<Loopback>>,
    sa_port: Arc<Mutex<Loopback>>,
    source: Arc<StaticRecords>,
    /// Unsubscribes the SA's port answers ERR_REQ_INVALID by itself.
    sa_refuses: Arc<std::sync::atomic::AtomicUsize>,
}

fn env() -> Env {
    let (a, b) = client_and_sa_ports(256);
    let (ta, ha) = Tap::new(a);
    let (tb, hb) = Tap::new(b);
    let sa_refuses = tb.refuse_unsubscribes.clone();
    Env {
        client_rt: Runtime::start(ta, EngineConfig::default()).unwrap(),
        sa_rt: Runtime::start(tb, EngineConfig::default()).unwrap(),
        client_port: ha,
        sa_port: hb,
        source: Arc::new(StaticRecords::new()),
        sa_refuses,
    }
}

/// The client's and the SA's ports of a loopback pair holding `depth`
/// MADs each way.
fn client_and_sa_ports(depth: usize) -> (Loopback, Loopback) {
    Loopback::pair(
        Loopback::attrs("client", 1, CLIENT_LID),
        Loopback::attrs("sm", 1, SA_LID),
        depth,
    )
}

fn client(e: &Env) -> SaClient {
    client_with(e, SaClientConfig::default())
}

/// [`env`] with an SA ([`responder`]) and a client configured with `cfg`.
fn sa_and_client(cfg: SaClientConfig) -> (Env, SaResponder, SaClient) {
    let e = env();
    let sa = responder(&e);
    let c = client_with(&e, cfg);
    (e, sa, c)
}

/// A client on `e`'s client runtime configured with `cfg`.
fn client_with(e: &Env, cfg: SaClientConfig) -> SaClient {
    SaClient::new(&e.client_rt, cfg).unwrap()
}

fn responder(e: &Env) -> SaResponder {
    SaResponder::start(&e.sa_rt, e.source.clone(), SaResponderConfig::default()).unwrap()
}

/// Deterministic pseudo-random bytes.
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Tables of 0, 1 and `many` records of type `R`, Get by the key
/// component, and Get statuses.
fn check_record_type<R>(many: u16, make: impl Fn(u16) -> R, key_mask: u64)
where
    R: SaRecord + Clone + PartialEq + Debug,
{
    let (e, _sa, c) = sa_and_client(SaClientConfig::default());
    let any = R::parse(&noise(7, R::LEN)).unwrap();
    // Empty: success, no records, AttributeOffset 0; Get: NO_RECORDS.
    let t = c.get_table(&any, 0).unwrap();
    assert!(t.records.is_empty() && !t.truncated, "{}", R::NAME);
    assert_eq!(t.attr_offset, 0, "{}: empty table AttributeOffset", R::NAME);
    assert!(
        matches!(c.get(&any, 0), Err(SaError::NoRecords)),
        "{}",
        R::NAME
    );
    // One record.
    let one = make(1);
    e.source.set_records(std::slice::from_ref(&one)).unwrap();
    let t = c.get_table(&any, 0).unwrap();
    assert_eq!(t.records, vec![one.clone()], "{}", R::NAME);
    assert_eq!(usize::from(t.attr_offset) * 8, R::PADDED_LEN, "{}", R::NAME);
    assert_eq!(
        c.get(&any, 0).unwrap(),
        one,
        "{}: Get of the only record",
        R::NAME
    );
    // Many records: the whole table (several RMPP segments), Get by key.
    let all: Vec<R> = (1..=many).map(&make).collect();
    e.source.set_records(&all).unwrap();
    let t = c.get_table(&any, 0).unwrap();
    assert_eq!(t.records.len(), all.len(), "{}", R::NAME);
    assert_eq!(
        t.records,
        all,
        "{}: table in order, byte-identical",
        R::NAME
    );
    assert!(
        usize::from(many) * R::PADDED_LEN > 200,
        "{}: the table must need more than one segment",
        R::NAME
    );
    let pick = make(many / 2 + 1);
    assert_eq!(c.get(&pick, key_mask).unwrap(), pick, "{}", R::NAME);
    let t = c.get_table(&pick, key_mask).unwrap();
    assert_eq!(
        t.records,
        vec![pick.clone()],
        "{}: GetTable by key",
        R::NAME
    );
    assert!(
        matches!(c.get(&any, 0), Err(SaError::TooManyRecords)),
        "{}",
        R::NAME
    );
    let absent = make(many + 100);
    assert!(
        matches!(c.get(&absent, key_mask), Err(SaError::NoRecords)),
        "{}",
        R::NAME
    );
    assert!(c.get_table(&absent, key_mask).unwrap().records.is_empty());
    assert_eq!(c.agent().stats().unwrap().timed_out, 0);
}

fn base<R: Repr>(i: u16) -> R {
    R::parse(&noise(u64::from(i) + 1000, R::LEN)).unwrap()
}

#[test]
fn node_records_full_table_one_and_none_and_get_by_lid() {
    check_record_type(
        40,
        |i| NodeRecord { lid: i, ..base(i) },
        NodeRecord::COMP_LID,
    );
}

#[test]
fn port_info_records_by_lid() {
    check_record_type(
        40,
        |i| PortInfoRecord { lid: i, ..base(i) },
        PortInfoRecord::COMP_LID,
    );
}

#[test]
fn switch_info_records_by_lid() {
    check_record_type(
        60,
        |i| SwitchInfoRecord { lid: i, ..base(i) },
        SwitchInfoRecord::COMP_LID,
    );
}

#[test]
fn link_records_by_from_lid() {
    check_record_type(
        200,
        |i| LinkRecord {
            from_lid: i,
            ..base(i)
        },
        LinkRecord::COMP_FROM_LID,
    );
}

#[test]
fn path_records_by_dlid() {
    check_record_type(
        100,
        |i| PathRecord { dlid: i, ..base(i) },
        PathRecord::COMP_DLID,
    );
}

#[test]
fn mcmember_records_by_mlid() {
    check_record_type(
        50,
        |i| McMemberRecord {
            mlid: 0xC000 + i,
            ..base(i)
        },
        McMemberRecord::COMP_MLID,
    );
}

#[test]
fn service_records_by_service_id() {
    check_record_type(
        30,
        |i| ServiceRecord {
            service_id: 0x1000 + u64::from(i),
            ..base(i)
        },
        ServiceRecord::COMP_SERVICE_ID,
    );
}

#[test]
fn guid_info_records_by_lid() {
    check_record_type(
        30,
        |i| GuidInfoRecord { lid: i, ..base(i) },
        GuidInfoRecord::COMP_LID,
    );
}

#[test]
fn pkey_table_records_by_lid() {
    check_record_type(
        30,
        |i| PKeyTableRecord { lid: i, ..base(i) },
        PKeyTableRecord::COMP_LID,
    );
}

#[test]
fn lft_records_by_lid() {
    check_record_type(30, |i| LftRecord { lid: i, ..base(i) }, LftRecord::COMP_LID);
}

#[test]
fn sm_info_records_by_lid() {
    check_record_type(
        30,
        |i| SmInfoRecord { lid: i, ..base(i) },
        SmInfoRecord::COMP_LID,
    );
}

#[test]
fn path_records_between_two_lids_use_both_components() {
    let (e, _sa, c) = sa_and_client(SaClientConfig::default());
    let mut paths = Vec::new();
    for s in 1..=8u16 {
        for d in 1..=8u16 {
            paths.push(PathRecord {
                slid: s,
                dlid: d,
                sl: (s + d) as u8 & 0xF,
                numb_path: 1,
                reversible: true,
                ..PathRecord::default()
            });
        }
    }
    e.source.set_records(&paths).unwrap();
    let t = c.path_records(3, 7).unwrap();
    assert_eq!(t.records.len(), 1);
    assert_eq!(
        (t.records[0].slid, t.records[0].dlid, t.records[0].sl),
        (3, 7, 10)
    );
    assert_eq!(c.path_record(7, 3).unwrap().sl, 10);
    // Only the source: the 8 paths leaving LID 3.
    let from3 = c
        .get_table(
            &PathRecord {
                slid: 3,
                ..PathRecord::default()
            },
            PathRecord::COMP_SLID,
        )
        .unwrap();
    assert_eq!(from3.records.len(), 8);
    assert!(from3.records.iter().all(|p| p.slid == 3));
    // A mask on SL too: 3 -> 7 has SL 10, not 11.
    let t = c
        .get_table(
            &PathRecord {
                slid: 3,
                dlid: 7,
                sl: 11,
                ..PathRecord::default()
            },
            PathRecord::COMP_SLID | PathRecord::COMP_DLID | PathRecord::COMP_SL,
        )
        .unwrap();
    assert!(t.records.is_empty());
}

#[test]
fn a_table_of_ten_thousand_path_records_arrives_whole_over_rmpp() {
    let (e, sa, c) = sa_and_client(SaClientConfig::default());
    let paths: Vec<PathRecord> = (0..10_000u32)
        .map(|i| PathRecord {
            slid: (i / 100) as u16 + 1,
            dlid: (i % 100) as u16 + 1,
            flow_label: i & 0xF_FFFF,
            ..PathRecord::default()
        })
        .collect();
    e.source.set_records(&paths).unwrap();
    let t = c.all::<PathRecord>().unwrap();
    assert_eq!(t.records.len(), 10_000);
    assert_eq!(t.records, paths, "640,000 bytes byte-identical, in order");
    assert!(!t.truncated);
    assert_eq!(c.agent().stats().unwrap().rmpp_reassembled, 1);
    assert_eq!(sa.stats().multi_segment, 1);
}

#[test]
fn a_multi_segment_table_survives_duplicated_and_reordered_segments() {
    let (a, b) = client_and_sa_ports(256);
    let cfg = FaultConfig {
        recv_duplicate: 0.1,
        recv_delay: 0.1,
        recv_delay_polls: 3,
        ..FaultConfig::default()
    };
    let (tap, faults) = Tap::new(FaultInjector::with_config(a, 42, cfg));
    let client_rt = Runtime::start(tap, EngineConfig::default()).unwrap();
    let sa_rt = Runtime::start(b, EngineConfig::default()).unwrap();
    let source = Arc::new(StaticRecords::new());
    let nodes: Vec<NodeRecord> = (1..=500u16)
        .map(|i| NodeRecord { lid: i, ..base(i) })
        .collect();
    source.set_records(&nodes).unwrap();
    let _sa = SaResponder::start(&sa_rt, source, SaResponderConfig::default()).unwrap();
    let c = SaClient::new(&client_rt, SaClientConfig::default()).unwrap();
    for _ in 0..3 {
        let t = c.all::<NodeRecord>().unwrap();
        assert_eq!(t.records, nodes);
    }
    let st = faults.lock().unwrap().stats();
    assert!(
        st.recvs_duplicated > 10 && st.recvs_delayed > 10,
        "the link really duplicated and reordered: {st:?}"
    );
}

#[test]
fn single_mad_mode_takes_what_fits_and_reports_truncation() {
    let (e, _sa, c) = sa_and_client(SaClientConfig {
        table_mode: TableMode::SingleMad,
        timeout: Duration::from_millis(200),
        retries: 0,
        ..SaClientConfig::default()
    });
    // Fits in one segment: First|Last|Active, complete.
    let links: Vec<LinkRecord> = (1..=10u16)
        .map(|i| LinkRecord {
            from_lid: i,
            ..base(i)
        })
        .collect();
    e.source.set_records(&links).unwrap();
    let t = c.all::<LinkRecord>().unwrap();
    assert_eq!(t.records, links);
    assert!(!t.truncated);
    // Larger than one MAD: the first segment's records, truncated. (The
    // responder's RMPP transfer then gives up waiting for ACKs.)
    let nodes: Vec<NodeRecord> = (1..=5u16)
        .map(|i| NodeRecord { lid: i, ..base(i) })
        .collect();
    e.source.set_records(&nodes).unwrap();
    let t = c.all::<NodeRecord>().unwrap();
    assert!(t.truncated);
    assert_eq!(
        t.records,
        nodes[..1].to_vec(),
        "200 bytes hold one NodeRecord"
    );
}

#[test]
fn parse_table_reads_opensm_style_and_truncated_answers() {
    // A one-MAD answer as opensm sends it through libumad2sim: Active only,
    // segment 0, 256 bytes, three PathRecords.
    let mut mad = vec![0u8; 256];
    mad_testkit_wire::header::edit(&mut mad, |h| {
        h.base_version = 1;
        h.mgmt_class = mad_core::wire::MgmtClass::SUBN_ADM;
        h.class_version = 2;
        h.method = Method::GET_TABLE;
        h.response = true;
        h.attr_id = mad_core::wire::AttributeId(0x35);
    });
    let mut rmpp = mad_core::wire::rmpp::RmppView::new_unchecked(&mut mad[..]);
    rmpp.set_version(1);
    rmpp.set_rmpp_type(mad_core::wire::rmpp::RmppType::DATA);
    rmpp.set_flags(mad_core::wire::rmpp::RMPP_FLAG_ACTIVE);
    mad[44..46].copy_from_slice(&8u16.to_be_bytes());
    for i in 0..3 {
        mad[56 + i * 64 + 41] = i as u8 + 1; // DLID low byte
    }
    let t = client::parse_table::<PathRecord>(&mad).unwrap();
    assert!(t.truncated);
    assert_eq!(
        t.records.iter().map(|p| p.dlid).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    // The same answer cut by its sender to 56 + 64 bytes: complete.
    let t = client::parse_table::<PathRecord>(&mad[..120]).unwrap();
    assert!(!t.truncated);
    assert_eq!(t.records.len(), 1);
    // First|Last|Active with PayloadLength 20 + 128: two records.
    mad[26] = 0x07;
    mad[32..36].copy_from_slice(&148u32.to_be_bytes());
    let t = client::parse_table::<PathRecord>(&mad).unwrap();
    assert!(!t.truncated);
    assert_eq!(t.records.len(), 2);
    // A stride shorter than the record is refused, not misread.
    mad[44..46].copy_from_slice(&2u16.to_be_bytes());
    assert!(matches!(
        client::parse_table::<PathRecord>(&mad),
        Err(SaError::Malformed(_))
    ));
}

#[test]
fn class_port_info_and_unsupported_attributes() {
    let (_e, _sa, c) = sa_and_client(SaClientConfig::default());
    let cpi = c.class_port_info().unwrap();
    assert_eq!(
        (cpi.base_version, cpi.class_version, cpi.resp_time_value),
        (1, 2, 18)
    );
    let r = c
        .request(Method::GET, mad_core::wire::AttributeId(0x7777), 0, 0, &[])
        .unwrap();
    assert_eq!(r.mad().status().0, 0x000C);
    assert_eq!(r.mad().raw_method(), 0x81);
    assert!(matches!(
        SaError::from_status(r.mad().status().0),
        SaError::Status { status: 0x000C, .. }
    ));
}

#[test]
fn responses_carry_sm_key_zero_and_the_request_tid_and_mask() {
    let (e, _sa, c) = sa_and_client(SaClientConfig {
        sm_key: 0x1122_3344_5566_7788,
        ..SaClientConfig::default()
    });
    e.source
        .set_records(&[NodeRecord { lid: 9, ..base(9) }])
        .unwrap();
    let r = c
        .request(
            Method::GET,
            NodeRecord::ATTR_ID,
            0,
            NodeRecord::COMP_LID,
            &NodeRecord {
                lid: 9,
                ..NodeRecord::default()
            }
            .to_vec()
            .unwrap(),
        )
        .unwrap();
    let v = mad_core::wire::sa::SaMad::new_checked(r.bytes()).unwrap();
    assert_eq!(v.sm_key(), 0);
    assert_eq!(v.comp_mask(), NodeRecord::COMP_LID);
    assert_eq!(v.attr_offset(), 14);
    assert_eq!(r.mad().status().0, 0);
}

mod informs;
mod multipath;
mod trace;

/// With a trusted key set, P_KeyTableRecords go only to a request that
/// carries it (as OpenSM checks its sa_key); another key, or none, gets
/// ERR_REQ_INVALID. Other records are given to anyone.
#[test]
fn pkey_table_records_only_for_the_trusted_key() {
    let e = env();
    let cfg = SaResponderConfig {
        trusted_key: Some(0x42),
        ..SaResponderConfig::default()
    };
    let _sa = SaResponder::start(&e.sa_rt, e.source.clone(), cfg).unwrap();
    let rec = PKeyTableRecord { lid: 1, ..base(1) };
    e.source.set_records(std::slice::from_ref(&rec)).unwrap();
    let node = NodeRecord { lid: 1, ..base(1) };
    e.source.set_records(std::slice::from_ref(&node)).unwrap();
    let any_pkey = PKeyTableRecord::parse(&noise(7, PKeyTableRecord::LEN)).unwrap();
    let any_node = NodeRecord::parse(&noise(7, NodeRecord::LEN)).unwrap();
    for key in [0, 0x41] {
        let c = client_with(
            &e,
            SaClientConfig {
                sm_key: key,
                ..SaClientConfig::default()
            },
        );
        assert!(
            matches!(c.get_table(&any_pkey, 0), Err(SaError::RequestInvalid)),
            "key {key:#x}"
        );
        assert_eq!(
            c.get_table(&any_node, 0).unwrap().records,
            vec![node.clone()]
        );
    }
    let c = client_with(
        &e,
        SaClientConfig {
            sm_key: 0x42,
            ..SaClientConfig::default()
        },
    );
    assert_eq!(c.get_table(&any_pkey, 0).unwrap().records, vec![rec]);
}
