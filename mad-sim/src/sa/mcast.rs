//! Multicast group joins and leaves (MCMemberRecord Set / Delete).

use super::*;

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
        let group = mc.members.iter().find(|m| m.mgid == r.mgid).cloned();
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
        m.to_vec().map_err(|_| MadStatus::SA_REQ_INVALID.0)
    }
}
