//! The SA client: typed Get / GetTable / Set / Delete of SA records,
//! convenience queries, and InformInfo subscriptions with Report delivery.
//!
//! # Where the SA is
//! At the port's master SM LID, on QP1, with the master SM's SL and the
//! P_Key index of 0xFFFF (index 0 if the table has no full-member default
//! key), as the kernel's `update_sm_ah` builds it. The address is read
//! from the port when the client starts and again whenever the port
//! reports PORT_ACTIVE, PORT_ERR, LID_CHANGE, PKEY_CHANGE, SM_CHANGE or
//! CLIENT_REREGISTER (the port layer re-reads its attributes before it
//! passes those events on). [`SaClient::sm_address`] shows the current one;
//! [`SaClientStats::sm_refreshes`] counts the refreshes.
//!
//! # Tables
//! With [`TableMode::Rmpp`] (the default) the client's agent is registered
//! with RMPP: a GetTable answer of any size is reassembled by the agent
//! layer (and a single-segment First|Last|Active answer, as opensm sends
//! for small tables, is taken as it is). With [`TableMode::SingleMad`]
//! the agent does no RMPP: the first MAD of the answer is taken, the
//! records that fit in it are returned, and [`Table::truncated`] says
//! that the SA sent (or may have sent) more. That is what an SA reached
//! through a path without RMPP gives, such as opensm under libumad2sim,
//! which cuts every MAD to 256 bytes and whose answers then carry the
//! Active flag without First/Last (an RMPP receiver rejects those with
//! ABORT(BAD_SEG), so an RMPP client times out on them).
//!
//! # Subscriptions
//! [`SaClient::subscribe`] sends SubnAdmSet(InformInfo) with Subscribe = 1
//! and remembers the subscription; [`SaClient::unsubscribe`] sends it with
//! Subscribe = 0 and forgets it. Reports (SubnAdmReport of a Notice) that
//! reach the port are acknowledged with ReportResp (same TID and data,
//! response method 0x86) to where they came from, and queued for
//! [`SaClient::next_report`] (a repeated Report — same source and TID, as
//! an SA sends when the ReportResp was lost — is acknowledged again but
//! queued once). On SM_CHANGE, CLIENT_REREGISTER and PORT_ACTIVE every
//! remembered subscription is sent again to the (possibly new) SA; the
//! outcome is kept per subscription ([`SaClient::subscriptions`]).
//!
//! Dropping the client deregisters its agent but does not withdraw its
//! subscriptions from the SA (an SA forgets them when Reports go
//! unanswered, or on its own restart); call [`SaClient::unsubscribe`]
//! first to withdraw them.
//!
//! Only one agent per port may own SA Reports: a second client on the same
//! runtime must be created with [`SaClientConfig::receive_reports`] off.
//!
//! # A shared port, soft resets and a dead device
//! [`SaClient::open`] opens the client on a [`SharedPort`] and keeps a
//! handle: the port lives while the client does, whoever created it. On
//! any port the client takes part in the two-phase soft reset (its agent
//! holds the reset, [`ResetHold`]): on ResetPending new requests wait
//! while those in flight end, then the client acknowledges; on ResetEnd
//! they go on ([`SaClient::reset_stats`]). Once the port reports
//! DeviceFatal every request fails at once with [`SaError::PortDead`].

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mad_core::transport::{Address, AsyncEvent, Qp, GSI_QKEY};
use mad_core::wire::attr::{ClassPortInfo, Notice};
use mad_core::wire::rmpp::{RmppType, RmppView, RMPP_FLAG_ACTIVE, RMPP_VERSION};
use mad_core::wire::sa::{SaMad, SA_CLASS_VERSION};
use mad_core::wire::sa_records::{
    InformInfo, InformInfoRecord, MultiPathRecord, NodeRecord, PathRecord, PortInfoRecord,
    SaRecord, TraceRecord,
};
use mad_core::wire::{
    AttributeId, Mad, MadStatus, Method, MgmtClass, Repr, MAD_LEN, SA_DATA_OFFSET,
};

mod answer;
mod informs;

use super::{build_request, lock, SaError};
use crate::runtime::{Agent, AgentRef, ResetHold, ResetHoldStats, Runtime, SharedPort};
use crate::spec::AgentSpec;
use crate::types::{AgentEvent, Completion, Message, SendRequest};
pub use answer::{answer_method, parse_record, parse_table, Table};
use answer::{check_attr, check_method, check_no_records_empty, check_status, completion_response};

/// How GetTable answers travel (see the [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TableMode {
    /// RMPP done by the agent layer: tables of any size.
    #[default]
    Rmpp,
    /// No RMPP: the first MAD of an answer, truncation reported.
    SingleMad,
}

/// Settings of an [`SaClient`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaClientConfig {
    /// Agent name (errors, logs).
    pub name: String,
    /// Response timeout of one attempt.
    pub timeout: Duration,
    /// Retries after a timeout.
    pub retries: u32,
    /// How tables travel.
    pub table_mode: TableMode,
    /// Own SubnAdmReport (needed for subscriptions).
    pub receive_reports: bool,
    /// Reports kept for [`SaClient::next_report`]; more are dropped and
    /// counted.
    pub report_queue: usize,
    /// The QP number put in InformInfo.QPN: where the SA sends Reports
    /// (1, the GSI, unless the port is reached under another QP number,
    /// as an ibsim client connected with its own QPN is).
    pub report_qpn: u32,
    /// SM_Key put in requests (0 for ordinary clients).
    pub sm_key: u64,
    /// Where requests go, when set: an SA reached by its GID (on RoCE
    /// there is no SM LID to send to). By default QP1 at the master SM's
    /// LID as the port reports it.
    pub sa_address: Option<Address>,
}

impl Default for SaClientConfig {
    fn default() -> Self {
        Self {
            name: "sa-client".to_owned(),
            timeout: Duration::from_millis(1000),
            retries: 3,
            table_mode: TableMode::Rmpp,
            receive_reports: true,
            report_queue: 1024,
            report_qpn: 1,
            sm_key: 0,
            sa_address: None,
        }
    }
}

/// A Report (Notice) the SA sent, already acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The Notice.
    pub notice: Notice,
    /// The Report's TID.
    pub tid: u64,
    /// Where it came from.
    pub src: Address,
}

/// A subscription the client keeps (and re-sends after an SM change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InformSubscription {
    /// Client-local id.
    pub id: u64,
    /// The InformInfo as sent (Subscribe = 1).
    pub info: InformInfo,
    /// How many times the SA accepted it (the first subscribe and every
    /// successful re-registration).
    pub accepted: u64,
    /// The outcome of the last re-registration that failed, if the last one
    /// failed.
    pub last_error: Option<String>,
}

/// Counters of an [`SaClient`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SaClientStats {
    /// Queries sent (each Get / GetTable / Set / Delete call).
    pub queries: u64,
    /// Reports received (duplicates included).
    pub reports: u64,
    /// Reports queued for the caller.
    pub reports_delivered: u64,
    /// Repeated Reports acknowledged but not queued again.
    pub reports_duplicate: u64,
    /// Reports dropped for a full queue.
    pub reports_dropped: u64,
    /// ReportResp acknowledgements sent.
    pub report_acks: u64,
    /// Times the SM address was re-read after a port event.
    pub sm_refreshes: u64,
    /// Re-registrations of subscriptions sent.
    pub resubscribes: u64,
    /// Re-registrations the SA accepted.
    pub resubscribes_ok: u64,
    /// Re-registrations that failed.
    pub resubscribes_failed: u64,
}

/// Cookie tag of a re-registration send (low bits: the subscription id).
const RESUB_TAG: u64 = 0x5AB0_0000_0000_0000;
/// Cookie of a ReportResp.
const ACK_COOKIE: u64 = 0x5AB1_0000_0000_0000;
/// Reports remembered for duplicate detection.
const RECENT_REPORTS: usize = 64;
/// Unsubscribe requests sent while the SA refuses one it still lists.
const UNSUBSCRIBE_ATTEMPTS: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SmAddr {
    lid: u16,
    sl: u8,
    pkey_index: u16,
}

struct State {
    sm: SmAddr,
    subs: Vec<InformSubscription>,
    next_sub: u64,
    recent: VecDeque<(u16, u64)>,
    stats: SaClientStats,
}

struct Shared {
    cfg: SaClientConfig,
    agent: OnceLock<AgentRef>,
    state: Mutex<State>,
    reports_tx: mpsc::SyncSender<Report>,
    reports_rx: Mutex<mpsc::Receiver<Report>>,
    /// The client's part in the port's soft reset.
    reset: ResetHold,
    /// The port reported DeviceFatal.
    dead: std::sync::atomic::AtomicBool,
}

/// An SA client on one port of a [`Runtime`]; see the [module
/// documentation](self).
pub struct SaClient {
    shared: Arc<Shared>,
    agent: Agent,
    /// The shared port this client keeps alive ([`SaClient::open`]);
    /// dropped after the agent.
    port: Option<SharedPort>,
}

impl std::fmt::Debug for SaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaClient")
            .field("agent", &self.agent.id())
            .field("sm", &lock(&self.shared.state).sm)
            .finish_non_exhaustive()
    }
}

fn sm_of(attrs: &mad_core::transport::PortAttrs) -> SmAddr {
    SmAddr {
        lid: attrs.sm_lid,
        sl: attrs.sm_sl,
        pkey_index: attrs
            .pkeys
            .iter()
            .position(|p| *p == 0xFFFF)
            .and_then(|i| u16::try_from(i).ok())
            .unwrap_or(0),
    }
}

impl SaClient {
    /// Registers the client's agent on `rt` and reads the SM address.
    ///
    /// # Errors
    /// [`SaError::Register`] when the agent cannot be registered (another
    /// agent owns SubnAdmReport on this port: set
    /// [`SaClientConfig::receive_reports`] off).
    pub fn new(rt: &Runtime, cfg: SaClientConfig) -> Result<Self, SaError> {
        let mut spec = if cfg.receive_reports {
            AgentSpec::requests(
                &cfg.name,
                MgmtClass::SUBN_ADM,
                SA_CLASS_VERSION,
                &[Method::REPORT],
            )
        } else {
            AgentSpec::send_only(&cfg.name, Qp::Qp1)
        };
        if cfg.table_mode == TableMode::Rmpp {
            spec = spec.with_rmpp();
        }
        let spec = spec.holding_reset();
        let (tx, rx) = mpsc::sync_channel(cfg.report_queue.max(1));
        let shared = Arc::new(Shared {
            cfg,
            agent: OnceLock::new(),
            state: Mutex::new(State {
                sm: sm_of(&rt.port_attrs()),
                subs: Vec::new(),
                next_sub: 1,
                recent: VecDeque::new(),
                stats: SaClientStats::default(),
            }),
            reports_tx: tx,
            reports_rx: Mutex::new(rx),
            reset: ResetHold::new(),
            dead: std::sync::atomic::AtomicBool::new(false),
        });
        let cb = shared.clone();
        let agent = rt.register(spec, move |ev| cb.on_event(ev))?;
        let _ = shared.agent.set(agent.handle());
        shared.reset.attach(agent.handle());
        // Events may have changed the port between the read above and the
        // registration.
        let sm = sm_of(&agent.port_attrs());
        lock(&shared.state).sm = sm;
        Ok(Self {
            shared,
            agent,
            port: None,
        })
    }

    /// [`SaClient::new`] on a shared port, keeping a handle on it: the
    /// port lives while the client does (see the [module
    /// documentation](self#a-shared-port-soft-resets-and-a-dead-device)).
    ///
    /// # Errors
    /// As [`SaClient::new`].
    pub fn open(port: &SharedPort, cfg: SaClientConfig) -> Result<Self, SaError> {
        let mut c = Self::new(port.runtime(), cfg)?;
        c.port = Some(port.clone());
        Ok(c)
    }

    /// The shared port this client holds, if it was opened with
    /// [`SaClient::open`].
    #[must_use]
    pub fn port(&self) -> Option<&SharedPort> {
        self.port.as_ref()
    }

    /// The client's part in soft resets so far (held, acknowledged,
    /// resumed; device-fatal errors heard).
    #[must_use]
    pub fn reset_stats(&self) -> ResetHoldStats {
        self.shared.reset.stats()
    }

    /// True once the port reported DeviceFatal: every request fails with
    /// [`SaError::PortDead`].
    #[must_use]
    pub fn is_port_dead(&self) -> bool {
        self.shared.dead.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &SaClientConfig {
        &self.shared.cfg
    }

    /// The agent's handle (for its counters).
    #[must_use]
    pub fn agent(&self) -> AgentRef {
        self.agent.handle()
    }

    /// Where requests go now: [`SaClientConfig::sa_address`] when set, else
    /// QP1 at the master SM's LID, with its SL.
    #[must_use]
    pub fn sm_address(&self) -> Address {
        self.shared.sm_address()
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> SaClientStats {
        lock(&self.shared.state).stats
    }

    /// The subscriptions held.
    #[must_use]
    pub fn subscriptions(&self) -> Vec<InformSubscription> {
        lock(&self.shared.state).subs.clone()
    }

    /// Sends one SA request and returns the answer whatever its status.
    ///
    /// `record` goes at byte 56 (at most 200 bytes: requests are one
    /// MAD). Timeouts and failed transfers are errors; the SA status is
    /// not checked.
    ///
    /// # Errors
    /// [`SaError::NoSm`], [`SaError::Timeout`], [`SaError::Transfer`],
    /// [`SaError::Send`].
    pub fn request(
        &self,
        method: Method,
        attr: AttributeId,
        attr_mod: u32,
        comp_mask: u64,
        record: &[u8],
    ) -> Result<Message, SaError> {
        self.send_counting_retries(build_request(method, attr, attr_mod, comp_mask, record))
            .map(|(m, _)| m)
    }

    /// Sends `mad`, an SA request from [`build_request`], as
    /// [`SaClient::request`] does; the answer and how many times the
    /// request was sent again before it came.
    fn send_counting_retries(&self, mut mad: Vec<u8>) -> Result<(Message, u32), SaError> {
        if self.is_port_dead() {
            return Err(SaError::PortDead);
        }
        // A soft reset pending: wait for it to end (at most as long as the
        // request itself may take), and hold the next one while this
        // request is in flight.
        let cfg = &self.shared.cfg;
        let _work = self
            .shared
            .reset
            .enter(cfg.timeout.saturating_mul(cfg.retries.saturating_add(1)));
        let dest = self.sm_address();
        if dest.lid == 0 && dest.grh.is_none() {
            return Err(SaError::NoSm);
        }
        SaMad::new_unchecked(&mut mad[..]).set_sm_key(self.shared.cfg.sm_key);
        lock(&self.shared.state).stats.queries += 1;
        let req = SendRequest::new(mad, dest)
            .expect_response(self.shared.cfg.timeout, self.shared.cfg.retries);
        let c = self.agent.send_and_wait(req)?;
        completion_response(&c, dest.lid).map(|m| (m, c.retries))
    }

    /// SubnAdmGet of the one record matching `template` on the components
    /// in `comp_mask` (host order: `R::COMP_*` constants or'ed).
    ///
    /// # Errors
    /// [`SaError::NoRecords`] / [`SaError::TooManyRecords`] and the other
    /// status errors; transport errors as [`SaClient::request`];
    /// [`SaError::Malformed`] when the answer holds no record.
    pub fn get<R: SaRecord>(&self, template: &R, comp_mask: u64) -> Result<R, SaError> {
        self.one_record(Method::GET, "template", template, comp_mask)
    }

    /// SubnAdmGetTable of every record matching `template` on `comp_mask`.
    /// An SA that answers an empty table with status NO_RECORDS instead of
    /// an empty success gets an empty table too — if no record is attached.
    ///
    /// # Errors
    /// Status errors other than NO_RECORDS; transport errors as
    /// [`SaClient::request`]; [`SaError::Inconsistent`] for an answer whose
    /// method is not GetTableResp (0x93), a NO_RECORDS answer with data,
    /// and the inconsistencies [`parse_table`] finds;
    /// [`SaError::Malformed`] for a record stride smaller than the record.
    pub fn get_table<R: SaRecord>(
        &self,
        template: &R,
        comp_mask: u64,
    ) -> Result<Table<R>, SaError> {
        let rec = template
            .to_vec()
            .map_err(|e| SaError::Malformed(format!("template: {e}")))?;
        let resp = self.request(Method::GET_TABLE, R::ATTR_ID, 0, comp_mask, &rec)?;
        check_method(&resp, Method::GET_TABLE)?;
        if resp.mad().status() == MadStatus::SA_NO_RECORDS {
            check_no_records_empty(&resp)?;
            return Ok(Table {
                records: Vec::new(),
                truncated: false,
                attr_offset: 0,
            });
        }
        check_status(&resp)?;
        check_attr(&resp, R::ATTR_ID)?;
        let table = parse_table::<R>(resp.bytes());
        // The records are copied out: the next large table is reassembled
        // into this one's buffer.
        self.agent.recycle(resp);
        table
    }

    /// SubnAdmGetMulti(MultiPathRecord): the PathRecords between the
    /// source GIDs `sgids` and the destination GIDs `dgids` (at most
    /// [`MultiPathRecord::MAX_GIDS`] in all) that `record` constrains on
    /// `comp_mask` (SGIDCount and DGIDCount are selected whatever it
    /// says). The request is itself an RMPP transfer (double-sided RMPP);
    /// with [`TableMode::SingleMad`] it goes as one MAD with the Active
    /// flag, as libibumad's clients send it without a kernel doing RMPP.
    ///
    /// # Errors
    /// The SA's status (0x0600 insufficient components, 0x0500 invalid
    /// GID, ...) as [`SaError::Status`]; [`SaError::Malformed`] for too
    /// many GIDs; the rest as [`SaClient::get_table`].
    pub fn multipath(
        &self,
        record: &MultiPathRecord,
        sgids: &[[u8; 16]],
        dgids: &[[u8; 16]],
        comp_mask: u64,
    ) -> Result<Table<PathRecord>, SaError> {
        let rec = record
            .with_gids(sgids, dgids)
            .map_err(|e| SaError::Malformed(format!("MultiPathRecord: {e}")))?;
        let mask = comp_mask | MultiPathRecord::COMP_SGID_COUNT | MultiPathRecord::COMP_DGID_COUNT;
        self.multipath_request(mask, &rec)
    }

    /// Sends SubnAdmGetMulti(MultiPathRecord) of `data` (the record and
    /// its GIDs) on `comp_mask` as it is, and reads the PathRecords
    /// answered.
    ///
    /// # Errors
    /// As [`SaClient::multipath`].
    pub fn multipath_request(
        &self,
        comp_mask: u64,
        data: &[u8],
    ) -> Result<Table<PathRecord>, SaError> {
        let mut mad = build_request(
            Method::GET_MULTI,
            AttributeId::SA_MULTIPATH_RECORD,
            0,
            comp_mask,
            data,
        );
        {
            let mut r = RmppView::new_unchecked(&mut mad[..]);
            r.set_version(RMPP_VERSION);
            r.set_rmpp_type(RmppType::DATA);
            r.set_flags(RMPP_FLAG_ACTIVE);
        }
        let (resp, _) = self.send_counting_retries(mad)?;
        check_method(&resp, Method::GET_MULTI)?;
        check_status(&resp)?;
        check_attr(&resp, PathRecord::ATTR_ID)?;
        let table = parse_table::<PathRecord>(resp.bytes());
        self.agent.recycle(resp);
        table
    }

    /// SubnAdmGetTraceTable: the TraceRecords of the nodes the path that
    /// `path` selects on `comp_mask` (PathRecord components; an end must
    /// be named by SGID or SLID, the other by DGID or DLID) crosses,
    /// source first. The answer is a GetTableResp of TraceRecords.
    ///
    /// # Errors
    /// [`SaError::NoRecords`] when the SA knows no such path or cannot
    /// trace it; [`SaError::InsufficientComponents`] when an end is not
    /// named; other statuses as [`SaError::from_status`] maps them; the rest as
    /// [`SaClient::get_table`]. OpenSM 3.3.23 does not answer this method
    /// at all: [`SaError::Timeout`].
    pub fn trace_table(
        &self,
        path: &PathRecord,
        comp_mask: u64,
    ) -> Result<Table<TraceRecord>, SaError> {
        let rec = path
            .to_vec()
            .map_err(|e| SaError::Malformed(format!("PathRecord: {e}")))?;
        let resp = self.request(
            Method::GET_TRACE_TABLE,
            TraceRecord::ATTR_ID,
            0,
            comp_mask,
            &rec,
        )?;
        check_method(&resp, Method::GET_TRACE_TABLE)?;
        check_status(&resp)?;
        check_attr(&resp, TraceRecord::ATTR_ID)?;
        let table = parse_table::<TraceRecord>(resp.bytes());
        self.agent.recycle(resp);
        table
    }

    /// SubnAdmSet of `record`; returns the record the SA answers with.
    ///
    /// # Errors
    /// As [`SaClient::get`].
    pub fn set<R: SaRecord>(&self, record: &R, comp_mask: u64) -> Result<R, SaError> {
        self.one_record(Method::SET, "record", record, comp_mask)
    }

    /// SubnAdmDelete of `record`; returns the record the SA answers with.
    ///
    /// # Errors
    /// As [`SaClient::get`].
    pub fn delete<R: SaRecord>(&self, record: &R, comp_mask: u64) -> Result<R, SaError> {
        self.one_record(Method::DELETE, "record", record, comp_mask)
    }

    /// The one-record methods (Get, Set, Delete): `record` sent with
    /// `method` on `comp_mask`, the answer checked (method, status,
    /// attribute) and its record parsed; `what` names the record in the
    /// error when it does not serialize.
    fn one_record<R: SaRecord>(
        &self,
        method: Method,
        what: &str,
        record: &R,
        comp_mask: u64,
    ) -> Result<R, SaError> {
        let rec = record
            .to_vec()
            .map_err(|e| SaError::Malformed(format!("{what}: {e}")))?;
        let resp = self.request(method, R::ATTR_ID, 0, comp_mask, &rec)?;
        check_method(&resp, method)?;
        check_status(&resp)?;
        check_attr(&resp, R::ATTR_ID)?;
        parse_record::<R>(resp.bytes())
    }

    /// Every record of type `R` (GetTable with an empty mask).
    ///
    /// # Errors
    /// As [`SaClient::get_table`].
    pub fn all<R: SaRecord + Default>(&self) -> Result<Table<R>, SaError> {
        self.get_table(&R::default(), 0)
    }

    /// The SA's ClassPortInfo.
    ///
    /// # Errors
    /// As [`SaClient::get`].
    pub fn class_port_info(&self) -> Result<ClassPortInfo, SaError> {
        let resp = self.request(Method::GET, AttributeId::CLASS_PORT_INFO, 0, 0, &[])?;
        check_method(&resp, Method::GET)?;
        check_status(&resp)?;
        check_attr(&resp, AttributeId::CLASS_PORT_INFO)?;
        let data = resp.bytes().get(SA_DATA_OFFSET..).unwrap_or(&[]);
        ClassPortInfo::parse(data).map_err(|e| SaError::Malformed(e.to_string()))
    }

    /// The NodeRecord of the port with base LID `lid` (Get on LID).
    ///
    /// # Errors
    /// As [`SaClient::get`].
    pub fn node_record(&self, lid: u16) -> Result<NodeRecord, SaError> {
        let t = NodeRecord {
            lid,
            ..NodeRecord::default()
        };
        self.get(&t, NodeRecord::COMP_LID)
    }

    /// The PortInfoRecords of the node with LID `lid` (all its ports).
    ///
    /// # Errors
    /// As [`SaClient::get_table`].
    pub fn port_info_records(&self, lid: u16) -> Result<Table<PortInfoRecord>, SaError> {
        let t = PortInfoRecord {
            lid,
            ..PortInfoRecord::default()
        };
        self.get_table(&t, PortInfoRecord::COMP_LID)
    }

    /// PathRecords from LID `slid` to LID `dlid` (GetTable, NumbPath 1,
    /// reversible paths, as `saquery --slid --dlid` asks).
    ///
    /// # Errors
    /// As [`SaClient::get_table`].
    pub fn path_records(&self, slid: u16, dlid: u16) -> Result<Table<PathRecord>, SaError> {
        let t = PathRecord {
            slid,
            dlid,
            ..PathRecord::default()
        };
        self.get_table(&t, PathRecord::COMP_SLID | PathRecord::COMP_DLID)
    }

    /// PathRecords from port GID `sgid` to `dgid` (GetTable).
    ///
    /// # Errors
    /// As [`SaClient::get_table`].
    pub fn path_records_by_gid(
        &self,
        sgid: [u8; 16],
        dgid: [u8; 16],
    ) -> Result<Table<PathRecord>, SaError> {
        let t = PathRecord {
            sgid,
            dgid,
            ..PathRecord::default()
        };
        self.get_table(&t, PathRecord::COMP_SGID | PathRecord::COMP_DGID)
    }

    /// The one PathRecord from `slid` to `dlid` (Get, as `saquery
    /// --src-to-dst` asks).
    ///
    /// # Errors
    /// As [`SaClient::get`].
    pub fn path_record(&self, slid: u16, dlid: u16) -> Result<PathRecord, SaError> {
        let t = PathRecord {
            slid,
            dlid,
            ..PathRecord::default()
        };
        self.get(&t, PathRecord::COMP_SLID | PathRecord::COMP_DLID)
    }

    /// Subscribes to the notices `info` selects (Subscribe is set to 1 and
    /// QPN to [`SaClientConfig::report_qpn`]); the subscription is
    /// remembered and re-sent after SM changes.
    ///
    /// # Errors
    /// Status errors (e.g. [`SaError::RequestInvalid`]) and transport
    /// errors as [`SaClient::request`].
    pub fn subscribe(&self, info: &InformInfo) -> Result<InformSubscription, SaError> {
        let mut info = info.clone();
        info.subscribe = 1;
        info.qpn = self.shared.cfg.report_qpn;
        let _ = self.set(&info, 0)?;
        let mut st = lock(&self.shared.state);
        let sub = InformSubscription {
            id: st.next_sub,
            info,
            accepted: 1,
            last_error: None,
        };
        st.next_sub += 1;
        st.subs.push(sub.clone());
        Ok(sub)
    }

    /// Withdraws a subscription (Subscribe = 0) and forgets it. An SA that
    /// refuses (ERR_REQ_INVALID) while its InformInfoRecords still list the
    /// subscription is asked again, up to three requests in all.
    ///
    /// # Errors
    /// As [`SaClient::subscribe`]; [`SaError::RequestInvalid`] when the SA
    /// does not hold the subscription; the subscription is forgotten even
    /// if the SA refuses.
    pub fn unsubscribe(&self, sub: &InformSubscription) -> Result<(), SaError> {
        lock(&self.shared.state).subs.retain(|s| s.id != sub.id);
        let mut info = sub.info.clone();
        info.subscribe = 0;
        let rec = info
            .to_vec()
            .map_err(|e| SaError::Malformed(format!("record: {e}")))?;
        let mut attempt = 1;
        loop {
            let mad = build_request(Method::SET, InformInfo::ATTR_ID, 0, 0, &rec);
            let (resp, retries) = self.send_counting_retries(mad)?;
            check_method(&resp, Method::SET)?;
            match check_status(&resp) {
                // Unsubscribing is not idempotent at the SA: when an earlier
                // copy of this request was answered too late and we sent it
                // again, the SA has already removed the subscription and
                // answers the repeat with ERR_REQ_INVALID. The goal is met.
                Err(SaError::RequestInvalid) if retries > 0 => return Ok(()),
                // Refused although the SA may still hold it: OpenSM 3.3 finds
                // the subscription by comparing the request's whole address
                // record byte for byte (memcmp in match_inf_rec), and now and
                // then misses it while it sweeps (seen right after a port left
                // the fabric). If the SA still lists it, ask again.
                Err(SaError::RequestInvalid)
                    if attempt < UNSUBSCRIBE_ATTEMPTS && self.sa_lists(&sub.info)? =>
                {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// Whether the SA's InformInfoRecords hold a subscription for the same
    /// traps as `info` (what its own unsubscribe looks for, QPN and
    /// response time aside).
    fn sa_lists(&self, info: &InformInfo) -> Result<bool, SaError> {
        let table = self.all::<InformInfoRecord>()?;
        Ok(table.records.iter().any(|r| r.inform_info.same_traps(info)))
    }

    /// Sends every remembered subscription again now (what the client does
    /// by itself on SM_CHANGE, CLIENT_REREGISTER and PORT_ACTIVE); the
    /// outcomes arrive asynchronously. Returns how many were sent.
    pub fn resubscribe_all(&self) -> usize {
        self.shared.resubscribe_all()
    }

    /// The next Report, waiting up to `timeout`.
    #[must_use]
    pub fn next_report(&self, timeout: Duration) -> Option<Report> {
        lock(&self.shared.reports_rx).recv_timeout(timeout).ok()
    }

    /// The next Report if one is queued.
    #[must_use]
    pub fn try_report(&self) -> Option<Report> {
        lock(&self.shared.reports_rx).try_recv().ok()
    }
}
