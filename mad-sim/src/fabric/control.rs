//! Driving the fabric from outside: virtual time, link faults and cable
//! pulls, injected packets, services, delivery, and the hooks (link
//! filter, SM handler, SMInfo).

use super::*;

impl Fabric {
    /// Moves virtual time forward: M_Key leases that run out clear their
    /// port's protect bits, packets delayed on links that are due and
    /// packets held for reordering go back on the wire (and, with
    /// auto-delivery, to their end), and the services run (SM timers).
    pub fn advance(&self, by: Duration) {
        let mut c = self.lock();
        c.now = c.now.saturating_add(by);
        let now = c.now;
        for n in &mut c.nodes {
            for p in &mut n.ports {
                if p.mkey_lease_end.is_some_and(|end| now >= end) {
                    p.mkey_lease_end = None;
                    p.info.m_key_protect_bits = 0;
                }
            }
        }
        c.release_held();
        if c.cfg.auto_deliver {
            c.run_until_idle();
        }
        drop(c);
        self.pump();
    }

    /// Sets the faults of the link at `node`/`port`, both directions
    /// (`LinkFaults::default()` removes them); see [`LinkFaults`] for
    /// what each does. Each direction keeps its own seeded RNG.
    ///
    /// # Errors
    /// No such node or port, or no cable there.
    pub fn set_link_faults(
        &self,
        node: impl Into<NodeSel>,
        port: u8,
        faults: LinkFaults,
    ) -> Result<(), SimError> {
        let (n, (rn, rp)) = self.cable_ends(node.into(), port)?;
        let mut c = self.lock();
        c.set_dir_faults(n, port, Some(faults));
        c.set_dir_faults(rn, rp, Some(faults));
        if c.cfg.auto_deliver {
            c.run_until_idle();
        }
        Ok(())
    }

    /// Removes every link fault (held packets go back on the wire).
    pub fn clear_link_faults(&self) {
        let mut c = self.lock();
        let dirs: Vec<(u32, u8)> = c.faults.dirs.keys().copied().collect();
        for (n, p) in dirs {
            c.set_dir_faults(n, p, None);
        }
        if c.cfg.auto_deliver {
            c.run_until_idle();
        }
    }

    /// The faults set on the link direction leaving `node`/`port`, and
    /// what they did.
    #[must_use]
    pub fn link_faults(&self, node: usize, port: u8) -> Option<(LinkFaults, LinkFaultStats)> {
        let c = self.lock();
        let d = c.faults.dirs.get(&(u32::try_from(node).ok()?, port))?;
        Some((d.faults, d.stats))
    }

    /// Every link direction with faults: (node, port it leaves), faults,
    /// what they did.
    #[must_use]
    pub fn all_link_faults(&self) -> Vec<(PortAddr, LinkFaults, LinkFaultStats)> {
        let c = self.lock();
        c.faults
            .dirs
            .iter()
            .map(|(&(n, p), d)| {
                (
                    PortAddr {
                        node: n as usize,
                        port: p,
                    },
                    d.faults,
                    d.stats,
                )
            })
            .collect()
    }

    /// Sets (`Some`) or clears (`None`) the fault of `node`'s SMA: mute
    /// (requests taken, never answered) or a status it answers every
    /// request with ([`SmaFault`]).
    ///
    /// # Errors
    /// No such node.
    pub fn set_sma_fault(
        &self,
        node: impl Into<NodeSel>,
        fault: Option<SmaFault>,
    ) -> Result<(), SimError> {
        let sel = node.into();
        let mut c = self.lock();
        let Some(n) = resolve(&c, &sel) else {
            return Err(SimError::NoSuchNode(sel));
        };
        match fault {
            Some(f) => c.faults.sma.insert(n, f),
            None => c.faults.sma.remove(&n),
        };
        Ok(())
    }

    /// Every node whose SMA has a fault, with it.
    #[must_use]
    pub fn sma_faults(&self) -> Vec<(usize, SmaFault)> {
        let c = self.lock();
        c.faults
            .sma
            .iter()
            .map(|(n, f)| (*n as usize, *f))
            .collect()
    }

    /// Re-seeds the RNG of every link direction (and of those given faults
    /// later): the same seed and the same traffic give the same faults.
    pub fn set_fault_seed(&self, seed: u64) {
        self.lock().reseed(seed);
    }

    /// Packets held on links: delayed, or waiting to be overtaken.
    #[must_use]
    pub fn held(&self) -> usize {
        self.lock().held_count()
    }

    /// Traps the switches sent so far.
    #[must_use]
    pub fn traps_sent(&self) -> u64 {
        self.lock().faults.traps
    }

    /// Pulls the cable at `node`/`port`: both ends go Down (physically
    /// Polling), endpoints there see `PortError`, LinkDownedCounter
    /// counts, and each switch end sends Trap 128 to its SM. Packets that
    /// would cross are dropped (`LinkDown`). No-op if already pulled.
    ///
    /// # Errors
    /// No such node or port, or no cable there.
    pub fn link_down(&self, node: impl Into<NodeSel>, port: u8) -> Result<(), SimError> {
        self.cable(node.into(), port, false)
    }

    /// Plugs the cable at `node`/`port` back: the ends train to
    /// Initialize / LinkUp (unless one is Disabled), each switch end sends
    /// Trap 128, and the SM must make them Active again. No-op if not
    /// pulled.
    ///
    /// # Errors
    /// No such node or port, or no cable there.
    pub fn link_up(&self, node: impl Into<NodeSel>, port: u8) -> Result<(), SimError> {
        self.cable(node.into(), port, true)
    }

    /// True while the cable at `node`/`port` is pulled.
    #[must_use]
    pub fn is_unplugged(&self, node: usize, port: u8) -> bool {
        let c = self.lock();
        c.nodes
            .get(node)
            .and_then(|n| n.port(port))
            .is_some_and(|p| p.unplugged)
    }

    pub(super) fn cable(&self, sel: NodeSel, port: u8, plugged: bool) -> Result<(), SimError> {
        let (n, _) = self.cable_ends(sel, port)?;
        let mut c = self.lock();
        // cable_ends checked the port and its cable.
        let _ = c.set_cable(n, port, plugged);
        if c.cfg.auto_deliver {
            c.run_until_idle();
        }
        drop(c);
        self.pump();
        Ok(())
    }

    /// The node index of `sel` and the far end of its cable at `port`.
    pub(super) fn cable_ends(&self, sel: NodeSel, port: u8) -> Result<(u32, (u32, u8)), SimError> {
        let c = self.lock();
        let Some(n) = resolve(&c, &sel) else {
            return Err(SimError::NoSuchNode(sel));
        };
        let nd = &c.nodes[n as usize];
        let Some(p) = nd.port(port) else {
            return Err(SimError::NoSuchPort {
                node: nd.id.clone(),
                port,
            });
        };
        match p.remote {
            Some(r) if !(nd.is_switch() && port == 0) => Ok((n, r)),
            _ => Err(SimError::NoCable {
                node: nd.id.clone(),
                port,
            }),
        }
    }

    /// Injects `fault` at the endpoint attached at `node`/`port` (the one
    /// owning QP1 if two share the port, else QP0's). A
    /// [`crate::FaultyPort`] takes every [`crate::EndpointFault`] the next
    /// time its stack polls it (its fd turns readable); a plain
    /// [`SimPort`] takes only [`crate::EndpointFault::Event`] of a
    /// notification event (port, LID, P_Key, GID, SM change, client
    /// reregister, soft reset end), queued as if the device raised it.
    ///
    /// # Errors
    /// No such node, no endpoint there, or a fault a plain `SimPort`
    /// cannot take.
    pub fn inject(
        &self,
        node: impl Into<NodeSel>,
        port: u8,
        fault: crate::EndpointFault,
    ) -> Result<(), SimError> {
        use mad_core::transport::{AsyncEvent, Qp};
        let sel = node.into();
        let mut c = self.lock();
        let Some(n) = resolve(&c, &sel) else {
            return Err(SimError::NoSuchNode(sel));
        };
        let id = c.nodes[n as usize].id.clone();
        let Some(e) = c
            .ep_for(n, port, Qp::Qp1)
            .or_else(|| c.ep_for(n, port, Qp::Qp0))
        else {
            return Err(SimError::NoEndpoint { node: id, port });
        };
        let Some(Some(ep)) = c.endpoints.get_mut(e) else {
            return Err(SimError::NoEndpoint { node: id, port });
        };
        if ep.fault_capable {
            ep.faults.push_back(fault);
            ep.signal();
            return Ok(());
        }
        match fault {
            crate::EndpointFault::Event(
                ev @ (AsyncEvent::PortActive
                | AsyncEvent::PortError
                | AsyncEvent::LidChange
                | AsyncEvent::PkeyChange
                | AsyncEvent::GidChange
                | AsyncEvent::SmChange
                | AsyncEvent::ClientReregister
                | AsyncEvent::SoftResetEnd),
            ) => {
                ep.events.push_back(ev);
                ep.signal();
                Ok(())
            }
            other => Err(SimError::NotFaultCapable {
                node: id,
                port,
                fault: format!("{other:?}"),
            }),
        }
    }

    /// Adds an in-fabric service: a piece of software that lives at the
    /// fabric (SM-lite in [`crate::Subnet`]) and is run, without threads,
    /// by whichever caller just moved packets: after every `post_send`,
    /// [`Fabric::advance`], link change and [`Fabric::pump`]. It is called
    /// with the virtual time until it reports no more work. A service must
    /// not block; it may post on its own endpoints (which pumps no one
    /// recursively: the running pump goes round again).
    pub fn add_service(&self, service: Service) -> ServiceId {
        let id = self.services.next.fetch_add(1, Ordering::Relaxed);
        let mut list = self
            .services
            .list
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        list.push((id, service));
        self.services.count.store(list.len(), Ordering::SeqCst);
        drop(list);
        self.pump();
        ServiceId(id)
    }

    /// Removes a service (waiting for a pump in progress to end); true if
    /// it was there. Must not be called from inside a service.
    pub fn remove_service(&self, id: ServiceId) -> bool {
        let removed = {
            let mut list = self
                .services
                .list
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let before = list.len();
            let gone: Vec<(u64, Service)> = {
                let (gone, keep): (Vec<_>, Vec<_>) = list.drain(..).partition(|(i, _)| *i == id.0);
                *list = keep;
                gone
            };
            self.services.count.store(list.len(), Ordering::SeqCst);
            let removed = list.len() != before;
            drop(list);
            // Dropped outside the list lock (a service may own endpoints).
            drop(gone);
            removed
        };
        removed
    }

    /// Runs the services until none has work. Cheap when there are none.
    /// When another thread is running them already, this only tells it to
    /// go round once more.
    pub fn pump(&self) {
        let s = &self.services;
        if s.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        s.dirty.store(true, Ordering::SeqCst);
        let mut rounds = 0;
        while rounds < MAX_PUMP_ROUNDS {
            let mut list = match s.list.try_lock() {
                Ok(l) => l,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => return,
            };
            while s.dirty.swap(false, Ordering::SeqCst) && rounds < MAX_PUMP_ROUNDS {
                rounds += 1;
                let now = self.now();
                let mut busy = false;
                for (_, svc) in list.iter_mut() {
                    busy |= svc(now);
                }
                if busy {
                    s.dirty.store(true, Ordering::SeqCst);
                }
            }
            drop(list);
            if !s.dirty.load(Ordering::SeqCst) {
                return;
            }
        }
    }

    /// With auto-delivery off, posted MADs wait in the queue for
    /// [`Fabric::step`] / [`Fabric::run_until_idle`]. Turning it on runs
    /// the queue.
    pub fn set_auto_deliver(&self, on: bool) {
        let mut c = self.lock();
        c.cfg.auto_deliver = on;
        if on {
            c.run_until_idle();
        }
        drop(c);
        self.pump();
    }

    /// Moves the next queued packet to where it ends; false if none.
    pub fn step(&self) -> bool {
        self.lock().step()
    }

    /// Steps until the queue is empty (then runs the services); returns
    /// how many packets moved.
    pub fn run_until_idle(&self) -> usize {
        let n = self.lock().run_until_idle();
        self.pump();
        n
    }

    /// Packets waiting in the queue (held packets going back on the wire
    /// included; packets still held on links are [`Fabric::held`]).
    #[must_use]
    pub fn pending(&self) -> usize {
        let c = self.lock();
        c.queue.len() + c.resume.len()
    }

    /// Installs (or removes) the link filter.
    pub fn set_link_filter(&self, filter: Option<LinkFilter>) {
        self.lock().link_filter = filter;
    }

    /// Installs (or removes) the SM of `node`: it gets SMInfo requests,
    /// traps and reports addressed to the node.
    pub fn set_sm_handler(&self, node: usize, handler: Option<SmHandler>) {
        let mut c = self.lock();
        let n = node as u32;
        match handler {
            Some(h) => {
                c.sm_handlers.insert(n, h);
            }
            None => {
                c.sm_handlers.remove(&n);
            }
        }
    }

    /// Sets the SMInfo the SMA of `node` answers for `port` when no SM
    /// handler or SM endpoint is there (and PortInfo IsSM with it);
    /// `None` removes it.
    pub fn set_sm_info(&self, node: usize, port: u8, info: Option<SmInfo>) {
        let mut c = self.lock();
        if let Some(p) = c.nodes.get_mut(node).and_then(|n| n.port_mut(port)) {
            if info.is_some() {
                p.info.capability_mask |= port_cap::IS_SM;
            } else {
                p.info.capability_mask &= !port_cap::IS_SM;
            }
            p.sm_info = info.map(Box::new);
        }
    }
}
