//! Device-level faults of an endpoint, injected through the fabric
//! (`Fabric::inject`, as the `mad sim` console does) into a `FaultyPort`
//! (a `SimPort` inside mad-core's `FaultInjector`), reaching a port layer
//! (`mad_testkit::PortPair`) the way it specifies: work-request errors
//! complete in error and the QP recovers, a CQ overflow flushes and
//! recreates the queues, device fatal kills the port, a soft reset runs
//! its two phases, and any other event is passed on.
#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::time::{Duration, Instant};

use common::FdWatch;
use mad_core::port::{PortConfig, PortError, PortEvent};
use mad_core::transport::{Address, AsyncEvent, Qp, QpState, Transport, Unsendable, WcStatus};
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass};
use mad_sim::{EndpointFault, FaultyPort, SimError, Subnet};
use mad_testkit::{MadBuilder, PortPair};

/// A vendor-class Send.
fn mad(tid: u64) -> Vec<u8> {
    MadBuilder::new(MgmtClass(0x09), 1, Method::SEND, AttributeId(0))
        .tid(tid)
        .to_vec()
}

struct Rig {
    subnet: Subnet,
    port: PortPair<FaultyPort>,
    client: mad_core::port::ClientId,
    to: Address,
    node: usize,
}

fn rig() -> Rig {
    let subnet = Subnet::builtin().unwrap();
    let f = subnet.fabric();
    let node = f.find("host-2").unwrap();
    let sp = f.attach(node, 1).unwrap();
    let mut port = PortPair::new(FaultyPort::new(sp, 1), PortConfig::default());
    let client = port.register();
    port.subscribe_all(client).unwrap();
    let to = Address::gsi(f.port_info(f.find("host-7").unwrap(), 1).unwrap().lid);
    Rig {
        subnet,
        port,
        client,
        to,
        node,
    }
}

impl Rig {
    fn events(&mut self) -> Vec<PortEvent> {
        self.port.poll(Instant::now());
        std::iter::from_fn(|| self.port.poll_client(self.client)).collect()
    }
    fn inject(&self, f: EndpointFault) {
        self.subnet.fabric().inject(self.node, 1, f).unwrap();
    }
    /// Injects `f` and returns the events the port then reports.
    fn inject_and_poll(&mut self, f: EndpointFault) -> Vec<PortEvent> {
        self.inject(f);
        self.events()
    }
    fn send(&mut self, tid: u64) {
        self.port
            .post(
                self.client,
                Unsendable::check_post(&mad(tid), Qp::Qp1).unwrap(),
                &self.to,
                tid,
            )
            .unwrap();
    }
}

fn statuses(evs: &[PortEvent]) -> Vec<(u64, WcStatus)> {
    evs.iter()
        .filter_map(|e| match e {
            PortEvent::SendComplete { cookie, status, .. } => Some((*cookie, *status)),
            _ => None,
        })
        .collect()
}

#[test]
fn an_injected_work_request_error_completes_that_send_in_error_and_the_qp_recovers() {
    let mut r = rig();
    r.inject(EndpointFault::WrError(WcStatus::LocProtErr));
    r.send(1);
    r.send(2);
    let evs = r.events();
    let st = statuses(&evs);
    assert_eq!(st[0], (1, WcStatus::LocProtErr), "{evs:?}");
    assert_eq!(
        st[1],
        (2, WcStatus::WrFlushErr),
        "the send behind it is flushed"
    );
    // The port brought the QP back; the next send goes through.
    assert_eq!(r.port.qp_state(Qp::Qp1), QpState::Rts);
    assert_eq!(r.port.stats().qp_recoveries, 1);
    r.send(3);
    assert_eq!(statuses(&r.events()), vec![(3, WcStatus::Success)]);
}

#[test]
fn an_injected_cq_overflow_flushes_what_was_posted_and_recreates_the_queues() {
    let mut r = rig();
    r.send(1);
    let evs = r.inject_and_poll(EndpointFault::CqOverflow);
    assert_eq!(statuses(&evs), vec![(1, WcStatus::WrFlushErr)], "{evs:?}");
    let st = r.port.stats();
    assert_eq!((st.cq_errors, st.recreates), (1, 1));
    assert_eq!(r.port.driver.transport().stats().cq_errors, 1);
    r.send(2);
    assert_eq!(statuses(&r.events()), vec![(2, WcStatus::Success)]);
}

#[test]
fn an_injected_device_fatal_kills_the_port_for_good() {
    let mut r = rig();
    let evs = r.inject_and_poll(EndpointFault::DeviceFatal);
    assert!(evs.contains(&PortEvent::DeviceFatal), "{evs:?}");
    assert!(r.port.is_dead());
    assert!(matches!(
        r.port.post(
            r.client,
            Unsendable::check_post(&mad(1), Qp::Qp1).unwrap(),
            &r.to,
            1
        ),
        Err(PortError::Dead { .. })
    ));
}

#[test]
fn an_injected_soft_reset_runs_both_phases_and_the_device_reports_its_end() {
    let mut r = rig();
    r.send(1);
    let evs = r.inject_and_poll(EndpointFault::SoftReset);
    assert!(evs.contains(&PortEvent::ResetPending), "{evs:?}");
    // Sends posted during the reset wait.
    r.send(2);
    assert_eq!(r.port.queued(Qp::Qp1), 1);
    r.port.ack_reset(r.client).unwrap();
    let evs = r.events();
    assert!(evs.contains(&PortEvent::ResetEnd), "{evs:?}");
    assert!(statuses(&evs).contains(&(2, WcStatus::Success)), "{evs:?}");
    assert_eq!(r.port.stats().soft_resets, 1);
    // The device's SoftResetEnd came after the queues were recreated (the
    // port layer ignores it: it ended the reset itself).
    assert_eq!(r.port.driver.transport().stats().recreates, 1);
    assert_eq!(r.port.driver.transport().stats().events, 2);
}

#[test]
fn any_injected_event_reaches_every_client() {
    let mut r = rig();
    for ev in [
        AsyncEvent::LidChange,
        AsyncEvent::SmChange,
        AsyncEvent::ClientReregister,
        AsyncEvent::PkeyChange,
    ] {
        r.inject(EndpointFault::Event(ev));
        let evs = r.events();
        assert_eq!(evs, vec![PortEvent::Async(ev)]);
    }
    r.inject(EndpointFault::QpFatal(Qp::Qp1));
    r.events();
    assert_eq!(r.port.stats().qp_fatal, 1);
    assert_eq!(r.port.qp_state(Qp::Qp1), QpState::Rts, "recovered");
}

#[test]
fn an_injected_fault_makes_the_endpoint_fd_readable_for_a_sleeping_loop() {
    let r = rig();
    let fd = r.port.driver.transport().raw_fd().unwrap();
    let mut watch = FdWatch::new(fd);
    assert!(!watch.readable_within(Duration::ZERO));
    r.inject(EndpointFault::Event(AsyncEvent::GidChange));
    assert!(watch.readable_within(Duration::from_secs(1)));
}

#[test]
fn a_plain_sim_port_takes_notification_events_but_refuses_device_faults() {
    let s = Subnet::builtin().unwrap();
    let f = s.fabric();
    let mut ep = f.attach("host-4", 1).unwrap();
    f.inject("host-4", 1, EndpointFault::Event(AsyncEvent::SmChange))
        .unwrap();
    assert_eq!(ep.poll_event(), Some(AsyncEvent::SmChange));
    assert!(matches!(
        f.inject("host-4", 1, EndpointFault::DeviceFatal),
        Err(SimError::NotFaultCapable { .. })
    ));
    assert!(matches!(
        f.inject("host-5", 1, EndpointFault::DeviceFatal),
        Err(SimError::NoEndpoint { .. })
    ));
}

#[test]
fn endpoint_fault_configs_are_seeded_and_repeatable() {
    // The injector's own seeded drops, driven through the fabric.
    let run = |seed: u64| {
        let s = Subnet::builtin().unwrap();
        let f = s.fabric();
        let a = f.attach("host-2", 1).unwrap();
        let mut b = f.attach("host-7", 1).unwrap();
        let to = Address::gsi(f.port_info(f.find("host-7").unwrap(), 1).unwrap().lid);
        let mut a = FaultyPort::new(a, seed);
        f.inject(
            "host-2",
            1,
            EndpointFault::Config(mad_core::transport::fault::FaultConfig {
                send_drop: 0.3,
                ..Default::default()
            }),
        )
        .unwrap();
        let mut got = Vec::new();
        let mut c = Vec::new();
        for tid in 1..=60u64 {
            a.post_send(Qp::Qp1, &mad(tid), &to).unwrap();
            a.poll_send_completions(&mut c).unwrap();
            while let Some(m) = b.poll_recv().unwrap() {
                got.push(Mad::new_checked(&m.mad[..]).unwrap().tid());
            }
        }
        got
    };
    let x = run(5);
    assert_eq!(x, run(5));
    assert_ne!(x, run(6));
    assert!(x.len() < 60 && x.len() > 20);
}
