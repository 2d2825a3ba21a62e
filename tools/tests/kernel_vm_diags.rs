//! `mad ibstat` / `mad ibstatus` against infiniband-diags' own `ibstat` and
//! `ibstatus` on real devices: the two soft-RoCE ports (rxe0, rxe1) of the
//! kernel VM (tests/kvm at the workspace root), both commands run in the
//! same boot. The same boot runs madstack's CM between the two ports
//! (`cm` below, tests/kvm/cm.sh).

#[path = "../../tests/kvm/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use harness::VmRun;

fn vm() -> Option<&'static VmRun> {
    static RUN: OnceLock<Result<VmRun, String>> = OnceLock::new();
    harness::shared_run(&RUN, || {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("tools/ has a parent");
        harness::run(
            root,
            "diags.sh",
            &[
                PathBuf::from(env!("CARGO_BIN_EXE_mad")),
                root.join("tests/kvm/cm.sh"),
                root.join("tests/kvm/lib.sh"),
            ],
        )
    })
}

/// ibwarn / ibpanic lines name the process id (`ibpanic: [179] main: ...`):
/// the only text two runs of one command may print differently.
fn without_pids(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .map(|l| match (l.find(": ["), l.find("] ")) {
            (Some(a), Some(b)) if a < b && l[a + 3..b].bytes().all(|c| c.is_ascii_digit()) => {
                format!("{}: [PID]{}", &l[..a], &l[b + 1..])
            }
            _ => l,
        })
        .collect()
}

fn same_as_diags(case: &str) {
    let Some(vm) = vm() else { return };
    let c = vm.case(case);
    let diags = without_pids(c.with_prefix("diags: "));
    let ours = without_pids(c.with_prefix("mad: "));
    assert!(
        !diags.is_empty(),
        "infiniband-diags printed nothing:\n{}",
        c.text()
    );
    assert_eq!(ours, diags, "output differs:\n{}", c.text());
    assert_eq!(
        c.second_rc,
        c.first_rc,
        "exit status differs:\n{}",
        c.text()
    );
}

#[test]
fn ibstat_lists_both_soft_roce_devices_as_infiniband_diags_does() {
    same_as_diags("diags_ibstat");
}

#[test]
fn ibstat_of_one_device_matches_infiniband_diags() {
    same_as_diags("diags_ibstat_rxe0");
}

#[test]
fn ibstat_of_one_port_matches_infiniband_diags() {
    same_as_diags("diags_ibstat_rxe1_1");
}

#[test]
fn ibstat_list_of_ca_names_matches_infiniband_diags() {
    same_as_diags("diags_ibstat_-l");
}

#[test]
fn ibstat_port_guids_match_infiniband_diags() {
    same_as_diags("diags_ibstat_-p");
}

#[test]
fn ibstatus_of_every_device_matches_infiniband_diags() {
    same_as_diags("diags_ibstatus");
}

#[test]
fn ibstatus_of_one_port_matches_infiniband_diags() {
    same_as_diags("diags_ibstatus_rxe1_1");
}

#[test]
fn ibstat_short_form_matches_infiniband_diags() {
    same_as_diags("diags_ibstat_-s");
}

#[test]
fn ibstat_of_a_missing_device_fails_as_infiniband_diags_does() {
    same_as_diags("diags_ibstat_rxe9");
}

#[test]
fn ibstat_of_a_missing_port_fails_as_infiniband_diags_does() {
    same_as_diags("diags_ibstat_rxe0_2");
}

#[path = "kernel_vm_diags/cm.rs"]
mod cm;
