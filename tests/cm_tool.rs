//! `mad cm` end to end on the built-in fabric: `connect` with no LID
//! makes a connection to a listener the command starts at another port,
//! and both sides print every event in order.
#![allow(
    clippy::unwrap_used,
    reason = "tests: a failed unwrap is a failed test"
)]

fn mad(args: &[&str]) -> (i32, String, String) {
    let argv: Vec<String> = std::iter::once("mad")
        .chain(args.iter().copied())
        .map(String::from)
        .collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut stdin: &[u8] = &[];
    let rc = mad_tools::cli::run(
        &argv,
        &mut mad_tools::cli::Io {
            stdin: &mut stdin,
            stdout: &mut out,
            stderr: &mut err,
        },
    );
    (
        rc,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn connect_on_the_built_in_fabric_prints_both_sides_events() {
    let (rc, out, err) = mad(&[
        "--sim", "cm", "connect", "--qpn", "0x42", "--hold", "50", "-w", "30",
    ]);
    assert_eq!(rc, 0, "{out}{err}");
    let events: Vec<&str> = out
        .lines()
        .map(|l| {
            let mut w = l.split_whitespace();
            let first = w.next().unwrap();
            if first == "peer" {
                w.nth(1).unwrap()
            } else {
                w.next().unwrap()
            }
        })
        .collect();
    assert_eq!(
        events,
        [
            "ESTABLISHED",
            "disconnecting",
            "DISCONNECTED",
            "TIMEWAIT_EXIT",
            "CONNECT_REQUEST",
            "ESTABLISHED",
            "DISCONNECTED",
            "TIMEWAIT_EXIT"
        ],
        "{out}"
    );
    // Each side names the connection by its own Communication ID: random,
    // never 0.
    let request = out.lines().find(|l| l.contains("CONNECT_REQUEST")).unwrap();
    let id = request
        .strip_prefix("peer 0x")
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{request}"));
    assert_ne!(u32::from_str_radix(id, 16).unwrap(), 0, "{request}");
    assert!(
        request.contains("CONNECT_REQUEST service 0x1061d2f"),
        "{out}"
    );
    assert!(
        out.lines().next().unwrap().contains("QPN 0x42"),
        "the peer accepted with --qpn: {out}"
    );
}

#[test]
fn bad_command_lines_are_usage_errors() {
    for args in [
        &["--sim", "cm"][..],
        &["--sim", "cm", "bogus"],
        &["--sim", "cm", "connect", "x"],
        // A GID names a RoCE port's peer; the built-in fabric has LIDs.
        &["--sim", "cm", "connect", "fe80::1"],
        &["--sim", "cm", "connect", "fe80::zz"],
        &["--sim", "cm", "connect", "--retries", "16"],
        &["--sim", "cm", "connect", "--response-timeout", "32"],
        &["--sim", "cm", "connect", "--cma", "10.0.0.1"],
        &["--sim", "cm", "connect", "--cma", "10.0.0.1,fe80::1"],
        &["--sim", "cm", "connect", "--qpn", "0x1000000"],
        &["--sim", "cm", "listen", "--reject", "65536"],
    ] {
        let (rc, out, err) = mad(args);
        assert_eq!(rc, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains("cm: "),
            "{args:?}: the error names no cause: {err}"
        );
    }
}

/// Every duration `mad cm` takes is checked: a negative one (which
/// strtoul would wrap to 2^64 - 1) or one past ten years is a usage error
/// naming the option, never the panic of an `Instant` overflow.
#[test]
fn durations_out_of_range_are_usage_errors_not_panics() {
    for (args, option) in [
        (&["--sim", "cm", "listen", "-w", "-1"][..], "-w"),
        (&["--sim", "cm", "connect", "-w", "-1"], "-w"),
        (
            &["--sim", "cm", "connect", "-w", "18446744073709551615"],
            "-w",
        ),
        (&["--sim", "cm", "connect", "-w", "315360001"], "-w"),
        (&["--sim", "cm", "connect", "--hold", "-1"], "--hold"),
        (
            &["--sim", "cm", "connect", "--hold", "18446744073709551615"],
            "--hold",
        ),
        (&["--sim", "cm", "listen", "--delay", "-1"], "--delay"),
        (
            &["--sim", "cm", "listen", "--delay", "315360000001"],
            "--delay",
        ),
    ] {
        let (rc, out, err) = mad(args);
        assert_eq!(rc, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains(&format!("cm: {option} ")) && err.contains("from 0 to"),
            "{args:?}: the error names no option or range: {err}"
        );
    }
}

/// `--json`: one object with every event the text prints, in order,
/// named as the text names them.
#[test]
fn json_gives_the_events_of_both_sides() {
    let (rc, out, err) = mad(&["--sim", "--json", "cm", "connect", "--hold", "10"]);
    assert_eq!(rc, 0, "{out}{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["command"].as_str(), v["complete"].as_bool()),
        (Some("cm"), Some(true))
    );
    let events: Vec<(&str, &str)> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["side"].as_str().unwrap(), e["event"].as_str().unwrap()))
        .collect();
    assert_eq!(
        events,
        [
            ("local", "ESTABLISHED"),
            ("local", "disconnecting"),
            ("local", "DISCONNECTED"),
            ("local", "TIMEWAIT_EXIT"),
            ("peer", "CONNECT_REQUEST"),
            ("peer", "ESTABLISHED"),
            ("peer", "DISCONNECTED"),
            ("peer", "TIMEWAIT_EXIT"),
        ],
        "{out}"
    );
    assert_eq!(v["events"][2]["cause"], "DREP received", "{out}");
}
