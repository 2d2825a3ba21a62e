//! An [`OpenSm`] guard: OpenSM running under libumad2sim against an
//! [`IbSim`], in its own temporary directory, killed (by its PID) when
//! dropped. It is started the way DESIGN.md says: `OSM_TMP_DIR` and
//! `OSM_CACHE_DIR` in the temp dir, a config file with `force_log_flush
//! TRUE` so that the log shows "SUBNET UP" as soon as the fabric is
//! configured, and the log in the same directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::{which, IbSim, UMAD2SIM};

/// What running OpenSM on ibsim needs (saquery included, for the
/// comparisons).
pub const NEEDS_OPENSM: &[(&str, &str)] = &[
    ("ibsim", "ibsim-utils"),
    ("opensm", "opensm"),
    ("saquery", "infiniband-diags"),
    (UMAD2SIM, "libumad2sim0"),
];

/// The path of `program`, looking in `/usr/sbin` and `/sbin` too (OpenSM
/// and infiniband-diags install there, which a user's PATH may lack).
#[must_use]
pub fn sbin(program: &str) -> PathBuf {
    which(program)
        .or_else(|| {
            ["/usr/sbin", "/sbin"]
                .iter()
                .map(|d| Path::new(d).join(program))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from(program))
}

/// Like [`super::require`], also finding programs in `/usr/sbin`.
#[must_use]
pub fn require_sbin(needs: &[(&str, &str)]) -> bool {
    let found: Vec<(&str, &str)> = needs
        .iter()
        .map(|(what, pkg)| {
            if what.starts_with('/') || sbin(what).is_file() {
                ("/", *pkg)
            } else {
                (*what, *pkg)
            }
        })
        .collect();
    super::require(&found)
}

/// ibsim with its console on topology file `topology` (of
/// [`super::topologies_dir`]) and OpenSM (with `extra_conf`) brought up
/// on it; `None` (the test returns) when OpenSM or ibsim is missing.
#[must_use]
pub fn console_fabric_with_sm(topology: &str, extra_conf: &str) -> Option<(IbSim, OpenSm)> {
    if !require_sbin(NEEDS_OPENSM) {
        return None;
    }
    let sim = IbSim::start_with_console(super::topologies_dir().join(topology));
    let sm = OpenSm::start(&sim, extra_conf, Duration::from_secs(60));
    Some((sim, sm))
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A running OpenSM; see the [module documentation](self).
#[derive(Debug)]
pub struct OpenSm {
    child: Child,
    dir: PathBuf,
}

impl OpenSm {
    /// Starts OpenSM on `sim` (at ibsim's default node) with `extra_conf`
    /// lines added to its config file, and waits up to `timeout` for
    /// "SUBNET UP" in its log.
    ///
    /// # Panics
    /// When OpenSM cannot start, exits, or does not bring the subnet up in
    /// time (its log is kept and named).
    #[must_use]
    pub fn start(sim: &IbSim, extra_conf: &str, timeout: Duration) -> OpenSm {
        Self::start_at(sim, None, extra_conf, "SUBNET UP", timeout)
    }

    /// Starts OpenSM on `sim` at node `host` (`SIM_HOST`; `None`: ibsim's
    /// default node) with `extra_conf`, and waits up to `timeout` for
    /// `until` in its log (e.g. "SUBNET UP", or "Entering STANDBY state"
    /// when another SM is master).
    ///
    /// # Panics
    /// As [`OpenSm::start`].
    #[must_use]
    pub fn start_at(
        sim: &IbSim,
        host: Option<&str>,
        extra_conf: &str,
        until: &str,
        timeout: Duration,
    ) -> OpenSm {
        let mut cmd = sim.umad2sim_command(sbin("opensm").to_str().unwrap_or("opensm"));
        if let Some(h) = host {
            cmd.env("SIM_HOST", h);
        }
        Self::start_cmd_until(cmd, extra_conf, until, timeout)
    }

    /// As [`OpenSm::start`], from `cmd`: OpenSM set up to run under
    /// libumad2sim against some ibsim-protocol server (`mad sim --serve`).
    ///
    /// # Panics
    /// As [`OpenSm::start`].
    #[must_use]
    pub fn start_cmd(cmd: Command, extra_conf: &str, timeout: Duration) -> OpenSm {
        Self::start_cmd_until(cmd, extra_conf, "SUBNET UP", timeout)
    }

    /// As [`OpenSm::start_cmd`], waiting for `until` in its log.
    fn start_cmd_until(
        mut cmd: Command,
        extra_conf: &str,
        until: &str,
        timeout: Duration,
    ) -> OpenSm {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("madstack-opensm-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let conf = dir.join("opensm.conf");
        fs::write(&conf, format!("force_log_flush TRUE\n{extra_conf}\n"))
            .unwrap_or_else(|e| panic!("write {}: {e}", conf.display()));
        let log = dir.join("osm.log");
        let out = fs::File::create(dir.join("opensm.out"))
            .unwrap_or_else(|e| panic!("create opensm.out: {e}"));
        let err = out.try_clone().unwrap_or_else(|e| panic!("{e}"));
        cmd.current_dir(&dir)
            .env("OSM_TMP_DIR", &dir)
            .env("OSM_CACHE_DIR", &dir)
            .arg("-F")
            .arg(&conf)
            .arg("-f")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start opensm ({cmd:?}): {e}"));
        let mut sm = OpenSm { child, dir };
        let end = Instant::now() + timeout;
        loop {
            if sm.log().contains(until) {
                return sm;
            }
            if let Ok(Some(st)) = sm.child.try_wait() {
                panic!(
                    "opensm exited ({st}) before {until:?}; output:\n{}\nlog tail:\n{}",
                    sm.output(),
                    sm.log_tail(30)
                );
            }
            assert!(
                Instant::now() < end,
                "opensm: no {until:?} after {timeout:?}; log tail:\n{}",
                sm.log_tail(30)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Its process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its directory (config, log, cache).
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log so far.
    #[must_use]
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("osm.log")).unwrap_or_default()
    }

    /// The last `n` lines of the log.
    #[must_use]
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// What OpenSM printed on stdout / stderr.
    #[must_use]
    pub fn output(&self) -> String {
        fs::read_to_string(self.dir.join("opensm.out")).unwrap_or_default()
    }

    /// Waits up to `timeout` for `text` in the log; true when it came.
    pub fn wait_log(&self, text: &str, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if self.log().contains(text) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.log().contains(text)
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for OpenSm {
    fn drop(&mut self) {
        // Child::kill sends SIGKILL to this child's PID only.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("opensm files kept in {}", self.dir.display());
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}
