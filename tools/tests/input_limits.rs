//! Every file `mad` reads has a size limit (issue 13): an endless input
//! (`/dev/zero`, an endless standard input) stops at the limit with an
//! error naming the input and the limit.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use mad_testkit::assert_contains_all;
use mad_tools::limits::{MAX_DECODE_INPUT_LEN, MAX_NODE_NAME_MAP_LEN};
use mad_tools::namemap::NameMap;

const MAD: &str = env!("CARGO_BIN_EXE_mad");

#[test]
fn mad_decode_of_dev_zero_stops_at_its_limit_and_names_the_file_and_limit() {
    let out = Command::new(MAD)
        .args(["decode", "/dev/zero"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_contains_all(
        &err,
        &["/dev/zero", &MAX_DECODE_INPUT_LEN.to_string(), "64 MiB"],
    );
}

#[test]
fn mad_decode_of_an_endless_standard_input_stops_at_its_limit() {
    let mut child = Command::new(MAD)
        .arg("decode")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = "00 ".repeat(4096);
        // Until mad stops reading and its end of the pipe closes.
        while input.write_all(chunk.as_bytes()).is_ok() {}
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("stdin") && err.contains("64 MiB"), "{err}");
}

#[test]
fn a_node_name_map_of_dev_zero_is_refused_naming_the_file_and_limit() {
    let e = NameMap::load(Path::new("/dev/zero")).unwrap_err();
    assert_contains_all(
        &e,
        &["/dev/zero", &MAX_NODE_NAME_MAP_LEN.to_string(), "16 MiB"],
    );
}

#[test]
fn the_diags_node_name_map_of_dev_zero_is_no_map_with_a_warning_naming_the_limit() {
    let (map, warn) = NameMap::open(Some(Path::new("/dev/zero")));
    let warn = warn.unwrap();
    assert!(
        warn.contains("/dev/zero") && warn.contains("16 MiB"),
        "{warn}"
    );
    assert_eq!(map, None);
}
