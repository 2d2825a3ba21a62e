//! tshark as a test oracle: one run over a capture file, its JSON
//! dissection. Included by path (`#[path = ...] mod tshark;`) from the
//! tests that compare our encoding with Wireshark's dissectors.

use std::path::Path;
use std::process::Command;

/// Runs `tshark -r path -V -T json` and returns its dissection, failing
/// loudly when tshark is missing (CI or not) or fails.
pub fn run_tshark(path: &Path) -> serde_json::Value {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-V", "-T", "json", "--no-duplicate-keys"])
        .output()
        .unwrap_or_else(|e| {
            let ci = std::env::var_os("CI").is_some();
            eprintln!("==============================================================");
            eprintln!("tshark is required by this test and could not be run: {e}");
            eprintln!("install it: apt-get install -y tshark   (CI set: {ci})");
            eprintln!("==============================================================");
            panic!("tshark is required by this test and could not be run: {e}; install it: apt-get install -y tshark (CI set: {ci})")
        });
    assert!(
        out.status.success(),
        "tshark failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("tshark JSON")
}
