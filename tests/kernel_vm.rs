//! madstack against the real Linux kernel: `ib_umad` and `mad_rmpp` on two
//! soft-RoCE ports (rxe0, rxe1) inside a qemu VM (tests/kvm). One VM boot
//! runs every case of `tests/kvm/cases.sh`; each test here checks one.
//!
//! `kpeer` (tests/kvm/kpeer.c) is the kernel's own RMPP through libibumad
//! with `rmpp_version` 1; `rmpp-peer` (src/bin/rmpp_peer.rs) is madstack on
//! the same libibumad with the kernel's RMPP off.

#[path = "kvm/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use harness::{Case, VmRun};

fn vm() -> Option<&'static VmRun> {
    static RUN: OnceLock<Result<VmRun, String>> = OnceLock::new();
    harness::shared_run(&RUN, || {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        harness::run(
            root,
            "cases.sh",
            &[PathBuf::from(env!("CARGO_BIN_EXE_rmpp-peer"))],
        )
    })
}

/// Case `name` of the VM run; `None` when the VM tests are skipped.
fn case(name: &str) -> Option<&'static Case> {
    Some(vm()?.case(name))
}

/// Transfer case `name` of the VM run passed: both programs exited 0 and
/// said so. `None` when the VM tests are skipped.
fn passed_transfer(name: &str, receiver_ok: &str, sender_ok: &str) -> Option<&'static Case> {
    let c = case(name)?;
    let t = c.text();
    assert_eq!(
        (c.first_rc, c.second_rc),
        (0, 0),
        "{name}: receiver / sender exit codes:\n{t}"
    );
    assert!(t.contains(receiver_ok), "{name}: no {receiver_ok:?}:\n{t}");
    assert!(t.contains(sender_ok), "{name}: no {sender_ok:?}:\n{t}");
    Some(c)
}

/// One side's RMPP sends `count` messages of `len` bytes to the other's
/// receiver in VM case `name`: the kernel's (`kpeer`) to madstack's
/// (`rmpp-peer`) when `to_madstack`, else the other way.
fn transfer(to_madstack: bool, len: usize, count: usize, name: &str) {
    let (receiver, sender, tail) = if to_madstack {
        ("PEER", "KPEER", ", first mismatch None")
    } else {
        ("KPEER", "PEER", "")
    };
    let Some(c) = passed_transfer(
        name,
        &format!("{receiver} done {count} of {count}"),
        &format!("{sender} done {count} of {count}"),
    ) else {
        return;
    };
    for n in 0..count {
        let intact = format!("{receiver} ok message {n}: {len} data bytes (want {len}){tail}");
        assert!(
            c.text().contains(&intact),
            "{name}: message {n} of {len} bytes not received intact:\n{}",
            c.text()
        );
    }
    if to_madstack {
        // Every ACK went out: nothing the engine or the port tried to
        // post failed.
        let stats = c.last("recv: PEER done").unwrap_or_default();
        assert!(stats.contains("post_failures: 0"), "{name}: {stats}");
    }
}

/// (message length, messages, VM case) of the transfers in each direction:
/// 4 KiB, 65,000 bytes (past one window), 1 MiB, and five back to back.
const TRANSFERS: [(usize, usize, &str); 4] = [
    (4096, 1, "4096"),
    (65000, 1, "65000"),
    (1 << 20, 1, "1048576"),
    (4096, 5, "5x"),
];

#[test]
fn kernel_rmpp_sender_to_madstack_receiver_4_kib_65000_bytes_1_mib_and_five_back_to_back() {
    for (len, count, case) in TRANSFERS {
        transfer(true, len, count, &format!("kernel_to_madstack_{case}"));
    }
}

#[test]
fn madstack_rmpp_sender_to_kernel_receiver_4_kib_65000_bytes_1_mib_and_five_back_to_back() {
    for (len, count, case) in TRANSFERS {
        transfer(false, len, count, &format!("madstack_to_kernel_{case}"));
    }
}

#[test]
fn double_sided_rmpp_between_two_madstack_ports_through_the_kernel() {
    let Some(c) = passed_transfer(
        "madstack_double_sided",
        "PEER done 1 of 1",
        "PEER ok send 0: status success",
    ) else {
        return;
    };
    assert!(
        c.text().contains("answer 70000 data bytes"),
        "the 70,000-byte answer did not arrive whole:\n{}",
        c.text()
    );
}

#[test]
fn sa_get_table_of_more_than_a_mebibyte_between_two_madstack_ports() {
    let Some(c) = passed_transfer(
        "madstack_sa_get_table",
        "PEER served",
        "PEER ok GetTable: 10000 records (want 10000)",
    ) else {
        return;
    };
    // 10,000 NodeRecords padded to 112 bytes: 1,120,000 bytes of records.
    let line = c.last("send: PEER ok GetTable").unwrap_or_default();
    let bytes: usize = line
        .split(", ")
        .find_map(|f| f.strip_suffix(" bytes")?.parse().ok())
        .unwrap_or(0);
    assert!(bytes > 1 << 20, "GetTable answer of {bytes} bytes: {line}");
}

#[test]
fn registering_a_class_another_process_holds_is_refused_naming_it() {
    let Some(c) = case("claim_held_class") else {
        return;
    };
    let t = c.text();
    assert_eq!(c.first_rc, 0, "the holder failed:\n{t}");
    assert_eq!(
        c.second_rc, 1,
        "madstack's registration was not refused:\n{t}"
    );
    let refusal = c.last("send: PEER refused: ").unwrap_or_default();
    assert!(
        refusal.contains("0x30") && refusal.contains("another process"),
        "the refusal does not name the class and its owner: {refusal:?}\n{t}"
    );
}

#[test]
fn a_send_to_an_unreachable_gid_ends_with_the_kernels_error_within_its_deadline() {
    let Some(c) = case("unreachable_gid") else {
        return;
    };
    let t = c.text();
    assert_eq!(c.second_rc, 1, "the send did not fail:\n{t}");
    // The kernel cannot resolve the GID's address: the write itself fails
    // (ETIMEDOUT), the send never exists and nothing completes, as with
    // ib_post_send_mad; the refusal is counted.
    let line = c
        .last("send: PEER bad send 0: refused after ")
        .unwrap_or_else(|| panic!("no refusal:\n{t}"));
    let ms: u64 = line
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX);
    // The kernel gives up resolving the address after about a second; the
    // send's own attempts (1 s, two retries) would end by 3 s.
    assert!(ms <= 3_000, "refused after {ms} ms: {line}");
    assert!(line.contains("Connection timed out"), "{line}");
    assert!(line.contains("post_failures: 1"), "not counted: {line}");
}

/// Events one agent printed, in order.
fn agent_events(c: &Case, agent: usize) -> Vec<String> {
    c.with_prefix(&format!("events: PEER event agent {agent} "))
}

#[test]
fn link_down_and_up_give_every_agent_port_error_then_port_active_once() {
    let Some(c) = case("port_events") else { return };
    for agent in 0..2 {
        let evs: Vec<String> = agent_events(c, agent)
            .into_iter()
            .filter(|e| e.contains("PortError") || e.contains("PortActive"))
            .collect();
        assert_eq!(
            evs,
            vec!["Async(PortError)", "Async(PortActive)"],
            "agent {agent}:\n{}",
            c.text()
        );
    }
}

#[test]
fn a_new_mac_gives_gid_change_and_the_ports_gid_equals_sysfs() {
    let Some(c) = case("port_events") else { return };
    for agent in 0..2 {
        assert!(
            agent_events(c, agent)
                .iter()
                .any(|e| e == "Async(GidChange)"),
            "agent {agent} saw no GID change:\n{}",
            c.text()
        );
    }
    let ours = c.last("events: PEER gid ").unwrap_or_default();
    let sysfs = c.last("sysfs gid ").unwrap_or_default();
    let parse = |s: &str| s.trim().parse::<std::net::Ipv6Addr>().ok();
    assert!(parse(&sysfs).is_some(), "sysfs gid {sysfs:?}");
    assert_eq!(parse(&ours), parse(&sysfs), "\n{}", c.text());
}

#[test]
fn removing_the_device_under_a_shared_port_ends_each_pending_send_once_and_every_service_hears_it()
{
    // Seed 002's device-fatal row on a real device, with the services of
    // seed 004 on one shared port: `rdma link del rxe0` under 8 pending
    // user sends and a pending SA request (at a sink on rxe1 that never
    // answers).
    let Some(c) = case("shared_port_device_fatal") else {
        return;
    };
    let t = c.text();
    assert!(
        t.contains("removal: rdma link del rxe0 returned 0"),
        "the removal did not finish (the device was not closed):\n{t}"
    );
    for want in [
        // Each pending send ended exactly once, in error.
        "SHARED user completions 8 of 8, each once true, in error 8",
        // The SA request in flight failed; later ones fail at once.
        "SHARED sa after: Err(PortDead)",
        // A later post on the dead port is refused at once.
        "SHARED user post after: refused: ",
        // Every service heard of it.
        "SHARED heard: user DeviceFatal 1, sa dead true, cm device_fatal 1",
        // The CM's listener was told its device went.
        "SHARED cm events: ListenerRemoved",
        // The last handle closed the port and joined its thread.
        "SHARED closed: holders 0, joined true",
        // No completion came twice, however late (checked after the
        // synchronous deregistration).
        "SHARED each once after close true",
        "SHARED done ok true",
    ] {
        assert!(t.contains(want), "no {want:?}:\n{t}");
    }
    assert!(
        t.contains("SHARED sa in flight ended: Err("),
        "the SA request in flight did not fail:\n{t}"
    );
    assert_eq!(c.second_rc, 0, "rmpp-peer shared-fatal's exit code:\n{t}");
}
