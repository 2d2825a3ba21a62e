//! Running a helper process with a deadline: the libibmad anchor of
//! `mad bench --vs-libibmad` and the workers of the `ibsim_umad` bench.
//!
//! A process under libumad2sim can hang at exit (its receiver thread may
//! deadlock if a MAD arrives then), so the wait is bounded and the child
//! is killed by its own PID when the time is up.

use std::io::{self, Read};
use std::process::{Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a child left behind.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status; `None` when it was killed at the deadline.
    pub status: Option<ExitStatus>,
    /// Everything it wrote to standard output.
    pub stdout: String,
    /// Everything it wrote to standard error.
    pub stderr: String,
}

impl Finished {
    /// The last line of standard output that starts with `{` (where the
    /// anchor and the workers print their JSON result).
    #[must_use]
    pub fn last_json_line(&self) -> Option<&str> {
        self.stdout.lines().rev().find(|l| l.starts_with('{'))
    }
}

fn collect<R: Read + Send + 'static>(pipe: Option<R>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

/// Runs `cmd` with its output captured, for at most `limit`; after that
/// the child is killed (SIGKILL to its PID) and reaped.
///
/// # Errors
/// When the child cannot be spawned or waited for.
pub fn run_with_deadline(cmd: &mut Command, limit: Duration) -> io::Result<Finished> {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let out = collect(child.stdout.take());
    let err = collect(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ok(Finished {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_that_finishes_leaves_its_output_and_status() {
        let f = run_with_deadline(
            Command::new("sh").args(["-c", "echo noise; echo '{\"a\":1}'; echo err >&2"]),
            Duration::from_secs(20),
        )
        .expect("sh runs");
        assert!(f.status.is_some_and(|s| s.success()));
        assert_eq!(f.last_json_line(), Some("{\"a\":1}"));
        assert_eq!(f.stderr, "err\n");
    }

    #[test]
    fn a_child_past_its_deadline_is_killed() {
        let t = Instant::now();
        let f = run_with_deadline(
            Command::new("sh").args(["-c", "echo started; exec sleep 30"]),
            Duration::from_millis(300),
        )
        .expect("sh runs");
        assert!(f.status.is_none(), "killed, so no exit status");
        assert_eq!(f.stdout, "started\n");
        assert!(t.elapsed() < Duration::from_secs(20));
    }
}
