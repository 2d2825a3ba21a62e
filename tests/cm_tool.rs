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
    assert!(
        out.contains("peer 0x00000001 CONNECT_REQUEST service 0x1061d2f"),
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
    ] {
        let (rc, out, err) = mad(args);
        assert_eq!(rc, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains("cm: "),
            "{args:?}: the error names no cause: {err}"
        );
    }
}
