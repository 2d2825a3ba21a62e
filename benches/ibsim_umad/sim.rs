//! A running `ibsim` for the duration of a measurement: started on a
//! topology file under a unique `IBSIM_SOCKNAME`, ready when `@NAME:ctl`
//! is listed in /proc/net/unix, killed by its PID when dropped.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where libumad2sim (Debian `libumad2sim0`) is installed.
pub const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

/// The options a topology file's header asks for
/// (`# ibsim needs: -N 367 -S 43 -P 3358`).
fn ibsim_options(netfile: &Path) -> Result<Vec<String>, String> {
    let text = fs::read_to_string(netfile)
        .map_err(|e| format!("cannot read {}: {e}", netfile.display()))?;
    Ok(text
        .lines()
        .take_while(|l| l.starts_with('#') || l.trim().is_empty())
        .find_map(|l| l.split_once("ibsim needs:"))
        .map(|(_, opts)| opts.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default())
}

/// True when the abstract socket `@name` is bound (ibsim binds the whole
/// `sun_path`, so /proc/net/unix shows trailing NULs as `@`).
fn unix_socket_listed(name: &str) -> bool {
    let want = format!("@{name}");
    fs::read_to_string("/proc/net/unix")
        .map(|t| {
            t.lines()
                .filter_map(|l| l.split_whitespace().last())
                .any(|n| n.trim_end_matches('@') == want)
        })
        .unwrap_or(false)
}

/// A running ibsim.
#[derive(Debug)]
pub struct IbSim {
    child: Child,
    sockname: String,
    log: PathBuf,
}

impl IbSim {
    /// Starts `ibsim -s [options] --no-console NETFILE` and waits (30 s at
    /// most) until it listens.
    ///
    /// # Errors
    /// ibsim cannot be spawned, exits early, or is not ready in time.
    pub fn start(netfile: &Path, tag: &str) -> Result<Self, String> {
        let mut sockname = format!("madbench-{}-{tag}", std::process::id());
        while unix_socket_listed(&format!("{sockname}:ctl")) {
            sockname.push('x');
        }
        let log = std::env::temp_dir().join(format!("{sockname}.log"));
        let out = fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let mut cmd = Command::new("ibsim");
        cmd.arg("-s")
            .args(ibsim_options(netfile)?)
            .arg("--no-console")
            .arg(netfile)
            .env("IBSIM_SOCKNAME", &sockname)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start ibsim ({cmd:?}): {e}"))?;
        let mut sim = Self {
            child,
            sockname,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if unix_socket_listed(&format!("{}:ctl", sim.sockname)) {
                return Ok(sim);
            }
            if let Ok(Some(st)) = sim.child.try_wait() {
                return Err(format!(
                    "ibsim on {} exited ({st}):\n{}",
                    netfile.display(),
                    sim.output()
                ));
            }
            if Instant::now() > deadline {
                return Err(format!("ibsim on {} not ready in 30 s", netfile.display()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `program` set up to run under libumad2sim against this ibsim (the
    /// client attaches to the topology's first node). It runs in the
    /// temporary directory: libumad2sim creates its fake `sys-PID/` tree
    /// in the working directory.
    pub fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(std::env::temp_dir())
            .env("LD_PRELOAD", UMAD2SIM)
            .env("IBSIM_SOCKNAME", &self.sockname)
            .env_remove("SIM_HOST")
            .env_remove("SIM_SET_ISSM")
            .env_remove("IBSIM_SERVER_NAME");
        c
    }

    /// True while ibsim runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// What ibsim printed.
    pub fn output(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for IbSim {
    fn drop(&mut self) {
        // SIGKILL to this child's PID only.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_file(&self.log);
    }
}
