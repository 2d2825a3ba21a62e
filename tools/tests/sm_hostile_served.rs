//! `mad --ibsim sm --json` (the binary) on the built-in fabric served
//! with no SM of its own (`mad sim --serve NAME --no-sm`), made hostile
//! through the fabric's console while the SM runs: `sma spine-2 mute`
//! (a switch that never answers) before the SM starts. The SM says
//! "Entering MASTER state", names the node it could not configure in
//! an `error` event (the switch and port it hangs on), sweeps again,
//! keeps answering (`mad --ibsim sminfo` reads it MASTER), and reaches
//! SUBNET UP once `sma spine-2 ok` lets the switch answer. Both
//! processes are stopped by their PIDs (mad sm by SIGTERM, the served
//! fabric by `quit` on its console, then reaped).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::served::Served;

const MAD: &str = env!("CARGO_BIN_EXE_mad");

/// mad sm, killed by its PID if the test ends before it exits.
struct Guard(std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Waits for an event satisfying `want`; panics listing what came.
fn wait(rx: &mpsc::Receiver<Value>, seen: &mut Vec<Value>, want: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(v) => {
                seen.push(v.clone());
                if want(&v) {
                    return v;
                }
            }
            Err(_) => panic!("event not seen within 30 s; events: {seen:#?}"),
        }
    }
}

#[test]
fn mad_sm_names_a_mute_switch_keeps_serving_and_comes_up_when_it_answers() {
    let mut s = Served::start_with(Path::new(MAD), "hostile", &["--no-sm"]);
    let a = s.console("sma spine-2 mute");
    assert!(a.starts_with("ok: spine-2's SMA never answers"), "{a}");
    let child = s
        .command(&["sm", "--json", "-t", "50", "--retries", "1", "-s", "1"])
        .env_remove("SIM_HOST")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut child = Guard(child);
    let out = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let v: Value = serde_json::from_str(&line).unwrap();
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let err = wait(&rx, &mut seen, |v| v["event"] == "error");
    let msg = err["message"].as_str().unwrap();
    assert!(
        msg.starts_with("not configured: the node behind \"leaf-")
            && msg.contains(" port 8: NodeInfo via ")
            && msg.ends_with("no answer after 2 tries"),
        "{msg}"
    );
    wait(&rx, &mut seen, |v| {
        v["event"] == "state" && v["state"] == "MASTER"
    });
    // Swept again, the same error again.
    wait(&rx, &mut seen, |v| v["event"] == "sweep_done");
    wait(&rx, &mut seen, |v| v["event"] == "error");
    assert!(!seen.iter().any(|v| v["event"] == "subnet_up"), "{seen:#?}");
    let o = s.mad(&["sminfo"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && text.contains("SMINFO_MASTER"),
        "{text}"
    );
    let a = s.console("sma spine-2 ok");
    assert!(a.starts_with("ok: "), "{a}");
    wait(&rx, &mut seen, |v| v["event"] == "subnet_up");
    let st = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    wait(&rx, &mut seen, |v| v["event"] == "exit");
    assert!(child.0.wait().unwrap().success());
}
