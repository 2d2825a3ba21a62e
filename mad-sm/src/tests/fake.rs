//! A small scripted subnet for SM-lite's unit tests: switches and CAs
//! joined by links, with an SMA on every node that answers directed-route
//! SMPs the way ibsim's does (same port-state rules), plus a record of
//! everything an SM must never do ("violations").

use mad_core::transport::Address;
use mad_core::wire::attr::{
    LinearFwdTable, NodeDescription, NodeInfo, NodeType, Notice, PhysPortState, PortInfo,
    PortState, SwitchInfo,
};
use mad_core::wire::smp::{Smp, DR_DIRECTION_BIT};
use mad_core::wire::{AttributeId, MadStatus, Method, MgmtClass, Repr, MAD_LEN};
use mad_testkit_wire::{header, MadBuilder};

/// Status for a refused Set (invalid attribute or modifier).
const INVALID: u16 = MadStatus::INVALID_FIELD.0;

#[derive(Debug, Clone)]
pub struct FPort {
    pub remote: Option<(usize, u8)>,
    pub phys: PhysPortState,
    pub state: PortState,
    pub lid: u16,
    pub smlid: u16,
    pub lmc: u8,
    pub timeout: u8,
    pub gid_prefix: u64,
    pub m_key: u64,
    pub op_vls: u8,
    pub vl_high_limit: u8,
    /// M_KeyProtectBits and M_KeyLeasePeriod as set.
    pub mkey_protect: u8,
    pub mkey_lease: u16,
    /// SMPs refused for a wrong M_Key (M_KeyViolations).
    pub mkey_violations: u16,
    /// VLArbitration blocks written (block 1-4 → data).
    pub vlarb: std::collections::BTreeMap<u32, [u8; 64]>,
}

impl Default for FPort {
    fn default() -> Self {
        Self {
            remote: None,
            phys: PhysPortState::POLLING,
            state: PortState::DOWN,
            lid: 0,
            smlid: 0,
            lmc: 0,
            timeout: 0,
            gid_prefix: 0,
            m_key: 0,
            op_vls: 4,
            vl_high_limit: 0,
            mkey_protect: 0,
            mkey_lease: 0,
            mkey_violations: 0,
            vlarb: std::collections::BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct FNode {
    pub guid: u64,
    pub switch: bool,
    pub desc: String,
    /// Index = port number; a CA's index 0 is unused.
    pub ports: Vec<FPort>,
    pub lft: Vec<u8>,
    pub fdb_top: u16,
    pub fdb_cap: u16,
    pub port_change: bool,
    /// SLtoVL tables written: (input port, output port) → table (a CA's
    /// under (0, 0)).
    pub sl2vl: std::collections::BTreeMap<(u8, u8), [u8; 8]>,
}

impl FNode {
    pub fn num_ports(&self) -> u8 {
        (self.ports.len() - 1) as u8
    }
    pub fn port_guid(&self, port: u8) -> u64 {
        if self.switch {
            self.guid
        } else {
            self.guid + u64::from(port)
        }
    }
}

#[derive(Debug, Clone)]
pub struct Fabric {
    pub nodes: Vec<FNode>,
    /// Where the SM is attached: (node, port); port 0 on a switch.
    pub sm_at: (usize, u8),
    /// Things an SM must not do, with what happened.
    pub violations: Vec<String>,
    /// Value written into TID bits 48-63 of every request (as ibsim does).
    pub tid_hi: u16,
    /// LID-routed SMPs the SM sent (TrapRepress, SMInfo answers).
    pub lid_routed: Vec<(Vec<u8>, Address)>,
    /// Sets received, by attribute.
    pub sets: Vec<(AttributeId, usize, u32)>,
    /// Every SMP the SMA answered.
    pub answered: usize,
    /// Ports where an SM runs (IsSM in their CapabilityMask): a CA
    /// port, or a switch's port 0.
    pub sm_ports: Vec<(usize, u8)>,
    /// PortInfo Sets with ClientReregister, by (node, port).
    pub rereg: Vec<(usize, u8)>,
}

impl Fabric {
    pub fn new() -> Self {
        Self {
            nodes: Vec::new(),
            sm_at: (0, 0),
            violations: Vec::new(),
            tid_hi: 0xBEEF,
            lid_routed: Vec::new(),
            sets: Vec::new(),
            answered: 0,
            sm_ports: Vec::new(),
            rereg: Vec::new(),
        }
    }

    fn add(&mut self, switch: bool, desc: &str, nports: u8) -> usize {
        let i = self.nodes.len();
        let base = if switch {
            0x0008_f104_0000_0000
        } else {
            0x0002_c903_0000_0000
        };
        let mut ports = vec![FPort::default(); usize::from(nports) + 1];
        if switch {
            // Port 0 is always up and Active (ibsim's "SMA port").
            ports[0].phys = PhysPortState::LINK_UP;
            ports[0].state = PortState::ACTIVE;
        }
        self.nodes.push(FNode {
            guid: base + ((i as u64 + 1) << 8),
            switch,
            desc: desc.to_owned(),
            ports,
            lft: Vec::new(),
            fdb_top: 0,
            fdb_cap: if switch { 0xC000 } else { 0 },
            port_change: false,
            sl2vl: std::collections::BTreeMap::new(),
        });
        i
    }

    pub fn switch(&mut self, desc: &str, nports: u8) -> usize {
        self.add(true, desc, nports)
    }

    pub fn ca(&mut self, desc: &str, nports: u8) -> usize {
        self.add(false, desc, nports)
    }

    /// Cables `a:pa` to `b:pb`: both ends LinkUp / Initialize.
    pub fn link(&mut self, a: usize, pa: u8, b: usize, pb: u8) {
        for (n, p, r) in [(a, pa, (b, pb)), (b, pb, (a, pa))] {
            let port = &mut self.nodes[n].ports[usize::from(p)];
            assert!(port.remote.is_none(), "port {n}:{p} cabled twice");
            port.remote = Some(r);
            port.phys = PhysPortState::LINK_UP;
            port.state = PortState::INIT;
        }
    }

    /// ibsim's `net` example: two 8-port switches with two parallel
    /// links, Hca1 port 1 on Switch1 port 1, Hca2 port 2 on Switch1 port
    /// 2; the SM on Switch1.
    pub fn ibsim_net() -> Self {
        let mut f = Self::new();
        let s1 = f.switch("Switch1", 8);
        let s2 = f.switch("Switch2", 8);
        let h1 = f.ca("Hca1", 2);
        let h2 = f.ca("Hca2", 2);
        f.link(s1, 1, h1, 1);
        f.link(s1, 2, h2, 2);
        f.link(s1, 3, s2, 3);
        f.link(s1, 4, s2, 4);
        f.sm_at = (s1, 0);
        f
    }

    /// A two-level fat tree; the SM on the first CA (as the generated
    /// topology files put an HCA first).
    pub fn fat_tree(leaves: usize, spines: usize, hosts: usize) -> Self {
        let mut f = Self::new();
        let mut cas = Vec::new();
        for l in 0..leaves {
            for h in 0..hosts {
                cas.push((f.ca(&format!("H{l}-{h}"), 1), l, h));
            }
        }
        let radix = (hosts + spines) as u8;
        let leaf: Vec<usize> = (0..leaves)
            .map(|l| f.switch(&format!("L{l}"), radix))
            .collect();
        let spine: Vec<usize> = (0..spines)
            .map(|s| f.switch(&format!("S{s}"), leaves as u8))
            .collect();
        for (ca, l, h) in cas {
            f.link(ca, 1, leaf[l], h as u8 + 1);
        }
        for (l, &ln) in leaf.iter().enumerate() {
            for (s, &sn) in spine.iter().enumerate() {
                f.link(ln, (hosts + s) as u8 + 1, sn, l as u8 + 1);
            }
        }
        f.sm_at = (0, 1);
        f
    }

    /// `n` switches in a ring, each with `hosts` CAs; the SM on switch 0.
    pub fn ring(n: usize, hosts: usize) -> Self {
        let mut f = Self::new();
        let radix = hosts as u8 + 2;
        let sw: Vec<usize> = (0..n).map(|k| f.switch(&format!("R{k}"), radix)).collect();
        for k in 0..n {
            f.link(sw[k], 1, sw[(k + 1) % n], 2);
            for h in 0..hosts {
                let c = f.ca(&format!("R{k}H{h}"), 1);
                f.link(sw[k], h as u8 + 3, c, 1);
            }
        }
        f.sm_at = (sw[0], 0);
        f
    }

    /// Takes the link at `n:p` down (`up` false) or brings it back
    /// (`up` true, to a port that was cabled before). Returns the Trap
    /// 128 each switch end sends to its SM (with a LID and SM LID), as
    /// (MAD, source address).
    pub fn set_link(&mut self, n: usize, p: u8, up: bool) -> Vec<(Vec<u8>, Address)> {
        let r = self.nodes[n].ports[usize::from(p)]
            .remote
            .expect("a cabled port");
        let mut traps = Vec::new();
        for (node, port) in [(n, p), r] {
            {
                let fp = &mut self.nodes[node].ports[usize::from(port)];
                if up {
                    fp.phys = PhysPortState::LINK_UP;
                    fp.state = PortState::INIT;
                } else {
                    fp.phys = PhysPortState::POLLING;
                    fp.state = PortState::DOWN;
                }
            }
            let nd = &mut self.nodes[node];
            if nd.switch {
                nd.port_change = true;
                let lid = nd.ports[0].lid;
                if lid != 0 && nd.ports[0].smlid != 0 {
                    traps.push((trap128(lid), Address::smi(lid)));
                }
            }
        }
        traps
    }

    fn port_info(&self, n: usize, p: u8, in_port: u8) -> PortInfo {
        let node = &self.nodes[n];
        let fp = &node.ports[usize::from(p)];
        PortInfo {
            m_key: fp.m_key,
            m_key_protect_bits: fp.mkey_protect,
            m_key_lease_period: fp.mkey_lease,
            m_key_violations: fp.mkey_violations,
            gid_prefix: fp.gid_prefix,
            lid: fp.lid,
            master_sm_lid: fp.smlid,
            capability_mask: if node.switch {
                0x0010_0848
            } else {
                0x0251_0a68
            } | if self.sm_ports.contains(&(n, p)) {
                mad_core::wire::attr::port_cap::IS_SM
            } else {
                0
            },
            local_port_num: if node.switch { in_port } else { p },
            link_width_enabled: 3,
            link_width_supported: 3,
            link_width_active: 2,
            link_speed_supported: 1,
            port_state: fp.state,
            port_phys_state: fp.phys,
            link_down_default_state: 2,
            lmc: fp.lmc,
            link_speed_active: 1,
            link_speed_enabled: 1,
            neighbor_mtu: 4,
            vl_cap: 4,
            mtu_cap: 4,
            operational_vls: fp.op_vls,
            vl_high_limit: fp.vl_high_limit,
            vl_arb_high_cap: 8,
            vl_arb_low_cap: 8,
            subnet_timeout: fp.timeout,
            ..PortInfo::default()
        }
    }

    /// Delivers an SMP the SM sent from its port; returns the answer the
    /// SM gets back, if any.
    pub fn deliver(&mut self, mad: &[u8], to: &Address) -> Option<Vec<u8>> {
        self.deliver_from(self.sm_at, mad, to)
    }

    /// Where a directed-route SMP sent from `from` ends: the node and
    /// the port it entered by (None: lost on the way).
    pub fn dr_target(&self, from: (usize, u8), mad: &[u8]) -> Option<(usize, u8)> {
        let smp = Smp::new_checked(mad).ok()?;
        let (mut node, mut port) = from;
        for h in 1..=smp.hop_cnt() {
            let egress = smp.initial_path()[usize::from(h)];
            let nd = &self.nodes[node];
            if !nd.switch && (h > 1 || egress != port) {
                return None;
            }
            let fp = nd.ports.get(usize::from(egress))?;
            if egress == 0 || fp.phys != PhysPortState::LINK_UP {
                return None;
            }
            (node, port) = fp.remote?;
        }
        Some((node, port))
    }

    /// [`Fabric::deliver`] for an SMP sent from `from` (an SM's port).
    pub fn deliver_from(&mut self, from: (usize, u8), mad: &[u8], to: &Address) -> Option<Vec<u8>> {
        let smp = Smp::new_checked(mad).ok()?;
        if smp.mgmt_class() == MgmtClass::SUBN_LID_ROUTED {
            self.lid_routed.push((mad.to_vec(), *to));
            return None;
        }
        if smp.mgmt_class() != MgmtClass::SUBN_DIRECTED_ROUTE || smp.response_bit() {
            self.violations
                .push(format!("unexpected SMP class {:?}", smp.mgmt_class()));
            return None;
        }
        if smp.dr_slid() != 0xFFFF || smp.dr_dlid() != 0xFFFF || smp.hop_ptr() != 0 {
            self.violations.push("DR SMP with LID-routed parts".into());
            return None;
        }
        let (node, port) = self.dr_target(from, mad)?;
        // IBA 14.2.4: with a port M_Key set, a Set with another key, and
        // a Get at protection level 2 or 3, are dropped and counted.
        let mgmt = if self.nodes[node].switch { 0 } else { port };
        let fp = &mut self.nodes[node].ports[usize::from(mgmt)];
        if fp.m_key != 0
            && smp.m_key() != fp.m_key
            && (smp.method() == Method::SET || fp.mkey_protect >= 2)
        {
            fp.mkey_violations = fp.mkey_violations.saturating_add(1);
            return None;
        }
        let mut rep = mad.to_vec();
        rep.resize(MAD_LEN, 0);
        let tid = (smp.tid() & ((1 << 48) - 1)) | (u64::from(self.tid_hi) << 48);
        let mut data = [0u8; 64];
        data.copy_from_slice(smp.data());
        let status = self.sma(
            node,
            port,
            smp.method(),
            smp.attr_id(),
            smp.attr_mod(),
            &mut data,
        );
        header::edit(&mut rep, |h| {
            h.tid = tid;
            h.method = Method::GET;
            h.response = true;
            h.status = MadStatus(DR_DIRECTION_BIT | status);
        });
        rep[64..128].copy_from_slice(&data);
        self.answered += 1;
        Some(rep)
    }

    fn sma(
        &mut self,
        n: usize,
        in_port: u8,
        method: Method,
        attr: AttributeId,
        attr_mod: u32,
        data: &mut [u8; 64],
    ) -> u16 {
        let set = method == Method::SET;
        if method != Method::GET && !set {
            return MadStatus::METHOD_UNSUPPORTED.0;
        }
        if set {
            self.sets.push((attr, n, attr_mod));
        }
        let is_switch = self.nodes[n].switch;
        match attr {
            AttributeId::NODE_INFO if !set => {
                let nd = &self.nodes[n];
                let ni = NodeInfo {
                    base_version: 1,
                    class_version: 1,
                    node_type: if nd.switch {
                        NodeType::SWITCH
                    } else {
                        NodeType::CA
                    },
                    num_ports: nd.num_ports(),
                    system_image_guid: nd.guid,
                    node_guid: nd.guid,
                    port_guid: nd.port_guid(in_port),
                    partition_cap: 64,
                    device_id: 0xb924,
                    revision: 0,
                    local_port_num: in_port,
                    vendor_id: 0x0002c9,
                };
                put(data, &ni);
                0
            }
            AttributeId::NODE_DESC if !set => {
                put(data, &NodeDescription::from_text(&self.nodes[n].desc));
                0
            }
            AttributeId::PORT_INFO => {
                let mut p = (attr_mod & 0xFF) as u8;
                if !is_switch && p == 0 {
                    p = in_port;
                }
                if p > self.nodes[n].num_ports() {
                    return INVALID;
                }
                if set {
                    if !is_switch && p != in_port {
                        self.violations.push(format!(
                            "PortInfo Set of CA {n} port {p} via port {in_port}"
                        ));
                        return INVALID;
                    }
                    let Ok(want) = PortInfo::parse(&data[..]) else {
                        return INVALID;
                    };
                    if let Err(v) = self.setport_info(n, p, &want) {
                        self.violations.push(v);
                        return INVALID;
                    }
                    if want.client_reregister {
                        self.rereg.push((n, p));
                    }
                }
                put(data, &self.port_info(n, p, in_port));
                0
            }
            AttributeId::SWITCH_INFO if is_switch => {
                let nd = &mut self.nodes[n];
                if set {
                    let Ok(want) = SwitchInfo::parse(&data[..]) else {
                        return INVALID;
                    };
                    if want.linear_fdb_top >= nd.fdb_cap {
                        return INVALID;
                    }
                    nd.fdb_top = want.linear_fdb_top;
                    if want.port_state_change {
                        nd.port_change = false;
                    }
                }
                let si = SwitchInfo {
                    linear_fdb_cap: nd.fdb_cap,
                    multicast_fdb_cap: 1024,
                    linear_fdb_top: nd.fdb_top,
                    default_port: 0,
                    life_time_value: 18,
                    port_state_change: nd.port_change,
                    lids_per_port: 1,
                    partition_enforcement_cap: 32,
                    ..SwitchInfo::default()
                };
                put(data, &si);
                0
            }
            AttributeId::LINEAR_FWD_TABLE if is_switch => {
                let nd = &mut self.nodes[n];
                let start = attr_mod as usize * LinearFwdTable::ENTRIES;
                if start >= usize::from(nd.fdb_cap) {
                    return INVALID;
                }
                if nd.lft.len() < start + 64 {
                    nd.lft.resize(start + 64, 0xFF);
                }
                if set {
                    nd.lft[start..start + 64].copy_from_slice(&data[..]);
                }
                data.copy_from_slice(&nd.lft[start..start + 64]);
                0
            }
            AttributeId::SL_TO_VL_TABLE => {
                let nports = self.nodes[n].num_ports();
                let (i, o) = if is_switch {
                    (((attr_mod >> 8) & 0xFF) as u8, (attr_mod & 0xFF) as u8)
                } else {
                    (0, 0)
                };
                if i > nports || o > nports {
                    return INVALID;
                }
                let nd = &mut self.nodes[n];
                if set {
                    let mut t = [0u8; 8];
                    t.copy_from_slice(&data[..8]);
                    nd.sl2vl.insert((i, o), t);
                }
                let t = nd.sl2vl.get(&(i, o)).copied().unwrap_or_default();
                data.fill(0);
                data[..8].copy_from_slice(&t);
                0
            }
            AttributeId::VL_ARB_TABLE => {
                let port = if is_switch {
                    (attr_mod & 0xFFFF) as u8
                } else {
                    in_port
                };
                let block = attr_mod >> 16;
                // Capacity 8: only the first block of each table.
                if port > self.nodes[n].num_ports() || !matches!(block, 1 | 3) {
                    return INVALID;
                }
                let fp = &mut self.nodes[n].ports[usize::from(port)];
                if set {
                    fp.vlarb.insert(block, *data);
                }
                *data = fp.vlarb.get(&block).copied().unwrap_or([0; 64]);
                0
            }
            _ => MadStatus::METHOD_ATTR_UNSUPPORTED.0,
        }
    }

    /// PortInfo Set with ibsim's (and IBA's) state rules; an error is a
    /// violation.
    fn setport_info(&mut self, n: usize, p: u8, want: &PortInfo) -> Result<(), String> {
        let node = &self.nodes[n];
        let cur = node.ports[usize::from(p)].clone();
        let who = format!("{} port {p}", node.desc);
        if want.port_phys_state != PhysPortState::NO_CHANGE {
            return Err(format!(
                "{who}: PortPhysicalState written ({})",
                want.port_phys_state
            ));
        }
        if want.link_width_enabled != 0 || want.link_speed_enabled != 0 {
            return Err(format!("{who}: link width/speed changed"));
        }
        if want.operational_vls > 4 {
            return Err(format!(
                "{who}: OperVLs {} above VLCap",
                want.operational_vls
            ));
        }
        let remote_state = cur
            .remote
            .map(|(rn, rp)| self.nodes[rn].ports[usize::from(rp)].state);
        let port0 = node.switch && p == 0;
        let is_switch = node.switch;
        let new_state = match want.port_state {
            PortState::NO_CHANGE => cur.state,
            s if port0 => return Err(format!("{who}: state {s} set on switch port 0")),
            PortState::ARMED => {
                if cur.state != PortState::INIT || cur.phys != PhysPortState::LINK_UP {
                    return Err(format!("{who}: Armed from {}", cur.state));
                }
                PortState::ARMED
            }
            PortState::ACTIVE => {
                if cur.state != PortState::ARMED {
                    return Err(format!("{who}: Active from {}", cur.state));
                }
                if !matches!(remote_state, Some(PortState::ARMED | PortState::ACTIVE)) {
                    return Err(format!(
                        "{who}: Active while the neighbour is {remote_state:?}"
                    ));
                }
                PortState::ACTIVE
            }
            s => return Err(format!("{who}: state {s} set")),
        };
        let fp = &mut self.nodes[n].ports[usize::from(p)];
        if port0 || !is_switch {
            fp.lid = want.lid;
            fp.smlid = want.master_sm_lid;
            fp.lmc = want.lmc;
            fp.timeout = want.subnet_timeout;
            fp.gid_prefix = want.gid_prefix;
            fp.m_key = want.m_key;
            fp.mkey_protect = want.m_key_protect_bits;
            fp.mkey_lease = want.m_key_lease_period;
        }
        fp.op_vls = want.operational_vls;
        fp.vl_high_limit = want.vl_high_limit;
        fp.state = new_state;
        Ok(())
    }

    // ---- checks ----

    /// Follows LID routing from `n:p` (a CA port) to `dlid`; returns the
    /// number of links crossed.
    pub fn lid_route(&self, n: usize, p: u8, dlid: u16) -> Result<usize, String> {
        self.lid_path(n, p, dlid).map(|v| v.len())
    }

    /// The switch (node, egress port) hops of LID routing from `n:p` (a
    /// CA port) to `dlid`, which the reached port must hold (any LID of
    /// its LMC range); the last entry is the port reached.
    pub fn lid_path(&self, n: usize, p: u8, dlid: u16) -> Result<Vec<(usize, u8)>, String> {
        let holds = |fp: &FPort| {
            fp.lid != 0
                && u32::from(dlid) >= u32::from(fp.lid)
                && u32::from(dlid) < u32::from(fp.lid) + (1u32 << fp.lmc.min(7))
        };
        let src = &self.nodes[n].ports[usize::from(p)];
        if holds(src) {
            return Ok(Vec::new());
        }
        let mut path = Vec::new();
        if src.state != PortState::ACTIVE {
            return Err(format!("source {n}:{p} not Active"));
        }
        let (mut node, mut port) = src.remote.ok_or("source not cabled")?;
        for _ in 1..=64 {
            let nd = &self.nodes[node];
            if !nd.switch {
                path.push((node, port));
                return if holds(&nd.ports[usize::from(port)]) {
                    Ok(path)
                } else {
                    Err(format!("reached CA {} for LID {dlid}", nd.desc))
                };
            }
            if holds(&nd.ports[0]) {
                path.push((node, 0));
                return Ok(path);
            }
            if dlid > nd.fdb_top {
                return Err(format!(
                    "{}: LID {dlid} above LinearFDBTop {}",
                    nd.desc, nd.fdb_top
                ));
            }
            let out = *nd.lft.get(usize::from(dlid)).unwrap_or(&0xFF);
            if out == 0 || out > nd.num_ports() {
                return Err(format!("{}: LFT[{dlid}] = {out}", nd.desc));
            }
            let op = &nd.ports[usize::from(out)];
            if op.state != PortState::ACTIVE {
                return Err(format!("{}: port {out} not Active", nd.desc));
            }
            let (rn, rp) = op.remote.ok_or("LFT points at an uncabled port")?;
            path.push((node, out));
            if self.nodes[rn].ports[usize::from(rp)].state != PortState::ACTIVE {
                return Err(format!("{} port {rp} not Active", self.nodes[rn].desc));
            }
            (node, port) = (rn, rp);
        }
        Err(format!("LID {dlid}: loop"))
    }

    /// Fewest links from CA port `n:p` to the port holding `dlid`, by a
    /// breadth-first search over cabled, LinkUp links that forwards only
    /// through switches (independent of any LFT).
    pub fn shortest(&self, n: usize, p: u8, target: (usize, u8)) -> Option<usize> {
        use std::collections::VecDeque;
        if (n, p) == target {
            return Some(0);
        }
        let first = self.nodes[n].ports[usize::from(p)].remote?;
        let mut dist = vec![usize::MAX; self.nodes.len()];
        let mut q = VecDeque::new();
        // The target of a CA port is reached only through that port.
        let done = |node: usize, port: u8| -> bool {
            let nd = &self.nodes[node];
            if nd.switch {
                node == target.0
            } else {
                (node, port) == target
            }
        };
        if done(first.0, first.1) {
            return Some(1);
        }
        if !self.nodes[first.0].switch {
            return None;
        }
        dist[first.0] = 1;
        q.push_back(first.0);
        while let Some(u) = q.pop_front() {
            for (k, fp) in self.nodes[u].ports.iter().enumerate().skip(1) {
                let Some((v, vp)) = fp.remote else { continue };
                if fp.phys != PhysPortState::LINK_UP || k == 0 {
                    continue;
                }
                if done(v, vp) {
                    return Some(dist[u] + 1);
                }
                if self.nodes[v].switch && dist[v] == usize::MAX {
                    dist[v] = dist[u] + 1;
                    q.push_back(v);
                }
            }
        }
        None
    }
}

fn put<R: Repr>(data: &mut [u8; 64], r: &R) {
    data.fill(0);
    let b = r.to_vec().expect("emit");
    data[..b.len()].copy_from_slice(&b);
}

/// A LID-routed SubnTrap(Notice) for trap 128 from a switch with `lid`.
pub fn trap128(lid: u16) -> Vec<u8> {
    let mut m = MadBuilder::smp_get(AttributeId::NOTICE)
        .method(Method::TRAP)
        .tid(0x0000_1234_0000_0042)
        .to_vec();
    let mut n = Notice::generic(Notice::TYPE_URGENT, Notice::PRODUCER_SWITCH, 128);
    n.issuer_lid = lid;
    n.data_details[0..2].copy_from_slice(&lid.to_be_bytes());
    let b = n.to_vec().expect("emit");
    m[64..128].copy_from_slice(&b[..64]);
    m
}
