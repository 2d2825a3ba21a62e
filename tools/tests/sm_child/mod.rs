//! `mad --ibsim sm --json` as a child process of a test: its JSON
//! events read on a thread, waited for by name; stopped by SIGTERM (or
//! SIGKILL when dropped) to its PID. Each test file uses a part of it,
//! hence the `dead_code` allowance.
#![allow(dead_code)]

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::IbSim;

const MAD: &str = env!("CARGO_BIN_EXE_mad");

/// `mad --ibsim sm --json` running as a child, its events read by a thread.
pub struct MadSm {
    child: Child,
    events: mpsc::Receiver<Value>,
    /// The events read so far.
    pub seen: Vec<Value>,
}

impl MadSm {
    /// Started at ibsim's default node (its first), with `extra`
    /// options after `-t 1000`.
    pub fn start(sim: &IbSim, extra: &[&str]) -> Self {
        Self::start_at(sim, None, extra)
    }

    /// Started at node `host` of `sim` (`SIM_HOST`; None: the first).
    pub fn start_at(sim: &IbSim, host: Option<&str>, extra: &[&str]) -> Self {
        let mut c = Command::new(MAD);
        c.args(["--ibsim", "sm", "--json", "-t", "1000"])
            .args(extra)
            .env("IBSIM_SOCKNAME", sim.sockname())
            .env_remove("SIM_HOST")
            .env_remove("IBSIM_SERVER_NAME");
        if let Some(h) = host {
            c.env("SIM_HOST", h);
        }
        Self::spawn(c)
    }

    /// `c` (a `mad ... sm --json` command, e.g. under libumad2sim)
    /// started, its events read.
    pub fn spawn(mut c: Command) -> Self {
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = c.spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("mad sm printed a line that is not JSON ({e}): {line}")
                });
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            events,
            seen: Vec::new(),
        }
    }

    /// Waits for the event named `name`; panics listing what came.
    pub fn wait(&mut self, name: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(v) => {
                    self.seen.push(v.clone());
                    if v["event"] == name {
                        return v;
                    }
                }
                Err(_) => panic!(
                    "no {name} event within {within:?}; events: {:#?}",
                    self.seen
                ),
            }
        }
    }

    /// Takes every event mad sm has printed so far into [`Self::seen`]
    /// without waiting, and returns them all (for a failure's message).
    pub fn drain(&mut self) -> &[Value] {
        while let Ok(v) = self.events.try_recv() {
            self.seen.push(v);
        }
        &self.seen
    }

    /// The value of `key` in the first event named `name` seen so far.
    pub fn seen(&self, name: &str, key: &str) -> Value {
        self.seen
            .iter()
            .find(|v| v["event"] == name)
            .map(|v| v[key].clone())
            .unwrap_or(Value::Null)
    }

    /// SIGTERM by PID; mad sm must say "exit" and exit 0 within 10 s.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let st = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(st.success());
        self.wait("exit", Duration::from_secs(10));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                assert!(st.success(), "mad sm exited with {st} after SIGTERM");
                return;
            }
            assert!(
                Instant::now() < deadline,
                "mad sm still running 10 s after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for MadSm {
    fn drop(&mut self) {
        // Child::kill: SIGKILL to this child's PID only.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl MadSm {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `within` for an event named `name`; None (the events
    /// seen are kept) when none came.
    pub fn try_wait(&mut self, name: &str, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(v) => {
                    self.seen.push(v.clone());
                    if v["event"] == name {
                        return Some(v);
                    }
                }
                Err(_) => return None,
            }
        }
    }
}
