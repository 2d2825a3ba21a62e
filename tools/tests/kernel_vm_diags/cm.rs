//! madstack ↔ madstack connection management on real devices: `mad cm`
//! listening on rxe1 and connecting from rxe0 inside the kernel VM
//! (tests/kvm/cm.sh), the kernel's own `ib_cm` not loaded. RoCE has no
//! LIDs and no SA: the peer is named by GID, the path is a RoCE path and
//! every CM MAD crosses the kernel's `ib_umad` with a GRH. Each case checks
//! the rdma_cm events both sides printed, in order, and their exit codes.

use super::harness::Case;

fn case(name: &str) -> Option<&'static Case> {
    Some(super::vm()?.case(name))
}

/// The case's lines of `side` that start (after the connection ID) with `event`.
fn lines(c: &Case, side: &str, event: &str) -> Vec<String> {
    c.with_prefix(&format!("{side}: "))
        .into_iter()
        .filter(|l| l.split_whitespace().nth(1) == Some(event))
        .collect()
}

/// Case `name` ended with these exit codes and these events on each side.
fn check(name: &str, rcs: (i32, i32), listen: &[&str], connect: &[&str]) -> Option<&'static Case> {
    let c = case(name)?;
    c.assert_cm(rcs, &[("listen", listen), ("connect", connect)]);
    Some(c)
}

/// A listener's events for one connection the active side ends.
const PASSIVE: [&str; 4] = [
    "CONNECT_REQUEST",
    "ESTABLISHED",
    "DISCONNECTED",
    "TIMEWAIT_EXIT",
];

/// An active side's events for one connection it ends itself.
const ACTIVE: [&str; 4] = [
    "ESTABLISHED",
    "disconnecting",
    "DISCONNECTED",
    "TIMEWAIT_EXIT",
];

#[test]
fn the_kernels_cm_is_not_loaded_so_class_0x07_is_madstacks() {
    let Some(vm) = super::vm() else { return };
    assert!(
        !vm.console.contains("KVM_ERR ib_cm") && !vm.console.contains("KVM_ERR rdma_cm"),
        "the kernel's CM is loaded in the VM"
    );
}

#[test]
fn connect_by_gid_over_roce_then_disconnect_from_the_active_side() {
    let Some(c) = check("cm_connect", (0, 0), &PASSIVE, &ACTIVE) else {
        return;
    };
    let t = c.text();
    // The listener's GID, as it printed it, is where the active side connected.
    let listening = c.last("listen: listening on service ").unwrap_or_default();
    let gid1 = listening.rsplit(' ').next().unwrap_or_default();
    assert!(gid1.starts_with("fe80:"), "listener's GID {gid1:?}:\n{t}");
    let est = lines(c, "connect", "ESTABLISHED").concat();
    // No LIDs on RoCE; the listener's QPN (default 1); the MTU a 1500-byte
    // veth leaves (1024: code 3).
    for want in [
        format!("remote LID 0 GID {gid1} QPN 0x1 "),
        "MTU code 3".to_owned(),
    ] {
        assert!(est.contains(&want), "no {want:?} in {est:?}:\n{t}");
    }
    // The REQ carried the active side's QPN and its GID (rxe0's).
    let req = lines(c, "listen", "CONNECT_REQUEST").concat();
    assert!(req.contains("remote LID 0 GID fe80:"), "{req}\n{t}");
    assert!(req.contains("QPN 0x42 "), "{req}\n{t}");
    assert!(
        !req.contains(&format!("GID {gid1} ")),
        "the REQ names the listener as its source:\n{t}"
    );
}

#[test]
fn a_reject_carries_its_reason_to_the_active_side() {
    let Some(c) = check("cm_reject", (0, 1), &["CONNECT_REQUEST"], &["REJECTED"]) else {
        return;
    };
    let rej = lines(c, "connect", "REJECTED").concat();
    assert!(rej.contains("REJECTED reason 28 "), "{rej}\n{}", c.text());
}

#[test]
fn an_mra_keeps_the_active_side_waiting_past_its_only_attempt() {
    // The active side never resends and waits 2.4 s; the listener MRAs the
    // REQ and accepts 3 s later: without the MRA it is UNREACHABLE.
    check(
        "cm_mra",
        (0, 0),
        &[&PASSIVE[..1], &["MRA"], &PASSIVE[1..]].concat(),
        &ACTIVE,
    );
}

#[test]
fn the_passive_side_disconnects_and_the_active_side_is_told() {
    check(
        "cm_passive_disconnect",
        (0, 0),
        &[
            "CONNECT_REQUEST",
            "ESTABLISHED",
            "disconnecting",
            "DISCONNECTED",
            "TIMEWAIT_EXIT",
        ],
        &["ESTABLISHED", "DISCONNECTED", "TIMEWAIT_EXIT"],
    );
}

#[test]
fn both_sides_disconnecting_at_once_each_get_the_dreq_in_state_dreq_sent() {
    // netem holds every frame 300 ms and the two DREQs leave together:
    // each side is in DREQ sent when the other's arrives, so both
    // disconnect for sure, once each, with timewait once each.
    let Some(c) = check(
        "cm_simultaneous_disconnect",
        (0, 0),
        &[&PASSIVE[..2], &ACTIVE[1..]].concat(),
        &ACTIVE,
    ) else {
        return;
    };
    // The delay was in place: netem held every CM MAD of the case
    // (REQ, REP, RTU, two DREQs, two DREPs at least).
    let console = super::vm().map_or("", |v| v.console.as_str());
    assert!(!console.contains("KVM_ERR netem"), "{console}");
    let delayed: u64 = console
        .lines()
        .find_map(|l| l.strip_prefix("netem: delayed "))
        .and_then(|l| l.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(
        delayed >= 7,
        "netem delayed {delayed} packets:\n{}",
        c.text()
    );
    for side in ["listen", "connect"] {
        let d = lines(c, side, "DISCONNECTED").concat();
        assert!(
            d.ends_with("DISCONNECTED (DREQ received in state DREQ sent)"),
            "{side}: {d:?}\n{}",
            c.text()
        );
    }
}

#[test]
fn removing_the_device_gives_the_connection_and_the_listener_device_removal() {
    // `rdma link del rxe1` under a listener with an established
    // connection: both IDs get DEVICE_REMOVAL, the listener closes the
    // device and exits 1, so the removal returns; the active side's DREQ
    // then goes unanswered.
    let Some(c) = check(
        "cm_device_removal",
        (1, 0),
        &[
            "CONNECT_REQUEST",
            "ESTABLISHED",
            "DEVICE_REMOVAL",
            "DEVICE_REMOVAL",
        ],
        &ACTIVE,
    ) else {
        return;
    };
    let t = c.text();
    assert!(
        t.contains("removal: rdma link del rxe1 returned 0"),
        "the removal did not finish:\n{t}"
    );
    let removed = lines(c, "listen", "DEVICE_REMOVAL");
    assert!(
        removed[1].starts_with("0x00000000 DEVICE_REMOVAL listener service 0x"),
        "{removed:?}\n{t}"
    );
    let d = lines(c, "connect", "DISCONNECTED").concat();
    assert!(d.ends_with("(DREQ unanswered)"), "{d:?}\n{t}");
}

#[test]
fn a_req_reusing_a_qp_in_timewait_is_stale_and_accepted_after_timewait() {
    // The stale REQ raises nothing on the listener; the active side is
    // rejected, waits out both timewaits (the old connection's and the
    // rejected one's) and connects again.
    let listen = [PASSIVE, PASSIVE].concat();
    let connect = [
        &ACTIVE[..3],
        &["REJECTED", "TIMEWAIT_EXIT", "TIMEWAIT_EXIT"],
        &ACTIVE,
    ]
    .concat();
    let Some(c) = check("cm_stale_after_timewait", (0, 0), &listen, &connect) else {
        return;
    };
    let rej = lines(c, "connect", "REJECTED").concat();
    assert!(rej.contains("REJECTED reason 10 "), "{rej}\n{}", c.text());
}

#[test]
fn an_unanswered_req_is_unreachable_after_its_resend() {
    check("cm_unreachable", (0, 1), &[], &["UNREACHABLE"]);
}

#[test]
fn without_a_qp_the_rep_is_a_connect_response_and_the_rtu_follows() {
    let connect = [&["CONNECT_RESPONSE"][..], &ACTIVE].concat();
    check("cm_no_qp", (0, 0), &PASSIVE, &connect);
}

#[test]
fn a_rep_the_vanished_active_side_never_answers_is_a_connect_error() {
    // The active process is killed (SIGKILL: 137) once its REQ is MRAed.
    let listen = ["CONNECT_REQUEST", "MRA", "CONNECT_ERROR"];
    let Some(c) = check("cm_active_gone", (0, 137), &listen, &[]) else {
        return;
    };
    let err = lines(c, "listen", "CONNECT_ERROR").concat();
    assert!(
        err.contains("no RTU came for the REP"),
        "{err}\n{}",
        c.text()
    );
}
