//! The SA responder: answers SubnAdmGet / GetTable / Set / Delete from a
//! [`RecordSource`], keeps InformInfo subscriptions and sends Reports.
//!
//! # What a record source provides
//! A [`RecordSource`] is asked for the **candidate records** of one
//! attribute ([`RecordSource::records`]); each candidate is the record's
//! bytes as on the wire (its `Repr::LEN` bytes, or already padded to the
//! GetTable stride). The responder keeps the candidates that match the
//! request's template on its ComponentMask ([`super::record_matches`]), so
//! a source may return every record it has (always correct) or only a
//! superset it can compute cheaply from the [`RecordQuery`] (the
//! PathRecords between the template's SLID and DLID, say). Returning
//! `None` says the attribute is not served: the answer is status 0x000C
//! (method/attribute not supported), as for any attribute the responder
//! has no ComponentMask layout for. Set and Delete go to
//! [`RecordSource::set`] / [`RecordSource::delete`] (unsupported by
//! default), except InformInfo Set, which the responder handles itself
//! (below). [`StaticRecords`] is a ready source holding fixed records.
//!
//! # Answers (opensm's rules, MAD.md §7)
//! - Get: exactly one match → GetResp with it; none → status 0x0300
//!   (`ERR_NO_RECORDS`); more → 0x0400 (`ERR_TOO_MANY_RECORDS`).
//! - GetTable: GetTableResp with every match, each padded to the record's
//!   stride, AttributeOffset = stride / 8 (0 when there is none), sent
//!   RMPP-active — one First|Last segment for a small table, an RMPP
//!   transfer through the agent layer for a large one.
//! - ClassPortInfo Get: [`SaResponderConfig::class_port_info`].
//! - GetMulti(MultiPathRecord): the PathRecords of every GID pair
//!   (`super::multipath`); GetTraceTable(TraceRecord) with a PathRecord:
//!   the TraceRecords of the nodes the path crosses, walked over the
//!   source's NodeRecords, LinkRecords and LFT records (`super::trace`;
//!   OpenSM 3.3.23 does not answer this method at all).
//! - SM_Key is 0 in every response; the TID, attribute, modifier and
//!   ComponentMask are the request's.
//!
//! # InformInfo and Reports
//! SubnAdmSet(InformInfo) with Subscribe = 1 adds a subscription of the
//! requesting port (its LID, the InformInfo's QPN); Subscribe = 0 removes
//! the same subscription (status 0x0200 when there is none). Both are
//! answered with the InformInfo. The subscriptions are bounded per port
//! and in total ([`SaResponderConfig::subscription_limits`]): a new one
//! beyond a limit is answered 0x0100 (`ERR_NO_RESOURCES`), see
//! [`super::subscriptions`]. InformInfoRecord GetTable lists them
//! (SubscriberGID = the subscriber's port GID from its NodeRecord, when the
//! source has one). [`SaResponder::report`] sends a Notice as
//! SubnAdmReport to every subscription that selects it (opensm's
//! `match_inf_rec` rules) and the subscribers' ReportResp completes each
//! send.
//!
//! # Soft reset (seed 001)
//! The responder's agent holds the port's two-phase soft reset
//! ([`ResetHold`]): from ResetPending on, a request received waits in the
//! responder (at most [`DEFERRED_REQUESTS`]; beyond that it is dropped,
//! the requester's retry covers it) and so does a Report, while the
//! answers and Reports already posted end; then the responder
//! acknowledges. On ResetEnd the waiting requests are answered and the
//! waiting Reports sent ([`SaResponder::reset_stats`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mad_core::transport::{Address, GSI_QKEY};
use mad_core::wire::attr::{ClassPortInfo, Notice};
use mad_core::wire::field::get_bits;
use mad_core::wire::rmpp::{RmppType, RmppView, RMPP_FLAG_ACTIVE, RMPP_VERSION};
use mad_core::wire::sa::{SaMad, SA_CLASS_VERSION};
use mad_core::wire::sa_records::{
    record_info, InformInfo, InformInfoRecord, NodeRecord, PortInfoRecord, SaRecord,
};
use mad_core::wire::{
    AttributeId, Mad, MadStatus, Method, MgmtClass, Repr, MAD_HEADER_LEN, MAD_LEN, RMPP_HEADER_END,
    SA_DATA_OFFSET,
};

use super::components::{component_layout, record_matches};
use super::subscriptions::{Subscriber, SubscriptionLimits, Subscriptions};
use super::{lock, SaError};
use crate::runtime::{Agent, AgentRef, ResetHold, ResetHoldStats, Runtime, SharedPort};
use crate::spec::AgentSpec;
use crate::types::{AgentEvent, Completion, Message, SendRequest, SendStatus};

use super::source::Answer;
pub use super::source::{RecordQuery, RecordSource, StaticRecords};

/// Settings of an [`SaResponder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaResponderConfig {
    /// Agent name.
    pub name: String,
    /// What ClassPortInfo Get answers.
    pub class_port_info: ClassPortInfo,
    /// Response timeout of a Report (waiting for ReportResp).
    pub report_timeout: Duration,
    /// Retries of a Report.
    pub report_retries: u32,
    /// Subnet prefix of the SubscriberGIDs listed in InformInfoRecords.
    pub gid_prefix: u64,
    /// How many InformInfo subscriptions are held, per port and in total.
    pub subscription_limits: SubscriptionLimits,
    /// The SM_Key of trusted requests: P_KeyTableRecords are given only
    /// to a request carrying it (IBTA 15.2.5.11, as OpenSM checks its
    /// `sa_key`); any other key gets status "request invalid" (0x0200).
    /// `None`: every requester is trusted.
    pub trusted_key: Option<u64>,
}

impl Default for SaResponderConfig {
    fn default() -> Self {
        Self {
            name: "sa-responder".to_owned(),
            class_port_info: ClassPortInfo {
                base_version: 1,
                class_version: SA_CLASS_VERSION,
                resp_time_value: 18,
                ..ClassPortInfo::default()
            },
            report_timeout: Duration::from_millis(500),
            report_retries: 3,
            gid_prefix: 0xfe80_0000_0000_0000,
            subscription_limits: SubscriptionLimits::default(),
            trusted_key: None,
        }
    }
}

/// Counters of an [`SaResponder`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SaResponderStats {
    /// Requests answered.
    pub requests: u64,
    /// Answered with status 0.
    pub ok: u64,
    /// Answered with NO_RECORDS.
    pub no_records: u64,
    /// Answered with TOO_MANY_RECORDS.
    pub too_many: u64,
    /// Answered with another non-zero status.
    pub other_status: u64,
    /// GetTable answers longer than one MAD (multi-segment RMPP).
    pub multi_segment: u64,
    /// Answers the agent layer refused to send.
    pub send_failures: u64,
    /// Reports sent.
    pub reports_sent: u64,
    /// Reports acknowledged by a ReportResp.
    pub reports_acked: u64,
    /// Reports that failed (timeout, ...).
    pub reports_failed: u64,
    /// InformInfo subscriptions refused with `ERR_NO_RESOURCES` (a port's
    /// or the total limit reached).
    pub subscriptions_refused: u64,
    /// Requests and Reports that waited for a soft reset to end.
    pub deferred: u64,
    /// Requests dropped during a soft reset (the waiting ones were
    /// [`DEFERRED_REQUESTS`] already).
    pub deferred_dropped: u64,
}

/// Most requests that wait in the responder for a soft reset to end.
pub const DEFERRED_REQUESTS: usize = 4096;

/// What waits for a soft reset to end.
#[derive(Default)]
struct Deferred {
    requests: VecDeque<Message>,
    reports: Vec<Notice>,
}

struct Inner {
    cfg: SaResponderConfig,
    source: Arc<dyn RecordSource>,
    agent: OnceLock<AgentRef>,
    subs: Mutex<Subscriptions>,
    stats: Mutex<SaResponderStats>,
    /// The responder's part in the port's soft reset.
    reset: ResetHold,
    deferred: Mutex<Deferred>,
}

/// Cookie of a Report send.
const REPORT_COOKIE: u64 = 0x5AB2_0000_0000_0000;

/// An SA answering on one port of a [`Runtime`]; see the [module
/// documentation](self). Dropping it deregisters its agent.
pub struct SaResponder {
    inner: Arc<Inner>,
    agent: Agent,
    /// The shared port this responder keeps alive ([`SaResponder::open`]);
    /// dropped after the agent.
    port: Option<SharedPort>,
}

impl std::fmt::Debug for SaResponder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaResponder")
            .field("agent", &self.agent.id())
            .field("stats", &*lock(&self.inner.stats))
            .finish_non_exhaustive()
    }
}

impl SaResponder {
    /// Registers the SA agent (class 0x03 version 2, methods Get, Set,
    /// GetTable, Delete, GetTraceTable and GetMulti, with RMPP) on `rt`,
    /// answering from `source`.
    ///
    /// # Errors
    /// [`SaError::Register`] if another agent owns those methods.
    pub fn start(
        rt: &Runtime,
        source: Arc<dyn RecordSource>,
        cfg: SaResponderConfig,
    ) -> Result<Self, SaError> {
        let spec = AgentSpec::requests(
            &cfg.name,
            MgmtClass::SUBN_ADM,
            SA_CLASS_VERSION,
            &[
                Method::GET,
                Method::SET,
                Method::GET_TABLE,
                Method::DELETE,
                Method::GET_TRACE_TABLE,
                Method::GET_MULTI,
            ],
        )
        .with_rmpp()
        .holding_reset();
        let subs = Subscriptions::new(cfg.subscription_limits);
        let inner = Arc::new(Inner {
            cfg,
            source,
            agent: OnceLock::new(),
            subs: Mutex::new(subs),
            stats: Mutex::new(SaResponderStats::default()),
            reset: ResetHold::new(),
            deferred: Mutex::new(Deferred::default()),
        });
        let cb = inner.clone();
        let agent = rt.register(spec, move |ev| cb.on_event(ev))?;
        let _ = inner.agent.set(agent.handle());
        inner.reset.attach(agent.handle());
        Ok(Self {
            inner,
            agent,
            port: None,
        })
    }

    /// [`SaResponder::start`] on a shared port, keeping a handle on it:
    /// the port lives while the responder does (the SA next to the SM's
    /// and the process's other services on one port).
    ///
    /// # Errors
    /// As [`SaResponder::start`].
    pub fn open(
        port: &SharedPort,
        source: Arc<dyn RecordSource>,
        cfg: SaResponderConfig,
    ) -> Result<Self, SaError> {
        let mut r = Self::start(port.runtime(), source, cfg)?;
        r.port = Some(port.clone());
        Ok(r)
    }

    /// The responder's part in soft resets so far (held, acknowledged,
    /// resumed; device-fatal errors heard).
    #[must_use]
    pub fn reset_stats(&self) -> ResetHoldStats {
        self.inner.reset.stats()
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> SaResponderStats {
        *lock(&self.inner.stats)
    }

    /// The subscriptions held, in the order they were made.
    #[must_use]
    pub fn subscribers(&self) -> Vec<Subscriber> {
        lock(&self.inner.subs).iter().cloned().collect()
    }

    /// The agent's handle.
    #[must_use]
    pub fn agent(&self) -> AgentRef {
        self.agent.handle()
    }

    /// Sends `notice` as SubnAdmReport to every subscription that selects
    /// it; returns how many Reports were sent. Each waits for its
    /// ReportResp ([`SaResponderStats::reports_acked`]). During a soft
    /// reset the notice waits and goes out when the reset ends (0 now).
    pub fn report(&self, notice: &Notice) -> usize {
        self.inner.report(notice)
    }
}

/// opensm's `match_inf_rec`: does subscription `i` select notice `n`?
#[must_use]
pub fn inform_selects(i: &InformInfo, n: &Notice) -> bool {
    if i.gid != [0u8; 16] {
        if i.gid != n.issuer_gid {
            return false;
        }
    } else if i.lid_range_begin != InformInfo::LID_RANGE_ALL
        && !(i.lid_range_begin..=i.lid_range_end).contains(&n.issuer_lid)
    {
        return false;
    }
    if (i.is_generic != 0) != n.is_generic {
        return false;
    }
    if i.trap_type != InformInfo::TYPE_ALL && i.trap_type != u16::from(n.notice_type) {
        return false;
    }
    if i.trap_number_or_device_id != InformInfo::TRAP_NUMBER_ALL
        && i.trap_number_or_device_id != n.trap_number_or_device_id
    {
        return false;
    }
    i.producer_type_or_vendor_id == InformInfo::PRODUCER_TYPE_ALL
        || i.producer_type_or_vendor_id == n.producer_type_or_vendor_id
}

/// Pads or cuts `rec` to `len` bytes.
fn fit(mut rec: Vec<u8>, len: usize) -> Vec<u8> {
    rec.resize(len, 0);
    rec
}

impl Inner {
    fn on_event(&self, ev: AgentEvent) {
        self.reset.on_event(&ev);
        match ev {
            AgentEvent::Received(msg) if self.reset.is_held() => self.defer(msg),
            AgentEvent::Received(msg) => self.on_request(&msg),
            AgentEvent::SendDone(c) => self.on_send_done(&c),
            AgentEvent::ResetEnd | AgentEvent::DeviceFatal => self.resume(),
            _ => {}
        }
    }

    /// A request received during a soft reset waits for its end.
    fn defer(&self, msg: Message) {
        let mut d = lock(&self.deferred);
        let mut st = lock(&self.stats);
        if d.requests.len() < DEFERRED_REQUESTS {
            d.requests.push_back(msg);
            st.deferred += 1;
        } else {
            st.deferred_dropped += 1;
        }
    }

    /// The soft reset is over: answers the requests and sends the
    /// Reports that waited for it.
    fn resume(&self) {
        let d = std::mem::take(&mut *lock(&self.deferred));
        for msg in &d.requests {
            self.on_request(msg);
        }
        for n in &d.reports {
            self.report(n);
        }
    }

    /// See [`SaResponder::report`].
    fn report(&self, notice: &Notice) -> usize {
        let Ok(data) = notice.to_vec() else {
            return 0;
        };
        // Counted as work begun before the look, so that a reset coming
        // in between waits for the Reports posted.
        let work = (!self.reset.is_held()).then(|| self.reset.enter(Duration::ZERO));
        if work.is_none() || self.reset.is_held() {
            drop(work);
            lock(&self.deferred).reports.push(notice.clone());
            lock(&self.stats).deferred += 1;
            return 0;
        }
        let Some(agent) = self.agent.get() else {
            return 0;
        };
        let targets: Vec<Subscriber> = lock(&self.subs)
            .iter()
            .filter(|s| inform_selects(&s.info, notice))
            .cloned()
            .collect();
        let mut sent = 0;
        for s in targets {
            let mad = super::build_request(Method::REPORT, AttributeId::NOTICE, 0, 0, &data);
            let dest = Address {
                lid: s.lid,
                qpn: s.info.qpn,
                qkey: GSI_QKEY,
                ..Address::default()
            };
            let req = SendRequest::new(mad, dest)
                .expect_response(self.cfg.report_timeout, self.cfg.report_retries)
                .cookie(REPORT_COOKIE);
            let ok = agent.send(req).is_ok();
            let mut st = lock(&self.stats);
            if ok {
                st.reports_sent += 1;
                sent += 1;
            } else {
                st.reports_failed += 1;
            }
        }
        sent
    }

    fn on_send_done(&self, c: &Completion) {
        let mut st = lock(&self.stats);
        if c.cookie == REPORT_COOKIE {
            if c.status == SendStatus::Success && c.response.is_some() {
                st.reports_acked += 1;
            } else {
                st.reports_failed += 1;
            }
        } else if c.status != SendStatus::Success {
            st.send_failures += 1;
        }
    }

    fn on_request(&self, msg: &Message) {
        let req = msg.bytes();
        if req.len() < SA_DATA_OFFSET || msg.mad().is_response() {
            return;
        }
        let view = SaMad::new_unchecked(req);
        let m = view.mad();
        let method = m.method();
        let query = RecordQuery {
            method,
            attr_id: m.attr_id(),
            attr_mod: m.attr_mod(),
            comp_mask: view.comp_mask(),
            template: view.data(),
            src: msg.src(),
        };
        let untrusted = query.attr_id == AttributeId::SA_PKEY_TABLE_RECORD
            && self.cfg.trusted_key.is_some_and(|k| view.sm_key() != k);
        let answer = if untrusted {
            Answer::status(MadStatus::SA_REQ_INVALID.0)
        } else {
            self.answer(&query)
        };
        self.count(answer.status, answer.data.len());
        let resp = build_response(req, method, &answer);
        let dest = Address {
            qkey: GSI_QKEY,
            ..*msg.src()
        };
        let sent = self
            .agent
            .get()
            .is_some_and(|a| a.send(SendRequest::new(resp, dest)).is_ok());
        if !sent {
            lock(&self.stats).send_failures += 1;
        }
    }

    fn count(&self, status: u16, data_len: usize) {
        let mut st = lock(&self.stats);
        st.requests += 1;
        match status {
            0 => st.ok += 1,
            0x0300 => st.no_records += 1,
            0x0400 => st.too_many += 1,
            _ => st.other_status += 1,
        }
        if data_len > MAD_LEN - SA_DATA_OFFSET {
            st.multi_segment += 1;
        }
    }

    fn answer(&self, q: &RecordQuery<'_>) -> Answer {
        if q.attr_id == AttributeId::CLASS_PORT_INFO {
            if q.method != Method::GET {
                return Answer::status(MadStatus::METHOD_ATTR_UNSUPPORTED.0);
            }
            return match self.cfg.class_port_info.to_vec() {
                Ok(data) => Answer {
                    data,
                    ..Answer::status(0)
                },
                Err(_) => Answer::status(MadStatus::SA_NO_RESOURCES.0),
            };
        }
        if q.attr_id == AttributeId::INFORM_INFO {
            return if q.method == Method::SET {
                self.inform_set(q)
            } else {
                Answer::status(MadStatus::METHOD_ATTR_UNSUPPORTED.0)
            };
        }
        if q.attr_id == AttributeId::SA_MULTIPATH_RECORD {
            return super::multipath::answer(self.source.as_ref(), self.cfg.gid_prefix, q);
        }
        if q.attr_id == AttributeId::SA_TRACE_RECORD {
            return super::trace::answer(self.source.as_ref(), self.cfg.gid_prefix, q);
        }
        let (Some(info), Some(layout)) = (record_info(q.attr_id), component_layout(q.attr_id))
        else {
            return Answer::status(MadStatus::METHOD_ATTR_UNSUPPORTED.0);
        };
        let single = |r: Result<Vec<u8>, u16>| match r {
            Ok(rec) => Answer {
                attr_offset: (info.padded_len / 8) as u16,
                data: fit(rec, info.padded_len),
                ..Answer::status(0)
            },
            Err(s) => Answer::status(s),
        };
        match q.method {
            Method::SET => return single(self.source.set(q)),
            Method::DELETE => return single(self.source.delete(q)),
            Method::GET | Method::GET_TABLE => {}
            _ => return Answer::status(MadStatus::METHOD_UNSUPPORTED.0),
        }
        let candidates = if q.attr_id == AttributeId::SA_INFORMINFO_RECORD {
            Some(self.inform_records())
        } else {
            self.source.records(q)
        };
        let Some(candidates) = candidates else {
            return Answer::status(MadStatus::METHOD_ATTR_UNSUPPORTED.0);
        };
        let template = q.template.get(..info.len).unwrap_or(q.template);
        // PortInfoRecord with AttributeModifier bit 31 (IBTA 1.2 errata,
        // as OpenSM and saquery -s use it): CapabilityMask / CapabilityMask2
        // match when every bit the template sets is set, not on equality.
        let mut comp_mask = q.comp_mask & !self.source.matched_components(q);
        let mut cap_masks: Vec<(usize, usize)> = Vec::new();
        if q.attr_id == AttributeId::SA_PORTINFO_RECORD && q.attr_mod & (1 << 31) != 0 {
            for comp in [
                PortInfoRecord::COMP_CAPABILITY_MASK,
                PortInfoRecord::COMP_CAPABILITY_MASK2,
            ] {
                if comp_mask & comp != 0 {
                    comp_mask &= !comp;
                    if let Some(r) = layout.range(comp.trailing_zeros() as usize) {
                        cap_masks.push(r);
                    }
                }
            }
        }
        let exact = self.source.exact(q);
        let matches: Vec<Vec<u8>> = candidates
            .into_iter()
            .filter(|c| {
                exact
                    || record_matches(layout, template, c, comp_mask)
                        && cap_masks.iter().all(|&(off, len)| {
                            let want = get_bits(template, off, len);
                            get_bits(c, off, len) & want == want
                        })
            })
            .collect();
        if q.method == Method::GET {
            return match matches.len() {
                0 => Answer::status(MadStatus::SA_NO_RECORDS.0),
                1 => single(Ok(matches.into_iter().next().unwrap_or_default())),
                _ => Answer::status(MadStatus::SA_TOO_MANY_RECORDS.0),
            };
        }
        let mut data = Vec::with_capacity(matches.len() * info.padded_len);
        for rec in matches {
            data.extend_from_slice(&fit(rec, info.padded_len));
        }
        Answer::table(data, info.padded_len)
    }

    fn inform_set(&self, q: &RecordQuery<'_>) -> Answer {
        let done = lock(&self.subs).set(q.src.lid, q.template);
        let info = match done {
            Ok(info) => info,
            Err(refused) => {
                let status = refused.status();
                if status == MadStatus::SA_NO_RESOURCES {
                    lock(&self.stats).subscriptions_refused += 1;
                }
                return Answer::status(status.0);
            }
        };
        match info.to_vec() {
            Ok(data) => Answer {
                attr_offset: (InformInfo::PADDED_LEN / 8) as u16,
                data,
                ..Answer::status(0)
            },
            Err(_) => Answer::status(MadStatus::SA_REQ_INVALID.0),
        }
    }

    /// The subscriptions as InformInfoRecords.
    fn inform_records(&self) -> Vec<Vec<u8>> {
        let subs: Vec<Subscriber> = lock(&self.subs).iter().cloned().collect();
        let nodes = self.source.records(&RecordQuery {
            method: Method::GET_TABLE,
            attr_id: NodeRecord::ATTR_ID,
            attr_mod: 0,
            comp_mask: 0,
            template: &[],
            src: &Address::default(),
        });
        let guid_of = |lid: u16| {
            nodes
                .iter()
                .flatten()
                .filter_map(|b| NodeRecord::parse(b).ok())
                .find(|n| n.lid == lid)
                .map(|n| n.node_info.port_guid)
        };
        subs.iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let mut gid = [0u8; 16];
                if let Some(g) = guid_of(s.lid) {
                    gid[..8].copy_from_slice(&self.cfg.gid_prefix.to_be_bytes());
                    gid[8..].copy_from_slice(&g.to_be_bytes());
                }
                InformInfoRecord {
                    subscriber_gid: gid,
                    enumeration: u16::try_from(i).unwrap_or(u16::MAX),
                    inform_info: s.info.clone(),
                    ..InformInfoRecord::default()
                }
                .to_vec()
                .ok()
            })
            .collect()
    }
}

/// The response to `req`: its header with the response method, status,
/// SM_Key 0, AttributeOffset, then the data; a GetTable answer is
/// RMPP-active.
fn build_response(req: &[u8], method: Method, a: &Answer) -> Vec<u8> {
    let mut resp = Vec::with_capacity(SA_DATA_OFFSET + a.data.len().max(MAD_LEN - SA_DATA_OFFSET));
    resp.extend_from_slice(&req[..SA_DATA_OFFSET]);
    resp.extend_from_slice(&a.data);
    if !a.table && resp.len() < MAD_LEN {
        resp.resize(MAD_LEN, 0);
    }
    if a.table && a.data.is_empty() {
        // An empty table is still one segment with its SA header.
        resp.truncate(SA_DATA_OFFSET);
    }
    let resp_method = match method {
        Method::SET => Method::GET,
        Method::GET_TRACE_TABLE => Method::GET_TABLE,
        m => m,
    };
    {
        let mut v = Mad::new_unchecked(&mut resp[..]);
        v.set_method(resp_method, true);
        v.set_status(MadStatus(a.status));
        if let Some(attr) = a.attr {
            v.set_attr_id(attr);
        }
    }
    resp[MAD_HEADER_LEN..RMPP_HEADER_END].fill(0);
    if a.table {
        let mut r = RmppView::new_unchecked(&mut resp[..]);
        r.set_version(RMPP_VERSION);
        r.set_rmpp_type(RmppType::DATA);
        r.set_flags(RMPP_FLAG_ACTIVE);
    }
    let mut sa = SaMad::new_unchecked(&mut resp[..]);
    sa.set_sm_key(0);
    sa.set_attr_offset(a.attr_offset);
    if !a.table {
        resp.truncate(MAD_LEN);
    }
    resp
}
