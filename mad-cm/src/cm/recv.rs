//! Received CM MADs, one handler per message.

use std::time::Instant;

use mad_core::transport::{Address, GSI_QKEY};
use mad_core::wire::attr::ClassPortInfo;
use mad_core::wire::cm::{
    timeout_duration, ApStatus, CmApr, CmDrep, CmDreq, CmMessage, CmMra, CmRej, CmRep, CmReq,
    CmRtu, CmSidrRep, CmSidrReq, MsgRef, RejectReason, SidrStatus, TransportType, CM_CLASS_VERSION,
};
use mad_core::wire::{Mad, MadHeader, Method, Repr};

use super::{msgs, Cm};
use crate::conn::{peer_key, Conn, Side, State};
use crate::types::{CmError, CmEvent, CmPath, ConnId, ConnInfo, DisconnectCause, Transmit};

impl Cm {
    /// Handles one CM MAD received from `src`.
    ///
    /// # Errors
    /// [`CmError::Wire`] for a MAD that is not a well-formed CM message of
    /// class version 2 (counted in [`CmStats::malformed`](super::CmStats)).
    /// Everything else (unknown connections, duplicates, stale REQs) is
    /// answered as IBTA and the kernel do, and is not an error.
    pub fn handle_recv(&mut self, now: Instant, src: &Address, mad: &[u8]) -> Result<(), CmError> {
        let parsed = MadHeader::parse(mad).and_then(|h| CmMessage::parse(mad).map(|m| (h, m)));
        let (hdr, msg) = match parsed {
            Ok(v) => v,
            Err(e) => {
                self.stats.malformed += 1;
                return Err(e.into());
            }
        };
        if hdr.class_version != CM_CLASS_VERSION {
            self.stats.malformed += 1;
            return Err(CmError::Wire(mad_core::wire::Error::Invalid {
                what: "CmMessage",
                field: "class_version",
                value: u64::from(hdr.class_version),
                reason: "madstack speaks CM class version 2",
            }));
        }
        let reply_to = Address {
            qkey: GSI_QKEY,
            ..*src
        };
        match msg {
            CmMessage::Req(m) => self.on_req(now, &reply_to, &m),
            CmMessage::Mra(m) => self.on_mra(now, &m),
            CmMessage::Rej(m) => self.on_rej(now, &m),
            CmMessage::Rep(m) => self.on_rep(now, &reply_to, &m),
            CmMessage::Rtu(m) => self.on_rtu(&m),
            CmMessage::Dreq(m) => self.on_dreq(now, &reply_to, &m),
            CmMessage::Drep(m) => self.on_drep(now, &m),
            CmMessage::Lap(m) => {
                let apr = CmApr {
                    local_comm_id: m.remote_comm_id,
                    remote_comm_id: m.local_comm_id,
                    ap_status: ApStatus::UNSUPPORTED,
                    ..CmApr::default()
                };
                self.reply(&reply_to, CmMessage::Apr(Box::new(apr)))
            }
            CmMessage::SidrReq(m) => self.on_sidr_req(&reply_to, &m),
            CmMessage::ClassPortInfo(_) if hdr.method == Method::GET && !hdr.is_response() => {
                self.on_class_port_info(&reply_to, &hdr)
            }
            CmMessage::ClassPortInfo(_) | CmMessage::SidrRep(_) | CmMessage::Apr(_) => Ok(()),
        }
    }

    /// Sends a reply that no state remembers.
    fn reply(&mut self, to: &Address, msg: CmMessage) -> Result<(), CmError> {
        self.send(*to, &msg).map(|_| ())
    }

    /// Resends connection `id`'s last reply (an MRA, REJ, RTU or DREP).
    fn resend_last(&mut self, id: ConnId) {
        self.stats.duplicates += 1;
        if let Some(c) = self.conns.get(&id) {
            if let Some(mad) = c.last_reply {
                self.transmits.push_back(Transmit { to: c.peer, mad });
            }
        }
    }

    fn reject_unknown(
        &mut self,
        to: &Address,
        remote: u32,
        of: MsgRef,
        reason: RejectReason,
    ) -> Result<(), CmError> {
        self.reply(to, msgs::rej(0, remote, of, reason, &[], &[])?)
    }

    fn on_req(&mut self, now: Instant, src: &Address, req: &CmReq) -> Result<(), CmError> {
        if req.local_comm_id == 0 {
            // 0 is no connection: a REQ naming none makes no state (every
            // answer to it would be addressed to nobody).
            self.stats.refused += 1;
            return self.reject_unknown(src, 0, MsgRef::REQ, RejectReason::INVALID_COMM_ID);
        }
        if let Some(&id) = self.by_remote.get(&(req.local_ca_guid, req.local_comm_id)) {
            return self.on_repeated_req(now, id);
        }
        if let Some(&old) = self.by_qpn.get(&(req.local_ca_guid, req.local_qpn)) {
            // The QP is still in use (or in timewait) for another
            // connection: stale. The kernel also disconnects the old one.
            self.stats.stale += 1;
            self.reject_unknown(
                src,
                req.local_comm_id,
                MsgRef::REQ,
                RejectReason::STALE_CONN,
            )?;
            if self.state(old) == Some(State::Established) {
                self.disconnect(now, old, &[])?;
            }
            return Ok(());
        }
        let Some(&listener) = self.listeners.get(&req.service_id) else {
            return self.reject_unknown(
                src,
                req.local_comm_id,
                MsgRef::REQ,
                RejectReason::INVALID_SERVICE_ID,
            );
        };
        if !matches!(req.transport_type, TransportType::RC | TransportType::UC) {
            return self.reject_unknown(
                src,
                req.local_comm_id,
                MsgRef::REQ,
                RejectReason::INVALID_TRANSPORT_TYPE,
            );
        }
        let peer = peer_key(src);
        let peer_full = self.per_peer.get(&peer).copied().unwrap_or(0) >= self.cfg.max_per_peer;
        if peer_full || self.check_room().is_err() {
            self.stats.refused += 1;
            return self.reject_unknown(
                src,
                req.local_comm_id,
                MsgRef::REQ,
                RejectReason::NO_RESOURCES,
            );
        }
        let id = self.alloc_id();
        let path = CmPath {
            local_lid: req.primary_local_lid,
            remote_lid: req.primary_remote_lid,
            local_gid: req.primary_local_gid,
            remote_gid: req.primary_remote_gid,
            flow_label: req.primary_flow_label,
            rate: req.primary_packet_rate,
            traffic_class: req.primary_traffic_class,
            hop_limit: req.primary_hop_limit,
            sl: req.primary_sl,
            subnet_local: req.primary_subnet_local,
            packet_life_time: req.primary_local_ack_timeout.saturating_sub(1),
            pkey: req.pkey,
            mtu: req.path_mtu,
        }
        .reversed();
        let info = ConnInfo {
            service_id: req.service_id,
            remote_comm_id: req.local_comm_id,
            remote_ca_guid: req.local_ca_guid,
            remote_qpn: req.local_qpn,
            remote_psn: req.starting_psn,
            responder_resources: req.responder_resources,
            initiator_depth: req.initiator_depth,
            retry_count: req.retry_count,
            rnr_retry_count: req.rnr_retry_count,
            path,
            ack_timeout: req.primary_local_ack_timeout,
            private_data: req.private_data.to_vec(),
            ..ConnInfo::default()
        };
        let conn = Conn {
            id,
            side: Side::Passive,
            state: State::ReqRcvd,
            peer: *src,
            info: info.clone(),
            retry: None,
            last_reply: None,
            deadline: None,
            answer_wait: path.packet_life() * 2 + timeout_duration(req.local_cm_response_timeout),
            max_retries: req.max_cm_retries,
            timewait: timeout_duration(req.primary_local_ack_timeout),
            auto_rtu: false,
            // The peer sends its REQ max_cm_retries + 1 times, waiting
            // for this side's answer each time; one wait more, so that
            // its REJ(Timeout) normally comes first.
            user_wait: (path.packet_life() * 2 + timeout_duration(req.remote_cm_response_timeout))
                * (u32::from(req.max_cm_retries) + 2),
            mra_wait: None,
            remote_key: None,
            qpn_key: None,
            peer_key: Some(peer),
        };
        self.conns.insert(id, conn);
        *self.per_peer.entry(peer).or_default() += 1;
        self.index_remote(id, (req.local_ca_guid, req.local_comm_id));
        self.index_qpn(id, (req.local_ca_guid, req.local_qpn));
        self.arm_user_wait(now, id);
        self.events
            .push_back((id, CmEvent::ConnectRequest { listener, info }));
        Ok(())
    }

    /// A REQ repeated for connection `id` (the same peer CA and
    /// Communication ID), answered as the kernel's `cm_dup_req_handler`
    /// does: the MRA again (the peer is alive: its wait starts over), the
    /// REJ again, REJ(StaleConnection) in timewait; otherwise dropped.
    fn on_repeated_req(&mut self, now: Instant, id: ConnId) -> Result<(), CmError> {
        let Some(c) = self.conns.get(&id) else {
            return Ok(());
        };
        match c.state {
            State::MraReqSent => {
                self.resend_last(id);
                self.arm_user_wait(now, id);
            }
            State::RejSent => self.resend_last(id),
            State::Timewait => {
                self.stats.stale += 1;
                let (remote, to) = (c.info.remote_comm_id, c.peer);
                let rej = msgs::rej(
                    id.0,
                    remote,
                    MsgRef::OTHER,
                    RejectReason::STALE_CONN,
                    &[],
                    &[],
                )?;
                self.send(to, &rej)?;
            }
            _ => self.stats.duplicates += 1,
        }
        Ok(())
    }

    /// The connection a message names: ours is its RemoteCommID, and the
    /// sender's LocalCommID must be the remote ID the connection knows,
    /// exactly (0 only while it knows none), as the kernel's
    /// `cm_acquire_id` matches both.
    fn addressed(&mut self, ours: u32, theirs: u32) -> Option<ConnId> {
        let id = ConnId(ours);
        match self.conns.get(&id) {
            Some(c) if id != ConnId::NONE && c.info.remote_comm_id == theirs => Some(id),
            _ => {
                self.stats.unknown += 1;
                None
            }
        }
    }

    /// The active connection a message answering its REQ names (an MRA or
    /// REJ of the REQ): ours is its RemoteCommID and the connection knows
    /// no remote ID yet (the kernel's `cm_acquire_id(id, 0)`).
    fn addressed_req(&mut self, ours: u32) -> Option<ConnId> {
        self.addressed(ours, 0)
    }

    fn on_mra(&mut self, now: Instant, m: &CmMra) -> Result<(), CmError> {
        let found = if m.message_mraed == MsgRef::REQ {
            self.addressed_req(m.remote_comm_id)
        } else {
            self.addressed(m.remote_comm_id, m.local_comm_id)
        };
        let Some(id) = found else {
            return Ok(());
        };
        let Some(c) = self.conns.get_mut(&id) else {
            return Ok(());
        };
        let next = match (c.state, m.message_mraed) {
            (State::ReqSent, MsgRef::REQ) => State::MraReqRcvd,
            (State::RepSent, MsgRef::REP) => State::MraRepRcvd,
            _ => return Ok(()),
        };
        c.state = next;
        let wait = timeout_duration(m.service_timeout) + c.info.path.packet_life();
        self.arm(id, Some(now + wait));
        Ok(())
    }

    /// The connection a REJ names, found as the kernel's
    /// `cm_acquire_rejected_id` finds it: a REJ(Timeout) by the sender's
    /// CA GUID (its ARI) and Communication ID; a REJ of our REQ by our ID
    /// while we know no remote one; any other by both IDs.
    fn rejected(&mut self, m: &CmRej) -> Option<ConnId> {
        if m.reason == RejectReason::TIMEOUT {
            let mut guid = [0u8; 8];
            guid.copy_from_slice(&m.ari[..8]);
            let found = self
                .by_remote
                .get(&(u64::from_be_bytes(guid), m.local_comm_id))
                .copied();
            if found.is_none() {
                self.stats.unknown += 1;
            }
            found
        } else if m.message_rejected == MsgRef::REQ {
            self.addressed_req(m.remote_comm_id)
        } else {
            self.addressed(m.remote_comm_id, m.local_comm_id)
        }
    }

    /// A REJ, handled in every state the kernel's `cm_rej_handler`
    /// handles it in.
    fn on_rej(&mut self, now: Instant, m: &CmRej) -> Result<(), CmError> {
        let Some(id) = self.rejected(m) else {
            return Ok(());
        };
        let Some(c) = self.conns.get(&id) else {
            return Ok(());
        };
        let ari_len = usize::from(m.reject_info_length).min(m.ari.len());
        let event = CmEvent::Rejected {
            reason: m.reason,
            ari: m.ari[..ari_len].to_vec(),
            private_data: m.private_data.to_vec(),
        };
        match c.state {
            State::ReqSent
            | State::MraReqRcvd
            | State::RepSent
            | State::MraRepRcvd
            | State::ReqRcvd
            | State::MraReqSent => {
                self.events.push_back((id, event));
                if m.reason == RejectReason::STALE_CONN {
                    self.enter_timewait(now, id);
                } else {
                    self.remove(id);
                }
            }
            State::RepRcvd | State::MraRepSent => {
                self.events.push_back((id, event));
                self.enter_timewait(now, id);
            }
            State::Established | State::DreqSent => {
                self.events.push_back((
                    id,
                    CmEvent::Disconnected {
                        private_data: m.private_data.to_vec(),
                        cause: DisconnectCause::RejReceived,
                    },
                ));
                self.enter_timewait(now, id);
            }
            _ => {}
        }
        Ok(())
    }

    fn on_rep(&mut self, now: Instant, src: &Address, m: &CmRep) -> Result<(), CmError> {
        let Some(c) = self
            .conns
            .get(&ConnId(m.remote_comm_id))
            .filter(|c| c.side == Side::Active && m.local_comm_id != 0)
        else {
            self.stats.unknown += 1;
            return self.reject_unknown(
                src,
                m.local_comm_id,
                MsgRef::REP,
                RejectReason::INVALID_COMM_ID,
            );
        };
        let id = c.id;
        match c.state {
            State::ReqSent | State::MraReqRcvd if c.info.remote_comm_id == 0 => {}
            State::Established | State::MraRepSent if c.info.remote_comm_id == m.local_comm_id => {
                self.resend_last(id);
                return Ok(());
            }
            _ => {
                self.stats.duplicates += 1;
                return Ok(());
            }
        }
        let qkey = (m.local_ca_guid, m.local_qpn);
        if self.by_qpn.get(&qkey).is_some_and(|other| *other != id) {
            self.stats.stale += 1;
            return self.reject_unknown(
                src,
                m.local_comm_id,
                MsgRef::REP,
                RejectReason::STALE_CONN,
            );
        }
        let Some(c) = self.conns.get_mut(&id) else {
            return Ok(());
        };
        c.info.remote_comm_id = m.local_comm_id;
        c.info.remote_ca_guid = m.local_ca_guid;
        c.info.remote_qpn = m.local_qpn;
        c.info.remote_psn = m.starting_psn;
        c.info.responder_resources = m.responder_resources;
        c.info.initiator_depth = m.initiator_depth;
        c.info.rnr_retry_count = m.rnr_retry_count;
        c.info.private_data = m.private_data.to_vec();
        c.retry = None;
        let (auto, info) = (c.auto_rtu, c.info.clone());
        self.index_remote(id, (m.local_ca_guid, m.local_comm_id));
        self.index_qpn(id, qkey);
        if auto {
            let rtu = msgs::rtu(id.0, m.local_comm_id, &[])?;
            self.conn_reply(id, &rtu)?;
            self.established(id);
        } else {
            self.conn_mut(id)?.state = State::RepRcvd;
            self.arm_user_wait(now, id);
            self.events
                .push_back((id, CmEvent::ConnectResponse { info }));
        }
        Ok(())
    }

    fn on_rtu(&mut self, m: &CmRtu) -> Result<(), CmError> {
        let Some(id) = self.addressed(m.remote_comm_id, m.local_comm_id) else {
            return Ok(());
        };
        if matches!(self.state(id), Some(State::RepSent | State::MraRepRcvd)) {
            self.established(id);
        }
        Ok(())
    }

    fn on_dreq(&mut self, now: Instant, src: &Address, m: &CmDreq) -> Result<(), CmError> {
        let Some(id) = self.addressed(m.remote_comm_id, m.local_comm_id) else {
            // The kernel answers a DREQ for a connection it does not know.
            return self.reply(src, msgs::drep(m.remote_comm_id, m.local_comm_id, &[])?);
        };
        let Some(c) = self.conns.get(&id) else {
            return Ok(());
        };
        if c.info.local_qpn != m.remote_qpn_eecn {
            // Not our QP: the kernel drops it too.
            self.stats.unknown += 1;
            return Ok(());
        }
        let event = match c.state {
            State::Established | State::DreqSent => CmEvent::Disconnected {
                private_data: m.private_data.to_vec(),
                cause: if c.state == State::DreqSent {
                    DisconnectCause::DreqCrossed
                } else {
                    DisconnectCause::DreqReceived
                },
            },
            State::RepSent | State::MraRepRcvd | State::RepRcvd | State::MraRepSent => {
                CmEvent::ConnectError {
                    why: "the peer disconnected before the connection was established",
                }
            }
            State::Timewait => {
                self.stats.duplicates += 1;
                let (remote, to) = (c.info.remote_comm_id, c.peer);
                return self.reply(&to, msgs::drep(id.0, remote, &[])?);
            }
            _ => return Ok(()),
        };
        let (remote, to) = (c.info.remote_comm_id, c.peer);
        self.send(to, &msgs::drep(id.0, remote, &[])?)?;
        self.events.push_back((id, event));
        self.enter_timewait(now, id);
        Ok(())
    }

    fn on_drep(&mut self, now: Instant, m: &CmDrep) -> Result<(), CmError> {
        let Some(id) = self.addressed(m.remote_comm_id, m.local_comm_id) else {
            return Ok(());
        };
        if self.state(id) == Some(State::DreqSent) {
            let private_data = m.private_data.to_vec();
            self.events.push_back((
                id,
                CmEvent::Disconnected {
                    private_data,
                    cause: DisconnectCause::DrepReceived,
                },
            ));
            self.enter_timewait(now, id);
        }
        Ok(())
    }

    /// madstack resolves no service IDs to UD QPs: every SIDR_REQ is
    /// answered "service ID not supported".
    fn on_sidr_req(&mut self, src: &Address, m: &CmSidrReq) -> Result<(), CmError> {
        let rep = CmSidrRep {
            request_id: m.request_id,
            status: SidrStatus::SERVICE_NOT_SUPPORTED,
            service_id: m.service_id,
            ..CmSidrRep::default()
        };
        self.reply(src, CmMessage::SidrRep(Box::new(rep)))
    }

    /// Get(ClassPortInfo): this CM's response time, same TID.
    fn on_class_port_info(&mut self, src: &Address, hdr: &MadHeader) -> Result<(), CmError> {
        let cpi = ClassPortInfo {
            base_version: 1,
            class_version: CM_CLASS_VERSION,
            resp_time_value: self.cfg.response_timeout.min(31),
            ..ClassPortInfo::default()
        };
        let mut mad = CmMessage::ClassPortInfo(Box::new(cpi)).to_mad(hdr.tid)?;
        Mad::new_unchecked(&mut mad[..]).set_method(Method::GET, true);
        self.transmits.push_back(Transmit { to: *src, mad });
        Ok(())
    }
}
