//! PortInfo Set and what follows it: state commands, link bring-up and
//! take-down, and the widths and speeds both ends of a link agree on.

use super::*;

impl Core {
    /// Applies a Set(PortInfo) to `node`/`portnum`: every writable field,
    /// or nothing when one of them is invalid (status 0x1C).
    pub(super) fn port_info_set(&mut self, node: u32, portnum: u8, new: &PortInfo) -> u16 {
        let Some(n) = self.node(node) else {
            return INVALID;
        };
        let is_switch = n.is_switch();
        let Some(p) = n.port(portnum) else {
            return INVALID;
        };
        let old = p.info.clone();
        let remote = p.remote;
        let remote_info = remote
            .and_then(|(rn, rp)| self.node(rn).and_then(|n| n.port(rp)))
            .map(|r| r.info.clone());
        let mut i = old.clone();

        // Validated fields.
        let width_en = match new.link_width_enabled {
            0 => old.link_width_enabled,
            255 => old.link_width_supported,
            w if w & !old.link_width_supported == 0 => w,
            _ => return INVALID,
        };
        let speed_en = match new.link_speed_enabled {
            0 => old.link_speed_enabled,
            15 => old.link_speed_supported,
            s if s & !old.link_speed_supported == 0 => s,
            _ => return INVALID,
        };
        let ext_en = match new.link_speed_ext_enabled {
            0 => old.link_speed_ext_enabled,
            30 => 0,
            31 => p.speed_ext_capable,
            e if e & !p.speed_ext_capable == 0 => e,
            _ => return INVALID,
        };
        if new.neighbor_mtu > old.mtu_cap || new.operational_vls > old.vl_cap {
            return INVALID;
        }
        if new.link_down_default_state > 2 {
            return INVALID;
        }
        let cmd = match state_command(new, &old, is_switch && portnum == 0, remote_info.as_ref()) {
            Some(c) => c,
            None => return INVALID,
        };
        // The link's active width and speed, if it runs.
        let relink = width_en != old.link_width_enabled
            || speed_en != old.link_speed_enabled
            || ext_en != old.link_speed_ext_enabled;
        if relink {
            if let Some(r) = &remote_info {
                if width_en & r.link_width_enabled == 0 || speed_en & r.link_speed_enabled == 0 {
                    return INVALID;
                }
            }
        }

        // Plain writable fields.
        i.m_key = new.m_key;
        i.gid_prefix = new.gid_prefix;
        i.lid = new.lid;
        i.master_sm_lid = new.master_sm_lid;
        i.m_key_lease_period = new.m_key_lease_period;
        i.m_key_protect_bits = new.m_key_protect_bits;
        i.lmc = new.lmc;
        i.master_sm_sl = new.master_sm_sl;
        i.vl_high_limit = new.vl_high_limit;
        i.init_type_reply = new.init_type_reply;
        i.vl_stall_count = new.vl_stall_count;
        i.hoq_life = new.hoq_life;
        i.partition_enforcement_inbound = new.partition_enforcement_inbound;
        i.partition_enforcement_outbound = new.partition_enforcement_outbound;
        i.filter_raw_inbound = new.filter_raw_inbound;
        i.filter_raw_outbound = new.filter_raw_outbound;
        i.m_key_violations = new.m_key_violations;
        i.p_key_violations = new.p_key_violations;
        i.q_key_violations = new.q_key_violations;
        i.mcast_pkey_trap_suppression_enabled = new.mcast_pkey_trap_suppression_enabled;
        i.subnet_timeout = new.subnet_timeout;
        i.local_phy_errors = new.local_phy_errors;
        i.overrun_errors = new.overrun_errors;
        if new.neighbor_mtu != 0 {
            i.neighbor_mtu = new.neighbor_mtu;
        }
        if new.operational_vls != 0 {
            i.operational_vls = new.operational_vls;
        }
        if new.link_down_default_state != 0 {
            i.link_down_default_state = new.link_down_default_state;
        }
        i.link_width_enabled = width_en;
        i.link_speed_enabled = speed_en;
        i.link_speed_ext_enabled = ext_en;
        // ClientReregister is an action, reported back as 0.
        i.client_reregister = false;
        if let Some(p) = self.port_mut(node, portnum) {
            p.info = i.clone();
        }
        self.port_events(node, portnum, &old, &i);
        if relink {
            if let Some((rn, rp)) = remote {
                self.recompute_link((node, portnum), (rn, rp));
            }
        }
        match cmd {
            StateCmd::None => {}
            StateCmd::Down(phys) => self.link_down_cmd(node, portnum, phys),
            StateCmd::Armed | StateCmd::Active => {
                let st = if cmd == StateCmd::Armed {
                    PortState::ARMED
                } else {
                    PortState::ACTIVE
                };
                let before = i.clone();
                i.port_state = st;
                if let Some(p) = self.port_mut(node, portnum) {
                    p.info.port_state = st;
                }
                self.port_events(node, portnum, &before, &i);
            }
        }
        if new.client_reregister {
            self.port_event(node, portnum, AsyncEvent::ClientReregister);
        }
        OK
    }

    /// Sets both ends' active width and speeds from what they enable.
    pub(crate) fn recompute_link(&mut self, a: (u32, u8), b: (u32, u8)) {
        let get = |c: &Core, (n, p): (u32, u8)| {
            c.node(n).and_then(|x| x.port(p)).map(|p| {
                (
                    p.info.link_width_enabled,
                    p.info.link_speed_enabled,
                    p.info.link_speed_ext_enabled,
                )
            })
        };
        let (Some(ea), Some(eb)) = (get(self, a), get(self, b)) else {
            return;
        };
        let w = best(
            ea.0 & eb.0,
            &[width::W12X, width::W8X, width::W4X, width::W2X, width::W1X],
        );
        let s = best(ea.1 & eb.1, &[speed::QDR, speed::DDR, speed::SDR]);
        let e = best(
            ea.2 & eb.2,
            &[speed::EXT_HDR, speed::EXT_EDR, speed::EXT_FDR],
        );
        for (n, p) in [a, b] {
            if let Some(port) = self.port_mut(n, p) {
                if let Some(w) = w {
                    port.info.link_width_active = w;
                }
                if let Some(s) = s {
                    port.info.link_speed_active = s;
                }
                // As ibsim: LinkSpeedExtSupported reads 0 while no
                // extended speed is active.
                port.info.link_speed_ext_active = e.unwrap_or(0);
                port.info.link_speed_ext_supported = if e.is_some() { speed::EXT_ALL } else { 0 };
            }
        }
    }

    /// PortState Down (with PortPhysicalState `phys`): 0 or 2 retrain the
    /// link (both ends come back in Init), 1 / 3 put this port to sleep /
    /// disable it (the other end goes Down / Polling).
    pub(super) fn link_down_cmd(&mut self, node: u32, port: u8, phys: u8) {
        let Some(p) = self.node(node).and_then(|n| n.port(port)) else {
            return;
        };
        let remote = p.remote;
        let plugged = !p.unplugged;
        let was_up = p.info.port_phys_state == PhysPortState::LINK_UP;
        match phys {
            1 | 3 => {
                let ps = if phys == 1 {
                    PhysPortState::SLEEP
                } else {
                    PhysPortState::DISABLED
                };
                self.set_port_link(node, port, PortState::DOWN, ps, was_up);
                if was_up {
                    self.mark_state_change(node);
                }
                if let Some((rn, rp)) = remote.filter(|_| was_up) {
                    self.set_port_link(rn, rp, PortState::DOWN, PhysPortState::POLLING, true);
                    self.mark_state_change(rn);
                }
            }
            _ => {
                let remote_ready = remote
                    .and_then(|(rn, rp)| self.node(rn).and_then(|n| n.port(rp)))
                    .is_some_and(|r| {
                        r.info.port_phys_state == PhysPortState::LINK_UP
                            || r.info.port_phys_state == PhysPortState::POLLING
                    });
                match remote.filter(|_| remote_ready && plugged) {
                    Some((rn, rp)) => {
                        self.set_port_link(
                            node,
                            port,
                            PortState::INIT,
                            PhysPortState::LINK_UP,
                            was_up,
                        );
                        self.set_port_link(rn, rp, PortState::INIT, PhysPortState::LINK_UP, was_up);
                        self.recompute_link((node, port), (rn, rp));
                        self.mark_state_change(node);
                        self.mark_state_change(rn);
                    }
                    None => {
                        self.set_port_link(
                            node,
                            port,
                            PortState::DOWN,
                            PhysPortState::POLLING,
                            was_up,
                        );
                    }
                }
            }
        }
    }

    /// Sets a port's logical and physical state (counting LinkDowned when
    /// a link that was up went down) and tells its endpoint.
    pub(crate) fn set_port_link(
        &mut self,
        node: u32,
        port: u8,
        state: PortState,
        phys: PhysPortState,
        was_up: bool,
    ) {
        let Some(p) = self.port_mut(node, port) else {
            return;
        };
        let old = p.info.clone();
        p.info.port_state = state;
        p.info.port_phys_state = phys;
        if was_up {
            p.counters.link_downed_counter = p.counters.link_downed_counter.saturating_add(1);
            p.counters_ext.link_downed_counter += 1;
        }
        let new = p.info.clone();
        self.port_events(node, port, &old, &new);
    }
}

/// Decodes the PortState / PortPhysicalState of a Set(PortInfo); `None`
/// when the request is invalid for the port's current state.
pub(super) fn state_command(
    new: &PortInfo,
    old: &PortInfo,
    switch_port0: bool,
    remote: Option<&PortInfo>,
) -> Option<StateCmd> {
    let r = new.port_state.0;
    let ps = new.port_phys_state.0;
    if r == PortState::INIT.0 || r > PortState::ACTIVE.0 || ps > PhysPortState::DISABLED.0 {
        return None;
    }
    if switch_port0 {
        // Port 0 of a switch is always up and Active.
        return Some(StateCmd::None);
    }
    if r == PortState::NO_CHANGE.0 && ps == 0 {
        return Some(StateCmd::None);
    }
    if r == PortState::DOWN.0 || r == PortState::NO_CHANGE.0 {
        return Some(StateCmd::Down(ps));
    }
    if ps != 0 {
        return None;
    }
    let up = old.port_phys_state == PhysPortState::LINK_UP;
    let rstate = remote.filter(|_| up).map(|r| r.port_state.0)?;
    let cur = old.port_state;
    if r == PortState::ARMED.0 {
        if (cur == PortState::INIT || cur == PortState::ARMED) && rstate >= PortState::INIT.0 {
            return Some(StateCmd::Armed);
        }
        return None;
    }
    // Active.
    if (cur == PortState::ARMED || cur == PortState::ACTIVE) && rstate >= PortState::ARMED.0 {
        return Some(StateCmd::Active);
    }
    None
}

pub(super) fn best(common: u8, order: &[u8]) -> Option<u8> {
    order.iter().copied().find(|b| common & b != 0)
}
