//! Light sweeps: while Master, every [`SmConfig::sweep_interval`],
//! SwitchInfo Get of every switch the last heavy sweep configured. A
//! switch that reports PortStateChange (a port of it changed state), a
//! LinearFDBTop other than SM-lite wrote (it was reset), or no answer
//! means the fabric changed: a heavy sweep follows. An unchanged fabric
//! costs one SMP per switch and no Set.
//!
//! With M_Key protection on ([`SmConfig::m_key_protect_bits`] above 0),
//! a light sweep also reads PortInfo of every LID-bearing port (CA ports,
//! switch port 0) with the key: that stops the lease timer a violation
//! started (as OpenSM's sweeps do, within `m_key_lease_period`), and a
//! port whose protection lapsed all the same (its lease ran out: IBA
//! 14.2.4.2 clears its protect bits) or that holds another M_Key makes a
//! heavy sweep, which programs it again.

use super::*;

impl SubnetManager {
    /// The light-sweep timer fired.
    pub(super) fn light_tick(&mut self, now: Instant) {
        self.light_at = None;
        if self.sm_state != SmState::MASTER {
            return;
        }
        if self.phase != Phase::Idle {
            // A sweep is running: look again one interval after it.
            self.schedule_light(now);
            return;
        }
        self.sweep = Sweep::default();
        self.phase = Phase::Light;
        let switches: Vec<(NodeIdx, DrPath)> = self
            .subnet
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| n.is_switch())
            .map(|(i, n)| (i, n.path.clone()))
            .collect();
        for (node, path) in switches {
            self.get(
                AttributeId::SWITCH_INFO,
                0,
                path,
                Kind::LightSwitchInfo { node },
            );
        }
        if self.cfg.m_key_protect_bits & 3 == 0 {
            return;
        }
        let ports: Vec<(u8, u64, DrPath)> = self
            .subnet
            .nodes()
            .iter()
            .flat_map(|n| {
                n.ports
                    .iter()
                    .flatten()
                    .filter(move |p| p.lid != 0 && (!n.is_switch() || p.num == 0))
                    .map(|p| (p.num, p.guid, p.path.clone()))
            })
            .collect();
        for (port, guid, path) in ports {
            self.get(
                AttributeId::PORT_INFO,
                u32::from(port),
                path,
                Kind::LightPortInfo { guid },
            );
        }
    }

    /// A light sweep's PortInfo answer of port `guid` (M_Key protection
    /// on): a port that holds another key or protection than it did after
    /// the last heavy sweep (its lease ran out), or did not answer, is a
    /// change. (What it held then, not the configuration: ibsim keeps no
    /// M_Key, and a sweep cannot change that.)
    pub(super) fn light_port_answer(&mut self, guid: u64, pi: Option<PortInfo>) {
        let same = pi.is_some_and(|pi| {
            self.mkey_held
                .get(&guid)
                .is_none_or(|&(k, b)| pi.m_key == k && pi.m_key_protect_bits == b)
        });
        if !same {
            self.sweep.changed = true;
        }
    }

    /// Arms the light-sweep timer (Master with a sweep interval).
    pub(super) fn schedule_light(&mut self, now: Instant) {
        self.light_at = self
            .cfg
            .sweep_interval
            .filter(|_| self.sm_state == SmState::MASTER)
            .map(|d| now + d);
    }

    /// A light sweep's SwitchInfo answer.
    pub(super) fn light_answer(&mut self, node: NodeIdx, si: Option<SwitchInfo>) {
        let guid = self.subnet.nodes().get(node).map_or(0, SmNode::guid);
        let same_top = |si: &SwitchInfo| {
            self.programmed
                .get(&guid)
                .is_some_and(|p| p.top == si.linear_fdb_top)
        };
        match si {
            Some(si) if !si.port_state_change && same_top(&si) => {}
            _ => self.sweep.changed = true,
        }
    }

    /// The light sweep's answers are all in: a heavy sweep if something
    /// changed, else idle until the next one.
    pub(super) fn light_done(&mut self, now: Instant) {
        let changed = self.sweep.changed;
        let smps = self.sweep.smps;
        self.stats.light_sweeps += 1;
        self.phase = Phase::Idle;
        self.events
            .push_back(SmEvent::LightSweepDone { changed, smps });
        if changed || self.resweep_pending {
            self.begin_sweep();
        } else {
            self.schedule_light(now);
        }
    }

    /// Drops a light sweep's requests (a heavy sweep replaces it).
    pub(super) fn drop_light(&mut self) {
        if self.phase != Phase::Light {
            return;
        }
        let light =
            |k: &Kind| matches!(k, Kind::LightSwitchInfo { .. } | Kind::LightPortInfo { .. });
        self.ready.retain(|r| !light(&r.kind));
        self.outstanding.retain(|_, o| !light(&o.req.kind));
        self.resend.retain(|t| self.outstanding.contains_key(t));
        self.phase = Phase::Idle;
    }
}
