//! The SA client's unsolicited side: InformInfo subscriptions kept alive
//! across SM changes and client reregistration, and the reports (Notices)
//! the SA sends, acknowledged and queued.

use super::*;

impl Shared {
    pub(super) fn sm_address(&self) -> Address {
        if let Some(a) = self.cfg.sa_address {
            return a;
        }
        let sm = lock(&self.state).sm;
        Address {
            sl: sm.sl,
            pkey_index: sm.pkey_index,
            ..Address::gsi(sm.lid)
        }
    }

    pub(super) fn on_event(&self, ev: AgentEvent) {
        // The soft reset (drain, acknowledge, resume) and the device's
        // death come first: what follows may send.
        self.reset.on_event(&ev);
        if ev == AgentEvent::DeviceFatal {
            self.dead.store(true, std::sync::atomic::Ordering::Release);
        }
        match ev {
            AgentEvent::Received(msg) => self.on_request(&msg),
            AgentEvent::Async(e) => self.on_async(e),
            AgentEvent::SendDone(c) => self.on_send_done(&c),
            _ => {}
        }
    }

    pub(super) fn on_async(&self, e: AsyncEvent) {
        let refresh = matches!(
            e,
            AsyncEvent::PortActive
                | AsyncEvent::PortError
                | AsyncEvent::LidChange
                | AsyncEvent::PkeyChange
                | AsyncEvent::SmChange
                | AsyncEvent::ClientReregister
        );
        if refresh {
            if let Some(a) = self.agent.get() {
                let sm = sm_of(&a.port_attrs());
                let mut st = lock(&self.state);
                st.sm = sm;
                st.stats.sm_refreshes += 1;
            }
        }
        if matches!(
            e,
            AsyncEvent::SmChange | AsyncEvent::ClientReregister | AsyncEvent::PortActive
        ) {
            self.resubscribe_all();
        }
    }

    pub(super) fn resubscribe_all(&self) -> usize {
        let Some(agent) = self.agent.get() else {
            return 0;
        };
        let subs = lock(&self.state).subs.clone();
        let dest = self.sm_address();
        let mut sent = 0;
        for s in subs {
            let Ok(rec) = s.info.to_vec() else {
                continue;
            };
            let mut mad = build_request(Method::SET, InformInfo::ATTR_ID, 0, 0, &rec);
            SaMad::new_unchecked(&mut mad[..]).set_sm_key(self.cfg.sm_key);
            let req = SendRequest::new(mad, dest)
                .expect_response(self.cfg.timeout, self.cfg.retries)
                .cookie(RESUB_TAG | (s.id & 0xFFFF_FFFF_FFFF));
            let mut st = lock(&self.state);
            st.stats.resubscribes += 1;
            let reachable = dest.lid != 0 || dest.grh.is_some();
            match (reachable, agent.send(req)) {
                (false, _) => {
                    st.stats.resubscribes_failed += 1;
                    set_sub_error(&mut st, s.id, SaError::NoSm.to_string());
                }
                (true, Ok(_)) => sent += 1,
                (true, Err(e)) => {
                    st.stats.resubscribes_failed += 1;
                    set_sub_error(&mut st, s.id, e.to_string());
                }
            }
        }
        sent
    }

    pub(super) fn on_send_done(&self, c: &Completion) {
        if c.cookie & 0xFFFF_0000_0000_0000 != RESUB_TAG {
            return;
        }
        let id = c.cookie & 0xFFFF_FFFF_FFFF;
        let lid = self.sm_address().lid;
        let outcome = completion_response(c, lid).and_then(|m| check_status(&m));
        let mut st = lock(&self.state);
        match outcome {
            Ok(()) => {
                st.stats.resubscribes_ok += 1;
                if let Some(s) = st.subs.iter_mut().find(|s| s.id == id) {
                    s.accepted += 1;
                    s.last_error = None;
                }
            }
            Err(e) => {
                st.stats.resubscribes_failed += 1;
                set_sub_error(&mut st, id, e.to_string());
            }
        }
    }

    /// A Report (or another SA request the agent owns).
    pub(super) fn on_request(&self, msg: &Message) {
        let m = msg.mad();
        if m.mgmt_class() != MgmtClass::SUBN_ADM || m.method() != Method::REPORT {
            return;
        }
        let tid = m.tid();
        let src = *msg.src();
        // Acknowledge first: ReportResp carries the same TID, attribute
        // and data.
        let mut resp = msg.bytes()[..msg.bytes().len().min(MAD_LEN)].to_vec();
        resp.resize(MAD_LEN, 0);
        {
            let mut v = Mad::new_unchecked(&mut resp[..]);
            v.set_method(Method::REPORT, true);
            v.set_status(MadStatus::SUCCESS);
        }
        // A response never carries an RMPP transfer of its own here.
        RmppView::new_unchecked(&mut resp[..]).set_flags(0);
        let dest = Address {
            qkey: GSI_QKEY,
            ..src
        };
        let acked = self.agent.get().is_some_and(|a| {
            a.send(SendRequest::new(resp, dest).cookie(ACK_COOKIE))
                .is_ok()
        });
        let mut st = lock(&self.state);
        st.stats.reports += 1;
        if acked {
            st.stats.report_acks += 1;
        }
        let key = (src.lid, tid & crate::tid::TID_MATCH_MASK);
        if st.recent.contains(&key) {
            st.stats.reports_duplicate += 1;
            return;
        }
        if st.recent.len() >= RECENT_REPORTS {
            st.recent.pop_front();
        }
        st.recent.push_back(key);
        let data = msg.bytes().get(SA_DATA_OFFSET..).unwrap_or(&[]);
        let Ok(notice) = Notice::parse(data) else {
            return;
        };
        match self.reports_tx.try_send(Report { notice, tid, src }) {
            Ok(()) => st.stats.reports_delivered += 1,
            Err(_) => st.stats.reports_dropped += 1,
        }
    }
}

pub(super) fn set_sub_error(st: &mut State, id: u64, e: String) {
    if let Some(s) = st.subs.iter_mut().find(|s| s.id == id) {
        s.last_error = Some(e);
    }
}
