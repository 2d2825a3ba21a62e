//! SM-lite on a hostile built-in fabric, driven by [`SmDriver`] over a
//! [`SimPort`] in virtual time (the SM's clock jumps to its next
//! deadline): a switch whose SMA never answers, one that answers every
//! request with a bad status ([`SmaFault`], the fault console's `sma`
//! command), and an inter-switch link flapping while sweeps run. In each
//! the SM becomes Master and configures what it can reach, names what it
//! could not (`SmError::NodeUnreachable`, with the node and port it hangs
//! on), sweeps again after `error_resweep_delay`, keeps answering SMInfo,
//! and holds no more SMPs in its last sweeps than in its first; once the
//! fault is gone the next sweep brings the whole fabric up.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::{Duration, Instant};

use mad_core::transport::{Address, Qp, Transport};
use mad_core::wire::attr::{PortState, SmInfo, SmState};
use mad_core::wire::smp::Smp;
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass, Repr, MAD_LEN};
use mad_sim::{Fabric, SimPort, SmaFault};
use mad_sm::{SmConfig, SmDriver, SmError, SmEvent, SubnetManager};

/// The SM on the built-in fabric's first node (host-1), with light
/// sweeps every 10 s.
struct Rig {
    fabric: Fabric,
    port: SimPort,
    sm: SubnetManager,
    drv: SmDriver,
    now: Instant,
    events: Vec<SmEvent>,
    /// Largest [`SubnetManager::backlog`] seen, per sweep (index = sweeps
    /// ended before).
    backlog: Vec<usize>,
}

impl Rig {
    fn new(fabric: Fabric) -> Self {
        let mut port = fabric.attach_default().unwrap();
        port.set_is_sm(true);
        let cfg = SmConfig {
            sweep_interval: Some(Duration::from_secs(10)),
            ..SmConfig::default()
        };
        let sm = SubnetManager::new(cfg, port.port_attrs());
        Self {
            fabric,
            port,
            sm,
            drv: SmDriver::new(),
            now: Instant::now(),
            events: Vec::new(),
            backlog: vec![0],
        }
    }

    fn node(&self, id: &str) -> usize {
        self.fabric.find(id).unwrap()
    }

    /// Pumps for `dur` of virtual time (or until `stop` says so after an
    /// event); `each` runs before every pump. Panics if a pump round
    /// leaves the SM with nothing to do and no deadline (a hang).
    fn run(
        &mut self,
        dur: Duration,
        mut each: impl FnMut(&Fabric, &SubnetManager),
        stop: impl Fn(&SmEvent) -> bool,
    ) -> bool {
        let end = self.now + dur;
        loop {
            each(&self.fabric, &self.sm);
            let busy = self
                .drv
                .pump(&mut self.sm, &mut self.port, self.now)
                .unwrap();
            let b = self.sm.backlog();
            let last = self.backlog.last_mut().unwrap();
            *last = (*last).max(b);
            let mut hit = false;
            while let Some(e) = self.sm.poll_event() {
                if matches!(e, SmEvent::SweepDone { .. }) {
                    self.backlog.push(0);
                }
                hit |= stop(&e);
                self.events.push(e);
            }
            if hit {
                return true;
            }
            if !busy {
                let t = self.sm.poll_timeout().expect("the SM has a deadline");
                if t > end {
                    self.now = end;
                    return false;
                }
                self.now = self.now.max(t);
            }
        }
    }

    fn sweeps(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, SmEvent::SweepDone { .. }))
            .count()
    }

    fn unreachable(&self) -> Vec<(String, u8, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                SmEvent::Error(SmError::NodeUnreachable {
                    via_desc,
                    port,
                    reason,
                    ..
                }) => Some((via_desc.clone(), *port, reason.clone())),
                _ => None,
            })
            .collect()
    }

    /// The state and LID of `port` of node `id`.
    fn port(&self, id: &str, port: u8) -> (PortState, u16) {
        let pi = self.fabric.port_info(self.node(id), port).unwrap();
        (pi.port_state, pi.lid)
    }

    /// SMInfo Get, LID-routed from host-2 to the SM's LID: the SM's
    /// answer (its state).
    fn ask_sm_info(&mut self) -> SmState {
        let mut ep = self.fabric.attach("host-2", 1).unwrap();
        let mut m = vec![0u8; MAD_LEN];
        let mut mad = Mad::new_unchecked(&mut m[..]);
        mad.set_base_version(1);
        mad.set_mgmt_class(MgmtClass::SUBN_LID_ROUTED);
        mad.set_class_version(1);
        mad.set_method(Method::GET, false);
        mad.set_tid(0x4242);
        mad.set_attr_id(AttributeId::SM_INFO);
        ep.post_send(Qp::Qp0, &m, &Address::smi(self.sm.sm_lid()))
            .unwrap();
        // A Master in the middle of a sweep holds another SM's SMInfo Get
        // for up to 100 ms (what it finds may make it hand over): pump on
        // for up to 300 ms of virtual time.
        for _ in 0..30 {
            self.drv
                .pump(&mut self.sm, &mut self.port, self.now)
                .unwrap();
            while let Some(r) = ep.poll_recv().unwrap() {
                let smp = Smp::new_checked(&r.mad[..]).unwrap();
                if smp.tid() == 0x4242 && smp.response_bit() {
                    return SmInfo::parse(smp.data()).unwrap().sm_state;
                }
            }
            self.now += Duration::from_millis(10);
        }
        panic!("SMInfo unanswered");
    }

    /// The backlog of the first sweeps bounds that of the later ones.
    fn check_bounded(&self) {
        let n = self.backlog.len();
        assert!(n > 6, "too few sweeps: {}", n);
        let first = self.backlog[..3].iter().max().unwrap();
        let later = self.backlog[n - 4..].iter().max().unwrap();
        assert!(later <= first, "backlog grew: {:?}", self.backlog);
    }
}

fn never(_: &SmEvent) -> bool {
    false
}

fn subnet_up(e: &SmEvent) -> bool {
    *e == SmEvent::SubnetUp
}

#[test]
fn a_switch_that_never_answers_is_named_swept_again_and_configured_once_it_answers() {
    let mut r = Rig::new(Fabric::builtin());
    let spine2 = r.node("spine-2");
    r.fabric
        .set_sma_fault(spine2, Some(SmaFault::Mute))
        .unwrap();
    r.sm.start(r.now);
    assert!(!r.run(Duration::from_secs(30), |_, _| {}, subnet_up));
    // Master, serving the rest of the fabric: every host Active with a
    // LID through spine-1, and SMInfo answered.
    assert_eq!(r.sm.sm_state(), SmState::MASTER);
    for h in ["host-2", "host-5", "host-8"] {
        let (st, lid) = r.port(h, 1);
        assert!(st == PortState::ACTIVE && lid != 0, "{h}: {st:?} LID {lid}");
    }
    assert_eq!(r.ask_sm_info(), SmState::MASTER);
    // Named in every sweep, by the switches it hangs on.
    let un = r.unreachable();
    let sweeps = r.sweeps();
    assert!(sweeps >= 10, "{sweeps} sweeps in 30 s");
    assert!(
        un.iter()
            .any(|(d, p, why)| d.starts_with("leaf-1") && *p == 8 && why.contains("no answer")),
        "{un:?}"
    );
    assert!(un.len() >= sweeps, "{un:?}");
    // The link to it is left alone, not armed.
    assert_eq!(r.port("leaf-1", 8).0, PortState::INIT);
    r.check_bounded();
    // It answers again: the next sweep brings everything up.
    r.fabric.set_sma_fault(spine2, None).unwrap();
    assert!(r.run(Duration::from_secs(5), |_, _| {}, subnet_up));
    let (st, lid) = r.port("spine-2", 0);
    assert!(lid != 0, "spine-2: {st:?} LID {lid}");
    assert_eq!(r.port("leaf-1", 8).0, PortState::ACTIVE);
}

#[test]
fn a_switch_answering_a_bad_status_is_named_and_the_hosts_behind_it_wait() {
    let mut r = Rig::new(Fabric::builtin());
    let leaf2 = r.node("leaf-2");
    r.fabric
        .set_sma_fault(leaf2, Some(SmaFault::Status(0x1c)))
        .unwrap();
    r.sm.start(r.now);
    assert!(!r.run(Duration::from_secs(20), |_, _| {}, subnet_up));
    assert_eq!(r.sm.sm_state(), SmState::MASTER);
    let un = r.unreachable();
    assert!(
        un.iter()
            .any(|(d, _, why)| d.starts_with("spine-") && why == "status 0x001c"),
        "{un:?}"
    );
    // The hosts behind it stay unconfigured; those of leaf-1 are up.
    assert_eq!(r.port("host-5", 1), (PortState::INIT, 0));
    assert_eq!(r.port("host-2", 1).0, PortState::ACTIVE);
    r.check_bounded();
    r.fabric.set_sma_fault(leaf2, None).unwrap();
    assert!(r.run(Duration::from_secs(5), |_, _| {}, subnet_up));
    let (st, lid) = r.port("host-5", 1);
    assert!(
        st == PortState::ACTIVE && lid != 0,
        "host-5: {st:?} LID {lid}"
    );
}

#[test]
fn a_link_flapping_during_sweeps_never_hangs_the_sm_and_it_comes_up_when_it_stops() {
    let mut r = Rig::new(Fabric::builtin());
    let leaf1 = r.node("leaf-1");
    r.sm.start(r.now);
    let mut round = 0u64;
    let mut down = false;
    // For 30 s: every 5th pump while a sweep runs, the cable at leaf-1
    // port 7 (to spine-1) is pulled or plugged back.
    r.run(
        Duration::from_secs(30),
        |f, sm| {
            round += 1;
            if sm.is_sweeping() && round.is_multiple_of(5) {
                if down {
                    f.link_up(leaf1, 7).unwrap();
                } else {
                    f.link_down(leaf1, 7).unwrap();
                }
                down = !down;
            }
        },
        never,
    );
    assert!(r.sweeps() >= 5, "{} sweeps", r.sweeps());
    assert!(r.fabric.traps_sent() > 0);
    r.check_bounded();
    assert_eq!(r.ask_sm_info(), SmState::MASTER);
    // The cable stays in: the trap (or the next sweep) brings it all up.
    if down {
        r.fabric.link_up(leaf1, 7).unwrap();
    }
    assert!(r.run(Duration::from_secs(15), |_, _| {}, subnet_up));
    assert_eq!(r.port("leaf-1", 7).0, PortState::ACTIVE);
    for h in ["host-1", "host-4", "host-5", "host-8"] {
        assert_eq!(r.port(h, 1).0, PortState::ACTIVE, "{h}");
    }
}
