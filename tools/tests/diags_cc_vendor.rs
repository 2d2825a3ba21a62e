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

use diags_compare::{compare, needs, on_sim, real_on_served, FABRICS};

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

/// ibccquery and ibccconfig fail as infiniband-diags' do on ibsim (no CC
/// agent), and their usage, argument and option errors are the C tools'.
#[test]
fn ibccquery_and_ibccconfig_match_infiniband_diags_on_ibsim() {
    diags_compare::on_each_routed(&["ibccquery", "ibccconfig"], FABRICS, |name, sim, fails| {
        // ibsim drops the MADs and says so at once; keep our wait short.
        for op in OPS {
            compare(sim, name, "ibccquery", &["-t", "300", op, "2"], fails);
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
            compare(sim, name, "ibccquery", args, fails);
        }
        for args in [
            &["-t", "300", "CS", "1", "1", "0x3", "150", "1", "0", "0"][..],
            &["-t", "300", "-c", "9", "CT", "1", "1", "0", "0:0", "0:1"],
            &["CK", "1", "0x12", "2", "0", "0"],
            &["CK", "1", "0x12", "0", "0x10000", "0"],
            &["CT", "1", "5", "0", "0:0"],
            &["CT", "1", "1", "0", "0:0", "junk"],
            &["SS", "1", "1"],
            &["SS", "1", "1", "0xzz", "0", "1", "1", "1", "0:0", "1"],
            &["-t", "300", "SP", "1", "3", "1", "0", "5", "8", "100"],
            &["-t", "300", "SP", "2", "3", "1", "0", "5", "8", "100"],
            &["-t", "300", "SP", "2", "99", "1", "0", "5", "8", "100"],
            &["CI", "1"],
            &["bogus", "1"],
            &[],
            &["-h"],
        ] {
            compare(sim, name, "ibccconfig", args, fails);
        }
    });
}

/// On the built-in fabric (LID 2 a switch, LID 3 a CA) every op prints
/// its attribute as libibmad dumps it; switch-only and CA-only ops fail
/// on the other kind as the C tool does.
#[test]
fn ibccquery_works_on_the_built_in_fabric() {
    // (arguments, first line, lines after it)
    let cases: &[(&[&str], &str, usize)] = &[
        (&["CP", "3"], "# ClassPortInfo: Lid 3", 22),
        (&["CI", "2"], "# CongestionInfo: Lid 2", 2),
        (&["CK", "3"], "# CongestionKeyInfo: Lid 3", 4),
        (&["CL", "2"], "# CongestionLog: Lid 2", 2 + 3 + 1),
        (&["CL", "3"], "# CongestionLog: Lid 3", 2 + 3 + 1),
        (&["SS", "2"], "# SwitchCongestionSetting: Lid 2", 8),
        (&["SP", "2"], "# SwitchPortCongestionSetting: Lid 2", 9 * 7),
        (&["SP", "2", "4"], "# SwitchPortCongestionSetting: Lid 2", 5),
        (&["CS", "3"], "# CACongestionSetting: Lid 3", 3 + 16 * 6),
        (&["CT", "3"], "# CongestionControlTable: Lid 3", 2),
        (&["TI", "2"], "# Timestamp: Lid 2", 1),
    ];
    for (args, first, n) in cases {
        let (code, out) = on_sim("ibccquery", args);
        assert_eq!(code, Some(0), "{args:?}: {out}");
        assert_eq!(out.lines().next(), Some(*first), "{args:?}");
        assert_eq!(out.lines().count(), 1 + n, "{args:?}: {out}");
    }
    let (_, out) = on_sim("ibccquery", &["CL", "2"]);
    assert!(
        out.contains("\nLogType:.........................1\n"),
        "{out}"
    );
    let (_, out) = on_sim("ibccquery", &["CI", "3"]);
    assert!(
        out.ends_with("ControlTableCap:.................2\n"),
        "{out}"
    );
    for (args, msg) in [
        (
            &["SS", "3"][..],
            "operation SS: switch congestion setting query failed",
        ),
        (
            &["CS", "2"],
            "operation CS: ca congestion setting query failed",
        ),
        (&["SP", "3"], "operation SP: destination not a switch"),
        (
            &["SP", "2", "9"],
            "operation SP: invalid port number specified",
        ),
        (&["nope", "2"], "operation 'nope' not supported"),
    ] {
        let (code, out) = on_sim("ibccquery", args);
        assert_eq!(code, Some(255), "{args:?}");
        assert!(
            out.ends_with(&format!("ibccquery: iberror: failed: {msg}\n")),
            "{args:?}: {out}"
        );
    }
}

/// The built-in fabric served in ibsim's protocol: infiniband-diags'
/// ibccquery decodes its Congestion Control answers as ours does, and
/// what one tool's ibccconfig sets the other's ibccquery reads back.
#[test]
fn ibccquery_and_ibccconfig_agree_with_infiniband_diags_on_the_served_fabric() {
    if !needs(&["ibccquery", "ibccconfig"]) {
        return;
    }
    let served =
        support::served::Served::start(std::path::Path::new(env!("CARGO_BIN_EXE_mad")), "cc");
    let ours = |args: &[&str]| {
        let o = served.mad(&[&["--ibsim"][..], args].concat());
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let check = |args: &[&str], what: &str| {
        let t = real_on_served(&served, "ibccquery", args);
        let o = ours(&[&["ibccquery"][..], args].concat());
        assert_eq!(o, t, "{what}: ibccquery {args:?}");
    };
    for (op, lid) in [
        ("CP", "2"),
        ("CI", "2"),
        ("CI", "3"),
        ("CK", "3"),
        ("SS", "2"),
        ("SP", "2"),
        ("CS", "3"),
        ("CT", "3"),
        ("SS", "3"),
        ("CS", "2"),
        ("SP", "3"),
    ] {
        check(&[op, lid], "fresh");
    }
    check(&["SP", "2", "5"], "fresh");
    // Theirs sets, both read; ours sets, both read.
    let set = |real: bool, args: &[&str]| {
        let r = if real {
            real_on_served(&served, "ibccconfig", args)
        } else {
            ours(&[&["ibccconfig"][..], args].concat())
        };
        assert_eq!(
            r,
            (Some(0), String::new()),
            "ibccconfig {args:?} (real: {real})"
        );
    };
    set(true, &["CS", "3", "1", "0x3", "150", "1", "0", "0"]);
    check(&["CS", "3"], "after the real CS");
    set(false, &["CS", "3", "0", "0x10", "7", "2", "3", "4"]);
    check(&["CS", "3"], "after our CS");
    set(
        true,
        &[
            "SS",
            "2",
            "0x1F",
            "0x1FFFFFFFFF",
            "0x0",
            "0xF",
            "8",
            "0",
            "1:5",
            "1",
        ],
    );
    check(&["SS", "2"], "after the real SS");
    set(
        false,
        &[
            "SS", "2", "0x10", "0xff", "0xff", "1", "2", "3", "2:7", "99",
        ],
    );
    check(&["SS", "2"], "after our SS");
    set(true, &["SP", "2", "3", "1", "0", "5", "8", "100"]);
    set(false, &["SP", "2", "4", "1", "1", "6", "9", "200"]);
    check(&["SP", "2"], "after SP");
    set(true, &["CT", "3", "3", "0", "0:0", "0:1", "1:2", "3:16383"]);
    check(&["CT", "3"], "after the real CT");
    set(false, &["CT", "3", "65", "1", "2:3", "1:1"]);
    check(&["CT", "3"], "after our CT");
    // A CC_Key set by ours guards the node for both tools.
    set(false, &["CK", "3", "0x77", "0", "60", "0"]);
    check(&["-c", "0x77", "CK", "3"], "keyed");
    check(&["-t", "300", "CK", "3"], "wrong key");
}
