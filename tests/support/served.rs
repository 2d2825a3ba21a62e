//! `mad sim --serve NAME`: the built-in fabric served in ibsim's
//! protocol (so `mad --ibsim` commands in other processes share it),
//! its fault console on a pipe; quit and reaped on drop.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

/// A served fabric.
pub struct Served {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    name: String,
    mad: PathBuf,
}

impl Served {
    /// Starts `mad sim --serve` (`mad`: the binary) under a socket name
    /// unique to this process and `tag`, and waits for its console.
    ///
    /// # Panics
    /// When it cannot start or ends before its console is up.
    #[must_use]
    pub fn start(mad: &Path, tag: &str) -> Self {
        Self::start_with(mad, tag, &[])
    }

    /// As [`Served::start`], on the fabric of topology file `topology`
    /// (`None`: the built-in default fat tree).
    ///
    /// # Panics
    /// As [`Served::start`].
    #[must_use]
    pub fn start_on(mad: &Path, tag: &str, topology: Option<&Path>) -> Self {
        match topology {
            Some(t) => Self::start_with(mad, tag, &[&t.to_string_lossy()]),
            None => Self::start_with(mad, tag, &[]),
        }
    }

    /// As [`Served::start`], with more `mad sim` arguments (a topology
    /// file, `--no-sm`).
    ///
    /// # Panics
    /// When it cannot start or ends before its console is up.
    #[must_use]
    pub fn start_with(mad: &Path, tag: &str, extra: &[&str]) -> Self {
        let name = format!("madsrv{}{tag}", std::process::id());
        let mut child = Command::new(mad)
            .args(["sim", "--serve", &name])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mad sim --serve");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                stdout.read_line(&mut line).expect("read") > 0,
                "mad sim ended"
            );
            if line.starts_with("type help") {
                break;
            }
        }
        Self {
            child,
            stdin,
            stdout,
            name,
            mad: mad.to_owned(),
        }
    }

    /// Its `IBSIM_SOCKNAME`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A console command; its whole answer (an unknown command sent
    /// after it marks the end).
    pub fn console(&mut self, cmd: &str) -> String {
        writeln!(self.stdin, "{cmd}\nend-of-answer").expect("write");
        self.stdin.flush().expect("flush");
        let mut answer = String::new();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).expect("read") > 0,
                "mad sim ended"
            );
            if line.contains("\"end-of-answer\"") {
                break;
            }
            answer.push_str(&line);
        }
        answer
    }

    /// `program` set up to run under libumad2sim against this fabric.
    #[must_use]
    pub fn umad2sim_command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.current_dir(std::env::temp_dir())
            .env("LD_PRELOAD", super::UMAD2SIM)
            .env("IBSIM_SOCKNAME", &self.name)
            .env_remove("SIM_HOST")
            .env_remove("SIM_SET_ISSM")
            .env_remove("IBSIM_SERVER_NAME");
        c
    }

    /// `mad --ibsim ARGS` on this fabric, not started (attached as the
    /// served fabric's first free port: `SIM_HOST` from the caller's
    /// environment is not passed on; set it on the command to choose one).
    #[must_use]
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.mad);
        c.arg("--ibsim")
            .args(args)
            .env("IBSIM_SOCKNAME", &self.name)
            .env_remove("SIM_HOST")
            .stdin(Stdio::null());
        c
    }

    /// `mad --ibsim ARGS` on this fabric, run to its end.
    ///
    /// # Panics
    /// When it cannot run.
    #[must_use]
    pub fn mad(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run mad")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}
