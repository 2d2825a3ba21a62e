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

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use mad_core::transport::{Address, AsyncEvent, Qp, GSI_QKEY};
use mad_core::wire::attr::{ClassPortInfo, Notice};
use mad_core::wire::rmpp::{RmppView, RMPP_FLAG_ACTIVE, RMPP_FLAG_FIRST, RMPP_FLAG_LAST};
use mad_core::wire::sa::{SaMad, SA_CLASS_VERSION};
use mad_core::wire::sa_records::{
    InformInfo, InformInfoRecord, NodeRecord, PathRecord, PortInfoRecord, SaRecord,
};
use mad_core::wire::{
    AttributeId, Mad, MadStatus, Method, MgmtClass, Repr, MAD_LEN, SA_DATA_OFFSET,
};

use super::{build_request, SaError};
use crate::runtime::{Agent, AgentRef, Runtime};
use crate::spec::AgentSpec;
use crate::types::{AgentEvent, Completion, Message, SendRequest, SendStatus};

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

/// Records of a GetTable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table<R> {
    /// The records, in the SA's order.
    pub records: Vec<R>,
    /// The answer was cut to one MAD ([`TableMode::SingleMad`]): the SA
    /// sent, or may have sent, more records than these.
    pub truncated: bool,
    /// The AttributeOffset of the answer (record stride / 8; 0 when
    /// empty).
    pub attr_offset: u16,
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
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An SA client on one port of a [`Runtime`]; see the [module
/// documentation](self).
pub struct SaClient {
    shared: Arc<Shared>,
    agent: Agent,
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
        });
        let cb = shared.clone();
        let agent = rt.register(spec, move |ev| cb.on_event(ev))?;
        let _ = shared.agent.set(agent.handle());
        // Events may have changed the port between the read above and the
        // registration.
        let sm = sm_of(&agent.port_attrs());
        lock(&shared.state).sm = sm;
        Ok(Self { shared, agent })
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
        self.request_counting_retries(method, attr, attr_mod, comp_mask, record)
            .map(|(m, _)| m)
    }

    /// As [`SaClient::request`], also returning how many times the request
    /// was sent again before this answer came.
    fn request_counting_retries(
        &self,
        method: Method,
        attr: AttributeId,
        attr_mod: u32,
        comp_mask: u64,
        record: &[u8],
    ) -> Result<(Message, u32), SaError> {
        let dest = self.sm_address();
        if dest.lid == 0 && dest.grh.is_none() {
            return Err(SaError::NoSm);
        }
        let mut mad = build_request(method, attr, attr_mod, comp_mask, record);
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
        let rec = template
            .to_vec()
            .map_err(|e| SaError::Malformed(format!("template: {e}")))?;
        let resp = self.request(Method::GET, R::ATTR_ID, 0, comp_mask, &rec)?;
        check_method(&resp, Method::GET)?;
        check_status(&resp)?;
        check_attr(&resp, R::ATTR_ID)?;
        parse_record::<R>(resp.bytes())
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

    /// SubnAdmSet of `record`; returns the record the SA answers with.
    ///
    /// # Errors
    /// As [`SaClient::get`].
    pub fn set<R: SaRecord>(&self, record: &R, comp_mask: u64) -> Result<R, SaError> {
        let rec = record
            .to_vec()
            .map_err(|e| SaError::Malformed(format!("record: {e}")))?;
        let resp = self.request(Method::SET, R::ATTR_ID, 0, comp_mask, &rec)?;
        check_method(&resp, Method::SET)?;
        check_status(&resp)?;
        check_attr(&resp, R::ATTR_ID)?;
        parse_record::<R>(resp.bytes())
    }

    /// SubnAdmDelete of `record`; returns the record the SA answers with.
    ///
    /// # Errors
    /// As [`SaClient::get`].
    pub fn delete<R: SaRecord>(&self, record: &R, comp_mask: u64) -> Result<R, SaError> {
        let rec = record
            .to_vec()
            .map_err(|e| SaError::Malformed(format!("record: {e}")))?;
        let resp = self.request(Method::DELETE, R::ATTR_ID, 0, comp_mask, &rec)?;
        check_method(&resp, Method::DELETE)?;
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
            let (resp, retries) =
                self.request_counting_retries(Method::SET, InformInfo::ATTR_ID, 0, 0, &rec)?;
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

impl Shared {
    fn sm_address(&self) -> Address {
        if let Some(a) = self.cfg.sa_address {
            return a;
        }
        let sm = lock(&self.state).sm;
        Address {
            sl: sm.sl,
            pkey_index: sm.pkey_index,
            ..Address::gsi(sm.lid)
        }
    }

    fn on_event(&self, ev: AgentEvent) {
        match ev {
            AgentEvent::Received(msg) => self.on_request(&msg),
            AgentEvent::Async(e) => self.on_async(e),
            AgentEvent::SendDone(c) => self.on_send_done(&c),
            _ => {}
        }
    }

    fn on_async(&self, e: AsyncEvent) {
        let refresh = matches!(
            e,
            AsyncEvent::PortActive
                | AsyncEvent::PortError
                | AsyncEvent::LidChange
                | AsyncEvent::PkeyChange
                | AsyncEvent::SmChange
                | AsyncEvent::ClientReregister
        );
        if refresh {
            if let Some(a) = self.agent.get() {
                let sm = sm_of(&a.port_attrs());
                let mut st = lock(&self.state);
                st.sm = sm;
                st.stats.sm_refreshes += 1;
            }
        }
        if matches!(
            e,
            AsyncEvent::SmChange | AsyncEvent::ClientReregister | AsyncEvent::PortActive
        ) {
            self.resubscribe_all();
        }
    }

    fn resubscribe_all(&self) -> usize {
        let Some(agent) = self.agent.get() else {
            return 0;
        };
        let subs = lock(&self.state).subs.clone();
        let dest = self.sm_address();
        let mut sent = 0;
        for s in subs {
            let Ok(rec) = s.info.to_vec() else {
                continue;
            };
            let mut mad = build_request(Method::SET, InformInfo::ATTR_ID, 0, 0, &rec);
            SaMad::new_unchecked(&mut mad[..]).set_sm_key(self.cfg.sm_key);
            let req = SendRequest::new(mad, dest)
                .expect_response(self.cfg.timeout, self.cfg.retries)
                .cookie(RESUB_TAG | (s.id & 0xFFFF_FFFF_FFFF));
            let mut st = lock(&self.state);
            st.stats.resubscribes += 1;
            let reachable = dest.lid != 0 || dest.grh.is_some();
            match (reachable, agent.send(req)) {
                (false, _) => {
                    st.stats.resubscribes_failed += 1;
                    set_sub_error(&mut st, s.id, SaError::NoSm.to_string());
                }
                (true, Ok(_)) => sent += 1,
                (true, Err(e)) => {
                    st.stats.resubscribes_failed += 1;
                    set_sub_error(&mut st, s.id, e.to_string());
                }
            }
        }
        sent
    }

    fn on_send_done(&self, c: &Completion) {
        if c.cookie & 0xFFFF_0000_0000_0000 != RESUB_TAG {
            return;
        }
        let id = c.cookie & 0xFFFF_FFFF_FFFF;
        let lid = self.sm_address().lid;
        let outcome = completion_response(c, lid).and_then(|m| check_status(&m));
        let mut st = lock(&self.state);
        match outcome {
            Ok(()) => {
                st.stats.resubscribes_ok += 1;
                if let Some(s) = st.subs.iter_mut().find(|s| s.id == id) {
                    s.accepted += 1;
                    s.last_error = None;
                }
            }
            Err(e) => {
                st.stats.resubscribes_failed += 1;
                set_sub_error(&mut st, id, e.to_string());
            }
        }
    }

    /// A Report (or another SA request the agent owns).
    fn on_request(&self, msg: &Message) {
        let m = msg.mad();
        if m.mgmt_class() != MgmtClass::SUBN_ADM || m.method() != Method::REPORT {
            return;
        }
        let tid = m.tid();
        let src = *msg.src();
        // Acknowledge first: ReportResp carries the same TID, attribute
        // and data.
        let mut resp = msg.bytes()[..msg.bytes().len().min(MAD_LEN)].to_vec();
        resp.resize(MAD_LEN, 0);
        {
            let mut v = Mad::new_unchecked(&mut resp[..]);
            v.set_method(Method::REPORT, true);
            v.set_status(MadStatus::SUCCESS);
        }
        // A response never carries an RMPP transfer of its own here.
        RmppView::new_unchecked(&mut resp[..]).set_flags(0);
        let dest = Address {
            qkey: GSI_QKEY,
            ..src
        };
        let acked = self.agent.get().is_some_and(|a| {
            a.send(SendRequest::new(resp, dest).cookie(ACK_COOKIE))
                .is_ok()
        });
        let mut st = lock(&self.state);
        st.stats.reports += 1;
        if acked {
            st.stats.report_acks += 1;
        }
        let key = (src.lid, tid & crate::tid::TID_MATCH_MASK);
        if st.recent.contains(&key) {
            st.stats.reports_duplicate += 1;
            return;
        }
        if st.recent.len() >= RECENT_REPORTS {
            st.recent.pop_front();
        }
        st.recent.push_back(key);
        let data = msg.bytes().get(SA_DATA_OFFSET..).unwrap_or(&[]);
        let Ok(notice) = Notice::parse(data) else {
            return;
        };
        match self.reports_tx.try_send(Report { notice, tid, src }) {
            Ok(()) => st.stats.reports_delivered += 1,
            Err(_) => st.stats.reports_dropped += 1,
        }
    }
}

fn set_sub_error(st: &mut State, id: u64, e: String) {
    if let Some(s) = st.subs.iter_mut().find(|s| s.id == id) {
        s.last_error = Some(e);
    }
}

/// The response of a completed send, or the error its status means.
fn completion_response(c: &Completion, lid: u16) -> Result<Message, SaError> {
    match (c.status, &c.response) {
        (SendStatus::Success, Some(m)) => Ok(m.clone()),
        (SendStatus::Success, None) => Err(SaError::Malformed(
            "the send completed without a response".to_owned(),
        )),
        (SendStatus::Timeout, _) => Err(SaError::Timeout {
            lid,
            attempts: c.retries + 1,
        }),
        (s, _) => Err(SaError::Transfer(s)),
    }
}

/// The method byte (with the response bit) that answers `asked`: Get and
/// Set are answered with GetResp (0x81), GetTable with GetTableResp
/// (0x92 | 0x80), Delete with DeleteResp (0x95).
#[must_use]
pub fn answer_method(asked: Method) -> u8 {
    let m = if asked == Method::SET {
        Method::GET
    } else {
        asked
    };
    m.0 | mad_core::wire::METHOD_RESPONSE_BIT
}

/// The answer must carry the method that answers `asked`.
fn check_method(resp: &Message, asked: Method) -> Result<(), SaError> {
    let got = resp.mad().raw_method();
    let want = answer_method(asked);
    if got == want {
        Ok(())
    } else {
        Err(SaError::Inconsistent {
            field: "Method",
            detail: format!(
                "a {} request is answered with method {want:#04x}, this answer has {got:#04x}",
                asked.name().unwrap_or("?")
            ),
        })
    }
}

/// A NO_RECORDS answer to GetTable may carry no records: any non-zero
/// byte in its data is a record the status denies.
fn check_no_records_empty(resp: &Message) -> Result<(), SaError> {
    let v = SaMad::new_checked(resp.bytes()).map_err(|e| SaError::Malformed(e.to_string()))?;
    let data = v
        .used_data()
        .map_err(|e| SaError::Malformed(e.to_string()))?;
    match data.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(at) => Err(SaError::Inconsistent {
            field: "Status",
            detail: format!(
                "status 0x0300 ERR_NO_RECORDS, yet the answer carries {} data bytes \
                 (AttributeOffset {}), the first non-zero at offset {at}",
                data.len(),
                v.attr_offset()
            ),
        }),
    }
}

/// The SA status of an answer as an error.
fn check_status(resp: &Message) -> Result<(), SaError> {
    if resp.bytes().len() < SA_DATA_OFFSET {
        return Err(SaError::Malformed(format!(
            "an SA answer has at least {SA_DATA_OFFSET} bytes, this one {}",
            resp.bytes().len()
        )));
    }
    match resp.mad().status().0 {
        0 => Ok(()),
        s => Err(SaError::from_status(s)),
    }
}

/// The answer must carry the attribute asked for.
fn check_attr(resp: &Message, attr: AttributeId) -> Result<(), SaError> {
    let got = resp.mad().attr_id();
    if got == attr {
        Ok(())
    } else {
        Err(SaError::Malformed(format!(
            "asked for attribute {:#06x}, the answer carries {:#06x}",
            attr.0, got.0
        )))
    }
}

/// The one record of a GetResp (or Set / Delete response) MAD.
///
/// # Errors
/// [`SaError::Malformed`] when the data is shorter than the record.
pub fn parse_record<R: SaRecord>(mad: &[u8]) -> Result<R, SaError> {
    let data = mad.get(SA_DATA_OFFSET..).unwrap_or(&[]);
    R::parse(data).map_err(|e| SaError::Malformed(format!("{}: {e}", R::NAME)))
}

/// The part of `data` that is records (see [`parse_table`]).
fn whole_records(
    data: &[u8],
    attr_offset: u16,
    stride: usize,
    exact: bool,
    truncated: bool,
) -> Result<&[u8], SaError> {
    let inconsistent = |detail: String| SaError::Inconsistent {
        field: "AttributeOffset",
        detail,
    };
    if stride == 0 {
        let present = if exact {
            !data.is_empty()
        } else {
            data.iter().any(|&b| b != 0)
        };
        if present {
            return Err(inconsistent(format!(
                "0 (no records), yet {} data bytes are present",
                data.len()
            )));
        }
        return Ok(&[]);
    }
    let rest = data.len() % stride;
    let mut end = data.len() - rest;
    if truncated {
        // One MAD of a longer answer: a record may go on in the next one,
        // and an SA that sent fewer records than fit left the slots after
        // them zero.
        while end >= stride && data[end - stride..end].iter().all(|&b| b == 0) {
            end -= stride;
        }
        return Ok(&data[..end]);
    }
    if exact && rest != 0 {
        return Err(inconsistent(format!(
            "{attr_offset} ({stride}-byte records), but the answer has {} data bytes: \
             {} records and {rest} bytes over",
            data.len(),
            data.len() / stride
        )));
    }
    if !exact {
        if data[end..].iter().any(|&b| b != 0) {
            return Err(inconsistent(format!(
                "{attr_offset} ({stride}-byte records): the {rest} bytes after the last \
                 whole record are not zero padding"
            )));
        }
        while end >= stride && data[end - stride..end].iter().all(|&b| b == 0) {
            end -= stride;
        }
    }
    Ok(&data[..end])
}

/// The records of a GetTableResp: a reassembled message, a
/// single-segment RMPP answer trimmed by its PayloadLength, or one MAD of
/// a longer answer (then [`Table::truncated`] is set: a 256-byte MAD whose
/// RMPP header is Active without both First and Last). The status and
/// method are not checked.
///
/// The data must be whole records: in a reassembled or PayloadLength-trimmed
/// answer its length is a multiple of the stride (AttributeOffset × 8);
/// in a plain 256-byte MAD (RMPP inactive) what follows the last whole
/// record is zero padding, and trailing all-zero strides are padding too
/// (an unused slot, not a record), as they are in one MAD of a longer
/// answer. AttributeOffset 0 means no records, so
/// the data must then be empty (or zero padding).
///
/// # Errors
/// [`SaError::Malformed`] for a buffer shorter than the SA header, a
/// record stride shorter than the record, or a bad PayloadLength;
/// [`SaError::Inconsistent`] naming AttributeOffset for data present with
/// AttributeOffset 0 or data that is not a whole number of records.
pub fn parse_table<R: SaRecord>(mad: &[u8]) -> Result<Table<R>, SaError> {
    let v = SaMad::new_checked(mad).map_err(|e| SaError::Malformed(e.to_string()))?;
    let r = v.rmpp();
    let flags = r.flags();
    let whole = RMPP_FLAG_FIRST | RMPP_FLAG_LAST;
    // One MAD of an RMPP answer that is not First|Last: the rest is lost.
    let truncated = mad.len() == MAD_LEN && r.is_active() && flags & whole != whole;
    let attr_offset = v.attr_offset();
    let stride = usize::from(attr_offset) * 8;
    if stride != 0 && stride < R::LEN {
        return Err(SaError::Malformed(format!(
            "AttributeOffset {attr_offset} ({stride} bytes) is shorter than a {} ({} bytes)",
            R::NAME,
            R::LEN
        )));
    }
    let data = if truncated {
        v.data()
    } else {
        v.used_data()
            .map_err(|e| SaError::Malformed(e.to_string()))?
    };
    let single = RMPP_FLAG_ACTIVE | whole;
    // The data's length is the SA's own count (reassembled, or trimmed by
    // PayloadLength), not a MAD padded to 256 bytes.
    let exact = mad.len() != MAD_LEN || (r.is_active() && flags == single);
    let data = whole_records(data, attr_offset, stride, exact, truncated)?;
    let recs = mad_core::wire::sa::split_records(data, attr_offset)
        .map_err(|e| SaError::Malformed(e.to_string()))?;
    let records = recs
        .map(|b| R::parse(b).map_err(|e| SaError::Malformed(format!("{}: {e}", R::NAME))))
        .collect::<Result<Vec<R>, SaError>>()?;
    Ok(Table {
        records,
        truncated,
        attr_offset,
    })
}
