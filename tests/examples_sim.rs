//! Every example of the facade (`examples/`) runs against the built-in
//! fabric (`--sim`) and prints what its task is about: CI runs them all
//! through this test. A new example needs a line here (the first test
//! checks that none is missing).

#![allow(clippy::unwrap_used)]

use std::process::Command;

/// The examples and a line each must print on the default topology.
const EXAMPLES: &[(&str, &str)] = &[
    ("quick_start", "12 paths"),
    ("port_errors", "0 ports with errors of 40 read"),
    ("link_traffic", "12 links"),
    ("trace_route", "hop 4: host-8 HCA-1"),
    ("port_events", "event client_reregister"),
];

fn run(name: &str) -> String {
    // Cargo builds the examples of the package for its integration
    // tests; they sit beside the test binary's directory.
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("examples");
    let out = Command::new(dir.join(name)).arg("--sim").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name} failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn every_example_is_run_here() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect();
    found.sort();
    let mut listed: Vec<String> = EXAMPLES.iter().map(|(n, _)| (*n).to_owned()).collect();
    listed.sort();
    assert_eq!(found, listed);
}

#[test]
fn each_example_does_its_task_on_the_built_in_fabric() {
    for (name, line) in EXAMPLES {
        let out = run(name);
        assert!(out.contains(line), "{name} did not print {line:?}:\n{out}");
    }
}

#[test]
fn an_example_given_a_bad_argument_says_which_and_fails() {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("examples");
    let out = Command::new(dir.join("quick_start"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown argument"));
}
