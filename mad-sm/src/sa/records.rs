//! The records each SA attribute lists, built from the subnet view.

use super::*;

impl SubnetView {
    pub(super) fn node_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for i in self.nodes_for(lid) {
            let n = &self.subnet.nodes()[i];
            let desc = NodeDescription::from_text(&n.desc);
            let ports: Vec<u8> = if n.is_switch() {
                vec![0]
            } else {
                n.ports
                    .iter()
                    .flatten()
                    .filter(|p| p.lid != 0)
                    .map(|p| p.num)
                    .collect()
            };
            for port in ports {
                let l = self.record_lid(i, port);
                if l == 0 || !self.selects(lid, i, port) {
                    continue;
                }
                let mut ni = n.info.clone();
                if !n.is_switch() {
                    ni.local_port_num = port;
                    ni.port_guid = n.port(port).map_or(ni.port_guid, |p| p.guid);
                }
                push(
                    &mut out,
                    &NodeRecord {
                        lid: l,
                        node_info: ni,
                        node_desc: desc.clone(),
                        ..NodeRecord::default()
                    },
                );
            }
        }
        out
    }

    pub(super) fn port_info_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for i in self.nodes_for(lid) {
            let n = &self.subnet.nodes()[i];
            for p in n.ports.iter().flatten() {
                let l = self.record_lid(i, p.num);
                if !self.selects(lid, i, p.num) || (n.is_switch() && l == 0) {
                    continue;
                }
                let Some(pi) = self.port_info(i, p.num) else {
                    continue;
                };
                push(
                    &mut out,
                    &PortInfoRecord {
                        lid: l,
                        port_num: p.num,
                        options: 0,
                        port_info: pi,
                    },
                );
            }
        }
        out
    }

    pub(super) fn switch_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for i in self.nodes_for(lid) {
            let n = &self.subnet.nodes()[i];
            let Some(si) = &n.switch_info else { continue };
            let mut si = si.clone();
            si.linear_fdb_top = self.lft_top(i);
            si.port_state_change = false;
            push(
                &mut out,
                &SwitchInfoRecord {
                    lid: n.switch_lid(),
                    switch_info: si,
                    ..SwitchInfoRecord::default()
                },
            );
        }
        out
    }

    /// LinearFDBTop SM-lite programs into switch `i`.
    pub(super) fn lft_top(&self, i: usize) -> u16 {
        let cap = self.subnet.nodes()[i]
            .switch_info
            .as_ref()
            .map_or(0, |s| s.linear_fdb_cap);
        let max = self.subnet.max_lid();
        if cap == 0 {
            max
        } else {
            max.min(cap - 1)
        }
    }

    pub(super) fn lft_records(&self, lid: Option<u16>, block: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for i in self.nodes_for(lid) {
            let n = &self.subnet.nodes()[i];
            if !n.is_switch() || n.lft.is_empty() {
                continue;
            }
            let blocks = usize::from(self.lft_top(i)) / LinearFwdTable::ENTRIES + 1;
            for b in 0..blocks {
                if block.is_some_and(|x| usize::from(x) != b) {
                    continue;
                }
                let mut t = LinearFwdTable::default();
                for (k, e) in t.ports.iter_mut().enumerate() {
                    *e = n
                        .lft
                        .get(b * LinearFwdTable::ENTRIES + k)
                        .copied()
                        .unwrap_or(NO_ROUTE);
                }
                push(
                    &mut out,
                    &LftRecord {
                        lid: n.switch_lid(),
                        block_num: b as u16,
                        lft: t,
                        ..LftRecord::default()
                    },
                );
            }
        }
        out
    }

    pub(super) fn link_records(&self, from_lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (a, b) in self.subnet.links() {
            for (x, y) in [(a, b), (b, a)] {
                let fl = self.record_lid(x.0, x.1);
                if from_lid.is_some_and(|l| l != fl) {
                    continue;
                }
                push(
                    &mut out,
                    &LinkRecord {
                        from_lid: fl,
                        from_port: x.1,
                        to_port: y.1,
                        to_lid: self.record_lid(y.0, y.1),
                        ..LinkRecord::default()
                    },
                );
            }
        }
        out
    }

    pub(super) fn guid_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for &(l, r) in &self.lids {
            if !self.selects(lid, r.0, r.1) {
                continue;
            }
            let Some(p) = self.subnet.nodes().get(r.0).and_then(|n| n.port(r.1)) else {
                continue;
            };
            let mut g = GuidInfo::default();
            g.guids[0] = p.guid;
            push(
                &mut out,
                &GuidInfoRecord {
                    lid: l,
                    block_num: 0,
                    guid_info: g,
                    ..GuidInfoRecord::default()
                },
            );
        }
        out
    }

    pub(super) fn pkey_records(&self, lid: Option<u16>, block: Option<u16>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for i in self.nodes_for(lid) {
            let n = &self.subnet.nodes()[i];
            for p in n.ports.iter().flatten() {
                let l = self.record_lid(i, p.num);
                let listed = if n.is_switch() {
                    p.num == 0 || p.link_up()
                } else {
                    p.lid != 0
                };
                if !listed || l == 0 || !self.selects(lid, i, p.num) {
                    continue;
                }
                // The table SM-lite programmed; without partitions the
                // default 0xFFFF the ports hold.
                let table: &[u16] = match self.subnet.pkey_plan() {
                    Some(plan) => plan.tables.get(&(i, p.num)).map_or(&[], Vec::as_slice),
                    None => &[0xFFFF],
                };
                let blocks = table.len().div_ceil(PKeyTable::ENTRIES).max(1);
                for b in 0..blocks {
                    if block.is_some_and(|x| usize::from(x) != b) {
                        continue;
                    }
                    let mut t = PKeyTable::default();
                    for (k, v) in t.pkeys.iter_mut().enumerate() {
                        *v = table.get(b * PKeyTable::ENTRIES + k).copied().unwrap_or(0);
                    }
                    push(
                        &mut out,
                        &PKeyTableRecord {
                            lid: l,
                            block_num: b as u16,
                            port_num: p.num,
                            pkey_table: t,
                            ..PKeyTableRecord::default()
                        },
                    );
                }
            }
        }
        out
    }

    /// The P_Key PathRecords between `s` and `d` carry: 0xFFFF without
    /// partitions; with them, the first of `s`'s P_Keys `d` shares (not
    /// both limited), or `want` when the query names one they share;
    /// `None` when they share none (no path, as OpenSM answers).
    pub(super) fn path_pkey(&self, s: PortRef, d: PortRef, want: Option<u16>) -> Option<u16> {
        let Some(plan) = self.subnet.pkey_plan() else {
            return Some(want.unwrap_or(0xFFFF));
        };
        let a = plan.tables.get(&s)?;
        let b = plan.tables.get(&d)?;
        crate::partitions::shared_pkey(a, b, want)
    }

    /// True when the port with GUID `guid` may join a group of P_Key
    /// `pkey` (it has that P_Key; always without partitions).
    pub(super) fn may_join(&self, guid: u64, pkey: u16) -> bool {
        let Some(plan) = self.subnet.pkey_plan() else {
            return true;
        };
        let base = pkey & 0x7FFF;
        self.by_guid
            .get(&guid)
            .and_then(|r| plan.tables.get(r))
            .is_some_and(|t| t.iter().any(|k| k & 0x7FFF == base))
    }

    /// SLtoVLMappingTableRecords by OpenSM's rules (`osm_sa_slvl_record.c`):
    /// a CA port has one record, InputPort and OutputPort 0, whatever
    /// ports the query names; a switch has one per (output, input) pair
    /// of its ports, port 0 included, narrowed by the query's ports.
    pub(super) fn sl2vl_records(&self, q: &RecordQuery<'_>) -> Vec<Vec<u8>> {
        let mut t = SlToVlTable::default();
        for (sl, vl) in t.vl.iter_mut().enumerate() {
            let b = DEFAULT_SL2VL[sl / 2];
            *vl = if sl % 2 == 0 { b >> 4 } else { b & 0x0F };
        }
        let want = |comp: u64, at: usize| (q.comp_mask & comp != 0).then(|| byte(q.template, at));
        let (want_in, want_out) = (
            want(Sl2VlRecord::COMP_INPUT_PORT, 2),
            want(Sl2VlRecord::COMP_OUTPUT_PORT, 3),
        );
        let mut out = Vec::new();
        for (l, r) in self.qos_ports(lid_filter(q)) {
            let n = &self.subnet.nodes()[r.0];
            let programmed = self.qos_sets(r.0);
            let pairs: Vec<(u8, u8)> = if n.is_switch() {
                let ports: Vec<u8> = n.ports.iter().flatten().map(|p| p.num).collect();
                ports
                    .iter()
                    .flat_map(|&o| ports.iter().map(move |&i| (i, o)))
                    .filter(|&(i, o)| {
                        want_in.is_none_or(|w| w == i) && want_out.is_none_or(|w| w == o)
                    })
                    .collect()
            } else {
                vec![(0, 0)]
            };
            for (input_port, output_port) in pairs {
                let amod = (u32::from(input_port) << 8) | u32::from(output_port);
                let sl2vl = programmed
                    .iter()
                    .find(|s| s.attr == AttributeId::SL_TO_VL_TABLE && s.attr_mod == amod)
                    .and_then(|s| SlToVlTable::parse(&s.data[..8]).ok())
                    .unwrap_or_else(|| t.clone());
                push(
                    &mut out,
                    &Sl2VlRecord {
                        lid: l,
                        input_port,
                        output_port,
                        sl2vl,
                        ..Sl2VlRecord::default()
                    },
                );
            }
        }
        out
    }

    /// VLArbitrationTableRecords by OpenSM's rules
    /// (`osm_sa_vlarb_record.c`): blocks 1–4 of every port of a switch
    /// (port 0 included), of a CA's own port whatever port the query
    /// names (OpenSM reads a CA query's port 0 as the CA's port),
    /// narrowed by the query's port and block.
    pub(super) fn vlarb_records(&self, q: &RecordQuery<'_>) -> Vec<Vec<u8>> {
        let table = mad_core::wire::attr::default_vlarb();
        let want = |comp: u64, at: usize| (q.comp_mask & comp != 0).then(|| byte(q.template, at));
        let want_port = want(VlArbRecord::COMP_OUTPUT_PORT, 2);
        let want_block = want(VlArbRecord::COMP_BLOCK_NUM, 3);
        let mut out = Vec::new();
        for (l, r) in self.qos_ports(lid_filter(q)) {
            let n = &self.subnet.nodes()[r.0];
            let programmed = self.qos_sets(r.0);
            let ports: Vec<u8> = if n.is_switch() {
                n.ports
                    .iter()
                    .flatten()
                    .map(|p| p.num)
                    .filter(|p| want_port.is_none_or(|w| w == *p))
                    .collect()
            } else {
                vec![r.1]
            };
            for port in ports {
                for block in (1u8..=4).filter(|b| want_block.is_none_or(|w| w == *b)) {
                    let first = usize::from(block - 1) * 32;
                    let amod =
                        (u32::from(block) << 16) | if n.is_switch() { u32::from(port) } else { 0 };
                    let t = programmed
                        .iter()
                        .find(|s| s.attr == AttributeId::VL_ARB_TABLE && s.attr_mod == amod)
                        .and_then(|s| VlArbTable::parse(&s.data).ok())
                        .unwrap_or_else(|| {
                            let mut t = VlArbTable::default();
                            t.entries.copy_from_slice(&table[first..first + 32]);
                            t
                        });
                    push(
                        &mut out,
                        &VlArbRecord {
                            lid: l,
                            output_port: port,
                            block_num: block,
                            vl_arb: t,
                            ..VlArbRecord::default()
                        },
                    );
                }
            }
        }
        out
    }

    /// The QoS Sets SM-lite sent node `node` (none with QoS off): what
    /// its tables hold where SM-lite programmed them.
    fn qos_sets(&self, node: usize) -> Vec<crate::qos::QosSet> {
        let Some(q) = &self.qos else {
            return Vec::new();
        };
        let Some(n) = self.subnet.nodes().get(node) else {
            return Vec::new();
        };
        crate::qos::node_sets(q, n, |num| {
            n.port(num).map_or(1, |p| {
                let base_port0 = n.is_switch()
                    && num == 0
                    && !n.switch_info.as_ref().is_some_and(|s| s.enhanced_port0);
                if base_port0 {
                    return p.info.operational_vls;
                }
                let remote = self
                    .subnet
                    .remote((node, num))
                    .and_then(|(rn, rp)| self.subnet.nodes().get(rn)?.port(rp))
                    .map(|r| &r.info);
                crate::qos::op_vls(&p.info, remote, q.max_op_vls)
            })
        })
    }

    /// The LID-bearing ports QoS records are listed for: CA ports and
    /// switches' port 0, optionally only the one holding `lid`.
    fn qos_ports(&self, lid: Option<u16>) -> impl Iterator<Item = (u16, PortRef)> + '_ {
        self.lids
            .iter()
            .copied()
            .filter(move |&(_, r)| self.selects(lid, r.0, r.1))
    }

    pub(super) fn sm_info_records(&self, lid: Option<u16>) -> Vec<Vec<u8>> {
        if self.sm_lid == 0 || lid.is_some_and(|l| l != self.sm_lid) {
            return Vec::new();
        }
        let mut info = self.sm_info.clone();
        info.sm_key = 0;
        if !self.up && info.sm_state == SmState::MASTER {
            info.sm_state = SmState::DISCOVERING;
        }
        let mut out = Vec::new();
        push(
            &mut out,
            &SmInfoRecord {
                lid: self.sm_lid,
                sm_info: info,
                ..SmInfoRecord::default()
            },
        );
        out
    }

    /// The SLs whose VL is 15 (dropped) in the SL2VL table SM-lite
    /// programmed into port `a` (as an output port, or a CA's port), one
    /// bit each; 0 with QoS off.
    fn sl_drops(&self, a: PortRef) -> u16 {
        use crate::qos::PortClass;
        let Some(q) = &self.qos else {
            return 0;
        };
        let Some(n) = self.subnet.nodes().get(a.0) else {
            return 0;
        };
        let class = if !n.is_switch() {
            if n.info.node_type == mad_core::wire::attr::NodeType::ROUTER {
                PortClass::Router
            } else {
                PortClass::Ca
            }
        } else if a.1 == 0 {
            return 0;
        } else {
            PortClass::SwitchExternal
        };
        // Masking by OperationalVLs keeps VL 15: only the option counts.
        let t = q.tables(class).sl2vl;
        (0..16u8)
            .filter(|&sl| t[usize::from(sl)] == 15)
            .fold(0, |m, sl| m | (1 << sl))
    }

    /// The route from LID-bearing port `s` to `d` by the switches' LFTs
    /// toward `dlid`, one LID of `d`'s range: (switch hops, MTU, rate,
    /// dropped SLs ([`Self::sl_drops`])).
    pub(super) fn route_to(&self, s: PortRef, d: PortRef, dlid: u16) -> Option<(u32, u8, u8, u16)> {
        let nodes = self.subnet.nodes();
        let mut mtu = u8::MAX;
        let mut gbps = u32::MAX;
        let mut take = |a: PortRef| {
            if let Some(p) = nodes.get(a.0).and_then(|n| n.port(a.1)) {
                mtu = mtu.min(p.info.mtu_cap);
                if a.1 != 0 || !nodes[a.0].is_switch() {
                    gbps = gbps.min(link_gbps_tenths(&p.info));
                }
            }
        };
        let mut drops = self.sl_drops(s);
        if s == d {
            take(s);
            return Some((0, mtu, rate_code(gbps), drops));
        }
        let mut cur = if nodes.get(s.0)?.is_switch() {
            s.0
        } else {
            take(s);
            let r = self.subnet.remote(s)?;
            take(r);
            if r == d {
                return Some((1, mtu, rate_code(gbps), drops));
            }
            if !nodes.get(r.0)?.is_switch() {
                return None;
            }
            r.0
        };
        let mut hops = 1u32;
        for _ in 0..=nodes.len() {
            if d == (cur, 0) {
                take(d);
                return Some((hops, mtu, rate_code(gbps), drops));
            }
            let out = *nodes[cur].lft.get(usize::from(dlid))?;
            if out == NO_ROUTE || out == 0 {
                return None;
            }
            take((cur, out));
            drops |= self.sl_drops((cur, out));
            let next = self.subnet.remote((cur, out))?;
            take(next);
            hops += 1;
            if next == d {
                return Some((hops, mtu, rate_code(gbps), drops));
            }
            if !nodes.get(next.0)?.is_switch() {
                return None;
            }
            cur = next.0;
        }
        None
    }

    pub(super) fn path_records(&self, q: &RecordQuery<'_>) -> Vec<Vec<u8>> {
        let t = q.template;
        let m = q.comp_mask;
        let lid_at = |off: usize| u16::from_be_bytes([byte(t, off), byte(t, off + 1)]);
        let guid_at = |off: usize| {
            let mut b = [0u8; 8];
            for (k, x) in b.iter_mut().enumerate() {
                *x = byte(t, off + 8 + k);
            }
            u64::from_be_bytes(b)
        };
        // PathRecord: DGID at 8, SGID at 24, DLID at 40, SLID at 42. An
        // end named by LID is that LID alone (any of its port's range);
        // one named by GID, or not named, is every LID of the port.
        let end = |lid_bit: u64, lid_off: usize, gid_bit: u64, gid_off: usize| {
            if m & lid_bit != 0 {
                let l = lid_at(lid_off);
                Some(
                    self.by_lid
                        .get(&l)
                        .map(|&r| (r, Some(l)))
                        .into_iter()
                        .collect(),
                )
            } else if m & gid_bit != 0 {
                Some(
                    self.by_guid
                        .get(&guid_at(gid_off))
                        .map(|&r| (r, None))
                        .into_iter()
                        .collect(),
                )
            } else {
                None
            }
        };
        let all: Vec<(PortRef, Option<u16>)> = self.lids.iter().map(|&(_, r)| (r, None)).collect();
        let src: Option<Vec<_>> = end(PathRecord::COMP_SLID, 42, PathRecord::COMP_SGID, 24);
        let dst: Option<Vec<_>> = end(PathRecord::COMP_DLID, 40, PathRecord::COMP_DGID, 8);
        let capped = src.is_none() && dst.is_none();
        let src = src.unwrap_or_else(|| all.clone());
        let dst = dst.unwrap_or(all);
        let service_id = if m & PathRecord::COMP_SERVICE_ID != 0 {
            let mut b = [0u8; 8];
            for (k, x) in b.iter_mut().enumerate() {
                *x = byte(t, k);
            }
            u64::from_be_bytes(b)
        } else {
            0
        };
        // P_Key at 50.
        let want_pkey = (m & PathRecord::COMP_PKEY != 0)
            .then(|| u16::from_be_bytes([byte(t, 50), byte(t, 51)]));
        // PathRecord SL: byte 53, low nibble.
        let want_sl = (m & PathRecord::COMP_SL != 0).then(|| byte(t, 53) & 0x0F);
        let mut out = Vec::new();
        'outer: for &(s, s_lid) in &src {
            for &(d, d_lid) in &dst {
                let Some(pkey) = self.path_pkey(s, d, want_pkey) else {
                    continue;
                };
                for (slid, dlid) in self.lid_pairs(s, s_lid, d, d_lid) {
                    if capped && out.len() >= MAX_ALL_PAIRS_PATHS {
                        break 'outer;
                    }
                    let Some((_, mtu, rate, drops)) = self.route_to(s, d, dlid) else {
                        continue;
                    };
                    // OpenSM's choice of SL: the one asked for, else the
                    // partition's (the default partition's is 0); with QoS
                    // on, one dropped (VL 15) on the way gets no record.
                    let sl = want_sl.unwrap_or(0);
                    if !drops & (1 << sl) == 0 {
                        continue;
                    }
                    push(
                        &mut out,
                        &PathRecord {
                            service_id,
                            dgid: self.gid(d),
                            sgid: self.gid(s),
                            dlid,
                            slid,
                            reversible: true,
                            numb_path: 0,
                            pkey,
                            sl,
                            mtu_selector: Selector::EXACTLY,
                            mtu,
                            rate_selector: Selector::EXACTLY,
                            rate,
                            packet_life_time_selector: Selector::EXACTLY,
                            packet_life_time: PACKET_LIFE_TIME,
                            ..PathRecord::default()
                        },
                    );
                }
            }
        }
        out
    }

    /// The (SLID, DLID) pairs between ports `s` and `d`, an end fixed to
    /// one LID where the query named it, else over its port's range, as
    /// OpenSM's SA lists them: first the pairs of the same place in both
    /// ranges (the LIDs of one path-bits value), then every other pair.
    fn lid_pairs(
        &self,
        s: PortRef,
        s_lid: Option<u16>,
        d: PortRef,
        d_lid: Option<u16>,
    ) -> Vec<(u16, u16)> {
        let range = |r: PortRef, fixed: Option<u16>| -> Vec<u16> {
            if let Some(l) = fixed {
                return vec![l];
            }
            let base = self.record_lid(r.0, r.1);
            let count = self
                .subnet
                .nodes()
                .get(r.0)
                .and_then(|n| n.port(r.1))
                .filter(|_| !self.subnet.nodes()[r.0].is_switch())
                .map_or(1, |p| 1u32 << p.lmc.min(crate::MAX_LMC));
            (0..count)
                .filter_map(|k| u16::try_from(u32::from(base) + k).ok())
                .collect()
        };
        let (ss, ds) = (range(s, s_lid), range(d, d_lid));
        let mut v: Vec<(u16, u16)> = ss.iter().copied().zip(ds.iter().copied()).collect();
        for (i, &a) in ss.iter().enumerate() {
            for (j, &b) in ds.iter().enumerate() {
                if i != j {
                    v.push((a, b));
                }
            }
        }
        v
    }
}

pub(super) fn push<R: Repr>(out: &mut Vec<Vec<u8>>, r: &R) {
    if let Ok(v) = r.to_vec() {
        out.push(v);
    }
}

/// A link's data rate in tenths of Gb/s from its active width and speed.
pub(super) fn link_gbps_tenths(pi: &PortInfo) -> u32 {
    let lanes = match pi.link_width_active {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        16 => 2,
        _ => 1,
    };
    let lane = match pi.link_speed_ext_active {
        1 => 140,
        2 => 250,
        4 => 500,
        _ => match pi.link_speed_active {
            2 => 50,
            4 => 100,
            _ => 25,
        },
    };
    lanes * lane
}

/// The IBA rate code of the fastest standard rate at most `tenths`/10
/// Gb/s (3 = 10 Gb/s when nothing was seen).
pub(super) fn rate_code(tenths: u32) -> u8 {
    const RATES: [(u32, u8); 21] = [
        (25, 2),
        (50, 5),
        (100, 3),
        (140, 11),
        (200, 6),
        (250, 15),
        (280, 19),
        (300, 4),
        (400, 7),
        (500, 20),
        (560, 12),
        (600, 8),
        (800, 9),
        (1000, 16),
        (1120, 13),
        (1200, 10),
        (1680, 14),
        (2000, 17),
        (3000, 18),
        (4000, 21),
        (6000, 22),
    ];
    if tenths == u32::MAX {
        return 3;
    }
    RATES
        .iter()
        .rev()
        .find(|(r, _)| *r <= tenths)
        .map_or(2, |(_, c)| *c)
}
