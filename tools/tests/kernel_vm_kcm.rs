//! madstack's CM against the Linux kernel's own CM (`ib_cm` + `rdma_cm`)
//! as the independent peer: two qemu VMs on one socket network, each with
//! a soft-RoCE device on its NIC (tests/kvm/run.sh with a peer body). The
//! first runs `mad cm` (no kernel CM loaded there, tests/kvm/kcm.sh); the
//! second loads the kernel's CM and runs librdmacm's `rping`, which prints
//! each rdma_cm event it gets (tests/kvm/kcm-peer.sh). One boot of the pair
//! runs every case.

use std::path::PathBuf;
use std::sync::OnceLock;

#[path = "../../tests/kvm/harness.rs"]
mod harness;

/// The pair's run, booted once for every test here.
fn vm() -> Option<&'static harness::VmRun> {
    static PAIR: OnceLock<Result<harness::VmRun, String>> = OnceLock::new();
    harness::shared_run(&PAIR, || {
        let tools = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let root = tools.parent().ok_or("tools/ has no parent")?;
        let programs = [
            PathBuf::from(env!("CARGO_BIN_EXE_mad")),
            root.join("tests/kvm/lib.sh"),
        ];
        harness::run_pair(root, "kcm.sh", "kcm-peer.sh", &programs)
    })
}

fn case(name: &str) -> Option<&'static harness::Case> {
    Some(vm()?.case(name))
}

/// The cases of one exchange: what madstack's VM printed (`ours`) and
/// what the kernel's printed (`kernel`).
fn pair(ours: &str, kernel: &str) -> Option<(&'static harness::Case, &'static harness::Case)> {
    Some((case(ours)?, case(kernel)?))
}

/// The rdma_cm events rping printed (`cma_event type RDMA_CM_EVENT_X`), in order.
fn rping_events(c: &harness::Case) -> Vec<String> {
    c.with_prefix("rping: ")
        .iter()
        .filter_map(|l| {
            let rest = l.split("cma_event type RDMA_CM_EVENT_").nth(1)?;
            rest.split_whitespace().next().map(str::to_owned)
        })
        .collect()
}

#[test]
fn both_vms_ran_every_step_without_a_harness_error() {
    let Some(vm) = vm() else { return };
    let errors: Vec<&str> = vm
        .console
        .lines()
        .filter(|l| l.starts_with("KVM_ERR"))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn madstacks_req_gets_the_kernels_rep_and_the_kernel_reports_established() {
    let Some((c, k)) = pair("kcm_madstack_to_kernel", "kcm_kernel_listener") else {
        return;
    };
    let ours = [
        "ESTABLISHED",
        "disconnecting",
        "DISCONNECTED",
        "TIMEWAIT_EXIT",
    ];
    c.assert_cm((0, 0), &[("connect", &ours)]);
    // The kernel took our REQ (CONNECT_REQUEST), got our RTU (ESTABLISHED)
    // and our DREQ (DISCONNECTED), in that order.
    let kernel = ["CONNECT_REQUEST", "ESTABLISHED", "DISCONNECTED"];
    assert_eq!(rping_events(k), kernel, "rping's events:\n{}", k.text());
}

#[test]
fn the_kernels_cm_rejects_a_req_for_no_listener_with_invalid_service_id() {
    let Some(c) = case("kcm_kernel_rejects") else {
        return;
    };
    c.assert_cm((0, 1), &[("connect", &["REJECTED"])]);
    let rej = c.with_prefix("connect: ").concat();
    assert!(
        rej.contains("REJECTED reason 8 "),
        "not the kernel's invalid service ID: {rej}"
    );
}

#[test]
fn the_kernels_req_gets_madstacks_rep_and_both_sides_establish() {
    let Some((c, k)) = pair("kcm_kernel_to_madstack", "kcm_kernel_client") else {
        return;
    };
    let mut ours = vec!["CONNECT_REQUEST", "ESTABLISHED", "disconnecting"];
    ours.extend(["DISCONNECTED", "TIMEWAIT_EXIT"]);
    c.assert_cm((0, 0), &[("listen", &ours)]);
    // The kernel's REQ names its port by the GID of its IPv4 address
    // (rdma_cm over RoCE v2), which our replies went back to.
    let req = c.with_prefix("listen: ").concat();
    assert!(req.contains("GID ::ffff:10.77.0.2 "), "{req}");
    let kernel = [
        "ADDR_RESOLVED",
        "ROUTE_RESOLVED",
        "ESTABLISHED",
        "DISCONNECTED",
    ];
    assert_eq!(rping_events(k), kernel, "rping's events:\n{}", k.text());
}

#[test]
fn madstacks_rej_reaches_the_kernels_client_with_its_reason() {
    let Some((c, k)) = pair("kcm_madstack_rejects", "kcm_kernel_client_rejected") else {
        return;
    };
    c.assert_cm((0, 0), &[("listen", &["CONNECT_REQUEST"])]);
    let kt = k.text();
    assert!(
        kt.contains("cma event RDMA_CM_EVENT_REJECTED, error 28"),
        "rping did not get our REJ with reason 28:\n{kt}"
    );
}
