//! `ibccquery` (Congestion Control, class 0x21) against infiniband-diags
//! 44's on the same ibsim + OpenSM fabric (ibsim has no Congestion
//! Control agent: every query fails, and the failure, the usage and the
//! option errors are compared), and end to end on the built-in fabric,
//! whose switches and CAs answer every attribute.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

mod diags_compare;

use std::time::Duration;

use diags_compare::{compare, fixture, needs, FABRICS};
use support::opensm::OpenSm;
use support::IbSim;

/// ibccquery's ops (names and aliases, mixed case).
const OPS: &[&str] = &[
    "ClassPortInfo",
    "CI",
    "congestionkeyinfo",
    "CL",
    "SS",
    "SP",
    "CS",
    "CT",
    "TI",
];

/// ibccquery fails as infiniband-diags' does on ibsim (no CC agent), and
/// its usage and option errors are the C tool's.
#[test]
fn ibccquery_matches_infiniband_diags_on_ibsim() {
    if !needs(&["ibccquery"]) {
        return;
    }
    let mut fails = Vec::new();
    for name in FABRICS {
        let sim = IbSim::start(fixture(name));
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        // ibsim drops the MADs and says so at once; keep our wait short.
        for op in OPS {
            compare(&sim, name, "ibccquery", &["-t", "300", op, "2"], &mut fails);
        }
        for args in [
            &["-t", "300", "-c", "0x1234", "CI", "1"][..],
            &["-t", "300", "SP", "2", "3"],
            &["bogus", "1"],
            &["CI"],
            &[],
            &["-c"],
            &["--cckey=5"],
            &["-D", "CI", "0"],
            &["-h"],
        ] {
            compare(&sim, name, "ibccquery", args, &mut fails);
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// `mad --sim ARGS`: (exit status, stdout).
fn sim(args: &[&str]) -> (Option<i32>, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mad"))
        .arg("--sim")
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// On the built-in fabric (LID 2 a switch, LID 3 a CA) every op prints
/// its attribute as libibmad dumps it; switch-only and CA-only ops fail
/// on the other kind as the C tool does.
#[test]
fn ibccquery_works_on_the_built_in_fabric() {
    // (op, LID, first line, lines after it)
    let cases: &[(&str, &str, &str, usize)] = &[
        ("CP", "3", "# ClassPortInfo: Lid 3", 22),
        ("CI", "2", "# CongestionInfo: Lid 2", 2),
        ("CK", "3", "# CongestionKeyInfo: Lid 3", 4),
        ("CL", "2", "# CongestionLog: Lid 2", 2 + 3 + 1),
        ("CL", "3", "# CongestionLog: Lid 3", 2 + 3 + 1),
        ("SS", "2", "# SwitchCongestionSetting: Lid 2", 8),
        ("SP", "2", "# SwitchPortCongestionSetting: Lid 2", 9 * 7),
        ("SP", "2", "# SwitchPortCongestionSetting: Lid 2", 5),
        ("CS", "3", "# CACongestionSetting: Lid 3", 3 + 16 * 6),
        ("CT", "3", "# CongestionControlTable: Lid 3", 2),
        ("TI", "2", "# Timestamp: Lid 2", 1),
    ];
    for (i, (op, lid, first, n)) in cases.iter().enumerate() {
        let mut args = vec!["ibccquery", op, lid];
        if i == 7 {
            args.push("4");
        }
        let (code, out) = sim(&args);
        assert_eq!(code, Some(0), "{args:?}: {out}");
        assert_eq!(out.lines().next(), Some(*first), "{args:?}");
        assert_eq!(out.lines().count(), 1 + n, "{args:?}: {out}");
    }
    let (_, out) = sim(&["ibccquery", "CL", "2"]);
    assert!(
        out.contains("\nLogType:.........................1\n"),
        "{out}"
    );
    let (_, out) = sim(&["ibccquery", "CI", "3"]);
    assert!(
        out.ends_with("ControlTableCap:.................2\n"),
        "{out}"
    );
    for (args, msg) in [
        (
            &["ibccquery", "SS", "3"][..],
            "operation SS: switch congestion setting query failed",
        ),
        (
            &["ibccquery", "CS", "2"],
            "operation CS: ca congestion setting query failed",
        ),
        (
            &["ibccquery", "SP", "3"],
            "operation SP: destination not a switch",
        ),
        (
            &["ibccquery", "SP", "2", "9"],
            "operation SP: invalid port number specified",
        ),
        (
            &["ibccquery", "nope", "2"],
            "operation 'nope' not supported",
        ),
    ] {
        let (code, out) = sim(args);
        assert_eq!(code, Some(255), "{args:?}");
        assert!(
            out.ends_with(&format!("ibccquery: iberror: failed: {msg}\n")),
            "{args:?}: {out}"
        );
    }
}
