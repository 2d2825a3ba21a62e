//! The programming phases of a sweep: routing, PortInfo configuration,
//! activation and the end of the sweep.

use super::*;

impl SubnetManager {
    /// Moves to the next phase whenever the current one has nothing left
    /// to send or wait for.
    pub(super) fn advance(&mut self, now: Instant) {
        loop {
            if self.phase == Phase::Idle || !self.ready.is_empty() || !self.outstanding.is_empty() {
                return;
            }
            if let Some(req) = self.next_set() {
                self.ready.push_back(req);
                return;
            }
            match self.phase {
                Phase::Idle => return,
                Phase::Discover => {
                    if self.sweep.subnet.local().is_none() {
                        self.finish(now);
                        continue;
                    }
                    if !self.negotiate_after_discovery(now) {
                        self.discovered_only();
                        continue;
                    }
                    self.route();
                    self.configure();
                    self.phase = Phase::Configure;
                }
                Phase::Configure => {
                    self.take_routes(None);
                    self.activate();
                    self.phase = Phase::Activate;
                }
                Phase::Activate => self.finish(now),
                Phase::Light => self.light_done(now),
                Phase::Reroute => self.reroute_read(now),
                Phase::Multicast => {
                    self.phase = Phase::Idle;
                    // A block that was not taken is written again by a
                    // sweep (which compares with what was taken).
                    if std::mem::take(&mut self.sweep.errors) > 0 && self.resweep_at.is_none() {
                        self.resweep_at = self.cfg.error_resweep_delay.map(|d| now + d);
                    }
                    if self.resweep_pending {
                        self.begin_sweep();
                    } else {
                        self.mcast_after_phase();
                    }
                }
            }
        }
    }

    pub(super) fn route(&mut self) {
        let sub = &mut self.sweep.subnet;
        if let Err(ports) = routing::assign_lids(
            sub,
            &mut self.book,
            self.cfg.first_lid,
            self.cfg.honor_existing_lids,
            self.cfg.lmc,
        ) {
            self.error(SmError::LidsExhausted { ports });
            self.sweep.unroutable = true;
        }
        let sub = &mut self.sweep.subnet;
        let plan = self
            .cfg
            .partitions
            .as_ref()
            .map(|c| partitions::pkey_tables(c, sub));
        if let Some(p) = &plan {
            for (r, dropped) in &p.overflow {
                let node_guid = sub.nodes().get(r.0).map_or(0, SmNode::guid);
                self.events
                    .push_back(SmEvent::Error(SmError::PKeyTableFull {
                        node_guid,
                        port: r.1,
                        dropped: dropped.clone(),
                    }));
            }
        }
        sub.set_pkey_plan(plan);
        // A big fabric is routed on a thread of its own while the Sets
        // go out: PortInfo first, then each switch's blocks as soon as its
        // table is there (same tables, same SMPs in the same order).
        if !self.cfg.routing.is_min_hop() {
            // Another engine than min-hop: routed here, whatever the size.
            let r = routing::engines::route(sub, &self.cfg.routing);
            self.events.push_back(SmEvent::Routed {
                engine: r.engine,
                notes: r.notes,
            });
        } else if routing::table_entries(sub) >= self.background_entries {
            self.sweep.routes = routing::RouteStream::spawn(sub);
        }
        if self.sweep.routes.is_none() && self.cfg.routing.is_min_hop() {
            routing::compute_lfts(sub);
        }
        self.sm_lid = sub
            .local()
            .and_then(|(i, p)| sub.nodes()[i].port(p))
            .map_or(0, |p| p.lid);
    }

    /// Stores the tables the routing thread computed, up to the one of
    /// switch `node` (`None`: all of them), in the sweep's subnet.
    pub(super) fn take_routes(&mut self, node: Option<NodeIdx>) {
        let sweep = &mut self.sweep;
        if let Some(r) = sweep.routes.as_mut() {
            r.take_until(node, &mut sweep.subnet);
            if r.is_done() {
                sweep.routes = None;
            }
        }
    }

    /// The PortInfo SM-lite wants `port` of `node` (index `idx` in
    /// `sub`) to hold, with `state`.
    pub(super) fn desired(
        &self,
        sub: &Subnet,
        idx: NodeIdx,
        node: &SmNode,
        port: &SmPort,
        state: PortState,
    ) -> PortInfo {
        let mut pi = port.info.clone();
        let base_port0 = node.is_switch()
            && port.num == 0
            && !node.switch_info.as_ref().is_some_and(|s| s.enhanced_port0);
        if !node.is_switch() || port.num == 0 {
            pi.lid = port.lid;
            pi.master_sm_lid = self.sm_lid;
            pi.gid_prefix = self.cfg.subnet_prefix;
            pi.subnet_timeout = self.cfg.subnet_timeout & 0x1F;
            pi.lmc = port.lmc;
            pi.m_key = self.cfg.m_key;
            pi.m_key_protect_bits = self.cfg.m_key_protect_bits & 3;
            pi.m_key_lease_period = self.cfg.m_key_lease_period;
        }
        if !base_port0 {
            pi.operational_vls = self.want_op_vls(sub, idx, port);
            if let Some(class) = self.qos_class(node, port) {
                pi.vl_high_limit = qos::high_limit(&self.cfg.qos, class, &port.info);
            }
        }
        if let Some(e) = want_enforcement(&self.sweep.subnet, node, port) {
            pi.partition_enforcement_inbound = e;
            pi.partition_enforcement_outbound = e;
        }
        pi.port_state = state;
        pi.port_phys_state = PhysPortState::NO_CHANGE;
        // 0 = "no change" for the enable fields: leave link speed and
        // width to the hardware.
        pi.link_width_enabled = 0;
        pi.link_speed_enabled = 0;
        pi.link_speed_ext_enabled = 0;
        pi.link_speed_ext_enabled2 = 0;
        // The first sweep as master asks every CA port's clients to
        // register with the SA again (OpenSM does the same), where the
        // port supports it.
        pi.client_reregister = self.sweep.rereg
            && self.phase == Phase::Configure
            && !node.is_switch()
            && port.info.has_cap(port_cap::HAS_CLIENT_REREG);
        pi
    }

    /// OperationalVLs for `port` of node `idx` ([`qos::op_vls`]).
    pub(super) fn want_op_vls(&self, sub: &Subnet, idx: NodeIdx, port: &SmPort) -> u8 {
        let remote = sub
            .remote((idx, port.num))
            .and_then(|(n, p)| sub.nodes().get(n).and_then(|n| n.port(p)))
            .map(|p| &p.info);
        qos::op_vls(&port.info, remote, self.cfg.qos.max_op_vls)
    }

    /// The QoS class of a port when QoS is on (`None` for a switch's base
    /// port 0, which OpenSM leaves alone).
    fn qos_class(&self, node: &SmNode, port: &SmPort) -> Option<qos::PortClass> {
        if !self.cfg.qos.enabled {
            return None;
        }
        Some(if !node.is_switch() {
            if node.info.node_type == mad_core::wire::attr::NodeType::ROUTER {
                qos::PortClass::Router
            } else {
                qos::PortClass::Ca
            }
        } else if port.num == 0 {
            if !node.switch_info.as_ref().is_some_and(|s| s.enhanced_port0) {
                return None;
            }
            qos::PortClass::SwitchPort0
        } else {
            qos::PortClass::SwitchExternal
        })
    }

    pub(super) fn needs_config(
        &self,
        sub: &Subnet,
        idx: NodeIdx,
        node: &SmNode,
        port: &SmPort,
    ) -> bool {
        let pi = &port.info;
        let base_port0 = node.is_switch()
            && port.num == 0
            && !node.switch_info.as_ref().is_some_and(|s| s.enhanced_port0);
        let vls = !base_port0
            && (pi.operational_vls != self.want_op_vls(sub, idx, port)
                || self
                    .qos_class(node, port)
                    .is_some_and(|c| pi.vl_high_limit != qos::high_limit(&self.cfg.qos, c, pi)));
        if node.is_switch() && port.num != 0 {
            return vls
                || want_enforcement(sub, node, port).is_some_and(|e| {
                    pi.partition_enforcement_inbound != e || pi.partition_enforcement_outbound != e
                });
        }
        vls || pi.lid != port.lid
            || pi.master_sm_lid != self.sm_lid
            || pi.gid_prefix != self.cfg.subnet_prefix
            || pi.subnet_timeout != self.cfg.subnet_timeout & 0x1F
            || pi.lmc != port.lmc
            || pi.m_key != self.cfg.m_key
            || pi.m_key_protect_bits != self.cfg.m_key_protect_bits & 3
            || pi.m_key_lease_period != self.cfg.m_key_lease_period
    }

    pub(super) fn configure(&mut self) {
        let sub = std::mem::take(&mut self.sweep.subnet);
        let max_lid = sub.max_lid();
        let mcast = self.mcast_tables_for(&sub);
        for (i, n) in sub.nodes().iter().enumerate() {
            for p in n.ports.iter().flatten() {
                let port0 = n.is_switch() && p.num == 0;
                if !port0 && !p.link_up() {
                    continue;
                }
                // A link whose far end the sweep could not read is left
                // alone (that end cannot be armed: activating this one
                // would only fail).
                let far_unknown = !port0 && sub.remote((i, p.num)).is_none();
                let state = if port0 || far_unknown {
                    PortState::NO_CHANGE
                } else {
                    match p.info.port_state {
                        PortState::INIT => PortState::ARMED,
                        PortState::ARMED => {
                            self.sweep.to_activate.push((i, p.num));
                            PortState::NO_CHANGE
                        }
                        _ => PortState::NO_CHANGE,
                    }
                };
                let rereg = self.sweep.rereg
                    && !n.is_switch()
                    && p.info.has_cap(port_cap::HAS_CLIENT_REREG);
                self.queue_pkeys(&sub, i, n, p);
                if state == PortState::NO_CHANGE && !rereg && !self.needs_config(&sub, i, n, p) {
                    continue;
                }
                self.sweep.todo.push(Todo::Port {
                    node: i,
                    port: p.num,
                    state,
                });
            }
            if self.cfg.qos.enabled {
                self.forget_qos(n);
                self.sweep.todo.push(Todo::Qos { node: i });
            }
            if !n.is_switch() {
                continue;
            }
            let Some(si) = n.switch_info.clone() else {
                continue;
            };
            let guid = n.guid();
            let cap = si.linear_fdb_cap;
            if cap != 0 && max_lid >= cap {
                self.error(SmError::FdbCap {
                    switch_guid: guid,
                    cap,
                    max_lid,
                });
                self.sweep.unroutable = true;
            }
            let top = if cap == 0 {
                max_lid
            } else {
                max_lid.min(cap - 1)
            };
            // A switch that forgot what SM-lite wrote (reset, or new) is
            // programmed in full.
            let known = self
                .programmed
                .get(&guid)
                .is_some_and(|p| p.top == si.linear_fdb_top);
            if !known {
                self.programmed.remove(&guid);
                self.mcast.forget(guid);
                self.qos_done.retain(|k, _| k.0 != guid);
            }
            let mtop = mcast::mcast_top(&self.queue_mft(n, mcast.get(&i)));
            let mtop_differs = self.mcast.top_differs(guid, si.multicast_fdb_top, mtop);
            if si.linear_fdb_top != top || si.port_state_change || mtop_differs {
                let mut want = si.clone();
                want.linear_fdb_top = top;
                if mtop_differs {
                    want.multicast_fdb_top = mtop;
                }
                want.port_state_change = true; // write 1 to clear
                if let Ok(b) = want.to_vec() {
                    self.set(
                        AttributeId::SWITCH_INFO,
                        0,
                        n.path.clone(),
                        &b,
                        Kind::SetSwitchInfo {
                            node: i,
                            want: Box::new(want),
                        },
                    );
                }
            } else if let Some(p) = self.programmed.get_mut(&guid) {
                p.top = top;
            }
            let blocks = usize::from(top) / LinearFwdTable::ENTRIES + 1;
            self.sweep.todo.push(Todo::Lft { node: i, blocks });
        }
        self.sweep.subnet = sub;
    }

    /// P_KeyTable Sets for the blocks of `p` (port of node `i`) that
    /// differ from what SM-lite last had confirmed there (every block the
    /// table needs, the first time).
    fn queue_pkeys(&mut self, sub: &Subnet, i: NodeIdx, n: &SmNode, p: &SmPort) {
        let Some(want) = sub.pkey_table((i, p.num)) else {
            return;
        };
        let key = (n.guid(), p.num);
        let had = self.pkeys_written.get(&key).cloned();
        let blocks = want
            .len()
            .max(had.as_ref().map_or(0, Vec::len))
            .div_ceil(PKeyTable::ENTRIES)
            .max(1);
        for b in 0..blocks {
            let block = |t: &[u16]| {
                let mut x = [0u16; PKeyTable::ENTRIES];
                for (k, v) in x.iter_mut().enumerate() {
                    *v = t.get(b * PKeyTable::ENTRIES + k).copied().unwrap_or(0);
                }
                x
            };
            let w = block(want);
            if had.as_deref().is_some_and(|h| block(h) == w) {
                continue;
            }
            let Ok(data) = (PKeyTable { pkeys: w }).to_vec() else {
                continue;
            };
            let mut attr_mod = b as u32;
            if n.is_switch() {
                attr_mod |= u32::from(p.num) << 16;
            }
            self.set(
                AttributeId::PKEY_TABLE,
                attr_mod,
                p.path.clone(),
                &data,
                Kind::SetPKeys {
                    guid: n.guid(),
                    port: p.num,
                    block: b as u16,
                    want: Box::new(w),
                },
            );
        }
    }

    /// The answer to a P_KeyTable Set: the block is recorded as written
    /// when the port holds what was sent.
    pub(super) fn pkeys_set_done(
        &mut self,
        guid: u64,
        port: u8,
        block: u16,
        want: &[u16; 32],
        data: &[u8],
    ) {
        let got = PKeyTable::parse(data).ok();
        if got.as_ref().is_some_and(|g| g.pkeys == *want) {
            let t = self.pkeys_written.entry((guid, port)).or_default();
            let at = usize::from(block) * PKeyTable::ENTRIES;
            if t.len() < at + PKeyTable::ENTRIES {
                t.resize(at + PKeyTable::ENTRIES, 0);
            }
            t[at..at + PKeyTable::ENTRIES].copy_from_slice(want);
            while t.last() == Some(&0) {
                t.pop();
            }
        } else {
            self.pkeys_written.remove(&(guid, port));
            self.error(SmError::PKeysNotSet {
                node_guid: guid,
                port,
                block,
            });
        }
    }

    /// The next Set of the sweep's to-do list (see [`Todo`]), made when
    /// the window has room rather than all queued at once: PortInfo of a
    /// port, or the next LinearForwardingTable block a switch does not
    /// hold already.
    pub(super) fn next_set(&mut self) -> Option<Request> {
        loop {
            let (k, b) = self.sweep.todo_at;
            let (node, blocks) = match *self.sweep.todo.get(k)? {
                Todo::Port { node, port, state } => {
                    self.sweep.todo_at = (k + 1, 0);
                    match self.port_set(node, port, state) {
                        Some(r) => return Some(r),
                        None => continue,
                    }
                }
                Todo::Lft { node, blocks } => (node, blocks),
                Todo::Qos { node } => {
                    if b == 0 {
                        self.queue_qos(node);
                        self.sweep.todo_at = (k, 1);
                    }
                    match self.sweep.qos_queue.pop() {
                        Some(r) => return Some(r),
                        None => {
                            self.sweep.todo_at = (k + 1, 0);
                            continue;
                        }
                    }
                }
            };
            if b == 0 {
                self.take_routes(Some(node));
            }
            let Some(n) = self.sweep.subnet.nodes().get(node) else {
                self.sweep.todo_at = (k + 1, 0);
                continue;
            };
            if b >= blocks {
                // Every block of this switch is written or the same: the
                // new table is what it holds (less unconfirmed blocks).
                self.programmed.entry(n.guid()).or_default().lft = n.lft.clone();
                self.sweep.todo_at = (k + 1, 0);
                continue;
            }
            self.sweep.todo_at = (k, b + 1);
            let block = b as u32;
            let want = lft_block(&self.sweep.subnet, node, block);
            let prog = self.programmed.entry(n.guid()).or_default();
            let same = !prog.unconfirmed.contains(block)
                && prog
                    .lft
                    .block(b)
                    .is_some_and(|x| std::ptr::eq(&**x, want) || **x == *want);
            if same {
                continue;
            }
            let path = n.path.clone();
            prog.unconfirmed.insert(block);
            // The block is the SMP's data: kept once, in the kind.
            return Some(Request {
                method: Method::SET,
                attr: AttributeId::LINEAR_FWD_TABLE,
                attr_mod: block,
                path,
                data: None,
                kind: Kind::SetLft { node, block },
            });
        }
    }

    /// The PortInfo Set that gives `port` of `node` what SM-lite wants
    /// with `state`.
    fn port_set(&mut self, node: NodeIdx, port: u8, state: PortState) -> Option<Request> {
        let n = self.sweep.subnet.nodes().get(node)?;
        let p = n.port(port)?;
        let want = self.desired(&self.sweep.subnet, node, n, p, state);
        let path = p.path.clone();
        // Written in place: no Vec per PortInfo Set.
        let mut b = [0u8; SMP_DATA_LEN];
        match want.emit(&mut b) {
            Ok(()) => Some(Request::set(
                AttributeId::PORT_INFO,
                u32::from(port),
                path,
                &b,
                Kind::SetPortInfo {
                    node,
                    port,
                    want: Box::new(want),
                },
            )),
            Err(e) => {
                self.events.push_back(SmEvent::Error(SmError::Malformed {
                    attr: AttributeId::PORT_INFO,
                    path,
                    reason: e.to_string(),
                }));
                None
            }
        }
    }

    /// Forgets the QoS tables written into the ports of `n` that are
    /// coming up (Initialize): a port that went down may have lost them.
    fn forget_qos(&mut self, n: &SmNode) {
        let guid = n.guid();
        for p in n.ports.iter().flatten() {
            if p.info.port_state == PortState::INIT {
                let num = p.num;
                self.qos_done.retain(|k, _| !(k.0 == guid && k.1 == num));
            }
        }
    }

    /// Queues the QoS Sets of `node` whose table the node does not hold
    /// already.
    fn queue_qos(&mut self, node: NodeIdx) {
        let sub = &self.sweep.subnet;
        let Some(n) = sub.nodes().get(node) else {
            return;
        };
        let guid = n.guid();
        let sets = qos::node_sets(&self.cfg.qos, n, |num| {
            n.port(num).map_or(1, |p| {
                let base_port0 = n.is_switch()
                    && num == 0
                    && !n.switch_info.as_ref().is_some_and(|s| s.enhanced_port0);
                if base_port0 {
                    p.info.operational_vls
                } else {
                    self.want_op_vls(sub, node, p)
                }
            })
        });
        let mut q = Vec::with_capacity(sets.len());
        for s in sets {
            let hash = qos_hash(&s.data);
            let key = (guid, s.port, s.attr.0, s.attr_mod);
            if self.qos_done.get(&key) == Some(&hash) {
                continue;
            }
            let path = n.path.clone();
            q.push(Request::set(
                s.attr,
                s.attr_mod,
                path,
                &s.data,
                Kind::SetQos {
                    guid,
                    port: s.port,
                    hash,
                },
            ));
        }
        q.reverse();
        self.sweep.qos_queue = q;
    }

    pub(super) fn activate(&mut self) {
        let list = std::mem::take(&mut self.sweep.to_activate);
        self.sweep.todo = list
            .into_iter()
            .map(|(node, port)| Todo::Port {
                node,
                port,
                state: PortState::ACTIVE,
            })
            .collect();
        self.sweep.todo_at = (0, 0);
    }

    /// A sweep that found a master (or a better SM) ends after
    /// discovery: SM-lite stands by and configures nothing.
    pub(super) fn discovered_only(&mut self) {
        let sweep = std::mem::take(&mut self.sweep);
        self.phase = Phase::Idle;
        self.resweep_pending = false;
        self.events.push_back(SmEvent::SweepDone {
            nodes: sweep.subnet.nodes().len(),
            switches: sweep.subnet.switch_count(),
            lids: 0,
            sets: sweep.sets,
            smps: sweep.smps,
            retries: sweep.retries,
            errors: sweep.errors,
        });
    }

    pub(super) fn finish(&mut self, now: Instant) {
        self.take_routes(None);
        let sweep = std::mem::take(&mut self.sweep);
        self.stats.heavy_sweeps += 1;
        self.stats.last_sweep_smps = sweep.smps;
        self.stats.last_sweep_sets = sweep.sets;
        self.stats.last_lft_blocks = sweep.lft_blocks;
        self.stats.lft_blocks += sweep.lft_blocks as u64;
        self.stats.last_port_sets = sweep.port_sets;
        let swept = sweep.subnet.local().is_some();
        self.phase = Phase::Idle;
        self.events.push_back(SmEvent::SweepDone {
            nodes: sweep.subnet.nodes().len(),
            switches: sweep.subnet.switch_count(),
            lids: sweep.subnet.lids().len(),
            sets: sweep.sets,
            smps: sweep.smps,
            retries: sweep.retries,
            errors: sweep.errors,
        });
        if swept {
            self.subnet = sweep.subnet;
            self.note_mkeys(&sweep.mkey_got);
        }
        let master_bound = matches!(self.sm_state, SmState::DISCOVERING | SmState::MASTER);
        // Master once its sweep went through, as OpenSM: what could not
        // be configured (a switch that never answers) is named in the
        // errors and tried again, and the rest of the fabric is served.
        if swept && master_bound {
            self.set_state(SmState::MASTER);
        }
        if swept && sweep.errors == 0 && master_bound {
            self.neg.first_master_sweep = false;
            self.subnet_up = true;
            self.events.push_back(SmEvent::SubnetUp);
            self.handover_if_better(&sweep.others);
        } else if let Some(d) = self.cfg.error_resweep_delay.filter(|_| !sweep.unroutable) {
            // Sweeping the same fabric again cannot find more LIDs or
            // bigger tables: only a change (a trap, a resweep asked for)
            // sweeps again.
            self.resweep_at = Some(now + d);
        }
        self.schedule_light(now);
        if self.resweep_pending {
            self.resweep_at = None;
            self.begin_sweep();
        }
        self.mcast_after_phase();
    }
}

/// Partition enforcement (inbound and outbound) a switch external port
/// of `sub` is to have: on where it faces an end port whose P_Key table
/// fits it, off elsewhere; `None` (left alone) for other ports and when
/// partitions are not managed.
fn want_enforcement(sub: &Subnet, node: &SmNode, port: &SmPort) -> Option<bool> {
    if !node.is_switch() || port.num == 0 {
        return None;
    }
    let plan = sub.pkey_plan()?;
    let i = sub.index_of(node.guid())?;
    Some(plan.enforce.binary_search(&(i, port.num)).is_ok())
}

impl SubnetManager {
    /// Records the M_Key and protect bits each LID-bearing port holds
    /// after a heavy sweep: as read, or as the sweep's Sets answered.
    fn note_mkeys(&mut self, got: &[(u64, u64, u8)]) {
        self.mkey_held.clear();
        for n in self.subnet.nodes() {
            for p in n.ports.iter().flatten() {
                if !n.is_switch() || p.num == 0 {
                    self.mkey_held
                        .insert(p.guid, (p.info.m_key, p.info.m_key_protect_bits));
                }
            }
        }
        for &(guid, key, bits) in got {
            self.mkey_held.insert(guid, (key, bits));
        }
    }
}

/// A hash of a QoS table's data (what was written is kept as this).
fn qos_hash(d: &[u8; 64]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    d.hash(&mut h);
    h.finish()
}
