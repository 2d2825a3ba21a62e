//! The `--json` contract, on the built-in fabric: every command's output
//! (a success, and failures) validates against its schema in
//! `tools/schemas/`, carries `command` / `version` / `complete`, and every
//! GUID in it is a string `0x` + 16 hex digits (so that jq and other
//! double-based parsers keep all 64 bits).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod mad_cli;

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

fn mad(args: &[&str], stdin: &str) -> Output {
    mad_cli::mad_with(args, stdin.as_bytes(), &[])
}

fn schema(command: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(format!("{command}.schema.json"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Parses `out`'s stdout as one JSON object on one line and validates it
/// against `command`'s schema.
fn validated(command: &str, args: &[&str], out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stdout.lines().count(),
        1,
        "{args:?}: one line of JSON on stdout, got:\n{stdout}\nstderr:\n{stderr}"
    );
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
    let validator = jsonschema::validator_for(&schema(command))
        .unwrap_or_else(|e| panic!("{command}.schema.json is not a valid schema: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{args:?}: output does not match {command}.schema.json:\n{}\n{stdout}",
        errors.join("\n")
    );
    assert_eq!(v["command"], command, "{args:?}");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{args:?}");
    v
}

/// Every value under a key naming a GUID, at any depth.
fn guids<'a>(v: &'a Value, out: &mut Vec<(String, &'a Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if (k == "guid" || k.ends_with("_guid")) && !x.is_null() {
                    out.push((k.clone(), x));
                }
                guids(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| guids(x, out)),
        _ => {}
    }
}

fn assert_guids_are_hex_strings(args: &[&str], v: &Value) -> usize {
    let mut found = Vec::new();
    guids(v, &mut found);
    for (k, g) in &found {
        let s = g
            .as_str()
            .unwrap_or_else(|| panic!("{args:?}: {k} is not a string: {g}"));
        assert!(
            s.len() == 18 && s.starts_with("0x") && s[2..].chars().all(|c| c.is_ascii_hexdigit()),
            "{args:?}: {k} = {s:?} is not 0x + 16 hex digits"
        );
    }
    found.len()
}

/// (schema, arguments after `mad --sim --json`) of a successful run.
const SUCCESSES: &[(&str, &[&str])] = &[
    ("smpquery", &["smpquery", "nodeinfo", "1"]),
    ("smpquery", &["smpquery", "portinfo", "3", "1"]),
    ("smpquery", &["smpquery", "nodedesc", "3"]),
    ("smpquery", &["smpquery", "switchinfo", "2"]),
    ("smpquery", &["smpquery", "pkeys", "3"]),
    ("smpquery", &["smpquery", "sl2vl", "2"]),
    ("smpquery", &["smpquery", "vlarb", "3"]),
    ("perfquery", &["perfquery", "1", "1"]),
    ("perfquery", &["perfquery", "-x", "1", "1"]),
    ("perfquery", &["perfquery", "-r", "2", "1"]),
    ("perfquery", &["perfquery", "-E", "2", "1"]),
    ("perfquery", &["perfquery", "-c", "-r", "2", "1"]),
    ("ibccquery", &["ibccquery", "CI", "3"]),
    ("ibccquery", &["ibccquery", "CS", "3"]),
    ("ibccquery", &["ibccquery", "SP", "2"]),
    (
        "ibccconfig",
        &["ibccconfig", "CS", "3", "1", "0x3", "150", "1", "0", "0"],
    ),
    (
        "ibccconfig",
        &["ibccconfig", "SP", "2", "3", "1", "0", "5", "8", "100"],
    ),
    ("cm", &["cm", "connect", "--hold", "10", "-w", "30"]),
    ("ibping", &["ibping", "-f", "-c", "2", "3"]),
    ("ibping", &["ibping", "-f", "-c", "1", "2"]),
    ("ibsysstat", &["ibsysstat", "3"]),
    ("ibsysstat", &["ibsysstat", "3", "host"]),
    ("vendstat", &["vendstat", "-N", "2"]),
    ("saquery", &["saquery", "NR"]),
    ("saquery", &["saquery", "PR"]),
    ("saquery", &["saquery", "PIR"]),
    ("sminfo", &["sminfo"]),
    ("ibaddr", &["ibaddr"]),
    ("ibaddr", &["ibaddr", "2"]),
    ("ibportstate", &["ibportstate", "3", "1"]),
    ("ibstat", &["ibstat"]),
    ("ibstatus", &["ibstatus"]),
    ("ibroute", &["ibroute", "2"]),
    ("ibroute", &["ibroute", "-M", "2"]),
    ("ibtracert", &["ibtracert", "3", "12"]),
    ("ibnetdiscover", &["ibnetdiscover"]),
    ("ibhosts", &["ibhosts"]),
    ("ibswitches", &["ibswitches"]),
    ("sweep", &["sweep"]),
    ("check-routes", &["check-routes"]),
    ("check-routes", &["check-routes", "-R", "updn"]),
    ("exporter", &["exporter", "--once"]),
    ("exporter", &["exporter", "--once", "--lean"]),
    ("iblinkinfo", &["iblinkinfo"]),
    ("ibqueryerrors", &["ibqueryerrors"]),
    ("ibnodes", &["ibnodes"]),
    ("ibrouters", &["ibrouters"]),
    ("smpdump", &["smpdump", "2", "0x11"]),
    ("dump_fts", &["dump_fts"]),
    ("dump_fts", &["dump_fts", "-M"]),
    ("dump_fts", &["dump_fts", "-n", "-a"]),
    (
        "bench",
        &["bench", "--w", "1", "--queries", "50", "--targets", "0"],
    ),
];

#[test]
fn every_command_prints_json_that_matches_its_schema_with_guids_as_hex_strings() {
    let mut guid_count = 0;
    for (command, args) in SUCCESSES {
        let mut argv = vec!["--sim", "--json"];
        argv.extend_from_slice(args);
        let out = mad(&argv, "");
        assert!(
            out.status.success(),
            "{argv:?}: status {:?}, stderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        let v = validated(command, &argv, &out);
        assert_eq!(v["complete"], true, "{argv:?}");
        guid_count += assert_guids_are_hex_strings(&argv, &v);
    }
    assert!(guid_count > 100, "only {guid_count} GUIDs checked");
}

#[test]
fn the_per_command_json_flag_works_like_the_global_one() {
    let out = mad(&["--sim", "smpquery", "--json", "nodeinfo", "2"], "");
    assert!(out.status.success());
    let v = validated("smpquery", &["smpquery --json"], &out);
    assert_eq!(v["node_info"]["node_guid"], "0x0000000000200000");
    let out = mad(
        &["--sim", "bench", "--w", "1", "--queries", "20", "--json"],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    validated("bench", &["bench --json"], &out);
}

#[test]
fn sim_and_decode_print_json_too() {
    let out = mad(&["--json", "sim", "-q"], "quit\n");
    assert!(out.status.success());
    let v = validated("sim", &["--json", "sim"], &out);
    assert_eq!(
        (v["nodes"].as_u64(), v["sm_lid"].as_u64()),
        (Some(12), Some(1))
    );
    let mut mad_hex = vec!["00"; 256];
    mad_hex[0] = "01";
    mad_hex[1] = "81";
    let out = mad(&["--json", "decode"], &mad_hex.join(" "));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    validated("decode", &["--json", "decode"], &out);
    let out = mad(&["--json", "--version"], "");
    assert!(out.status.success());
    let v = validated("mad", &["--json", "--version"], &out);
    assert_eq!(v["infiniband_diags"], "44.0");
}

/// Failures under `--json`: still one object on stdout, matching the
/// schema, `complete: false`, an error naming what went wrong and the
/// exit status the text form has.
#[test]
fn failures_are_json_with_the_error_and_the_exit_status() {
    let cases: &[(&str, &[&str], i32, &str)] = &[
        // A query that gets no answer: IBEXIT's status.
        (
            "smpquery",
            &["--sim", "--json", "smpquery", "nodeinfo", "999"],
            255,
            "node info query failed",
        ),
        // A bad option: getopt's complaint, usage status 2.
        (
            "perfquery",
            &["--sim", "--json", "perfquery", "--bogus"],
            2,
            "unrecognized option '--bogus'",
        ),
        (
            "ibroute",
            &["--sim", "--json", "ibroute", "1"],
            255,
            "not a switch",
        ),
        ("mad", &["--json", "frobnicate"], 2, "unknown command"),
        (
            "exporter",
            &["--sim", "--json", "exporter"],
            2,
            "--json goes with --once",
        ),
        ("decode", &["--json", "decode"], 1, "'x' is not a hex digit"),
        (
            "cm",
            &["--sim", "--json", "cm", "connect", "-w", "-1"],
            2,
            "-w \"-1\": want seconds from 0 to",
        ),
        (
            "sminfo",
            &["--sim=/nonexistent/topology", "--json", "sminfo"],
            255,
            "/nonexistent/topology",
        ),
    ];
    for (command, argv, status, words) in cases {
        let out = mad(argv, "x");
        assert_eq!(out.status.code(), Some(*status), "{argv:?}");
        let v = validated(command, argv, &out);
        assert_eq!(v["complete"], false, "{argv:?}");
        assert_eq!(v["error"]["status"], *status, "{argv:?}");
        let m = v["error"]["message"].as_str().unwrap();
        assert!(m.contains(words), "{argv:?}: {m}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("iberror"),
            "{argv:?}: no text on stdout under --json"
        );
        // The message goes to stderr too, naming the command once
        // (it was "exporter: exporter: ..." and "cm: cm: ...").
        let err = String::from_utf8_lossy(&out.stderr);
        if matches!(*command, "exporter" | "cm") {
            assert!(err.contains(words), "{argv:?}: stderr {err:?}");
        }
        let twice = format!("{command}: {command}: ");
        assert!(!err.contains(&twice), "{argv:?}: stderr {err:?}");
    }
}

/// sweep used libibmad's CamelCase counter names, perfquery snake case:
/// one naming style now, the same key for the same counter.
#[test]
fn sweep_and_perfquery_name_counters_alike() {
    let sweep = mad(&["--sim", "--json", "sweep"], "");
    let sweep = validated("sweep", &["sweep"], &sweep);
    let pq = mad(&["--sim", "--json", "perfquery", "2", "1"], "");
    let pq = validated("perfquery", &["perfquery"], &pq);
    let theirs = pq["ports"][0]["counters"].as_object().unwrap();
    let ours = sweep["nodes"][0]["ports"][0]["counters"]
        .as_object()
        .unwrap();
    assert!(ours.len() >= 16, "{ours:?}");
    for k in ours.keys() {
        assert!(
            k.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{k} is not snake case"
        );
        assert!(theirs.contains_key(k), "perfquery has no {k}");
    }
    // The exporter's too (its data and packet counters are the extended
    // ones where the PMA has them).
    let ex = mad(&["--sim", "--json", "exporter", "--once"], "");
    let ex = validated("exporter", &["exporter"], &ex);
    let extended = sweep["nodes"][0]["ports"][0]["extended"].as_object();
    let exported = ex["ports"][0]["counters"].as_object().unwrap();
    assert!(exported.len() >= 16, "{exported:?}");
    for k in exported.keys() {
        assert!(
            ours.contains_key(k) || extended.is_some_and(|e| e.contains_key(k)),
            "sweep has no {k}"
        );
    }
}

/// The schemas are strict where the contract is: a GUID as a number, a
/// missing `command`, an unknown `complete` value or an error without a
/// status is refused.
#[test]
fn the_schemas_refuse_what_the_contract_forbids() {
    let out = mad(&["--sim", "--json", "smpquery", "nodeinfo", "1"], "");
    let good = validated("smpquery", &["smpquery"], &out);
    let validator = jsonschema::validator_for(&schema("smpquery")).unwrap();
    let mut bad = good.clone();
    bad["node_info"]["node_guid"] = serde_json::json!(1_048_576u64);
    assert!(!validator.is_valid(&bad), "a numeric GUID passed");
    let mut bad = good.clone();
    bad["node_info"]["node_guid"] = serde_json::json!("0x100000");
    assert!(!validator.is_valid(&bad), "a short GUID passed");
    let mut bad = good.clone();
    bad.as_object_mut().unwrap().remove("command");
    assert!(!validator.is_valid(&bad), "no command passed");
    let mut bad = good.clone();
    bad["complete"] = serde_json::json!(false);
    assert!(!validator.is_valid(&bad), "incomplete without error passed");
    let mut bad = good;
    bad["error"] = serde_json::json!({"message": "x"});
    bad["complete"] = serde_json::json!(false);
    assert!(!validator.is_valid(&bad), "an error without status passed");
    // A GUID deep inside a sweep, too.
    let out = mad(&["--sim", "--json", "sweep"], "");
    let mut v = validated("sweep", &["sweep"], &out);
    v["nodes"][0]["ports"][0]["remote"]["guid"] = serde_json::json!(2_097_152u64);
    let validator = jsonschema::validator_for(&schema("sweep")).unwrap();
    assert!(!validator.is_valid(&v), "a numeric remote GUID passed");
}
