//! What the tests comparing ours with infiniband-diags over ibsim +
//! OpenSM share (`diags_rest_ibsim`, `diags_mcast_ibsim`): the fixture
//! fabrics, running the real tool under libumad2sim and ours with
//! `--ibsim`, and comparing stdout, the exit status and stderr's first
//! line. A test file using it declares `mod support;` (tests/support)
//! first.

#![allow(dead_code, reason = "each test file uses a part")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::opensm::{require_sbin, sbin};
use crate::support::{IbSim, NEEDS_DIAGS};

/// The fixture fabrics every command is compared on.
pub const FABRICS: &[&str] = &["net.2sw2path4hca2port", "net.odd-names"];

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topologies")
        .join(name)
}

pub fn needs(tools: &[&str]) -> bool {
    let mut n: Vec<(&str, &str)> = tools.iter().map(|t| (*t, "infiniband-diags")).collect();
    n.push(("opensm", "opensm"));
    crate::support::require(NEEDS_DIAGS) && require_sbin(&n)
}

/// What a run printed and returned.
#[derive(Debug, PartialEq, Eq)]
pub struct Run {
    pub stdout: String,
    pub stderr_first: String,
    pub code: Option<i32>,
}

pub fn first_stderr_line(stderr: &[u8]) -> String {
    let t = String::from_utf8_lossy(stderr);
    let line = t
        .lines()
        .find(|l| !l.contains("sim_connect: attached as client"))
        .unwrap_or("");
    // `ibwarn: [12345] f: ...` -> `ibwarn: [PID] f: ...`
    for tag in ["ibwarn: [", "ibpanic: ["] {
        if let Some(rest) = line.strip_prefix(tag) {
            if let Some((_, tail)) = rest.split_once(']') {
                return format!("{tag}PID]{tail}");
            }
        }
    }
    line.to_owned()
}

pub fn summarize(o: &Output) -> Run {
    Run {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr_first: first_stderr_line(&o.stderr),
        code: o.status.code(),
    }
}

/// Our `mad --ibsim TOOL ARGS` against `sim`.
pub fn ours(sim: &IbSim, tool: &str, args: &[&str]) -> Run {
    let o = Command::new(env!("CARGO_BIN_EXE_mad"))
        .current_dir(std::env::temp_dir())
        .arg("--ibsim")
        .arg(tool)
        .args(args)
        .env("IBSIM_SOCKNAME", sim.sockname())
        .env_remove("SIM_HOST")
        .env_remove("IBSIM_SERVER_NAME")
        .env_remove("IBSIM_SERVER_PORT")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let r = summarize(&o);
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("panicked"),
        "{tool} {args:?} panicked: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    r
}

/// infiniband-diags' `tool args` under libumad2sim against `sim`, by
/// its bare name (found in PATH, so that argv[0] is the bare name as
/// ours is).
pub fn theirs(sim: &IbSim, tool: &str, args: &[&str]) -> Run {
    let dir = sbin(tool).parent().unwrap().to_path_buf();
    let o = sim
        .umad2sim_command(tool)
        .env(
            "PATH",
            format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", dir.display()),
        )
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    summarize(&o)
}

/// Compares one case; a difference is collected in `fails`.
pub fn compare(sim: &IbSim, what: &str, tool: &str, args: &[&str], fails: &mut Vec<String>) {
    let t = theirs(sim, tool, args);
    let o = ours(sim, tool, args);
    if t != o {
        fails.push(format!(
            "{what}: {tool} {args:?}\n--- infiniband-diags ({:?}, stderr {:?}):\n{}--- ours ({:?}, stderr {:?}):\n{}",
            t.code, t.stderr_first, t.stdout, o.code, o.stderr_first, o.stdout
        ));
    }
}
