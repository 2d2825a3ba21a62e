//! Running the `mad` binary from the tools' tests: one place for the
//! spawn, the standard input and the output text every test file needs.

#![allow(dead_code, reason = "each test binary uses a part of this module")]

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

/// The `mad` binary under test.
pub const MAD: &str = env!("CARGO_BIN_EXE_mad");

/// Runs `mad ARGS` with `stdin` on its standard input and `env` added
/// to its environment; its whole output.
pub fn mad_with(args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(MAD)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mad");
    let mut input = child.stdin.take().expect("mad's stdin");
    // A command that does not read its input may exit before it is
    // written: a broken pipe here is not the test's failure.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().expect("wait for mad")
}

/// Runs `mad ARGS` with an empty standard input.
pub fn mad(args: &[&str]) -> Output {
    mad_with(args, b"", &[])
}

/// Bytes of an output as text (lossy).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
