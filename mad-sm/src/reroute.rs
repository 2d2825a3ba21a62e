//! Rerouting after a Trap 128 without a heavy sweep: when a switch the
//! last heavy sweep configured reports a link state change while SM-lite
//! is Master and the subnet up, SM-lite reads that switch's PortInfo
//! (every port) and SwitchInfo again instead of rediscovering the
//! fabric. If the only change is links to other switches that went
//! down, it forgets them, gives the nodes whose directed route crossed
//! them a new one, routes the fabric it knows again, and sends the
//! LinearForwardingTable blocks that changed plus a SwitchInfo Set that
//! clears the PortStateChange of each switch read (so that the next
//! light sweep finds nothing); the multicast trees are made again over
//! the new links once the reroute ends. Anything else (a link that came
//! up, a port back in Initialize, a CA cut off, a read that failed
//! twice, a switch no longer reachable) falls back to the heavy sweep. The traps of a link's two
//! ends are taken one switch after the other: the second switch is read
//! along a route that avoids what the first one's reads found down (and
//! is read even when its trap is lost, as it is when its route to the
//! SM crossed the dead link).

use std::collections::VecDeque;

use super::*;

impl SubnetManager {
    /// A Trap 128 from `issuer_lid`.
    pub(super) fn link_trap(&mut self, now: Instant, issuer_lid: u16) {
        let reading = self.phase == Phase::Reroute;
        let fast = self.sm_state == SmState::MASTER
            && self.subnet_up
            && (reading || matches!(self.phase, Phase::Idle | Phase::Light));
        let switch = self
            .subnet
            .port_by_lid(issuer_lid)
            .filter(|(n, p)| *p == 0 && self.subnet.nodes()[*n].is_switch())
            .map(|(n, _)| n);
        let Some(node) = switch.filter(|_| fast) else {
            return self.resweep(now);
        };
        if !reading {
            self.drop_light();
            self.light_at = None;
            self.sweep = Sweep {
                subnet: self.subnet.clone(),
                ..Sweep::default()
            };
            self.phase = Phase::Reroute;
        }
        let known = self.sweep.reroute.iter().any(|(n, _)| *n == node)
            || self.sweep.reroute_queue.contains(&node);
        if known {
            return;
        }
        if reading {
            // After the reads under way: its route may cross what they
            // find down.
            self.sweep.reroute_queue.push_back(node);
        } else {
            let path = self.sweep.subnet.nodes()[node].path.clone();
            self.reread(node, path);
        }
    }

    /// Reads `node`'s SwitchInfo and the PortInfo of its ports along
    /// `path`.
    fn reread(&mut self, node: NodeIdx, path: DrPath) {
        let ports = self.sweep.subnet.nodes()[node].info.num_ports;
        self.sweep.reroute.retain(|(n, _)| *n != node);
        self.sweep.reroute.push((node, path.clone()));
        self.get(
            AttributeId::SWITCH_INFO,
            0,
            path.clone(),
            Kind::RerouteSwitchInfo { node },
        );
        for port in 1..=ports {
            self.get(
                AttributeId::PORT_INFO,
                u32::from(port),
                path.clone(),
                Kind::ReroutePortInfo { node, port },
            );
        }
    }

    /// Every read under way is answered (or failed).
    pub(super) fn reroute_read(&mut self, now: Instant) {
        // A switch whose reads failed is read once more, after the
        // others: their reads may show its route crossed a dead link.
        let failed = std::mem::take(&mut self.sweep.reroute_failed);
        for n in failed {
            if self.sweep.reroute_retried.contains(&n) {
                return self.reroute_heavy();
            }
            self.sweep.reroute_retried.push(n);
            self.sweep.reroute_queue.push_back(n);
        }
        if !self.take_reads() {
            return self.reroute_heavy();
        }
        while let Some(next) = self.sweep.reroute_queue.pop_front() {
            let read = self.sweep.reroute.iter().any(|(n, _)| *n == next);
            if read && !self.sweep.reroute_retried.contains(&next) {
                continue;
            }
            let Some(path) = self.paths_from_local().remove(&next) else {
                // Cut off: the heavy sweep sees what is left.
                return self.reroute_heavy();
            };
            return self.reread(next, path);
        }
        if !self.sweep.changed {
            // Nothing to route around: back to idle.
            self.phase = Phase::Idle;
            self.sweep = Sweep::default();
            self.schedule_light(now);
            return self.mcast_after_phase();
        }
        self.repair_paths();
        let mut sub = std::mem::take(&mut self.sweep.subnet);
        routing::compute_lfts(&mut sub);
        // Multicast trees that crossed a dead link: made again after.
        self.mcast_links_changed();
        // The trapping switches' SwitchInfo as read now, PortStateChange
        // cleared (write 1), along the route they were read by.
        for (node, path) in self.sweep.reroute.clone() {
            let Some(mut want) = sub.nodes()[node].switch_info.clone() else {
                continue;
            };
            if !want.port_state_change {
                continue;
            }
            want.port_state_change = true;
            if let Ok(b) = want.to_vec() {
                self.set(
                    AttributeId::SWITCH_INFO,
                    0,
                    path,
                    &b,
                    Kind::SetSwitchInfo {
                        node,
                        want: Box::new(want),
                    },
                );
            }
        }
        let max_lid = sub.max_lid();
        for (i, n) in sub.nodes().iter().enumerate() {
            if n.is_switch() {
                let top = self.programmed.get(&n.guid()).map_or(max_lid, |p| p.top);
                let blocks = usize::from(top) / LinearFwdTable::ENTRIES + 1;
                self.sweep.todo.push(Todo::Lft { node: i, blocks });
            }
        }
        self.sweep.todo_at = (0, 0);
        self.sweep.subnet = sub;
        self.phase = Phase::Configure;
    }

    /// Gives up the reroute for a heavy sweep.
    fn reroute_heavy(&mut self) {
        self.phase = Phase::Idle;
        self.sweep = Sweep::default();
        self.begin_sweep();
    }

    /// Applies the reads answered so far to the sweep's subnet: links to
    /// switches that went down are forgotten (`sweep.changed`). False
    /// when something only a heavy sweep handles was found.
    fn take_reads(&mut self) -> bool {
        if self.sweep.errors > 0 {
            return false;
        }
        let reread = std::mem::take(&mut self.sweep.reread);
        let sub = &mut self.sweep.subnet;
        for (node, port, pi) in reread {
            let Some(was) = sub.nodes()[node].port(port) else {
                return false;
            };
            let (was_up, up) = (was.link_up(), pi.port_phys_state == PhysPortState::LINK_UP);
            match (was_up, up, sub.remote((node, port))) {
                // Between two switches: everything stays reachable (or
                // not) by the routes; a CA cut off leaves the model, the
                // heavy sweep's work.
                (true, false, Some(far)) if sub.nodes()[far.0].is_switch() => {
                    sub.remove_link((node, port));
                    for (n, p) in [(node, port), far] {
                        if let Some(sp) = sub
                            .node_mut(n)
                            .and_then(|x| x.ports.get_mut(usize::from(p)))
                            .and_then(Option::as_mut)
                        {
                            sp.info.port_state = pi.port_state;
                            sp.info.port_phys_state = pi.port_phys_state;
                        }
                    }
                    self.sweep.changed = true;
                    // The far switch's trap may not reach the SM (its
                    // route to it may have crossed this link): it is
                    // read too, and its PortStateChange cleared.
                    let far_read = self.sweep.reroute.iter().any(|(n, _)| *n == far.0);
                    if !far_read && !self.sweep.reroute_queue.contains(&far.0) {
                        self.sweep.reroute_queue.push_back(far.0);
                    }
                }
                (false, false, _) => {}
                // Up and Active as configured: unchanged.
                (true, true, _) if pi.port_state == PortState::ACTIVE => {}
                // Down already, a CA cut off, a link that came up or
                // bounced back to Initialize.
                _ => return false,
            }
        }
        true
    }

    /// A directed route to every node reachable from the SM's port over
    /// the links the sweep's subnet holds (breadth first: fewest hops).
    fn paths_from_local(&self) -> FastMap<NodeIdx, DrPath> {
        let sub = &self.sweep.subnet;
        let mut out = FastMap::default();
        let Some((start, sm_port)) = sub.local() else {
            return out;
        };
        let mut hops: FastMap<NodeIdx, Vec<u8>> = FastMap::default();
        let mut q = VecDeque::new();
        hops.insert(start, Vec::new());
        if !sub.nodes()[start].is_switch() {
            // From a CA the first hop leaves by the SM's port only.
            if let Some((far, _)) = sub.remote((start, sm_port)) {
                hops.insert(far, vec![sm_port]);
                q.push_back(far);
            }
        } else {
            q.push_back(start);
        }
        while let Some(n) = q.pop_front() {
            let node = &sub.nodes()[n];
            if !node.is_switch() {
                continue;
            }
            let base = hops[&n].clone();
            if base.len() >= usize::from(DR_MAX_HOPS) {
                continue;
            }
            for p in 1..=node.info.num_ports {
                let Some((far, _)) = sub.remote((n, p)) else {
                    continue;
                };
                if let std::collections::hash_map::Entry::Vacant(e) = hops.entry(far) {
                    let mut h = base.clone();
                    h.push(p);
                    e.insert(h);
                    q.push_back(far);
                }
            }
        }
        for (n, h) in hops {
            if let Ok(p) = DrPath::from_hops(&h) {
                out.insert(n, p);
            }
        }
        out
    }

    /// True when `path` from the SM's port runs over links the sweep's
    /// subnet holds.
    fn path_holds(&self, path: &DrPath) -> bool {
        let sub = &self.sweep.subnet;
        let Some((mut at, _)) = sub.local() else {
            return false;
        };
        for &p in path.hops() {
            match sub.remote((at, p)) {
                Some((far, _)) => at = far,
                None => return false,
            }
        }
        true
    }

    /// Gives every node (and CA port) whose directed route crossed a
    /// link now gone a new one, so light sweeps and later Sets reach it.
    fn repair_paths(&mut self) {
        let broken: Vec<NodeIdx> = (0..self.sweep.subnet.nodes().len())
            .filter(|&i| {
                let n = &self.sweep.subnet.nodes()[i];
                !self.path_holds(&n.path)
                    || n.ports
                        .iter()
                        .flatten()
                        .any(|p| !n.is_switch() && !self.path_holds(&p.path))
            })
            .collect();
        if broken.is_empty() {
            return;
        }
        let paths = self.paths_from_local();
        let sub = &mut self.sweep.subnet;
        for i in broken {
            let switch = sub.nodes()[i].is_switch();
            if switch {
                let Some(p) = paths.get(&i).cloned() else {
                    continue;
                };
                if let Some(n) = sub.node_mut(i) {
                    n.path = p.clone();
                    for sp in n.ports.iter_mut().flatten() {
                        sp.path = p.clone();
                    }
                }
                continue;
            }
            // A CA port: through the switch it hangs on.
            let nports = sub.nodes()[i].info.num_ports;
            for q in 1..=nports {
                let Some((s, e)) = sub.remote((i, q)) else {
                    continue;
                };
                let Some(base) = paths.get(&s) else {
                    continue;
                };
                let mut h = base.hops().to_vec();
                h.push(e);
                let Ok(p) = DrPath::from_hops(&h) else {
                    continue;
                };
                if let Some(n) = sub.node_mut(i) {
                    if let Some(Some(sp)) = n.ports.get_mut(usize::from(q)) {
                        sp.path = p.clone();
                    }
                    n.path = p;
                }
            }
        }
    }
}
