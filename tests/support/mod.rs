//! Shared helpers for tests that run real components: an [`IbSim`] guard
//! that starts `ibsim` on a topology file under a unique socket name and
//! kills it on drop, plus (in submodules) a directed-route sweep over any
//! `Transport` and a parser for infiniband-diags' `ibnetdiscover`.
//!
//! Use from a test crate with `mod support;`. Not every test uses every
//! helper, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod diags;
pub mod ibnetdiscover;
pub mod opensm;
pub mod served;
pub mod sweep;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use mad_core::transport::ibsim::IbSimConfig;

/// Where libumad2sim (Debian `libumad2sim0`) is installed.
pub const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

/// The topology fixtures (`tests/fixtures/topologies` in the
/// checkout), found from whichever workspace crate includes this module:
/// the workspace root is the nearest ancestor holding `Cargo.lock`.
#[must_use]
pub fn topologies_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest
        .ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .unwrap_or(manifest);
    root.join("tests/fixtures/topologies")
}

/// Every topology file in [`topologies_dir`] (all but README.md),
/// sorted by name.
#[must_use]
pub fn topology_files() -> Vec<PathBuf> {
    let dir = topologies_dir();
    let mut v: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read topology directory {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with(".md"))
        })
        .collect();
    v.sort();
    v
}

/// True when running under CI (`CI=true`): missing tools fail tests.
#[must_use]
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Finds `program` in `PATH`.
#[must_use]
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Checks that every external piece a test needs is installed: programs
/// found in `PATH`, files by absolute path. Returns false (after saying
/// so on stderr) when something is missing outside CI; panics naming it
/// and its Debian package under CI.
#[must_use]
pub fn require(needs: &[(&str, &str)]) -> bool {
    let missing: Vec<String> = needs
        .iter()
        .filter(|(what, _)| {
            if what.starts_with('/') {
                !Path::new(what).exists()
            } else {
                which(what).is_none()
            }
        })
        .map(|(what, pkg)| format!("{what} (Debian package {pkg})"))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let msg = format!("missing: {}", missing.join(", "));
    assert!(!in_ci(), "CI=true and {msg}");
    eprintln!("NOT RUN (outside CI): {msg}");
    false
}

/// `ibsim` and the tools that compare with it.
pub const NEEDS_IBSIM: &[(&str, &str)] = &[("ibsim", "ibsim-utils")];
/// What running infiniband-diags against ibsim needs.
pub const NEEDS_DIAGS: &[(&str, &str)] = &[
    ("ibsim", "ibsim-utils"),
    ("ibnetdiscover", "infiniband-diags"),
    (UMAD2SIM, "libumad2sim0"),
];

/// The extra options a topology file's header asks for
/// (`# ibsim needs: -N 1780 -S 484 -P 39880`).
#[must_use]
pub fn ibsim_options(netfile: &Path) -> Vec<String> {
    let text = fs::read_to_string(netfile)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", netfile.display()));
    text.lines()
        .take_while(|l| l.starts_with('#') || l.trim().is_empty())
        .find_map(|l| l.split_once("ibsim needs:"))
        .map(|(_, opts)| opts.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// True when the abstract socket ibsim names `name` is listed. ibsim's
/// socket names end in a NUL byte, which /proc/net/unix shows as `@`:
/// `@NAME:ctl@`.
fn unix_socket_listed(name: &str) -> bool {
    let want = format!("@{name}@");
    fs::read_to_string("/proc/net/unix")
        .map(|t| {
            t.lines()
                .any(|l| l.split_whitespace().last() == Some(want.as_str()))
        })
        .unwrap_or(false)
}

fn udp_port_bound(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/net/udp", "/proc/net/udp6"].iter().any(|f| {
        fs::read_to_string(f).is_ok_and(|t| {
            t.lines()
                .skip(1)
                .filter_map(|l| l.split_whitespace().nth(1))
                .any(|local| local.ends_with(&want))
        })
    })
}

/// A running ibsim, killed (by its PID) when dropped.
#[derive(Debug)]
pub struct IbSim {
    child: Child,
    /// ibsim's stdin when it runs with its console ([`IbSim::start_with_console`]).
    console: Option<std::process::ChildStdin>,
    sockname: String,
    udp_port: Option<u16>,
    netfile: PathBuf,
    log: PathBuf,
}

impl IbSim {
    /// Starts `ibsim -s NETFILE --no-console` (plus the options the
    /// file's header asks for) under a fresh `IBSIM_SOCKNAME` and waits
    /// until `@NAME:ctl` is listed in /proc/net/unix (shown as
    /// `@NAME:ctl@`: the name ends in a NUL).
    ///
    /// # Panics
    /// When ibsim cannot be started or does not come up in 30 s.
    #[must_use]
    pub fn start(netfile: impl AsRef<Path>) -> IbSim {
        Self::try_start(netfile.as_ref(), false).unwrap_or_else(|e| panic!("{e}"))
    }

    /// As [`IbSim::start`], in remote mode (`-r`): UDP on a free port
    /// `P` (control) and `P+1..=P+10` (clients), ready when `P` is bound.
    #[must_use]
    pub fn start_udp(netfile: impl AsRef<Path>) -> IbSim {
        Self::try_start(netfile.as_ref(), true).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts ibsim; an error says why (with ibsim's output).
    ///
    /// # Errors
    /// When ibsim cannot be spawned, exits, or is not ready in 30 s.
    pub fn try_start(netfile: &Path, udp: bool) -> Result<IbSim, String> {
        Self::try_start_opts(netfile, udp, false)
    }

    /// As [`IbSim::start`], but with ibsim's console on: ibsim reads
    /// commands (`Error`, `Unlink`, ...; see `help`) from its stdin, which
    /// [`IbSim::console`] writes to. Its answers go to [`IbSim::output`].
    #[must_use]
    pub fn start_with_console(netfile: impl AsRef<Path>) -> IbSim {
        Self::try_start_opts(netfile.as_ref(), false, true).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Writes one console command line to ibsim (started with
    /// [`IbSim::start_with_console`]) and waits until ibsim has read it
    /// (its output grew, or 2 s passed).
    ///
    /// # Panics
    /// When ibsim runs without a console or the write fails.
    pub fn console(&mut self, command: &str) {
        use std::io::Write;
        let before = self.output().len();
        let stdin = self
            .console
            .as_mut()
            .expect("ibsim was started without a console (use IbSim::start_with_console)");
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("ibsim console write of {command:?}: {e}"));
        let end = Instant::now() + Duration::from_secs(2);
        while self.output().len() == before && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn try_start_opts(netfile: &Path, udp: bool, console: bool) -> Result<IbSim, String> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut sockname = format!("madstack-{}-{n}", std::process::id());
        while unix_socket_listed(&format!("{sockname}:ctl")) {
            sockname.push('x');
        }
        let udp_port = if udp {
            let seed = (std::process::id() * 31 + n * 97) % 3000;
            let mut p = 20_000 + u16::try_from(seed * 11).unwrap_or(0);
            while (p..=p + 10).any(udp_port_bound) {
                p += 11;
            }
            Some(p)
        } else {
            None
        };
        let log = std::env::temp_dir().join(format!("{sockname}.log"));
        let out = fs::File::create(&log).map_err(|e| format!("create {}: {e}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let mut cmd = Command::new("ibsim");
        cmd.arg("-s").args(ibsim_options(netfile));
        if !console {
            cmd.arg("--no-console");
        }
        if let Some(p) = udp_port {
            cmd.arg("-r").arg("-l").arg(p.to_string());
        }
        cmd.arg(netfile)
            .env("IBSIM_SOCKNAME", &sockname)
            .stdin(if console {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(out)
            .stderr(err);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start ibsim ({cmd:?}): {e}"))?;
        let mut sim = IbSim {
            console: child.stdin.take(),
            child,
            sockname,
            udp_port,
            netfile: netfile.to_owned(),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = match udp_port {
                None => unix_socket_listed(&format!("{}:ctl", sim.sockname)),
                // ibsim binds the control port first and the client ports
                // right after; wait for the last one.
                Some(p) => udp_port_bound(p) && udp_port_bound(p + 10),
            };
            if ready {
                return Ok(sim);
            }
            if let Ok(Some(status)) = sim.child.try_wait() {
                return Err(format!(
                    "ibsim on {} exited ({status}) before it was ready:\n{}",
                    netfile.display(),
                    sim.output()
                ));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "ibsim on {} not ready after 30 s:\n{}",
                    netfile.display(),
                    sim.output()
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The `IBSIM_SOCKNAME` it runs under.
    #[must_use]
    pub fn sockname(&self) -> &str {
        &self.sockname
    }

    /// Its UDP control port, in remote mode.
    #[must_use]
    pub fn udp_port(&self) -> Option<u16> {
        self.udp_port
    }

    /// Its process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The topology file it runs.
    #[must_use]
    pub fn netfile(&self) -> &Path {
        &self.netfile
    }

    /// A transport configuration that reaches this ibsim (its default
    /// node).
    #[must_use]
    pub fn config(&self) -> IbSimConfig {
        let mut c = IbSimConfig::local(self.sockname.clone());
        if let Some(p) = self.udp_port {
            c.server = Some(("127.0.0.1".to_owned(), p));
        }
        c
    }

    /// `mad --ibsim ARGS` (the binary `mad`) set up against this ibsim,
    /// not started.
    #[must_use]
    pub fn mad_command(&self, mad: &str, args: &[&str]) -> Command {
        let mut c = Command::new(mad);
        c.arg("--ibsim")
            .args(args)
            .env("IBSIM_SOCKNAME", &self.sockname)
            .env_remove("SIM_HOST")
            .env_remove("IBSIM_SERVER_NAME");
        c
    }

    /// `program` set up to run under libumad2sim against this ibsim.
    #[must_use]
    pub fn umad2sim_command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        // libumad2sim builds its fake sysfs as `sys-PID/` in the current
        // directory: keep that out of the checkout.
        c.current_dir(std::env::temp_dir());
        c.env("LD_PRELOAD", UMAD2SIM)
            .env("IBSIM_SOCKNAME", &self.sockname)
            .env_remove("SIM_HOST")
            .env_remove("SIM_SET_ISSM")
            .env_remove("IBSIM_SERVER_NAME");
        if let Some(p) = self.udp_port {
            c.env("IBSIM_SERVER_NAME", "127.0.0.1")
                .env("IBSIM_SERVER_PORT", p.to_string());
        }
        c
    }

    /// Runs `program args` under libumad2sim against this ibsim, with no
    /// standard input, and returns what it did (made again when
    /// libumad2sim failed to attach it, see [`output_attached`]). Fails
    /// the calling test when the program cannot be run.
    #[must_use]
    pub fn umad2sim_output<S: AsRef<std::ffi::OsStr>>(
        &self,
        program: &str,
        args: impl IntoIterator<Item = S>,
    ) -> std::process::Output {
        let args: Vec<std::ffi::OsString> =
            args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        output_attached(program, || {
            let mut c = self.umad2sim_command(program);
            c.args(&args).stdin(Stdio::null());
            c
        })
    }

    /// Runs test `test` of the running test binary again, alone, under
    /// libumad2sim against this ibsim, with `marker`=1 in its environment
    /// (how the child knows it is the child); returns what it printed on
    /// standard output. Fails the calling test when the child fails.
    #[must_use]
    pub fn run_child_test(&self, test: &str, marker: &str) -> String {
        let exe = std::env::current_exe().expect("own test binary");
        let out = self
            .umad2sim_command(exe.to_str().expect("utf-8 path"))
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(marker, "1")
            .output()
            .expect("run the child");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "child {test} on {} failed: {stdout}\n{}",
            self.netfile.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// Everything ibsim printed so far.
    #[must_use]
    pub fn output(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills ibsim now (as dropping does).
    pub fn stop(self) {}
}

impl Drop for IbSim {
    fn drop(&mut self) {
        // Child::kill sends SIGKILL to this child's PID only.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "ibsim {} ({}) output kept in {}",
                self.sockname,
                self.netfile.display(),
                self.log.display()
            );
        } else {
            let _ = fs::remove_file(&self.log);
        }
    }
}

/// True when `out` is a run libumad2sim failed to attach to ibsim: under
/// load it now and then cannot, and the program then says it cannot open
/// port 0 of device "(null)" (each infiniband-diags tool in its own words,
/// ours that the umad device gave -22).
#[must_use]
pub fn umad2sim_not_attached(out: &std::process::Output) -> bool {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    stdout.contains("Failed to open '(null)' port '0'")
        || stderr.contains("can't open UMAD port ((null):0)")
        || stderr.contains("Failed to open port; (null):0")
        || stderr.contains("port 0 (-22)")
        || stdout.contains("port 0 (-22)")
}

/// Runs the command `make` builds, and again (twice at most) while
/// libumad2sim failed to attach it ([`umad2sim_not_attached`]); returns
/// the last run. Every run of a program under libumad2sim in the tests
/// goes through here, so that no test mistakes that for an answer.
/// Fails the calling test when `program` cannot be run.
#[must_use]
pub fn output_attached(program: &str, mut make: impl FnMut() -> Command) -> std::process::Output {
    let mut last = None;
    for _ in 0..3 {
        let out = make()
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        if !umad2sim_not_attached(&out) {
            return out;
        }
        eprintln!("{program}: libumad2sim failed to attach it; run again");
        last = Some(out);
    }
    last.expect("ran at least once")
}
