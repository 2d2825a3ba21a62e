//! Two SMs on one fake fabric, in simulated time: who becomes master,
//! standby polling, take-over when the master dies, handover in both
//! directions, and the SMInfo controls.

use std::collections::HashMap;

use super::*;

const LATENCY: Duration = Duration::from_micros(20);

/// Two SMs on a fake fabric: SMPs to the fabric are answered by its
/// SMAs; SMInfo requests to the other SM's port go to that SM, and its
/// answers come back; LID-routed traps go to the SM whose port has the
/// destination LID.
struct Duo {
    fab: Fabric,
    sms: Vec<SubnetManager>,
    at: Vec<(usize, u8)>,
    alive: Vec<bool>,
    now: Instant,
    /// (due, to SM, MAD, source address).
    queue: Vec<(Instant, usize, Vec<u8>, Address)>,
    /// (TID low bits, responder) -> requester.
    pending: HashMap<(u64, usize), usize>,
    events: Vec<Vec<(Instant, SmEvent)>>,
    /// SMInfo requests between the SMs: (time, sender, method, modifier).
    sminfo: Vec<(Instant, usize, Method, u32)>,
}

impl Duo {
    /// SMs at CA ports `at` with priorities `prio` (same other settings).
    fn new(mut fab: Fabric, at: [(usize, u8); 2], prio: [u8; 2], cfg: &SmConfig) -> Self {
        fab.sm_ports = at.to_vec();
        let sms = (0..2)
            .map(|k| {
                let (n, p) = at[k];
                let node = &fab.nodes[n];
                let attrs = PortAttrs {
                    port_num: p,
                    node_guid: node.guid,
                    port_guid: node.port_guid(p),
                    ..PortAttrs::default()
                };
                let c = SmConfig {
                    priority: prio[k],
                    ..cfg.clone()
                };
                SubnetManager::new(c, &attrs)
            })
            .collect();
        Self {
            fab,
            sms,
            at: at.to_vec(),
            alive: vec![true; 2],
            now: Instant::now(),
            queue: Vec::new(),
            pending: HashMap::new(),
            events: vec![Vec::new(), Vec::new()],
            sminfo: Vec::new(),
        }
    }

    fn guid(&self, k: usize) -> u64 {
        let (n, p) = self.at[k];
        self.fab.nodes[n].port_guid(p)
    }

    fn lid(&self, k: usize) -> u16 {
        let (n, p) = self.at[k];
        self.fab.nodes[n].ports[usize::from(p)].lid
    }

    fn route(&mut self, i: usize, mad: Vec<u8>, to: Address) {
        let smp = Smp::new_checked(&mad[..]).unwrap();
        let tid = smp.tid() & TID_MASK;
        if smp.response_bit() {
            if let Some(j) = self.pending.remove(&(tid, i)) {
                let src = Address::smi(PERMISSIVE_LID);
                self.queue.push((self.now + LATENCY, j, mad, src));
            }
            return;
        }
        if smp.mgmt_class() == MgmtClass::SUBN_LID_ROUTED {
            if smp.method() == Method::TRAP {
                let src = Address::smi(self.lid(i));
                if let Some(j) = (0..2).find(|&j| j != i && self.lid(j) == to.lid) {
                    self.queue.push((self.now + LATENCY, j, mad, src));
                }
            }
            return;
        }
        if smp.attr_id() == AttributeId::SM_INFO {
            let target = self.fab.dr_target(self.at[i], &mad);
            if let Some(j) = (0..2).find(|&j| j != i && target == Some(self.at[j])) {
                self.sminfo
                    .push((self.now, i, smp.method(), smp.attr_mod()));
                if self.alive[j] {
                    self.pending.insert((tid, j), i);
                    let src = Address::smi(PERMISSIVE_LID);
                    self.queue.push((self.now + LATENCY, j, mad, src));
                }
                return;
            }
        }
        if let Some(rep) = self.fab.deliver_from(self.at[i], &mad, &to) {
            let src = Address::smi(PERMISSIVE_LID);
            self.queue.push((self.now + LATENCY, i, rep, src));
        }
    }

    /// Runs until `done` holds (true) or `limit` of simulated time
    /// passed (false).
    fn run_until(&mut self, limit: Duration, done: impl Fn(&Self) -> bool) -> bool {
        let deadline = self.now + limit;
        loop {
            for i in 0..2 {
                while self.alive[i] {
                    let Some((mad, to)) = self.sms[i].poll_transmit(self.now) else {
                        break;
                    };
                    self.route(i, mad, to);
                }
            }
            self.queue.sort_by_key(|q| q.0);
            let due = self.queue.partition_point(|q| q.0 <= self.now);
            let now_due: Vec<_> = self.queue.drain(..due).collect();
            let delivered = !now_due.is_empty();
            for (_, j, mad, src) in now_due {
                if self.alive[j] {
                    self.sms[j].handle_recv(self.now, &mad, &src);
                }
            }
            for i in 0..2 {
                while let Some(e) = self.sms[i].poll_event() {
                    self.events[i].push((self.now, e));
                }
            }
            if done(self) {
                return true;
            }
            if delivered {
                continue;
            }
            let timers = (0..2)
                .filter(|&i| self.alive[i])
                .filter_map(|i| self.sms[i].poll_timeout());
            let Some(next) = self
                .queue
                .first()
                .map(|q| q.0)
                .into_iter()
                .chain(timers)
                .min()
            else {
                return false;
            };
            if next > deadline {
                self.now = deadline;
                return false;
            }
            self.now = self.now.max(next);
            for i in 0..2 {
                if self.alive[i] && self.sms[i].poll_timeout().is_some_and(|t| t <= self.now) {
                    self.sms[i].handle_timeout(self.now);
                }
            }
        }
    }

    fn up(&self, k: usize) -> bool {
        self.sms[k].sm_state() == SmState::MASTER && self.sms[k].is_subnet_up()
    }

    fn standby(&self, k: usize) -> bool {
        self.sms[k].sm_state() == SmState::STANDBY
    }

    fn saw(&self, k: usize, pred: impl Fn(&SmEvent) -> bool) -> bool {
        self.events[k].iter().any(|(_, e)| pred(e))
    }

    /// SMInfo Gets SM `k` sent to the other since `t`.
    fn polls_since(&self, k: usize, t: Instant) -> usize {
        self.sminfo
            .iter()
            .filter(|(at, s, m, _)| *at >= t && *s == k && *m == Method::GET)
            .count()
    }

    /// Every CA port reaches every CA port by LID routing.
    fn assert_routed(&self) {
        let f = &self.fab;
        let cas: Vec<(usize, u8)> = fabric_lids(f)
            .into_keys()
            .filter(|(n, _)| !f.nodes[*n].switch)
            .collect();
        for &(a, pa) in &cas {
            for &(b, pb) in &cas {
                let dlid = f.nodes[b].ports[usize::from(pb)].lid;
                f.lid_route(a, pa, dlid)
                    .unwrap_or_else(|e| panic!("{a}:{pa} -> LID {dlid}: {e}"));
            }
        }
    }

    /// Hands SM `k` an SMInfo Set `control` from a sender claiming
    /// `state` and the other SM's GUID; returns the answer's status.
    fn control(&mut self, k: usize, control: u32, state: SmState) -> u16 {
        let sender = SmInfo {
            guid: self.guid(1 - k),
            sm_key: 0,
            act_count: 0,
            priority: 15,
            sm_state: state,
        };
        let mut mad =
            DrPath::local().build_request(Method::SET, AttributeId::SM_INFO, control, 0x77, 0);
        let b = sender.to_vec().unwrap();
        mad[SMP_DATA_OFFSET..SMP_DATA_OFFSET + b.len()].copy_from_slice(&b);
        self.sms[k].handle_recv(self.now, &mad, &Address::smi(PERMISSIVE_LID));
        // Anything SM `k` had queued before goes its way first.
        loop {
            let (rep, to) = self.sms[k].poll_transmit(self.now).expect("an answer");
            let r = Smp::new_checked(&rep[..]).unwrap();
            if r.response_bit() && r.tid() & TID_MASK == 0x77 {
                return r.dr_status();
            }
            self.route(k, rep, to);
        }
    }
}

fn cfg() -> SmConfig {
    SmConfig {
        sminfo_polling_timeout: Duration::from_secs(1),
        polling_retry_number: 3,
        ..SmConfig::default()
    }
}

/// A two-leaf fat tree with SMs on the first and the last CA.
fn duo(prio: [u8; 2]) -> Duo {
    let fab = Fabric::fat_tree(2, 1, 2);
    Duo::new(fab, [(0, 1), (3, 1)], prio, &cfg())
}

#[test]
fn a_lower_priority_sm_stands_by_polls_the_master_and_takes_over_keeping_every_lid() {
    let mut d = duo([1, 15]);
    // SM 1 (priority 15) brings the fabric up alone.
    d.sms[1].start(d.now);
    assert!(d.run_until(Duration::from_secs(60), |d| d.up(1)));
    let lids = fabric_lids(&d.fab);
    let sets = d.fab.sets.len();
    // SM 0 (priority 1) starts, finds SM 1 by its port's IsSM bit, reads
    // its SMInfo (Master) and stands by without setting anything.
    let t0 = d.now;
    d.sms[0].start(d.now);
    assert!(d.run_until(Duration::from_secs(60), |d| d.standby(0)));
    let g1 = d.guid(1);
    assert!(d.saw(0, |e| *e
        == SmEvent::RemoteSm {
            guid: g1,
            priority: 15,
            state: SmState::MASTER
        }));
    assert!(d.saw(0, |e| *e
        == SmEvent::StateChanged {
            from: SmState::DISCOVERING,
            to: SmState::STANDBY
        }));
    assert_eq!(d.sms[0].master_guid(), Some(g1));
    // It polls once a second (polling timeout 1 s); the master answers.
    assert!(!d.run_until(Duration::from_millis(4500), |d| !d.standby(0) || !d.up(1)));
    let polls = d.polls_since(0, t0);
    assert!((5..=7).contains(&polls), "{polls} polls in 4.5 s");
    assert_eq!(d.fab.sets.len(), sets, "a standby sets nothing");
    assert_eq!(d.sms[0].stats().heavy_sweeps, 0);
    // The master dies. Within polling timeout x retries (+ the last
    // poll's own timeout) the standby notices, then sweeps as master.
    d.alive[1] = false;
    let killed = d.now;
    assert!(d.run_until(Duration::from_secs(60), |d| d.up(0)));
    let lost = d.events[0]
        .iter()
        .find(|(_, e)| *e == SmEvent::MasterLost { guid: g1 })
        .map(|(t, _)| *t)
        .expect("MasterLost");
    let c = cfg();
    // (A poll is resent once before it counts as missed.)
    let bound = c.sminfo_polling_timeout * c.polling_retry_number + c.timeout * 2;
    assert!(lost - killed <= bound, "{:?} > {bound:?}", lost - killed);
    assert!(d.fab.violations.is_empty(), "{:#?}", d.fab.violations);
    // Nothing renumbered; MasterSMLID now the new master's LID; every
    // CA port asked to re-register with the SA.
    assert_eq!(fabric_lids(&d.fab), lids);
    let sm_lid = d.lid(0);
    assert_eq!(d.sms[0].sm_lid(), sm_lid);
    for (n, p) in lids.keys() {
        assert_eq!(d.fab.nodes[*n].ports[usize::from(*p)].smlid, sm_lid);
        if !d.fab.nodes[*n].switch && *n != 3 {
            assert!(d.fab.rereg.contains(&(*n, *p)), "{n}:{p} not re-registered");
        }
    }
    d.assert_routed();
}

#[test]
fn a_master_hands_over_to_a_better_sm_that_joins_and_stands_by_itself() {
    let mut d = duo([1, 15]);
    d.sms[0].start(d.now);
    assert!(d.run_until(Duration::from_secs(60), |d| d.up(0)));
    let lids = fabric_lids(&d.fab);
    // SM 1 (priority 15) joins: it finds a Master, stands by and sends
    // Trap 144; SM 0 sweeps, finds a better SM standing by, sends it
    // HANDOVER and stands by; SM 1 acknowledges and becomes master.
    d.sms[1].start(d.now);
    assert!(d.run_until(Duration::from_secs(60), |d| d.up(1) && d.standby(0)));
    let g1 = d.guid(1);
    assert!(d.saw(0, |e| matches!(
        e,
        SmEvent::Trap {
            number: Some(144),
            ..
        }
    )));
    assert!(d.saw(0, |e| *e == SmEvent::HandoverSent { guid: g1 }));
    assert!(d.saw(1, |e| *e
        == SmEvent::StateChanged {
            from: SmState::STANDBY,
            to: SmState::MASTER
        }));
    let controls: Vec<(usize, u32)> = d
        .sminfo
        .iter()
        .filter(|(_, _, m, _)| *m == Method::SET)
        .map(|(_, s, _, c)| (*s, *c))
        .collect();
    assert_eq!(
        controls,
        [
            (0, SmInfo::ATTR_MOD_HANDOVER),
            (1, SmInfo::ATTR_MOD_ACKNOWLEDGE)
        ]
    );
    assert_eq!(d.sms[0].master_guid(), Some(g1));
    assert!(d.fab.violations.is_empty(), "{:#?}", d.fab.violations);
    assert_eq!(fabric_lids(&d.fab), lids, "nothing renumbered");
    let sm_lid = d.lid(1);
    for (n, p) in lids.keys() {
        assert_eq!(d.fab.nodes[*n].ports[usize::from(*p)].smlid, sm_lid);
    }
    d.assert_routed();
    // The new master stays; the old one keeps polling it.
    let t = d.now;
    assert!(!d.run_until(Duration::from_secs(5), |d| !d.up(1) || !d.standby(0)));
    assert!(d.polls_since(0, t) >= 4);
}

#[test]
fn with_equal_priorities_the_lower_port_guid_becomes_master() {
    let mut d = duo([5, 5]);
    assert!(d.guid(0) < d.guid(1));
    d.sms[0].start(d.now);
    d.sms[1].start(d.now);
    assert!(d.run_until(Duration::from_secs(60), |d| d.up(0) && d.standby(1)));
    assert_eq!(d.sms[1].master_guid(), Some(d.guid(0)));
    assert!(!d.saw(1, |e| *e == SmEvent::SubnetUp));
    d.assert_routed();
}

#[test]
fn disable_and_standby_controls_are_honoured_and_illegal_ones_refused() {
    let mut d = duo([1, 15]);
    d.sms[1].start(d.now);
    assert!(d.run_until(Duration::from_secs(60), |d| d.up(1)));
    d.sms[0].start(d.now);
    assert!(d.run_until(Duration::from_secs(60), |d| d.standby(0)));
    let refused = MadStatus::INVALID_FIELD.0;
    // Controls other than ACKNOWLEDGE only from a Master; ACKNOWLEDGE
    // only from a Standby SM; STANDBY is not taken while Standby.
    assert_eq!(
        d.control(0, SmInfo::ATTR_MOD_DISABLE, SmState::STANDBY),
        refused
    );
    assert_eq!(
        d.control(0, SmInfo::ATTR_MOD_ACKNOWLEDGE, SmState::MASTER),
        refused
    );
    assert_eq!(
        d.control(0, SmInfo::ATTR_MOD_STANDBY, SmState::MASTER),
        refused
    );
    assert_eq!(d.control(0, 9, SmState::MASTER), refused);
    assert!(d.standby(0));
    // DISABLE: NotActive, no more polls, no sweeps.
    assert_eq!(d.control(0, SmInfo::ATTR_MOD_DISABLE, SmState::MASTER), 0);
    assert_eq!(d.sms[0].sm_state(), SmState::NOT_ACTIVE);
    let t = d.now;
    d.sms[0].resweep(d.now);
    assert!(!d.run_until(Duration::from_secs(5), |d| d.sms[0].sm_state()
        != SmState::NOT_ACTIVE));
    assert_eq!(d.polls_since(0, t), 0);
    assert!(!d.sms[0].is_sweeping());
    // STANDBY: back to Standby, polling the sender again.
    assert_eq!(d.control(0, SmInfo::ATTR_MOD_STANDBY, SmState::MASTER), 0);
    assert!(d.standby(0));
    let t = d.now;
    assert!(!d.run_until(Duration::from_millis(2500), |d| !d.standby(0)));
    assert!(d.polls_since(0, t) >= 2);
    // DISCOVER: Discovering, a sweep that finds the master again.
    assert_eq!(d.control(0, SmInfo::ATTR_MOD_DISCOVER, SmState::MASTER), 0);
    assert_eq!(d.sms[0].sm_state(), SmState::DISCOVERING);
    assert!(d.run_until(Duration::from_secs(60), |d| d.standby(0)));
    assert!(d.up(1));
}

#[test]
fn sminfo_answers_carry_the_sm_key_unless_hidden_as_opensm_expects() {
    // OpenSM 3.3.23 asks with an all-zero SMInfo and ignores an SM whose
    // answer carries another key than its own (0 included).
    for (hide, want) in [(false, 0x55), (true, 0)] {
        let c = SmConfig {
            sm_key: 0x55,
            hide_sm_key: hide,
            ..cfg()
        };
        let mut d = Duo::new(Fabric::fat_tree(2, 1, 2), [(0, 1), (3, 1)], [1, 1], &c);
        let mut mad = DrPath::local().build_request(Method::GET, AttributeId::SM_INFO, 0, 9, 0);
        mad[SMP_DATA_OFFSET..SMP_DATA_OFFSET + 21].fill(0);
        d.sms[0].handle_recv(d.now, &mad, &Address::smi(PERMISSIVE_LID));
        let (rep, _) = d.sms[0].poll_transmit(d.now).expect("an answer");
        let r = Smp::new_checked(&rep[..]).unwrap();
        assert_eq!(SmInfo::parse(r.data()).unwrap().sm_key, want, "hide {hide}");
    }
}

#[test]
fn a_standby_taking_over_gives_the_guid2lid_lids_over_those_the_ports_hold() {
    let mut d = duo([1, 15]);
    d.sms[1].start(d.now);
    assert!(d.run_until(Duration::from_secs(60), |d| d.up(1)));
    let mut lids = fabric_lids(&d.fab);
    // SM 0 (on CA 0) is given a guid2lid list naming CA 1's port.
    let guid = d.fab.nodes[1].port_guid(1);
    let (n, p) = d.at[0];
    let attrs = PortAttrs {
        port_num: p,
        node_guid: d.fab.nodes[n].guid,
        port_guid: d.fab.nodes[n].port_guid(p),
        ..PortAttrs::default()
    };
    let c = SmConfig {
        priority: 1,
        guid2lid: vec![(guid, 40)],
        ..cfg()
    };
    d.sms[0] = SubnetManager::new(c, &attrs);
    d.sms[0].start(d.now);
    assert!(d.run_until(Duration::from_secs(60), |d| d.standby(0)));
    assert_eq!(fabric_lids(&d.fab), lids, "a standby sets nothing");
    d.alive[1] = false;
    assert!(d.run_until(Duration::from_secs(60), |d| d.up(0)));
    // Every LID kept but the listed one, which the list gives.
    lids.insert((1, 1), 40);
    assert_eq!(fabric_lids(&d.fab), lids);
}
