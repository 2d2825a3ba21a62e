//! SM negotiation (IBTA vol. 1, 14.4): the SMInfo states NotActive,
//! Discovering, Standby and Master; other SMs found by their ports'
//! IsSM capability bit; polling of the master while Standby; HANDOVER
//! and ACKNOWLEDGE in both directions; the DISABLE, STANDBY and
//! DISCOVER controls.
//!
//! The rules follow OpenSM 3.3 (`osm_sm_state_mgr.c`,
//! `osm_sminfo_rcv.c`, `osm_state_mgr.c`): the better SM is the one of
//! higher priority, then of lower port GUID; a Discovering SM that finds
//! a Master (of any priority) or a better Discovering/Standby SM stands
//! by and polls it; a Master that finds a better Standby SM hands over
//! to it; an SMInfo Set is taken only from a sender whose SMInfo says
//! Master (HANDOVER, DISABLE, STANDBY, DISCOVER) or Standby
//! (ACKNOWLEDGE), and only in the states where OpenSM takes it. One
//! difference: a Master that finds a better Master stands by at once,
//! where OpenSM stays Master and polls it, waiting for its HANDOVER.

use super::*;
use mad_core::wire::attr::trap;

/// Another SM found during a sweep.
#[derive(Debug, Clone)]
pub(super) struct RemoteSm {
    /// Its port GUID.
    pub guid: u64,
    /// The directed route to its port.
    pub path: DrPath,
    /// What it answered to SMInfo Get (None: no answer).
    pub info: Option<SmInfo>,
}

/// Negotiation state kept across sweeps.
#[derive(Debug, Default)]
pub(super) struct Negotiation {
    /// The SM polled while Standby: port GUID and route.
    pub polled: Option<(u64, DrPath)>,
    /// When the next poll is due.
    pub poll_at: Option<Instant>,
    /// Polls in a row that went unanswered.
    pub misses: u32,
    /// A poll is outstanding.
    pub poll_pending: bool,
    /// The next heavy sweep is the first as master after another SM
    /// ran the fabric (or the very first): set ClientReregister on CA
    /// ports, forget what SM-lite programmed before.
    pub first_master_sweep: bool,
    /// Routes to the other SMs' ports, as sweeps found them.
    pub sm_paths: FastMap<u64, DrPath>,
    /// A HANDOVER was sent to the SM with this port GUID and is not
    /// answered yet.
    pub handover_to: Option<u64>,
    /// SMInfo Get answers held while a HANDOVER is under way (the answer
    /// as made when the Get came, where it goes, and when it must go at
    /// the latest): answered once the HANDOVER is, with the state then.
    pub held: VecDeque<(Vec<u8>, Address, Instant)>,
    /// An SMInfo Get from an SM no sweep had found started a re-sweep
    /// (once, until a sweep finds another SM).
    pub unknown_get_swept: bool,
}

/// How long an SMInfo Get from another SM is held while a HANDOVER is
/// under way. A standby OpenSM whose poll is answered by a master of
/// lower priority sends it Trap 144; under libumad2sim on ibsim (which
/// drops TrapRepress, and never times out a request) that trap stays
/// outstanding for ever and OpenSM's sweeps as master never end. Held,
/// the poll is answered after the HANDOVER, by a Standby.
pub const HOLD_SM_INFO_GET: std::time::Duration = std::time::Duration::from_millis(100);

impl Negotiation {
    pub(super) fn new() -> Self {
        Self {
            first_master_sweep: true,
            ..Self::default()
        }
    }
}

/// True when the SM (priority `pa`, port GUID `ga`) is better than
/// (`pb`, `gb`): higher priority, or equal priority and lower GUID.
#[must_use]
pub(super) fn better(pa: u8, ga: u64, pb: u8, gb: u64) -> bool {
    pa > pb || (pa == pb && ga < gb)
}

impl SubnetManager {
    /// Moves to `to`, reporting the change.
    pub(super) fn set_state(&mut self, to: SmState) {
        if self.sm_state != to {
            let from = self.sm_state;
            self.sm_state = to;
            self.events.push_back(SmEvent::StateChanged { from, to });
        }
    }

    fn remote_is_better(&self, info: &SmInfo) -> bool {
        better(
            info.priority,
            info.guid,
            self.cfg.priority & 0x0F,
            self.port_guid,
        )
    }

    /// Our SMInfo with `state` (the payload of SM-lite's SMInfo
    /// requests; OpenSM reads the sender's state from it).
    fn sm_info_as(&self, state: SmState) -> [u8; SMP_DATA_LEN] {
        let mut info = self.sm_info();
        info.sm_state = state;
        let mut b = [0u8; SMP_DATA_LEN];
        // SMInfo is 21 bytes: it always fits.
        let _ = info.emit(&mut b);
        b
    }

    /// A port with IsSM was found during discovery: ask it for SMInfo.
    pub(super) fn found_sm_port(&mut self, guid: u64, path: &DrPath) {
        if guid == self.port_guid || self.sweep.others.iter().any(|r| r.guid == guid) {
            return;
        }
        self.neg.sm_paths.insert(guid, path.clone());
        self.neg.unknown_get_swept = false;
        self.sweep.others.push(RemoteSm {
            guid,
            path: path.clone(),
            info: None,
        });
        let data = self.sm_info_as(self.sm_state);
        let mut req = Request::set(
            AttributeId::SM_INFO,
            0,
            path.clone(),
            &data,
            Kind::GetSmInfo { guid },
        );
        req.method = Method::GET;
        self.ready.push_back(req);
    }

    /// The answer of another SM to SMInfo Get (discovery or poll).
    pub(super) fn got_sm_info(&mut self, kind_poll: bool, guid: u64, info: SmInfo) {
        if kind_poll {
            self.neg.poll_pending = false;
            let alive = info.sm_state == SmState::MASTER
                || (info.sm_state == SmState::STANDBY && self.remote_is_better(&info));
            if alive && self.sm_state == SmState::STANDBY {
                self.neg.misses = 0;
            }
            return;
        }
        self.events.push_back(SmEvent::RemoteSm {
            guid,
            priority: info.priority,
            state: info.sm_state,
        });
        if let Some(r) = self.sweep.others.iter_mut().find(|r| r.guid == guid) {
            r.info = Some(info);
        }
    }

    /// A discovery or poll SMInfo Get went unanswered.
    pub(super) fn sm_info_failed(&mut self, now: Instant, kind_poll: bool) {
        if !kind_poll {
            // An IsSM port whose SM does not answer takes no part.
            return;
        }
        self.neg.poll_pending = false;
        if self.sm_state != SmState::STANDBY {
            return;
        }
        self.neg.misses += 1;
        if self.neg.misses >= self.cfg.polling_retry_number.max(1) {
            self.master_lost(now);
        }
    }

    /// The polled master stopped answering: Discovering, then a sweep
    /// that keeps the LIDs the fabric holds.
    fn master_lost(&mut self, now: Instant) {
        let guid = self.neg.polled.take().map_or(0, |(g, _)| g);
        self.neg.poll_at = None;
        self.events.push_back(SmEvent::MasterLost { guid });
        self.set_state(SmState::DISCOVERING);
        self.take_over_fabric();
        self.resweep(now);
    }

    /// Another SM ran the fabric: what SM-lite programmed before is not
    /// what the switches hold, and the ports' own LIDs win over the
    /// book (so nothing is renumbered when the LIDs are kept).
    fn take_over_fabric(&mut self) {
        self.neg.first_master_sweep = true;
        self.programmed.clear();
        self.mcast = mcast::McState::default();
        if self.cfg.honor_existing_lids {
            self.book = LidBook::default();
            self.reserve_guid2lid();
        }
    }

    /// Trap 144 ("local changes": here, an SM came up at this port) to
    /// the master SM's LID, as the sweep read it from this port.
    fn trap_144(&mut self) {
        let sub = &self.sweep.subnet;
        let Some(p) = sub.local().and_then(|(i, p)| sub.nodes()[i].port(p)) else {
            return;
        };
        let (lid, sm_lid, cap) = (p.info.lid, p.info.master_sm_lid, p.info.capability_mask);
        // (A port still naming this SM as master, after a handover:
        // no trap to itself.)
        if lid == 0 || sm_lid == 0 || sm_lid == lid {
            return;
        }
        let producer = match sub.local().map(|(i, _)| sub.nodes()[i].is_switch()) {
            Some(true) => Notice::PRODUCER_SWITCH,
            _ => Notice::PRODUCER_CA,
        };
        let mut n = Notice::generic(Notice::TYPE_INFO, producer, trap::LOCAL_CHANGES);
        n.issuer_lid = lid;
        // ntc_144: reserved 16 bits, LIDADDR, reserved byte,
        // LocalChanges byte, CapabilityMask, change flags, CapabilityMask2.
        n.data_details[2..4].copy_from_slice(&lid.to_be_bytes());
        n.data_details[6..10].copy_from_slice(&cap.to_be_bytes());
        let Ok(b) = n.to_vec() else { return };
        let mut mad = vec![0u8; MAD_LEN];
        self.next_tid = self.next_tid.wrapping_add(1);
        let tid = TID_MARK | u64::from(self.next_tid);
        let mut smp = Smp::new_unchecked(&mut mad[..]);
        smp.mad_mut().set_request(
            MgmtClass::SUBN_LID_ROUTED,
            1,
            Method::TRAP,
            AttributeId::NOTICE,
            0,
        );
        smp.mad_mut().set_tid(tid);
        smp.set_m_key(self.cfg.m_key);
        // In an SMP the Notice is cut to the 64 data bytes.
        mad[SMP_DATA_OFFSET..SMP_DATA_OFFSET + SMP_DATA_LEN].copy_from_slice(&b[..SMP_DATA_LEN]);
        self.responses.push_back((mad, Address::smi(sm_lid)));
    }

    /// Stand by, polling the SM at `guid` along `path`.
    pub(super) fn enter_standby(&mut self, now: Instant, guid: u64, path: DrPath) {
        self.set_state(SmState::STANDBY);
        self.neg.polled = Some((guid, path));
        self.neg.misses = 0;
        self.neg.poll_at = Some(now);
        self.light_at = None;
        self.subnet_up = false;
    }

    /// A polling period passed: send the next poll.
    pub(super) fn poll_tick(&mut self, now: Instant) {
        self.neg.poll_at = None;
        if self.sm_state != SmState::STANDBY {
            return;
        }
        let Some((guid, path)) = self.neg.polled.clone() else {
            return;
        };
        self.neg.poll_at = Some(now + self.cfg.sminfo_polling_timeout);
        if self.neg.poll_pending {
            return;
        }
        self.neg.poll_pending = true;
        let data = self.sm_info_as(SmState::STANDBY);
        let mut req = Request::set(
            AttributeId::SM_INFO,
            0,
            path,
            &data,
            Kind::PollSmInfo { guid },
        );
        req.method = Method::GET;
        self.ready.push_back(req);
    }

    /// Sends SMInfo Set `control` to the SM at `path`, with our SMInfo
    /// in state `state` (OpenSM checks the sender's state).
    fn send_control(&mut self, guid: u64, path: DrPath, control: u32, state: SmState) {
        let data = self.sm_info_as(state);
        self.ready.push_back(Request::set(
            AttributeId::SM_INFO,
            control,
            path,
            &data,
            Kind::SetSmInfo { guid, control },
        ));
    }

    /// After discovery: stand by (false) or go on configuring (true).
    pub(super) fn negotiate_after_discovery(&mut self, now: Instant) -> bool {
        let go_on = self.negotiate(now);
        if self.neg.handover_to.is_none() {
            // No HANDOVER under way: the SMInfo Gets held for the
            // negotiation are answered.
            self.release_held(None);
        }
        go_on
    }

    fn negotiate(&mut self, now: Instant) -> bool {
        let mut masters: Vec<(SmInfo, DrPath)> = Vec::new();
        let mut better_sms: Vec<(SmInfo, DrPath)> = Vec::new();
        for r in &self.sweep.others {
            let Some(info) = r.info.clone() else { continue };
            if info.sm_state == SmState::MASTER {
                masters.push((info, r.path.clone()));
            } else if matches!(info.sm_state, SmState::DISCOVERING | SmState::STANDBY)
                && self.remote_is_better(&info)
            {
                better_sms.push((info, r.path.clone()));
            }
        }
        let best = |v: &mut Vec<(SmInfo, DrPath)>| {
            v.sort_by(|(a, _), (b, _)| b.priority.cmp(&a.priority).then(a.guid.cmp(&b.guid)));
            v.first().cloned()
        };
        let master = best(&mut masters);
        if self.sm_state == SmState::MASTER {
            if let Some((info, path)) = master {
                if self.remote_is_better(&info) {
                    self.enter_standby(now, info.guid, path);
                    return false;
                }
                // Two masters and we are the better: the other steps down.
                self.send_control(info.guid, path, SmInfo::ATTR_MOD_HANDOVER, SmState::MASTER);
            }
            // A better SM standing by (or still discovering) gets the
            // fabric at once: nothing more is configured, so that the
            // new master finds it as it was.
            if let Some((info, path)) = best(&mut better_sms) {
                self.send_handover(info.guid, path);
                return false;
            }
            return true;
        }
        if let Some((info, path)) = master.or_else(|| best(&mut better_sms)) {
            self.enter_standby(now, info.guid, path);
            // Tell the master about us (OpenSM does the same): it sweeps
            // and finds this SM, and hands over if this one is better.
            self.trap_144();
            return false;
        }
        if self.sm_state == SmState::STANDBY {
            // Standing by with no master left: become one.
            self.neg.polled = None;
            self.neg.poll_at = None;
            self.set_state(SmState::DISCOVERING);
            self.take_over_fabric();
        }
        true
    }

    /// At the end of a sweep as master: a better SM standing by gets
    /// the fabric (SMInfo Set HANDOVER; SM-lite stands by once it is
    /// answered).
    pub(super) fn handover_if_better(&mut self, others: &[RemoteSm]) {
        let mut cands: Vec<(SmInfo, DrPath)> = others
            .iter()
            .filter_map(|r| r.info.clone().map(|i| (i, r.path.clone())))
            .filter(|(i, _)| {
                matches!(i.sm_state, SmState::STANDBY | SmState::DISCOVERING)
                    && self.remote_is_better(i)
            })
            .collect();
        cands.sort_by(|(a, _), (b, _)| b.priority.cmp(&a.priority).then(a.guid.cmp(&b.guid)));
        if let Some((info, path)) = cands.into_iter().next() {
            self.send_handover(info.guid, path);
        }
    }

    /// SMInfo Set HANDOVER to the SM at `guid`: SMInfo Gets from other
    /// SMs are held until it is answered ([`HOLD_SM_INFO_GET`]).
    fn send_handover(&mut self, guid: u64, path: DrPath) {
        self.events.push_back(SmEvent::HandoverSent { guid });
        self.neg.handover_to = Some(guid);
        self.send_control(guid, path, SmInfo::ATTR_MOD_HANDOVER, SmState::MASTER);
    }

    /// The HANDOVER under way was answered (or failed): the SMInfo Gets
    /// held meanwhile are answered with the state now.
    fn handover_done(&mut self) {
        self.neg.handover_to = None;
        self.release_held(None);
    }

    /// Answers the held SMInfo Gets (those due by `due`; all with None)
    /// with SMInfo as it is now.
    pub(super) fn release_held(&mut self, due: Option<Instant>) {
        let mut keep = VecDeque::new();
        while let Some((mut rep, to, at)) = self.neg.held.pop_front() {
            if due.is_some_and(|d| at > d) {
                keep.push_back((rep, to, at));
                continue;
            }
            if let Ok(b) = self.sm_info().to_vec() {
                let d = &mut rep[SMP_DATA_OFFSET..SMP_DATA_OFFSET + SMP_DATA_LEN];
                // The SM_Key (bytes 8-15) stays as the Get was answered
                // when it came (hidden from a requester without it).
                let mut b = b;
                b[8..16].copy_from_slice(&d[8..16]);
                d.fill(0);
                d[..b.len()].copy_from_slice(&b);
            }
            self.responses.push_back((rep, to));
        }
        self.neg.held = keep;
    }

    /// When the next held SMInfo Get must be answered.
    pub(super) fn held_deadline(&self) -> Option<Instant> {
        self.neg.held.iter().map(|(_, _, at)| *at).min()
    }

    /// An SMInfo Get (answer `rep` to `to`) came from another SM: held
    /// (true) while a HANDOVER is under way or a Master discovers, else
    /// answered at once. A Master that has not found another SM sweeps:
    /// an SM is starting up (OpenSM asks during its discovery), and it
    /// may be better.
    pub(super) fn sm_info_get(
        &mut self,
        now: Instant,
        rep: &[u8],
        to: Address,
        sender: Option<&SmInfo>,
        directed: bool,
    ) -> bool {
        if self.neg.handover_to.is_some() {
            self.neg
                .held
                .push_back((rep.to_vec(), to, now + HOLD_SM_INFO_GET));
            return true;
        }
        let known = match sender.map(|s| s.guid).filter(|&g| g != 0) {
            Some(g) => g == self.port_guid || self.neg.sm_paths.contains_key(&g),
            None => !self.neg.sm_paths.is_empty(),
        };
        // (An SM sweeping asks by directed route; a diagnostic tool such
        // as sminfo mostly by LID.)
        if directed && !known && !self.neg.unknown_get_swept && self.sm_state == SmState::MASTER {
            self.neg.unknown_get_swept = true;
            self.resweep(now);
        }
        if self.sm_state != SmState::MASTER || self.phase != Phase::Discover {
            return false;
        }
        // A Master discovering: what it finds may make it hand over, so
        // the Get waits for that (up to HOLD_SM_INFO_GET). Its own SMInfo
        // Gets still unanswered go again at once: the other SM answers
        // now that it asks (OpenSM ignores them until it has found its
        // own port).
        let unanswered: Vec<u64> = self
            .outstanding
            .iter()
            .filter(|(_, o)| matches!(o.req.kind, Kind::GetSmInfo { .. }))
            .map(|(t, _)| *t)
            .collect();
        for tid in unanswered {
            if let Some(o) = self.outstanding.get_mut(&tid) {
                if o.deadline.take().is_some() {
                    self.resend.push_back(tid);
                }
            }
        }
        self.neg
            .held
            .push_back((rep.to_vec(), to, now + HOLD_SM_INFO_GET));
        true
    }

    /// The HANDOVER to `guid` failed (no answer, or refused): SM-lite
    /// stays Master and sweeps again later.
    pub(super) fn handover_failed(&mut self, now: Instant, control: u32) {
        if control != SmInfo::ATTR_MOD_HANDOVER || self.neg.handover_to.is_none() {
            return;
        }
        self.handover_done();
        if self.resweep_at.is_none() {
            self.resweep_at = self.cfg.error_resweep_delay.map(|d| now + d);
        }
    }

    /// The answer to an SMInfo Set SM-lite sent.
    pub(super) fn control_answered(
        &mut self,
        now: Instant,
        guid: u64,
        control: u32,
        path: &DrPath,
    ) {
        if control == SmInfo::ATTR_MOD_HANDOVER && self.sm_state == SmState::MASTER {
            self.enter_standby(now, guid, path.clone());
        }
        if control == SmInfo::ATTR_MOD_HANDOVER {
            self.handover_done();
        }
    }

    /// SMInfo Set received from another SM: returns the MAD status of
    /// the answer (0 taken; INVALID_FIELD refused, as OpenSM answers an
    /// illegal control).
    pub(super) fn sm_info_set(
        &mut self,
        now: Instant,
        control: u32,
        sender: &SmInfo,
        src_path: Option<DrPath>,
    ) -> u16 {
        let refused = MadStatus::INVALID_FIELD.0;
        let want_state = if control == SmInfo::ATTR_MOD_ACKNOWLEDGE {
            SmState::STANDBY
        } else if (SmInfo::ATTR_MOD_HANDOVER..=SmInfo::ATTR_MOD_DISCOVER).contains(&control) {
            SmState::MASTER
        } else {
            return refused;
        };
        if sender.sm_state != want_state {
            return refused;
        }
        let st = self.sm_state;
        let legal = match st {
            SmState::DISCOVERING => control == SmInfo::ATTR_MOD_HANDOVER,
            SmState::STANDBY => control != SmInfo::ATTR_MOD_STANDBY,
            SmState::NOT_ACTIVE => control == SmInfo::ATTR_MOD_STANDBY,
            SmState::MASTER => control == SmInfo::ATTR_MOD_HANDOVER,
            _ => false,
        };
        if !legal || !self.started {
            return refused;
        }
        // The route back to the sender: the polled master's, or the one
        // the request came along.
        let path = self
            .neg
            .polled
            .as_ref()
            .filter(|(g, _)| *g == sender.guid)
            .map(|(_, p)| p.clone())
            .or(src_path);
        match (st, control) {
            (SmState::STANDBY, SmInfo::ATTR_MOD_HANDOVER) => {
                // Acknowledge while still Standby (OpenSM takes an
                // ACKNOWLEDGE only from a Standby sender), then master.
                if let Some(p) = path {
                    self.send_control(
                        sender.guid,
                        p,
                        SmInfo::ATTR_MOD_ACKNOWLEDGE,
                        SmState::STANDBY,
                    );
                }
                self.neg.polled = None;
                self.neg.poll_at = None;
                self.take_over_fabric();
                self.set_state(SmState::MASTER);
                self.resweep(now);
            }
            (SmState::STANDBY, SmInfo::ATTR_MOD_DISCOVER) => {
                self.neg.polled = None;
                self.neg.poll_at = None;
                self.set_state(SmState::DISCOVERING);
                self.take_over_fabric();
                self.resweep(now);
            }
            (SmState::STANDBY, SmInfo::ATTR_MOD_DISABLE) => {
                self.neg.polled = None;
                self.neg.poll_at = None;
                self.set_state(SmState::NOT_ACTIVE);
            }
            (SmState::NOT_ACTIVE, SmInfo::ATTR_MOD_STANDBY) => {
                if let Some(p) = path {
                    self.enter_standby(now, sender.guid, p);
                } else {
                    self.set_state(SmState::STANDBY);
                }
            }
            (SmState::MASTER | SmState::DISCOVERING, SmInfo::ATTR_MOD_HANDOVER) => {
                // Already (becoming) master: sweep the fabric again in
                // full, the other SM may have changed it.
                self.take_over_fabric();
                self.resweep(now);
            }
            // ACKNOWLEDGE while Standby: nothing more to do.
            _ => {}
        }
        0
    }
}
