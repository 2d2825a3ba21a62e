//! `SimPort` as a `Transport`: the step-by-step delivery model, send
//! completions, queue depth and the verbs QP state rules.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::*;
use mad_core::transport::{
    Address, Qp, QpState, Transport, TransportError, WcStatus, PERMISSIVE_LID,
};
use mad_core::wire::AttributeId;
use mad_sim::fabric::DropReason;
use mad_sim::{Fabric, FabricConfig, SimPort, Topology};

fn fabric_with(cfg: FabricConfig) -> (Fabric, SimPort) {
    let topo = Topology::load(topo("net")).unwrap();
    let fabric = Fabric::with_config(&topo, cfg);
    let port = fabric.attach("Hca1", 1).unwrap();
    (fabric, port)
}

/// Hca1 port 1 on a fabric that delivers only when stepped or run.
fn stepped() -> (Fabric, SimPort) {
    fabric_with(FabricConfig {
        auto_deliver: false,
        ..FabricConfig::default()
    })
}

fn post(t: &mut SimPort, tid: u64) -> Result<mad_core::transport::WrId, TransportError> {
    let m = Req::get(TO_S2, AttributeId::NODE_INFO, 0).build(tid);
    t.post_send(Qp::Qp0, &m, &Address::smi(PERMISSIVE_LID))
}

fn completions(t: &mut SimPort) -> Vec<(u64, WcStatus)> {
    let mut v = Vec::new();
    t.poll_send_completions(&mut v).unwrap();
    v.into_iter().map(|c| (c.wr_id.0, c.status)).collect()
}

#[test]
fn stepping_moves_one_packet_at_a_time_request_then_answer() {
    let (fabric, mut t) = stepped();
    let wr = post(&mut t, 1).unwrap();
    assert_eq!(fabric.pending(), 1);
    assert!(completions(&mut t).is_empty(), "not sent yet");
    assert!(fabric.step(), "the request goes to Switch2's SMA");
    assert_eq!(completions(&mut t), [(wr.0, WcStatus::Success)]);
    assert!(drain(&mut t).is_empty());
    assert_eq!(fabric.pending(), 1, "the answer waits");
    assert!(fabric.step());
    assert_eq!(drain(&mut t).len(), 1);
    assert!(!fabric.step());
    // Several at once, in order.
    for tid in 10..13 {
        post(&mut t, tid).unwrap();
    }
    assert_eq!(fabric.run_until_idle(), 6);
    let tids: Vec<u64> = drain(&mut t)
        .iter()
        .map(|r| mad_core::wire::Mad::new_unchecked(&r.mad[..]).tid())
        .collect();
    assert_eq!(tids, [10, 11, 12]);
    // Turning auto-delivery on runs what is queued.
    post(&mut t, 20).unwrap();
    fabric.set_auto_deliver(true);
    assert_eq!(fabric.pending(), 0);
    assert_eq!(drain(&mut t).len(), 1);
}

#[test]
fn the_send_queue_holds_its_depth_of_unsent_requests() {
    let (fabric, mut t) = fabric_with(FabricConfig {
        auto_deliver: false,
        send_queue_depth: 2,
        ..FabricConfig::default()
    });
    assert_eq!(t.send_queue_depth(), 2);
    post(&mut t, 1).unwrap();
    post(&mut t, 2).unwrap();
    assert!(matches!(
        post(&mut t, 3),
        Err(TransportError::QueueFull { depth: 2, .. })
    ));
    fabric.step();
    post(&mut t, 3).unwrap();
}

/// What a mio loop sees: a fresh registration reports the current
/// readiness at once.
fn readable(fd: std::os::fd::RawFd) -> bool {
    FdWatch::new(fd).readable_within(std::time::Duration::ZERO)
}

#[test]
fn raw_fd_is_readable_exactly_while_something_waits() {
    let (fabric, mut t) = stepped();
    let fd = t.raw_fd().expect("a notification fd");
    assert!(!readable(fd));
    post(&mut t, 1).unwrap();
    assert!(!readable(fd), "queued, not sent");
    fabric.run_until_idle();
    assert!(readable(fd), "a completion and an answer wait");
    assert_eq!(completions(&mut t).len(), 1);
    assert!(readable(fd), "the answer still waits");
    assert_eq!(drain(&mut t).len(), 1);
    assert!(!readable(fd), "all drained");
    // Another endpoint's send wakes it too.
    let mut other = fabric.attach("Hca2", 2).unwrap();
    other.set_is_sm(true);
    let m = Req::get(TO_H2, AttributeId::SM_INFO, 0).build(9);
    t.post_send(Qp::Qp0, &m, &Address::smi(PERMISSIVE_LID))
        .unwrap();
    fabric.run_until_idle();
    let ofd = other.raw_fd().unwrap();
    assert!(readable(ofd));
    assert_eq!(drain(&mut other).len(), 1);
    assert!(!readable(ofd));
}

#[test]
fn an_unwatched_fd_stays_quiet_and_watched_again_is_readable_at_once_if_anything_waits() {
    let (fabric, mut t) = stepped();
    let fd = t.raw_fd().expect("a notification fd");
    // Unwatched while something waits: emptied.
    post(&mut t, 1).unwrap();
    fabric.run_until_idle();
    assert!(readable(fd));
    t.watch_fd(false);
    assert!(!readable(fd), "emptied when unwatched");
    assert_eq!(t.raw_fd(), Some(fd), "the same descriptor");
    // Polling still finds what comes while unwatched; nothing is written.
    assert_eq!(completions(&mut t).len(), 1);
    assert_eq!(drain(&mut t).len(), 1);
    post(&mut t, 2).unwrap();
    fabric.run_until_idle();
    assert!(!readable(fd), "an arrival while unwatched writes nothing");
    // Watched again with an answer queued: readable at once, so a waiter
    // misses nothing that came meanwhile.
    t.watch_fd(true);
    assert!(readable(fd), "what came while unwatched is announced");
    assert_eq!(completions(&mut t).len(), 1);
    assert_eq!(drain(&mut t).len(), 1);
    assert!(!readable(fd), "all drained");
    // Watched again with nothing queued: quiet, and arrivals announced.
    t.watch_fd(false);
    t.watch_fd(true);
    assert!(!readable(fd));
    post(&mut t, 3).unwrap();
    fabric.run_until_idle();
    assert!(readable(fd), "watched: an arrival makes it readable");
    assert_eq!(completions(&mut t).len(), 1);
    assert_eq!(drain(&mut t).len(), 1);
    assert!(!readable(fd));
}

#[test]
fn qp_error_flushes_queued_requests_and_reset_discards_them() {
    let (fabric, mut t) = stepped();
    let a = post(&mut t, 1).unwrap();
    let b = post(&mut t, 2).unwrap();
    t.modify_qp(Qp::Qp0, QpState::Err).unwrap();
    assert_eq!(
        completions(&mut t),
        [(a.0, WcStatus::WrFlushErr), (b.0, WcStatus::WrFlushErr)]
    );
    assert_eq!(fabric.pending(), 0);
    // Posting in ERR completes at once with a flush error.
    let c = post(&mut t, 3).unwrap();
    assert_eq!(completions(&mut t), [(c.0, WcStatus::WrFlushErr)]);
    // ERR -> INIT is not a transition; RESET -> INIT -> RTR -> RTS is.
    assert!(matches!(
        t.modify_qp(Qp::Qp0, QpState::Init),
        Err(TransportError::InvalidTransition { .. })
    ));
    t.modify_qp(Qp::Qp0, QpState::Reset).unwrap();
    assert!(matches!(
        post(&mut t, 4),
        Err(TransportError::QpNotReady { .. })
    ));
    for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
        t.modify_qp(Qp::Qp0, s).unwrap();
    }
    post(&mut t, 5).unwrap();
    // RESET discards without completions.
    t.modify_qp(Qp::Qp0, QpState::Reset).unwrap();
    assert_eq!(fabric.pending(), 0);
    assert!(completions(&mut t).is_empty());
    // recreate_queues brings both QPs back in RTS with nothing queued.
    t.recreate_queues().unwrap();
    assert_eq!(
        (t.qp_state(Qp::Qp0), t.qp_state(Qp::Qp1)),
        (QpState::Rts, QpState::Rts)
    );
    post(&mut t, 6).unwrap();
    fabric.run_until_idle();
    assert_eq!(drain(&mut t).len(), 1);
}

#[test]
fn a_qp_that_cannot_receive_drops_what_arrives() {
    let (fabric, mut t) = stepped();
    post(&mut t, 1).unwrap();
    fabric.step();
    // The answer arrives while QP0 is in RESET.
    t.modify_qp(Qp::Qp0, QpState::Reset).unwrap();
    fabric.run_until_idle();
    assert!(drain(&mut t).is_empty());
    assert_eq!(fabric.stats().dropped(DropReason::QpNotReady), 1);
}

#[test]
fn port_attrs_describe_the_attached_port() {
    let (_fabric, t) = net();
    let a = t.port_attrs();
    assert_eq!(
        (
            a.ca_name.as_str(),
            a.port_num,
            a.node_guid,
            a.port_guid,
            a.is_switch
        ),
        ("Hca1", 1, 0x10_0000, 0x10_0001, false)
    );
    assert_eq!(
        (a.state, a.phys_state, a.lid),
        (2, 5, 0),
        "Init, LinkUp, no LID yet"
    );
    assert_eq!(a.pkeys, vec![0xFFFF]);
}
