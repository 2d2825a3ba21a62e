//! The discovery phase of a sweep: NodeInfo / PortInfo requests along
//! directed routes, and what each answer adds to the subnet.

use super::*;

impl SubnetManager {
    // ------------------------------------------------------------------
    // Sweep steps
    // ------------------------------------------------------------------

    pub(super) fn begin_sweep(&mut self) {
        self.drop_light();
        self.sweep = Sweep {
            rereg: self.neg.first_master_sweep,
            ..Sweep::default()
        };
        self.light_at = None;
        self.phase = Phase::Discover;
        self.resweep_pending = false;
        self.ready.push_back(Request {
            method: Method::GET,
            attr: AttributeId::NODE_INFO,
            attr_mod: 0,
            path: DrPath::local(),
            data: None,
            kind: Kind::NodeInfo { from: None },
        });
    }

    /// Asks for PortInfo of port `port` of node `node` (port GUID `guid`)
    /// along `path`.
    fn get_port_info(&mut self, path: &DrPath, node: NodeIdx, port: u8, guid: u64) {
        self.get(
            AttributeId::PORT_INFO,
            u32::from(port),
            path.clone(),
            Kind::PortInfo { node, port, guid },
        );
    }

    pub(super) fn get(&mut self, attr: AttributeId, attr_mod: u32, path: DrPath, kind: Kind) {
        self.ready.push_back(Request {
            method: Method::GET,
            attr,
            attr_mod,
            path,
            data: None,
            kind,
        });
    }

    pub(super) fn set(
        &mut self,
        attr: AttributeId,
        attr_mod: u32,
        path: DrPath,
        data: &[u8],
        kind: Kind,
    ) {
        self.ready
            .push_back(Request::set(attr, attr_mod, path, data, kind));
    }

    pub(super) fn error(&mut self, e: SmError) {
        self.sweep.errors += 1;
        self.events.push_back(SmEvent::Error(e));
    }

    pub(super) fn fail(&mut self, now: Instant, req: Request, err: SmError) {
        match req.kind {
            Kind::GetSmInfo { .. } => return self.sm_info_failed(now, false),
            Kind::PollSmInfo { .. } => return self.sm_info_failed(now, true),
            // A control that was not answered changes nothing, but a
            // HANDOVER that failed leaves SM-lite Master.
            Kind::SetSmInfo { control, .. } => return self.handover_failed(now, control),
            Kind::LightSwitchInfo { node } => return self.light_answer(node, None),
            Kind::LightPortInfo { guid } => return self.light_port_answer(guid, None),
            // A switch that does not answer now: a heavy sweep sees why.
            Kind::ReroutePortInfo { node, .. } | Kind::RerouteSwitchInfo { node } => {
                if !self.sweep.reroute_failed.contains(&node) {
                    self.sweep.reroute_failed.push(node);
                }
                return;
            }
            _ => {}
        }
        let local_lost = matches!(req.kind, Kind::NodeInfo { from: None });
        if let Kind::NodeInfo {
            from: Some((via, port)),
        } = req.kind
        {
            return self.unreachable(via, port, req.path, &err);
        }
        self.error(err);
        if local_lost {
            self.error(SmError::LocalUnreachable);
        }
    }

    /// The node behind `port` of `via` could not be read (`err`).
    fn unreachable(&mut self, via: NodeIdx, port: u8, path: DrPath, err: &SmError) {
        let reason = match err {
            SmError::Timeout { tries, .. } => format!("no answer after {tries} tries"),
            SmError::Status { status, .. } => format!("status {status:#06x}"),
            SmError::Malformed { reason, .. } => format!("unparsable answer: {reason}"),
            other => other.to_string(),
        };
        let (via_guid, via_desc) = self
            .sweep
            .subnet
            .nodes()
            .get(via)
            .map_or((0, String::new()), |n| (n.guid(), n.desc.clone()));
        self.error(SmError::NodeUnreachable {
            via_guid,
            via_desc,
            port,
            path,
            reason,
        });
    }

    pub(super) fn malformed(&mut self, req: &Request, e: impl std::fmt::Display) {
        self.error(SmError::Malformed {
            attr: req.attr,
            path: req.path.clone(),
            reason: e.to_string(),
        });
    }

    pub(super) fn succeed(&mut self, now: Instant, mut req: Request, data: &[u8]) {
        // The kind is taken out (not copied): the rest of `req` only
        // names the SMP in errors.
        let kind = std::mem::replace(&mut req.kind, Kind::NodeInfo { from: None });
        match kind {
            Kind::NodeInfo { from } => match NodeInfo::parse(data) {
                Ok(ni) => self.got_node_info(&req.path, from, ni),
                Err(e) => self.malformed(&req, e),
            },
            Kind::NodeDesc { node } => match NodeDescription::parse(data) {
                Ok(d) => {
                    if let Some(n) = self.sweep.subnet.node_mut(node) {
                        n.desc = d.text().into_owned();
                    }
                }
                Err(e) => self.malformed(&req, e),
            },
            Kind::SwitchInfo { node } => match SwitchInfo::parse(data) {
                Ok(si) => {
                    if let Some(n) = self.sweep.subnet.node_mut(node) {
                        n.switch_info = Some(si);
                    }
                }
                Err(e) => self.malformed(&req, e),
            },
            Kind::RerouteSwitchInfo { node } => match SwitchInfo::parse(data) {
                Ok(si) => {
                    if let Some(n) = self.sweep.subnet.node_mut(node) {
                        n.switch_info = Some(si);
                    }
                }
                Err(_) => self.sweep.reroute_failed.push(node),
            },
            Kind::ReroutePortInfo { node, port } => match PortInfo::parse(data) {
                Ok(pi) => self.sweep.reread.push((node, port, pi)),
                Err(_) => self.sweep.reroute_failed.push(node),
            },
            Kind::PortInfo { node, port, guid } => match PortInfo::parse(data) {
                Ok(pi) => self.got_port_info(&req.path, node, port, guid, pi),
                Err(e) => self.malformed(&req, e),
            },
            Kind::SetPortInfo { node, port, want } => match PortInfo::parse(data) {
                Ok(got) => self.port_set_done(node, port, &want, &got),
                Err(e) => self.malformed(&req, e),
            },
            Kind::SetSwitchInfo { node, want } => match SwitchInfo::parse(data) {
                Ok(got) => {
                    let guid = self.sweep.subnet.nodes().get(node).map_or(0, SmNode::guid);
                    let mcast_ok = self.mcast.top_answered(
                        guid,
                        want.multicast_fdb_top,
                        got.multicast_fdb_top,
                    );
                    if got.linear_fdb_top == want.linear_fdb_top && mcast_ok {
                        self.programmed.entry(guid).or_default().top = want.linear_fdb_top;
                    } else {
                        self.error(SmError::SwitchNotSet {
                            switch_guid: guid,
                            attr: req.attr,
                            attr_mod: req.attr_mod,
                        });
                    }
                }
                Err(e) => self.malformed(&req, e),
            },
            Kind::SetLft { node, block } => {
                let guid = self.sweep.subnet.nodes().get(node).map_or(0, SmNode::guid);
                let want = lft_block(&self.sweep.subnet, node, block);
                if data.get(..64) == Some(&want[..]) {
                    if let Some(p) = self.programmed.get_mut(&guid) {
                        p.unconfirmed.remove(block);
                    }
                } else {
                    self.error(SmError::SwitchNotSet {
                        switch_guid: guid,
                        attr: req.attr,
                        attr_mod: req.attr_mod,
                    });
                }
            }
            Kind::SetMft {
                guid,
                block,
                pos,
                want,
            } => self.mft_set_done(&req, guid, (block, pos), *want, data),
            Kind::SetMcastTop { guid, top } => self.mcast_top_done(&req, guid, top, data),
            Kind::SetPKeys {
                guid,
                port,
                block,
                want,
            } => self.pkeys_set_done(guid, port, block, &want, data),
            Kind::SetQos { guid, port, hash } => {
                self.qos_done
                    .insert((guid, port, req.attr.0, req.attr_mod), hash);
            }
            Kind::GetSmInfo { guid } | Kind::PollSmInfo { guid } => {
                let poll = matches!(kind, Kind::PollSmInfo { .. });
                match SmInfo::parse(data) {
                    Ok(info) => self.got_sm_info(poll, guid, info),
                    Err(_) => self.sm_info_failed(now, poll),
                }
            }
            Kind::SetSmInfo { guid, control } => {
                self.control_answered(now, guid, control, &req.path);
            }
            Kind::LightSwitchInfo { node } => {
                self.light_answer(node, SwitchInfo::parse(data).ok());
            }
            Kind::LightPortInfo { guid } => {
                self.light_port_answer(guid, PortInfo::parse(data).ok());
            }
        }
    }

    pub(super) fn got_node_info(&mut self, path: &DrPath, from: Option<PortRef>, ni: NodeInfo) {
        let entry = ni.local_port_num;
        let guid = ni.node_guid;
        let port_guid = ni.port_guid;
        let is_switch = ni.node_type == NodeType::SWITCH;
        let sub = &mut self.sweep.subnet;
        if let Some(i) = sub.index_of(guid) {
            if let Some(f) = from {
                sub.add_link(f, (i, entry));
            }
            let known = sub.nodes()[i].port(entry).is_some();
            if !is_switch && !known {
                // Another port of a CA we know: read it through this port.
                self.get_port_info(path, i, entry, port_guid);
            }
            return;
        }
        let num_ports = ni.num_ports;
        let i = sub.add_node(ni, path.clone());
        match from {
            Some(f) => sub.add_link(f, (i, entry)),
            None => {
                sub.set_local((i, if is_switch { 0 } else { entry }));
                self.port_guid = port_guid;
            }
        }
        self.get(
            AttributeId::NODE_DESC,
            0,
            path.clone(),
            Kind::NodeDesc { node: i },
        );
        if is_switch {
            self.get(
                AttributeId::SWITCH_INFO,
                0,
                path.clone(),
                Kind::SwitchInfo { node: i },
            );
            for port in 0..=num_ports {
                self.get_port_info(path, i, port, port_guid);
            }
        } else {
            self.get_port_info(path, i, entry, port_guid);
        }
    }

    pub(super) fn got_port_info(
        &mut self,
        path: &DrPath,
        node: NodeIdx,
        port: u8,
        guid: u64,
        pi: PortInfo,
    ) {
        let sub = &mut self.sweep.subnet;
        let Some(n) = sub.node_mut(node) else { return };
        let is_switch = n.is_switch();
        let link_up = pi.port_phys_state == PhysPortState::LINK_UP;
        // Another SM runs at this port (a CA port, or switch port 0).
        let lid_bearing = !is_switch || port == 0;
        let other_sm = lid_bearing && pi.has_cap(port_cap::IS_SM);
        if let Some(slot) = n.ports.get_mut(usize::from(port)) {
            *slot = Some(SmPort {
                num: port,
                guid,
                info: pi,
                path: path.clone(),
                lid: 0,
                lmc: 0,
            });
        }
        if other_sm {
            self.found_sm_port(guid, path);
        }
        let sub = &mut self.sweep.subnet;
        let expand = if is_switch {
            port != 0 && sub.remote((node, port)).is_none()
        } else {
            path.hop_cnt() == 0
        };
        if link_up && expand && path.hop_cnt() < DR_MAX_HOPS {
            let mut hops = path.hops().to_vec();
            hops.push(port);
            if let Ok(next) = DrPath::from_hops(&hops) {
                self.get(
                    AttributeId::NODE_INFO,
                    0,
                    next,
                    Kind::NodeInfo {
                        from: Some((node, port)),
                    },
                );
            }
        }
    }

    pub(super) fn port_set_done(
        &mut self,
        node: NodeIdx,
        port: u8,
        want: &PortInfo,
        got: &PortInfo,
    ) {
        let Some(n) = self.sweep.subnet.nodes().get(node) else {
            return;
        };
        let lid_bearing = !n.is_switch() || port == 0;
        if lid_bearing {
            if let Some(p) = n.port(port) {
                self.sweep
                    .mkey_got
                    .push((p.guid, got.m_key, got.m_key_protect_bits));
            }
        }
        let state_ok = match want.port_state {
            PortState::NO_CHANGE => true,
            s => got.port_state == s,
        };
        let lid_ok = !lid_bearing || got.lid == want.lid;
        if state_ok && lid_ok {
            if want.port_state == PortState::ARMED {
                self.sweep.to_activate.push((node, port));
            }
            return;
        }
        let e = SmError::PortNotSet {
            node_guid: n.guid(),
            port,
            wanted: want.port_state,
            got: got.port_state,
            lid: if lid_bearing { want.lid } else { 0 },
            got_lid: got.lid,
        };
        self.error(e);
    }
}
