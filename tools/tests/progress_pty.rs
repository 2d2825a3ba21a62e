//! The progress display, under a pseudo-terminal (script(1), bsdutils):
//! drawn on a terminal and erased at the end; nothing in a pipe, nothing
//! with `--json`.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::process::Command;

/// Whether script(1) is here to give `mad` a terminal; under CI its
/// absence fails the test instead of skipping it.
fn have_script() -> bool {
    let have = Command::new("script").arg("--version").output().is_ok();
    if !have {
        assert!(
            std::env::var_os("CI").is_none(),
            "script (bsdutils) missing"
        );
        eprintln!("NOT RUN: script missing");
    }
    have
}

/// What `mad ARGS` drew on a terminal holds each of `labels`, and every
/// drawing is erased: the terminal ends on CR + erase-line.
fn assert_drawn_and_erased(args: &str, labels: &[&str]) {
    let tty = on_a_terminal(args);
    for label in labels {
        assert!(tty.contains(label), "{label:?} not drawn: {tty:?}");
    }
    assert!(tty.ends_with("\r\x1b[2K"), "{tty:?}");
}

/// Runs `mad ARGS` with a terminal on stdin/stdout/stderr (stdout sent
/// to /dev/null inside): what the terminal showed.
fn on_a_terminal(args: &str) -> String {
    let cmd = format!("{} {args} >/dev/null", env!("CARGO_BIN_EXE_mad"));
    let o = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("MADSTACK_PROGRESS_AFTER_MS", "0")
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn bring_up_discovery_and_sweep_draw_and_erase_on_a_terminal() {
    if !have_script() {
        return;
    }
    assert_drawn_and_erased(
        "--sim sweep",
        &[
            "SM-lite: bringing up",
            " discovering ",
            "reading counters [",
        ],
    );
}

#[test]
fn large_sa_tables_and_benchmarks_draw_too() {
    if !have_script() {
        return;
    }
    assert_drawn_and_erased("--sim saquery PR", &["saquery: reading the SA's records"]);
    let tty = on_a_terminal("--sim bench --w 1 --queries 200 --targets 0");
    assert!(tty.contains("bench: measuring"), "{tty:?}");
}

#[test]
fn nothing_with_json_even_on_a_terminal() {
    if !have_script() {
        return;
    }
    let tty = on_a_terminal("--sim --json sweep");
    assert!(
        !tty.contains("discovering") && !tty.contains("SM-lite") && !tty.contains('\r'),
        "{tty:?}"
    );
}

#[test]
fn nothing_in_a_pipe() {
    let o = Command::new(env!("CARGO_BIN_EXE_mad"))
        .args(["--sim", "sweep"])
        .env("MADSTACK_PROGRESS_AFTER_MS", "0")
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(
        o.stderr.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&o.stderr)
    );
}
