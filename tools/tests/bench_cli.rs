//! `mad bench` end to end: the table and the JSON on the built-in fabric,
//! option errors, and (with ibsim installed) the libibmad anchor in the
//! same run. These tests check structure, never speed.

#[path = "../../tests/support/mod.rs"]
mod support;

use std::process::Command;

fn mad(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_mad"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("mad runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The rate column of the table row of `imp` at `w`.
fn rate(out: &str, imp: &str, w: usize) -> Option<f64> {
    out.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 3 && f[0] == imp && f[1] == w.to_string())
            .then(|| f[2].parse().ok())
            .flatten()
    })
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("mad-bench-test-{}-{name}", std::process::id()))
}

#[test]
fn sim_bench_prints_a_positive_rate_for_each_window_and_writes_json_and_svg() {
    let json = tmp("sim.json");
    let svg = tmp("sim.svg");
    let (code, out, err) = mad(&[
        "--sim",
        "bench",
        "--w",
        "1,4,16",
        "--queries",
        "300",
        "--rmpp",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    for imp in ["runtime", "engine"] {
        for w in [1, 4, 16] {
            let r = rate(&out, imp, w).unwrap_or_else(|| panic!("no {imp} W={w} row in {out}"));
            assert!(r > 0.0, "{imp} W={w}: {r}");
        }
    }
    assert!(
        out.contains("NodeRecord") && out.contains("PathRecord"),
        "{out}"
    );

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["transport"], "sim");
    let smp = v["smp"].as_array().unwrap();
    assert_eq!(smp.len(), 6);
    for r in smp {
        assert!(r["qps"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["queries"].as_u64().unwrap(), 300, "{r}");
        for p in ["p50", "p99", "p99.9", "max"] {
            assert!(r["lat_us"][p].as_f64().unwrap() > 0.0, "{p} of {r}");
        }
        assert!(r["ratio_vs_libibmad"].is_null());
        // The runtime against the engine at the same W, in this run.
        let w = r["outstanding"].as_u64().unwrap();
        let engine = smp
            .iter()
            .find(|e| e["impl"] == "engine" && e["outstanding"].as_u64() == Some(w))
            .unwrap();
        let expect = r["qps"].as_f64().unwrap() / engine["qps"].as_f64().unwrap();
        let ratio = r["ratio_vs_engine"].as_f64().unwrap();
        assert!((ratio - expect).abs() < 0.01 * expect + 0.002, "{r}");
    }
    let r1 = rate(&out, "runtime", 1).unwrap() / rate(&out, "engine", 1).unwrap();
    let shown = out
        .lines()
        .find(|l| l.starts_with("runtime ") && l.split_whitespace().nth(1) == Some("1"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|x| x.strip_suffix('x'))
        .and_then(|x| x.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no vs engine column in {out}"));
    assert!(
        (shown - r1).abs() < 0.006 + 0.001 * r1,
        "{shown} vs {r1}: {out}"
    );
    let rm = v["rmpp"].as_array().unwrap();
    assert_eq!(rm.len(), 3);
    for r in rm {
        assert!(r["records"].as_u64().unwrap() > 0, "{r}");
        assert!(r["bytes"].as_u64().unwrap() > 56, "{r}");
        assert!(r["bytes_per_sec"].as_f64().unwrap() > 0.0, "{r}");
    }
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg") && svg_text.contains("<polyline"));
    let _ = std::fs::remove_file(json);
    let _ = std::fs::remove_file(svg);
}

#[test]
fn sim_bench_with_seconds_reports_each_window() {
    let (code, out, err) = mad(&["--sim", "bench", "--seconds", "0.2", "--w", "1,16"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(rate(&out, "runtime", 1).is_some_and(|r| r > 0.0), "{out}");
    assert!(rate(&out, "runtime", 16).is_some_and(|r| r > 0.0), "{out}");
}

#[test]
fn bad_options_give_a_clear_usage_error() {
    let (code, _, err) = mad(&["--sim", "bench", "--w", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--w: bad outstanding count \"0\""), "{err}");
    let (code, _, err) = mad(&["--sim", "bench", "--frobnicate"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown option \"--frobnicate\""), "{err}");
    let (code, _, err) = mad(&["--sim", "bench", "--vs-libibmad"]);
    assert_eq!(code, 2);
    assert!(err.contains("--vs-libibmad needs --ibsim"), "{err}");
}

#[test]
fn ibsim_bench_vs_libibmad_reports_both_rates_and_a_ratio() {
    let mut needs = support::NEEDS_DIAGS.to_vec();
    needs.push(("/usr/include/infiniband/mad.h", "libibmad-dev"));
    needs.push(("cc", "gcc"));
    if !support::require(&needs) {
        return;
    }
    let sim = support::IbSim::start(support::topologies_dir().join("net"));
    let json = tmp("ibsim.json");
    let o = Command::new(env!("CARGO_BIN_EXE_mad"))
        .args([
            "--ibsim",
            "bench",
            "--vs-libibmad",
            "--queries",
            "2000",
            "--w",
            "1,16",
            "--json",
            json.to_str().unwrap(),
        ])
        .env("IBSIM_SOCKNAME", sim.sockname())
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}{err}\nibsim:\n{}", sim.output());
    assert!(rate(&out, "runtime", 16).is_some_and(|r| r > 0.0), "{out}");
    assert!(rate(&out, "libibmad", 1).is_some_and(|r| r > 0.0), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["transport"], "ibsim");
    let smp = v["smp"].as_array().unwrap();
    let anchor = smp.iter().find(|r| r["impl"] == "libibmad").unwrap();
    assert_eq!(anchor["ratio_vs_libibmad"].as_f64(), Some(1.0));
    for r in smp.iter().filter(|r| r["impl"] == "runtime") {
        let ratio = r["ratio_vs_libibmad"].as_f64().unwrap();
        let expect = r["qps"].as_f64().unwrap() / anchor["qps"].as_f64().unwrap();
        assert!((ratio - expect).abs() < 0.01 * expect + 0.002, "{r}");
    }
    let _ = std::fs::remove_file(json);
}
