//! Options of the infiniband-diags programs beyond those the other
//! comparison files drive, against the real programs over ibsim: the
//! Perl scripts' `--help` and `--version`, which Perl's Getopt::Std
//! answers itself (its texts on stderr, then the scan goes on).

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

mod diags_compare;

use diags_compare::{fixture, needs, Run};
use support::IbSim;

/// Perl's `$0` is the script's path (execvp found it in PATH); ours is
/// the name it was run by. The line is compared from the name on.
fn from_the_name(run: &Run) -> String {
    let line = &run.stderr_first;
    match line.split_once(" version ") {
        Some((path, rest)) => {
            let name = path.rsplit('/').next().unwrap_or(path);
            format!("{name} version {rest}")
        }
        None => line.clone(),
    }
}

/// `--help` and `--version` of check_lft_balance, ibfindnodesusing and
/// ibidsverify: Getopt::Std's texts, then what the script does with the
/// options that follow (usage on stdout and status 2 for an unknown
/// option or `-h`; check_lft_balance's missing dump file).
#[test]
fn perl_scripts_answer_help_and_version_as_getopt_std() {
    if !needs(&["check_lft_balance", "ibfindnodesusing", "ibidsverify"]) {
        return;
    }
    let sim = IbSim::start(fixture("net.2sw2path4hca2port"));
    let mut fails = Vec::new();
    let same = |t: &Run, o: &Run| {
        (&t.stdout, t.code, from_the_name(t)) == (&o.stdout, o.code, from_the_name(o))
    };
    for tool in ["check_lft_balance", "ibfindnodesusing", "ibidsverify"] {
        for args in [
            &["--help", "-x"][..],
            &["--version", "-h"],
            &["--help", "--version", "-h"],
            &["--helpx"],
            &["--versio"],
        ] {
            diags_compare::compare_with(&sim, "options", tool, args, &mut fails, same);
        }
    }
    for args in [&["--help"][..], &["--version", "-l", "f"]] {
        diags_compare::compare_with(&sim, "options", "check_lft_balance", args, &mut fails, same);
    }
    // Ours says what the real one says, not an unknown option.
    let o = diags_compare::ours(&sim, "ibidsverify", &["--help", "-h"]);
    assert!(
        o.stderr_first.ends_with(
            "ibidsverify version [unknown] calling Getopt::Std::getopts (version 1.13 [paranoid]),"
        ),
        "{o:?}"
    );
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}
