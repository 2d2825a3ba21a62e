//! Multicast groups: joins and leaves (MCMemberRecord Set / Delete),
//! the well-known groups that exist from the start, the records served,
//! and the groups handed to SM-lite ([`FabricSa::mc_groups`]).

use std::collections::BTreeMap;

use super::*;
use crate::mcast::{mft_blocks, MCAST_LID_BASE};
use crate::{mcast_tables, McGroup};
use mad_core::wire::attr::MulticastFwdTable;
use mad_core::wire::sa_records::MftRecord;

/// The IPoIB broadcast group's MGID for the default partition
/// (ff12:401b:ffff::ffff:ffff: link-local scope, P_Key 0xFFFF).
pub const IPOIB_BROADCAST_MGID: [u8; 16] = [
    0xFF, 0x12, 0x40, 0x1B, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF,
];
/// The IPoIB Q_Key.
pub const IPOIB_QKEY: u32 = 0x0B1B;

impl McStore {
    /// The groups OpenSM creates at start for the default partition: the
    /// IPoIB broadcast group at MLID 0xC000 (MTU 2048, 10 Gb/s, as
    /// OpenSM's defaults).
    pub(super) fn with_default_groups() -> Self {
        let bcast = McMemberRecord {
            mgid: IPOIB_BROADCAST_MGID,
            qkey: IPOIB_QKEY,
            mlid: MCAST_LID_BASE,
            mtu_selector: Selector::EXACTLY,
            mtu: 4,
            pkey: 0xFFFF,
            rate_selector: Selector::EXACTLY,
            rate: 3,
            packet_life_time_selector: Selector::EXACTLY,
            packet_life_time: PACKET_LIFE_TIME,
            scope: 2,
            ..McMemberRecord::default()
        };
        Self {
            well_known: vec![bcast],
            ..Self::default()
        }
    }

    /// Makes the groups the partitions ask for that do not exist yet
    /// (each a new MLID, as a join's).
    pub(super) fn add_partition_groups(&mut self, groups: &[crate::partitions::PartitionGroup]) {
        for g in groups {
            if self.group(&g.mgid).is_some() {
                continue;
            }
            if self.next_mlid == 0 {
                self.next_mlid = 0xC001;
            }
            let mlid = self.next_mlid;
            self.next_mlid = self.next_mlid.saturating_add(1).min(0xFFFE);
            self.well_known.push(McMemberRecord {
                mgid: g.mgid,
                qkey: g.qkey,
                mlid,
                mtu_selector: Selector::EXACTLY,
                mtu: g.mtu,
                tclass: g.tclass,
                pkey: g.pkey,
                rate_selector: Selector::EXACTLY,
                rate: g.rate,
                packet_life_time_selector: Selector::EXACTLY,
                packet_life_time: PACKET_LIFE_TIME,
                sl: g.sl,
                flow_label: g.flow_label,
                scope: g.scope,
                ..McMemberRecord::default()
            });
            self.generation += 1;
        }
    }

    /// The group record of `mgid`: a member's, or a well-known group's.
    fn group(&self, mgid: &[u8; 16]) -> Option<McMemberRecord> {
        self.members
            .iter()
            .chain(&self.well_known)
            .find(|m| &m.mgid == mgid)
            .cloned()
    }
}

impl FabricSa {
    /// MCMemberRecord Set: join (creating the group for a new or zero
    /// MGID).
    pub(super) fn join(&self, q: &RecordQuery<'_>) -> Result<Vec<u8>, u16> {
        let mut r = McMemberRecord::parse(q.template).map_err(|_| MadStatus::SA_REQ_INVALID.0)?;
        if r.port_gid == [0u8; 16] || r.join_state == 0 {
            return Err(MadStatus::SA_REQ_INSUFFICIENT_COMPONENTS.0);
        }
        let mut mc = lock(&self.mcast);
        if mc.next_mlid == 0 {
            mc.next_mlid = 0xC001;
        }
        if r.mgid == [0u8; 16] {
            mc.next_mgid += 1;
            let mut g = [0u8; 16];
            g[..4].copy_from_slice(&[0xFF, 0x12, 0x40, 0x1B]);
            g[4..6].copy_from_slice(&[0xFF, 0xFF]);
            g[12..].copy_from_slice(&mc.next_mgid.to_be_bytes());
            r.mgid = g;
        }
        let group = mc.group(&r.mgid);
        // A member must be in the group's partition (OpenSM refuses the
        // join otherwise).
        let gpkey = group
            .as_ref()
            .map_or(if r.pkey == 0 { 0xFFFF } else { r.pkey }, |g| g.pkey);
        let mut guid = [0u8; 8];
        guid.copy_from_slice(&r.port_gid[8..]);
        if !self.view().may_join(u64::from_be_bytes(guid), gpkey) {
            return Err(MadStatus::SA_REQ_INVALID.0);
        }
        match group {
            Some(g) => {
                r.mlid = g.mlid;
                r.qkey = g.qkey;
                r.pkey = g.pkey;
                r.mtu_selector = g.mtu_selector;
                r.mtu = g.mtu;
                r.rate_selector = g.rate_selector;
                r.rate = g.rate;
                r.packet_life_time_selector = g.packet_life_time_selector;
                r.packet_life_time = g.packet_life_time;
                r.sl = g.sl;
                r.tclass = g.tclass;
                r.flow_label = g.flow_label;
                r.scope = g.scope;
            }
            None => {
                r.mlid = mc.next_mlid;
                mc.next_mlid = mc.next_mlid.saturating_add(1).min(0xFFFE);
                if r.pkey == 0 {
                    r.pkey = 0xFFFF;
                }
                r.mtu_selector = Selector::EXACTLY;
                r.mtu = 4;
                r.rate_selector = Selector::EXACTLY;
                r.rate = 3;
                r.packet_life_time_selector = Selector::EXACTLY;
                r.packet_life_time = PACKET_LIFE_TIME;
                r.scope = r.mgid[1] & 0x0F;
            }
        }
        match mc
            .members
            .iter_mut()
            .find(|m| m.mgid == r.mgid && m.port_gid == r.port_gid)
        {
            Some(m) => {
                m.join_state |= r.join_state;
                r = m.clone();
            }
            None => mc.members.push(r.clone()),
        }
        mc.generation += 1;
        r.to_vec().map_err(|_| MadStatus::SA_REQ_INVALID.0)
    }

    /// MCMemberRecord Delete: leave (the JoinState bits given).
    pub(super) fn leave(&self, q: &RecordQuery<'_>) -> Result<Vec<u8>, u16> {
        let r = McMemberRecord::parse(q.template).map_err(|_| MadStatus::SA_REQ_INVALID.0)?;
        let mut mc = lock(&self.mcast);
        let i = mc
            .members
            .iter()
            .position(|m| m.mgid == r.mgid && m.port_gid == r.port_gid)
            .ok_or(MadStatus::SA_REQ_INVALID.0)?;
        let leave = if r.join_state == 0 {
            0x0F
        } else {
            r.join_state
        };
        let mut m = mc.members[i].clone();
        m.join_state &= !leave;
        if m.join_state == 0 {
            mc.members.remove(i);
        } else {
            mc.members[i] = m.clone();
        }
        mc.generation += 1;
        m.to_vec().map_err(|_| MadStatus::SA_REQ_INVALID.0)
    }
}

impl FabricSa {
    /// MCMemberRecords: every member, then each well-known group without
    /// members once, with PortGID 0 and JoinState 0 (as OpenSM lists it);
    /// with partitions, only the groups of partitions the requester (the
    /// port with LID `requester`) is in, as OpenSM answers.
    pub(super) fn mc_records(&self, v: &SubnetView, requester: u16) -> Vec<Vec<u8>> {
        let mc = lock(&self.mcast);
        let empty = mc
            .well_known
            .iter()
            .filter(|g| !mc.members.iter().any(|m| m.mgid == g.mgid));
        let guid = v
            .port_by_lid(requester)
            .and_then(|(i, p)| v.subnet().nodes().get(i)?.port(p))
            .map_or(0, |p| p.guid);
        mc.members
            .iter()
            .chain(empty)
            .filter(|r| v.may_join(guid, r.pkey))
            .filter_map(|r| r.to_vec().ok())
            .collect()
    }

    /// Changes of membership so far: SM-lite reprograms when it moves.
    #[must_use]
    pub fn mc_generation(&self) -> u64 {
        lock(&self.mcast).generation
    }

    /// The groups with their members' port GUIDs, in MLID order (what
    /// SM-lite programs).
    #[must_use]
    pub fn mc_groups(&self) -> Vec<McGroup> {
        let mc = lock(&self.mcast);
        let mut groups: BTreeMap<u16, Vec<u64>> = BTreeMap::new();
        for m in &mc.members {
            let guid = u64::from_be_bytes(m.port_gid[8..].try_into().unwrap_or([0; 8]));
            groups.entry(m.mlid).or_default().push(guid);
        }
        groups
            .into_iter()
            .map(|(mlid, members)| McGroup { mlid, members })
            .collect()
    }

    /// MulticastForwardingTableRecords: the blocks in use of each switch
    /// (of the switch with LID `lid` only, when given), as SM-lite
    /// programs them.
    pub(super) fn mft_records(&self, v: &SubnetView, lid: Option<u16>) -> Vec<Vec<u8>> {
        let tables = mcast_tables(v.subnet(), &self.mc_groups());
        let mut out = Vec::new();
        for (i, masks) in &tables {
            let Some(n) = v.subnet().nodes().get(*i) else {
                continue;
            };
            let l = n.switch_lid();
            if l == 0 || lid.is_some_and(|x| x != l) {
                continue;
            }
            for ((block, position), masks) in mft_blocks(masks, n.info.num_ports) {
                records::push(
                    &mut out,
                    &MftRecord {
                        lid: l,
                        position,
                        block_num: block,
                        mft: MulticastFwdTable { masks },
                        ..MftRecord::default()
                    },
                );
            }
        }
        out
    }
}
