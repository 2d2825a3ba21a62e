//! A packet at its node: directed-route SMPs and LID-routed MADs handed
//! to the node's SMA, PMA, SM or attached endpoints, and their answers.

use super::*;

impl Core {
    /// A packet for `node` itself (its QP0 or QP1), received on `port`.
    pub(super) fn local(&mut self, node: u32, port: u8, pkt: &mut Packet) -> Option<Hop> {
        if pkt.head().base_version() != 1 {
            self.drop_pkt(DropReason::BadBaseVersion, node, port);
            return None;
        }
        let class = pkt.head().mgmt_class();
        match pkt.dqpn {
            0 => {
                if !pkt.vl15 {
                    self.drop_pkt(DropReason::Qp0NotVl15, node, port);
                    return None;
                }
                if !class.is_smp() {
                    self.drop_pkt(DropReason::WrongQp, node, port);
                    return None;
                }
                if pkt.is_dr() {
                    return self.dr_arrived(node, port, pkt);
                }
                self.smp_for_node(node, port, pkt);
                None
            }
            1 => {
                if pkt.vl15 {
                    if let Some(p) = self.port_mut(node, port) {
                        p.counters.vl15_dropped = p.counters.vl15_dropped.saturating_add(1);
                        p.counters_ext.vl15_dropped += 1;
                    }
                    self.drop_pkt(DropReason::Vl15NotQp0, node, port);
                    return None;
                }
                if class.is_smp() {
                    self.drop_pkt(DropReason::WrongQp, node, port);
                    return None;
                }
                let mgmt = self.node(node)?.mgmt_port(port);
                let idx = self
                    .node(node)
                    .and_then(|n| n.port(mgmt))
                    .and_then(|p| pkey_index(&p.pkeys, pkt.pkey));
                let Some(idx) = idx else {
                    if let Some(p) = self.port_mut(node, mgmt) {
                        p.info.p_key_violations = p.info.p_key_violations.saturating_add(1);
                    }
                    self.drop_pkt(DropReason::PKey, node, port);
                    return None;
                };
                self.gsi_for_node(node, port, idx, pkt);
                None
            }
            _ => {
                self.drop_pkt(DropReason::NoReceiver, node, port);
                None
            }
        }
    }

    /// A directed-route SMP arrived at `node` on `port`: the receive
    /// rules, then forward, hand to the SMA, or deliver to the requester
    /// (all decided in one pass over the header: [`dr_arrive`]).
    pub(super) fn dr_arrived(&mut self, node: u32, port: u8, pkt: &mut Packet) -> Option<Hop> {
        let n = self.node(node)?;
        let (is_switch, nports) = (n.is_switch(), n.num_ports());
        self.dr_arrived_at(node, port, is_switch, nports, pkt)
    }

    /// [`Self::dr_arrived`] at a node already looked up: a switch or not,
    /// with `nports` ports.
    #[inline]
    pub(super) fn dr_arrived_at(
        &mut self,
        node: u32,
        port: u8,
        is_switch: bool,
        nports: u8,
        pkt: &mut Packet,
    ) -> Option<Hop> {
        let mut smp = Smp::new_unchecked(&mut pkt.mad[..]);
        if smp.dr_slid() != PERMISSIVE_LID || smp.dr_dlid() != PERMISSIVE_LID {
            self.drop_pkt(DropReason::DrLidRouted, node, port);
            return None;
        }
        match dr_arrive(&mut smp, is_switch, port, nports) {
            DrArrival::Forward(out) => Some(Hop::Transmit { node, port: out }),
            DrArrival::Sma => {
                self.smp_for_node(node, port, pkt);
                None
            }
            DrArrival::Requester => {
                let mgmt = self.node(node)?.mgmt_port(port);
                self.deliver(node, mgmt, Qp::Qp0, 0, pkt);
                None
            }
            DrArrival::RelayError => {
                if let Some(p) = self.port_mut(node, port) {
                    p.counters.port_rcv_switch_relay_errors =
                        p.counters.port_rcv_switch_relay_errors.saturating_add(1);
                    p.counters_ext.port_rcv_switch_relay_errors += 1;
                }
                self.drop_pkt(DropReason::DrPath, node, port);
                None
            }
            DrArrival::Discard => {
                self.drop_pkt(DropReason::DrPath, node, port);
                None
            }
        }
    }

    /// An SMP (request or response) for `node`'s QP0, received on `port`.
    pub(super) fn smp_for_node(&mut self, node: u32, port: u8, pkt: &Packet) {
        let Some(n) = self.node(node) else { return };
        let mgmt = n.mgmt_port(port);
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        let method = mad.method();
        if mad.response_bit() {
            self.deliver(node, mgmt, Qp::Qp0, 0, pkt);
            return;
        }
        if method == Method::TRAP_REPRESS {
            // For whoever sent the trap: an endpoint there, else the
            // node's SMA (a switch's Trap 128).
            if self.ep_for(node, mgmt, Qp::Qp0).is_some() {
                self.deliver(node, mgmt, Qp::Qp0, 0, pkt);
            } else {
                self.sma(node, port, pkt);
            }
            return;
        }
        let to_sm = method == Method::TRAP
            || method == Method::REPORT
            || mad.attr_id() == mad_core::wire::AttributeId::SM_INFO;
        if to_sm && self.give_to_sm(node, port, pkt) {
            return;
        }
        if method == Method::TRAP || method == Method::REPORT {
            self.drop_pkt(DropReason::NoReceiver, node, port);
            return;
        }
        match self.faults.sma.get(&node).copied() {
            None => self.sma(node, port, pkt),
            Some(super::faults::SmaFault::Mute) => {
                self.drop_pkt(DropReason::SmaMute, node, port);
            }
            Some(super::faults::SmaFault::Status(status)) => {
                self.stats.to_sma += 1;
                self.respond_smp(node, port, pkt, status, &[0u8; 64]);
            }
        }
    }

    /// Gives an SMInfo request, trap or report to the SM at this node: an
    /// installed handler, else an attached endpoint that declared itself
    /// SM. False when neither is there.
    pub(super) fn give_to_sm(&mut self, node: u32, port: u8, pkt: &Packet) -> bool {
        let mgmt = self.node(node).map_or(port, |n| n.mgmt_port(port));
        if let Some(mut h) = self.sm_handlers.remove(&node) {
            let req = crate::fabric::SmRequest {
                node: node as usize,
                port,
                mad: &pkt.mad[..],
            };
            let reply = h(&req);
            self.sm_handlers.insert(node, h);
            self.stats.to_sm += 1;
            if let crate::fabric::SmReply::Respond { status, data } = reply {
                self.respond_smp(node, port, pkt, status, &data);
            }
            return true;
        }
        let is_sm = self
            .ep_for(node, mgmt, Qp::Qp0)
            .and_then(|e| self.endpoints.get(e))
            .and_then(Option::as_ref)
            .is_some_and(|e| e.is_sm);
        if is_sm {
            self.deliver(node, mgmt, Qp::Qp0, 0, pkt);
            return true;
        }
        false
    }

    /// A GSI MAD for `node` (P_Key already checked; `pkey_index` is its
    /// index in the receiving port's table).
    pub(super) fn gsi_for_node(&mut self, node: u32, port: u8, pkey_index: u16, pkt: &Packet) {
        let Some(n) = self.node(node) else { return };
        let mgmt = n.mgmt_port(port);
        let mad = Mad::new_unchecked(&pkt.mad[..]);
        if mad.is_response() {
            self.deliver(node, mgmt, Qp::Qp1, pkey_index, pkt);
            return;
        }
        if mad.mgmt_class() == MgmtClass::PERF_MGT {
            self.pma(node, port, pkt);
            return;
        }
        if mad.mgmt_class().0 == mad_core::wire::cc::CC_CLASS {
            self.cca(node, port, pkt);
            return;
        }
        if self.openib_vendor(node, port, pkt) {
            return;
        }
        if self.ep_for(node, mgmt, Qp::Qp1).is_some() {
            self.deliver(node, mgmt, Qp::Qp1, pkey_index, pkt);
            return;
        }
        let m = mad.method();
        if m == Method::GET || m == Method::SET {
            // No agent: the kernel answers "unsupported" (MAD.md §3).
            self.stats.unmatched += 1;
            let data = pkt.mad[24..].to_vec();
            self.respond_gsi(
                node,
                port,
                pkt,
                mad_core::wire::MadStatus::METHOD_ATTR_UNSUPPORTED.0,
                &data,
                24,
            );
            return;
        }
        self.drop_pkt(DropReason::NoReceiver, node, port);
    }

    /// Puts `pkt` on the receive queue of the endpoint at `node`/`port`.
    pub(crate) fn deliver(&mut self, node: u32, port: u8, qp: Qp, pkey_index: u16, pkt: &Packet) {
        let Some(e) = self.ep_for(node, port, qp) else {
            self.drop_pkt(DropReason::NoReceiver, node, port);
            return;
        };
        let path_bits = self
            .node(node)
            .and_then(|n| n.port(port))
            .filter(|p| lid_match(&p.info, pkt.dlid))
            .map_or(0, |p| (pkt.dlid - p.info.lid) as u8);
        let Some(Some(ep)) = self.endpoints.get_mut(e) else {
            self.drop_pkt(DropReason::NoReceiver, node, port);
            return;
        };
        if !matches!(
            ep.qp_state[qp.index()],
            QpState::Rtr | QpState::Rts | QpState::Sqe
        ) {
            self.drop_pkt(DropReason::QpNotReady, node, port);
            return;
        }
        ep.rq.push_back(Received {
            qp,
            src: Address {
                lid: pkt.slid,
                qpn: pkt.sqpn,
                qkey: if qp == Qp::Qp0 { 0 } else { GSI_QKEY },
                sl: pkt.sl,
                pkey_index,
                path_bits,
                grh: pkt.grh,
            },
            mad: mad_core::MadBuf::from_slice(&pkt.mad[..]),
        });
        ep.signal();
        self.stats.to_endpoints += 1;
    }

    /// A copy of `req`'s MAD turned into a GetResp (in a recycled buffer).
    fn get_resp_of(&mut self, req: &Packet) -> Box<[u8; MAD_LEN]> {
        let mut mad = self.mad_buf();
        *mad = *req.mad;
        Mad::new_unchecked(&mut mad[..]).set_method(Method::GET, true);
        mad
    }

    /// Queues the answer to an SMP received on `port` of `node`: GetResp
    /// with `status` and `data`, directed-route or LID-routed like the
    /// request.
    pub(crate) fn respond_smp(
        &mut self,
        node: u32,
        port: u8,
        req: &Packet,
        status: u16,
        data: &[u8],
    ) {
        let Some(n) = self.node(node) else { return };
        let mgmt = n.mgmt_port(port);
        let lid = n.port(mgmt).map_or(0, |p| p.info.lid);
        let mut mad = self.get_resp_of(req);
        let dr = req.is_dr();
        if dr {
            let mut s = Smp::new_unchecked(&mut mad[..]);
            let hc = s.hop_cnt();
            s.set_direction(true);
            s.set_hop_ptr(hc.saturating_add(1));
            s.set_dr_status(status);
        } else {
            Mad::new_unchecked(&mut mad[..]).set_status(mad_core::wire::MadStatus(status));
        }
        let n = data.len().min(64);
        mad[64..64 + n].copy_from_slice(&data[..n]);
        let dlid = if dr { PERMISSIVE_LID } else { req.slid };
        self.queue_answer(req, mad, (lid, dlid), Qp::Qp0, None, (node, mgmt));
    }

    /// Queues `mad`, the answer to `req` from the agent on `qp` at
    /// `start` (node, management port), with `lids` (source,
    /// destination): back to the requester's QP, on its SL and P_Key,
    /// on VL15 from QP0.
    fn queue_answer(
        &mut self,
        req: &Packet,
        mad: Box<[u8; MAD_LEN]>,
        (slid, dlid): (u16, u16),
        qp: Qp,
        grh: Option<Grh>,
        start: (u32, u8),
    ) {
        self.queue.push_back(Packet {
            mad,
            slid,
            dlid,
            sqpn: qp.qpn(),
            dqpn: req.sqpn,
            sl: req.sl,
            pkey: req.pkey,
            vl15: qp == Qp::Qp0,
            grh,
            origin: None,
            start,
        });
    }

    /// Queues a GSI answer (GetResp, `status`, `data` written at
    /// `data_offset`) to a QP1 request received on `port` of `node`.
    pub(crate) fn respond_gsi(
        &mut self,
        node: u32,
        port: u8,
        req: &Packet,
        status: u16,
        data: &[u8],
        data_offset: usize,
    ) {
        let Some(n) = self.node(node) else { return };
        let mgmt = n.mgmt_port(port);
        let Some(p) = n.port(mgmt) else { return };
        let lid = p.info.lid;
        let gid = gid_of(p);
        let mut mad = self.get_resp_of(req);
        Mad::new_unchecked(&mut mad[..]).set_status(mad_core::wire::MadStatus(status));
        let end = (data_offset + data.len()).min(MAD_LEN);
        if data_offset < end {
            mad[data_offset..end].copy_from_slice(&data[..end - data_offset]);
        }
        let grh = req.grh.map(|g| Grh { gid, ..g });
        self.queue_answer(req, mad, (lid, req.slid), Qp::Qp1, grh, (node, mgmt));
    }
}
