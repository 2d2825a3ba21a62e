//! The libibmad anchor (bench-anchor/anchor.c): built, run under
//! libumad2sim against the same ibsim, its result read.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::opts::{Budget, Opts, SmpResult};
use crate::json::Json;

/// Where libumad2sim (Debian `libumad2sim0`) is installed.
pub const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

pub(super) fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// bench-anchor/ of the source tree (`MADSTACK_BENCH_ANCHOR_DIR` overrides).
pub(super) fn anchor_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("MADSTACK_BENCH_ANCHOR_DIR") {
        return PathBuf::from(d);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench-anchor")
}

/// Builds the anchor into a fresh temporary directory.
pub(super) fn build_anchor(tmp: &Path) -> Result<PathBuf, String> {
    let mut missing = Vec::new();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if which(&cc).is_none() {
        missing.push(format!("a C compiler `{cc}` (Debian package gcc)"));
    }
    if !Path::new("/usr/include/infiniband/mad.h").exists() {
        missing.push("infiniband/mad.h (Debian package libibmad-dev)".to_owned());
    }
    if !Path::new(UMAD2SIM).exists() {
        missing.push(format!("{UMAD2SIM} (Debian package libumad2sim0)"));
    }
    if !missing.is_empty() {
        return Err(format!(
            "--vs-libibmad cannot build or run the libibmad anchor: missing {}",
            missing.join(", ")
        ));
    }
    let script = anchor_dir().join("build.sh");
    if !script.is_file() {
        return Err(format!(
            "--vs-libibmad: {} not found (set MADSTACK_BENCH_ANCHOR_DIR to bench-anchor/)",
            script.display()
        ));
    }
    let out = tmp.join("anchor");
    let o = Command::new("bash")
        .arg(&script)
        .arg(&out)
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !o.status.success() {
        return Err(format!(
            "{} failed ({}); it needs libibmad-dev and libibumad-dev:\n{}",
            script.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(out)
}

/// The number under `key` in the JSON object `line` (at any depth).
pub(super) fn json_num(line: &str, key: &str) -> Option<f64> {
    fn find(v: &Json, key: &str) -> Option<f64> {
        match v {
            Json::Object(m) => m
                .get(key)
                .and_then(Json::as_f64)
                .or_else(|| m.values().find_map(|x| find(x, key))),
            Json::Array(a) => a.iter().find_map(|x| find(x, key)),
            _ => None,
        }
    }
    find(&serde_json::from_str(line).ok()?, key)
}

/// Runs the anchor under libumad2sim against the ibsim of our environment.
pub(super) fn run_anchor(anchor: &Path, tmp: &Path, o: &Opts) -> Result<SmpResult, String> {
    let (queries, seconds) = match o.budget {
        Budget::Queries(n) => (n, 600.0),
        // The anchor allocates a latency slot per query: bound it.
        Budget::Seconds(s) => (2_000_000, s),
    };
    let mut c = Command::new(anchor);
    for t in &o.targets {
        c.arg("-D").arg(t);
    }
    c.args(["-a", "nodeinfo", "-n", &queries.to_string()])
        .args(["-t", &seconds.to_string(), "-w", "200"])
        .current_dir(tmp)
        .env("LD_PRELOAD", UMAD2SIM)
        .stdin(Stdio::null());
    let limit = match o.budget {
        Budget::Queries(n) => Duration::from_secs(60 + n / 100),
        Budget::Seconds(s) => Duration::from_secs_f64(s * 3.0 + 30.0),
    };
    let run = crate::child::run_with_deadline(&mut c, limit)
        .map_err(|e| format!("{}: {e}", anchor.display()))?;
    let (Some(line), Some(_)) = (run.last_json_line(), run.status) else {
        return Err(format!(
            "the libibmad anchor {} ({}):\n{}{}",
            if run.status.is_none() {
                "hung"
            } else {
                "printed no result"
            },
            run.status
                .map_or_else(|| "no exit status".to_owned(), |s| s.to_string()),
            run.stdout,
            run.stderr
        ));
    };
    let get = |k: &str| json_num(line, k).unwrap_or(f64::NAN);
    let answered = get("queries");
    Ok(SmpResult {
        imp: "libibmad".into(),
        w: 1,
        answered: if answered.is_finite() {
            answered as u64
        } else {
            0
        },
        errors: json_num(line, "errors").map_or(0, |e| e as u64),
        seconds: get("seconds"),
        qps: get("qps"),
        lat_us: [get("p50"), get("p99"), get("p99.9"), get("max")],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_num_reads_the_anchor_line() {
        let l = r#"{"impl":"libibmad","queries":2000,"qps":12345.6,"lat_us":{"p50":80.25,"p99.9":120}}"#;
        assert_eq!(json_num(l, "qps"), Some(12345.6));
        assert_eq!(json_num(l, "p50"), Some(80.25));
        assert_eq!(json_num(l, "p99.9"), Some(120.0));
        assert_eq!(json_num(l, "nope"), None);
    }
}
