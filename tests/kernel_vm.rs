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
    if harness::skipped() {
        return None;
    }
    let run = RUN.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        harness::run(
            root,
            "cases.sh",
            &[PathBuf::from(env!("CARGO_BIN_EXE_rmpp-peer"))],
        )
    });
    match run {
        Ok(r) => Some(r),
        Err(e) => panic!("kernel VM: {e}"),
    }
}

/// A transfer case passed: both programs exited 0 and said so.
fn assert_transfer(c: &Case, receiver_ok: &str, sender_ok: &str) {
    let t = c.text();
    assert_eq!(
        (c.first_rc, c.second_rc),
        (0, 0),
        "receiver / sender exit codes:\n{t}"
    );
    assert!(t.contains(receiver_ok), "no {receiver_ok:?}:\n{t}");
    assert!(t.contains(sender_ok), "no {sender_ok:?}:\n{t}");
}

fn kernel_to_madstack(len: usize, count: usize, name: &str) {
    let Some(vm) = vm() else { return };
    let c = vm.case(name);
    assert_transfer(
        c,
        &format!("PEER done {count} of {count}"),
        &format!("KPEER done {count} of {count}"),
    );
    for n in 0..count {
        assert!(
            c.text().contains(&format!(
                "PEER ok message {n}: {len} data bytes (want {len}), first mismatch None"
            )),
            "message {n} of {len} bytes not intact:\n{}",
            c.text()
        );
    }
    // Every ACK went out: nothing the engine or the port tried to post failed.
    let stats = c.with_prefix("recv: PEER done").pop().unwrap_or_default();
    assert!(stats.contains("post_failures: 0"), "{stats}");
}

fn madstack_to_kernel(len: usize, count: usize, name: &str) {
    let Some(vm) = vm() else { return };
    let c = vm.case(name);
    assert_transfer(
        c,
        &format!("KPEER done {count} of {count}"),
        &format!("PEER done {count} of {count}"),
    );
    for n in 0..count {
        assert!(
            c.text().contains(&format!(
                "KPEER ok message {n}: {len} data bytes (want {len})"
            )),
            "the kernel did not receive message {n} intact:\n{}",
            c.text()
        );
    }
}

#[test]
fn kernel_rmpp_sender_to_madstack_receiver_4_kib() {
    kernel_to_madstack(4096, 1, "kernel_to_madstack_4096");
}

#[test]
fn kernel_rmpp_sender_to_madstack_receiver_65000_bytes_past_one_window() {
    kernel_to_madstack(65000, 1, "kernel_to_madstack_65000");
}

#[test]
fn kernel_rmpp_sender_to_madstack_receiver_1_mib() {
    kernel_to_madstack(1 << 20, 1, "kernel_to_madstack_1048576");
}

#[test]
fn madstack_rmpp_sender_to_kernel_receiver_4_kib() {
    madstack_to_kernel(4096, 1, "madstack_to_kernel_4096");
}

#[test]
fn madstack_rmpp_sender_to_kernel_receiver_65000_bytes_past_one_window() {
    madstack_to_kernel(65000, 1, "madstack_to_kernel_65000");
}

#[test]
fn madstack_rmpp_sender_to_kernel_receiver_1_mib() {
    madstack_to_kernel(1 << 20, 1, "madstack_to_kernel_1048576");
}

#[test]
fn five_back_to_back_kernel_transfers_reach_one_madstack_agent() {
    kernel_to_madstack(4096, 5, "kernel_to_madstack_5x");
}

#[test]
fn five_back_to_back_madstack_transfers_reach_the_kernel() {
    madstack_to_kernel(4096, 5, "madstack_to_kernel_5x");
}

#[test]
fn double_sided_rmpp_between_two_madstack_ports_through_the_kernel() {
    let Some(vm) = vm() else { return };
    let c = vm.case("madstack_double_sided");
    assert_transfer(c, "PEER done 1 of 1", "PEER ok send 0: status success");
    assert!(
        c.text().contains("answer 70000 data bytes"),
        "the 70,000-byte answer did not arrive whole:\n{}",
        c.text()
    );
}

#[test]
fn sa_get_table_of_more_than_a_mebibyte_between_two_madstack_ports() {
    let Some(vm) = vm() else { return };
    let c = vm.case("madstack_sa_get_table");
    assert_transfer(
        c,
        "PEER served",
        "PEER ok GetTable: 10000 records (want 10000)",
    );
    // 10,000 NodeRecords padded to 112 bytes: 1,120,000 bytes of records.
    let line = c
        .with_prefix("send: PEER ok GetTable")
        .pop()
        .unwrap_or_default();
    let bytes: usize = line
        .split(", ")
        .find_map(|f| f.strip_suffix(" bytes")?.parse().ok())
        .unwrap_or(0);
    assert!(bytes > 1 << 20, "GetTable answer of {bytes} bytes: {line}");
}

#[test]
fn registering_a_class_another_process_holds_is_refused_naming_it() {
    let Some(vm) = vm() else { return };
    let c = vm.case("claim_held_class");
    let t = c.text();
    assert_eq!(c.first_rc, 0, "the holder failed:\n{t}");
    assert_eq!(
        c.second_rc, 1,
        "madstack's registration was not refused:\n{t}"
    );
    let refusal = c
        .with_prefix("send: PEER refused: ")
        .pop()
        .unwrap_or_default();
    assert!(
        refusal.contains("0x30") && refusal.contains("another process"),
        "the refusal does not name the class and its owner: {refusal:?}\n{t}"
    );
}

#[test]
fn a_send_to_an_unreachable_gid_ends_with_the_kernels_error_within_its_deadline() {
    let Some(vm) = vm() else { return };
    let c = vm.case("unreachable_gid");
    let t = c.text();
    assert_eq!(c.second_rc, 1, "the send did not fail:\n{t}");
    // The kernel cannot resolve the GID's address: the write itself fails
    // (ETIMEDOUT), the send never exists and nothing completes, as with
    // ib_post_send_mad; the refusal is counted.
    let line = c
        .with_prefix("send: PEER bad send 0: refused after ")
        .pop()
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
    let Some(vm) = vm() else { return };
    let c = vm.case("port_events");
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
    let Some(vm) = vm() else { return };
    let c = vm.case("port_events");
    for agent in 0..2 {
        assert!(
            agent_events(c, agent)
                .iter()
                .any(|e| e == "Async(GidChange)"),
            "agent {agent} saw no GID change:\n{}",
            c.text()
        );
    }
    let ours = c.with_prefix("events: PEER gid ").pop().unwrap_or_default();
    let sysfs = c.with_prefix("sysfs gid ").pop().unwrap_or_default();
    let parse = |s: &str| s.trim().parse::<std::net::Ipv6Addr>().ok();
    assert!(parse(&sysfs).is_some(), "sysfs gid {sysfs:?}");
    assert_eq!(parse(&ours), parse(&sysfs), "\n{}", c.text());
}
