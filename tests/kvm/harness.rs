//! Boots madstack's kernel VM (`tests/kvm/run.sh`) once per test binary and
//! hands each test the lines of its case. Shared by `tests/kernel_vm.rs` and
//! `tools/tests/kernel_vm_diags.rs` through `#[path]`.
//!
//! The VM is Debian's stock kernel under qemu (TCG) with two soft-RoCE
//! devices (rxe0, rxe1) on a veth pair and `ib_umad`: the Linux kernel's own
//! MAD layer and RMPP as madstack's peer. `tests/kvm/build.sh` installs what
//! it needs (qemu, busybox, the kernel package) when missing; a failure to
//! build or boot fails every test of the binary. `MADSTACK_SKIP_KVM=1`
//! skips them on a developer's machine, never under `CI=true`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// One case of a VM run: what its two programs printed and their exit codes.
#[derive(Debug, Clone, Default)]
pub struct Case {
    /// The first program's exit status (the receiver, or infiniband-diags).
    pub first_rc: i32,
    /// The second program's exit status (the sender, or madstack's `mad`).
    pub second_rc: i32,
    /// Every console line between the case's begin and end markers.
    pub lines: Vec<String>,
}

impl Case {
    /// The lines that start with `prefix`, with it removed.
    #[must_use]
    pub fn with_prefix(&self, prefix: &str) -> Vec<String> {
        self.lines
            .iter()
            .filter_map(|l| l.strip_prefix(prefix).map(str::to_owned))
            .collect()
    }

    /// The last line that starts with `prefix`, with it removed.
    #[must_use]
    pub fn last(&self, prefix: &str) -> Option<String> {
        self.with_prefix(prefix).pop()
    }

    /// The event names `mad cm` printed on `side` (its lines prefixed
    /// `"{side}: "`, each `CONN-ID EVENT ...`), in order; `disconnecting`
    /// and `MRA` (a DREQ or an MRA this side sent) included.
    #[must_use]
    pub fn cm_events(&self, side: &str) -> Vec<String> {
        self.with_prefix(&format!("{side}: "))
            .iter()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                w.next().filter(|id| id.starts_with("0x"))?;
                w.next().map(str::to_owned)
            })
            .collect()
    }

    /// Panics (with the case's output) unless its exit codes are `rcs`
    /// and each `(side, events)` is what `mad cm` printed there.
    pub fn assert_cm(&self, rcs: (i32, i32), sides: &[(&str, &[&str])]) {
        let t = self.text();
        assert_eq!((self.first_rc, self.second_rc), rcs, "exit codes:\n{t}");
        for (side, want) in sides {
            assert_eq!(&self.cm_events(side), want, "{side}'s events:\n{t}");
        }
    }

    /// The case's output, for assertion messages.
    #[must_use]
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }
}

/// A finished VM run.
#[derive(Debug, Clone)]
pub struct VmRun {
    /// Cases by name.
    pub cases: BTreeMap<String, Case>,
    /// The whole console.
    pub console: String,
}

impl VmRun {
    /// The case `name`; panics with the console when it did not run.
    #[must_use]
    pub fn case(&self, name: &str) -> &Case {
        self.cases.get(name).unwrap_or_else(|| {
            panic!(
                "case {name} did not run; console:\n{}",
                tail(&self.console, 120)
            )
        })
    }
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// True when the VM tests should be skipped (opt-in, never in CI).
#[must_use]
pub fn skipped() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !ci && std::env::var("MADSTACK_SKIP_KVM").is_ok_and(|v| v == "1") {
        eprintln!("MADSTACK_SKIP_KVM=1: kernel VM test skipped");
        return true;
    }
    false
}

/// Parses a console: `KVM_BEGIN name` … `KVM_CASE name rc1 rc2`.
#[must_use]
pub fn parse(console: &str) -> BTreeMap<String, Case> {
    let mut cases = BTreeMap::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for raw in console.lines() {
        let line = raw.trim_end_matches('\r');
        if let Some(name) = line.strip_prefix("KVM_BEGIN ") {
            current = Some((name.trim().to_owned(), Vec::new()));
        } else if let Some(rest) = line.strip_prefix("KVM_CASE ") {
            let f: Vec<&str> = rest.split_whitespace().collect();
            let lines = current.take().map(|(_, l)| l).unwrap_or_default();
            if let [name, a, b] = f[..] {
                cases.insert(
                    name.to_owned(),
                    Case {
                        first_rc: a.parse().unwrap_or(-1),
                        second_rc: b.parse().unwrap_or(-1),
                        lines,
                    },
                );
            }
        } else if let Some((_, l)) = current.as_mut() {
            l.push(line.to_owned());
        }
    }
    cases
}

/// The one VM run a test binary shares: booted by `boot` on first use and
/// kept in `cell`; `None` when the VM tests are [`skipped`]. Panics (in
/// every test that asks) when the run failed.
pub fn shared_run(
    cell: &'static OnceLock<Result<VmRun, String>>,
    boot: impl FnOnce() -> Result<VmRun, String>,
) -> Option<&'static VmRun> {
    if skipped() {
        return None;
    }
    match cell.get_or_init(boot) {
        Ok(r) => Some(r),
        Err(e) => panic!("kernel VM: {e}"),
    }
}

/// Boots the VM with `body` (a script under tests/kvm) and `programs`
/// (copied into the guest's PATH), and returns the parsed console.
///
/// # Errors
/// When the harness cannot build or boot the VM, or the body fails.
pub fn run(root: &Path, body: &str, programs: &[PathBuf]) -> Result<VmRun, String> {
    boot(root, body, None, programs)
}

/// Boots two VMs joined by a network (run.sh's `KVM_PEER_BODY`): the
/// first runs `body`, the second `peer_body` (both under tests/kvm), each
/// with `programs`; returns both consoles parsed as one.
///
/// # Errors
/// When the harness cannot build or boot the VMs, or a body fails.
pub fn run_pair(
    root: &Path,
    body: &str,
    peer_body: &str,
    programs: &[PathBuf],
) -> Result<VmRun, String> {
    boot(root, body, Some(peer_body), programs)
}

fn boot(
    root: &Path,
    body: &str,
    peer_body: Option<&str>,
    programs: &[PathBuf],
) -> Result<VmRun, String> {
    let script = root.join("tests/kvm/run.sh");
    let mut cmd = Command::new("bash");
    if let Some(peer) = peer_body {
        cmd.env("KVM_PEER_BODY", root.join("tests/kvm").join(peer));
    }
    let out = cmd
        .arg(&script)
        .arg(root.join("tests/kvm").join(body))
        .args(programs)
        .env(
            "KVM_TIMEOUT",
            std::env::var("KVM_TIMEOUT").unwrap_or_else(|_| "900".into()),
        )
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    let console = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "{} {body} failed ({}):\n{}\n{}",
            script.display(),
            out.status,
            tail(&stderr, 40),
            tail(&console, 80)
        ));
    }
    let cases = parse(&console);
    if cases.is_empty() {
        return Err(format!("the VM ran no case:\n{}", tail(&console, 80)));
    }
    for l in console
        .lines()
        .filter(|l| l.starts_with("KVM_T ") || l.starts_with("KVM_HOST"))
    {
        eprintln!("{l}");
    }
    Ok(VmRun { cases, console })
}

#[cfg(test)]
mod parse_tests {
    #[test]
    fn the_console_parser_keeps_each_cases_lines_and_exit_codes() {
        let cases = super::parse(
            "noise\nKVM_BEGIN a\nPEER x\r\nKVM_CASE a 0 1\nKVM_BEGIN b\nKVM_CASE b 2 3\n",
        );
        assert_eq!(cases["a"].lines, vec!["PEER x"]);
        assert_eq!((cases["a"].first_rc, cases["a"].second_rc), (0, 1));
        assert_eq!((cases["b"].first_rc, cases["b"].second_rc), (2, 3));
    }
}
