//! What SM-lite receives: answers to its own requests, traps, and the
//! SMInfo requests other managers send it.

use super::*;

impl SubnetManager {
    // ------------------------------------------------------------------
    // Receiving
    // ------------------------------------------------------------------

    pub(super) fn on_answer(&mut self, now: Instant, smp: &Smp<&[u8]>) {
        let tid = smp.tid() & TID_MASK;
        let o = match self.outstanding.entry(tid) {
            std::collections::hash_map::Entry::Occupied(o) if o.get().req.attr == smp.attr_id() => {
                o.remove()
            }
            _ => return, // late duplicate, or not ours
        };
        let status = if smp.is_directed_route() {
            smp.dr_status()
        } else {
            smp.mad().status().0
        };
        if status != 0 {
            let err = SmError::Status {
                method: o.req.method,
                attr: o.req.attr,
                attr_mod: o.req.attr_mod,
                path: o.req.path.clone(),
                status,
            };
            self.fail(now, o.req, err);
            return;
        }
        self.succeed(now, o.req, smp.data());
    }

    pub(super) fn on_trap(&mut self, now: Instant, smp: &Smp<&[u8]>, src: &Address) {
        let mut rep = smp.as_bytes().to_vec();
        rep.resize(MAD_LEN, 0);
        mad_core::wire::Mad::new_unchecked(&mut rep[..]).set_method(Method::TRAP_REPRESS, false);
        self.responses.push_back((rep, reply_address(smp, src)));
        if smp.attr_id() != AttributeId::NOTICE {
            return;
        }
        // In an SMP the Notice is cut to the 64 data bytes (no IssuerGID).
        let mut b = [0u8; 80];
        let d = smp.data();
        b[..d.len().min(80)].copy_from_slice(&d[..d.len().min(80)]);
        let Ok(n) = Notice::parse(&b) else {
            return;
        };
        self.stats.traps += 1;
        self.events.push_back(SmEvent::Trap {
            number: n.trap_number(),
            issuer_lid: n.issuer_lid,
        });
        // A link state change (128), a link integrity, buffer overrun or
        // flow-control watchdog threshold (129-131) or a port's local
        // change (144: e.g. its CapabilityMask, as an SM starting up
        // sets IsSM) means a re-sweep, once the SM is (becoming) master.
        use mad_core::wire::attr::trap;
        let resweep = matches!(
            n.trap_number(),
            Some(
                trap::LINK_STATE_CHANGE
                    | trap::LINK_INTEGRITY_THRESHOLD
                    | trap::BUFFER_OVERRUN_THRESHOLD
                    | trap::WATCHDOG_TIMER_EXPIRED
                    | trap::LOCAL_CHANGES
            )
        );
        let master = matches!(self.sm_state, SmState::MASTER | SmState::DISCOVERING);
        if self.started && resweep && master {
            if n.trap_number() == Some(trap::LINK_STATE_CHANGE) {
                self.link_trap(now, n.issuer_lid);
            } else {
                self.resweep(now);
            }
        }
    }

    pub(super) fn on_request(&mut self, now: Instant, smp: &Smp<&[u8]>, src: &Address) {
        let mut rep = smp.as_bytes().to_vec();
        rep.resize(MAD_LEN, 0);
        let status = if smp.attr_id() == AttributeId::SM_INFO {
            let sender = SmInfo::parse(smp.data()).ok();
            let trusted = sender
                .as_ref()
                .is_some_and(|s| s.sm_key == self.cfg.sm_key || s.sm_state == SmState::MASTER);
            // The answer is our SMInfo as it was when the request came.
            let mut info = self.sm_info();
            if smp.method() == Method::GET && self.cfg.hide_sm_key && !trusted {
                info.sm_key = 0;
            }
            let status = match (smp.method(), sender) {
                (Method::SET, Some(s)) => {
                    let path = self.path_to_port(s.guid);
                    self.sm_info_set(now, smp.attr_mod(), &s, path)
                }
                (Method::SET, None) => MadStatus::INVALID_FIELD.0,
                _ => 0,
            };
            if let Ok(b) = info.to_vec() {
                let d = &mut rep[SMP_DATA_OFFSET..SMP_DATA_OFFSET + SMP_DATA_LEN];
                d.fill(0);
                d[..b.len()].copy_from_slice(&b);
            }
            status
        } else {
            MadStatus::METHOD_ATTR_UNSUPPORTED.0
        };
        let word = if smp.is_directed_route() {
            DR_DIRECTION_BIT | (status & 0x7FFF)
        } else {
            status
        };
        let mut head = mad_core::wire::Mad::new_unchecked(&mut rep[..]);
        head.set_method(Method::GET, true);
        head.set_status(MadStatus(word));
        let to = reply_address(smp, src);
        if smp.attr_id() == AttributeId::SM_INFO && smp.method() == Method::GET {
            let sender = SmInfo::parse(smp.data()).ok();
            if self.sm_info_get(now, &rep, to, sender.as_ref(), smp.is_directed_route()) {
                return;
            }
        }
        self.responses.push_back((rep, to));
    }
}

impl SubnetManager {
    /// The directed route to the port with GUID `guid`, as the last
    /// sweeps found it (a CA port, or a switch's port 0).
    fn path_to_port(&self, guid: u64) -> Option<DrPath> {
        if let Some(p) = self.neg.sm_paths.get(&guid) {
            return Some(p.clone());
        }
        self.subnet.nodes().iter().find_map(|n| {
            if n.is_switch() {
                (n.guid() == guid || n.port(0).is_some_and(|p| p.guid == guid))
                    .then(|| n.path.clone())
            } else {
                n.ports
                    .iter()
                    .flatten()
                    .find(|p| p.guid == guid)
                    .map(|p| p.path.clone())
            }
        })
    }
}

/// Where an answer to `smp` from `src` goes: back along the directed
/// route (permissive DLID) for a DR SMP, to the sender's LID and QP for
/// a LID-routed one.
fn reply_address(smp: &Smp<&[u8]>, src: &Address) -> Address {
    let mut a = Address::smi(if smp.is_directed_route() {
        PERMISSIVE_LID
    } else {
        src.lid
    });
    a.qpn = src.qpn;
    a
}
