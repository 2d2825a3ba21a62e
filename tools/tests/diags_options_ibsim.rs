//! Options of the infiniband-diags programs beyond those the other
//! comparison files drive, against the real programs over ibsim: the
//! Perl scripts' `--help` and `--version`, which Perl's Getopt::Std
//! answers itself (its texts on stderr, then the scan goes on); the
//! common `-e`, `-d` and `-s`; libibmad's warnings on fabrics the other
//! files do not reach; saquery's exit status on a table ibsim cut short.

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

/// The SM's LID as the real sminfo reports it (`sminfo: sm lid N ...`).
fn sm_lid(sim: &IbSim) -> String {
    let t = diags_compare::theirs(sim, "sminfo", &[]);
    t.stdout
        .strip_prefix("sminfo: sm lid ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("sminfo: {t:?}"))
        .to_owned()
}

/// `-e` (libibmad's `madrpc_show_errors`) and `-d` (`ibdebug`): the real
/// tools' lines on stderr, all of stderr compared (PIDs masked) — the
/// resends and the timeout of a query nobody answers, a MAD status, the
/// `DEBUG` line of each SMP and PerfMgt query with its route, and with
/// `-d` the longer `iberror: [pid N] main:` line on stdout.
#[test]
fn errors_and_debug_options_print_libibmads_lines() {
    diags_compare::on_each_routed(
        &[
            "smpquery",
            "perfquery",
            "ibaddr",
            "ibportstate",
            "sminfo",
            "ibtracert",
        ],
        &["net.2sw2path4hca2port"],
        |name, sim, fails| {
            let cases: &[(&str, &[&str])] = &[
                ("smpquery", &["-e", "-t", "100", "nodeinfo", "77"]),
                ("smpquery", &["-d", "-t", "100", "nodeinfo", "77"]),
                ("smpquery", &["-d", "nodeinfo", "1"]),
                ("smpquery", &["-d", "-D", "portinfo", "0,1", "1"]),
                ("perfquery", &["-d"]),
                ("perfquery", &["-e", "-t", "100", "77"]),
                ("ibaddr", &["-d"]),
                ("ibaddr", &["-e", "-G", "0x999"]),
                ("ibportstate", &["-d", "1", "0"]),
                ("ibportstate", &["-e", "-t", "100", "77", "1"]),
                ("sminfo", &["-e", "-t", "100", "77"]),
                ("ibtracert", &["-e", "-t", "100", "1", "77"]),
                ("ibroute", &["-t", "100", "77"]),
                ("ibroute", &["-e", "-t", "100", "77"]),
                ("ibtracert", &["-e", "-t", "100", "-m", "0xc000", "1", "77"]),
            ];
            for (tool, args) in cases {
                diags_compare::compare_full(sim, name, tool, args, fails);
            }
        },
    );
}

/// `-s SMLID`: the SA PathRecord that resolves a `-G` GUID goes to that
/// LID, as with the real tools (`ibd_sm_id`): an SM LID nobody answers at
/// fails the resolution with libibmad's warnings, the SM's own LID
/// resolves it.
#[test]
fn sm_port_option_sends_the_guid_resolution_to_that_lid() {
    diags_compare::on_each_routed(
        &["smpquery", "sminfo", "ibnetdiscover"],
        &["net.2sw2path4hca2port"],
        |name, sim, fails| {
            let (_, ca) = diags_compare::some_guids(sim);
            let sm = sm_lid(sim);
            for args in [
                &["-G", "-s", "99", "-t", "100", "nodeinfo", &ca][..],
                &["-e", "-G", "-s", "99", "-t", "100", "nodeinfo", &ca],
                &["-G", "-s", &sm, "nodeinfo", &ca],
            ] {
                diags_compare::compare_full(sim, name, "smpquery", args, fails);
            }
            // Ours without -s resolves it, so the failure is -s's doing.
            let o = diags_compare::ours(sim, "smpquery", &["-G", "nodeinfo", &ca]);
            assert_eq!(o.code, Some(0), "{o:?}");
        },
    );
}

/// libibmad's warnings on fabrics the other comparisons do not reach:
/// `smpquery portinfoextended` on ports without PortInfoExtended (the
/// warning names `is_port_info_extended_supported`), and `ibportstate
/// LID PORT query` on an active switch port whose peer does not answer
/// (ibsim refuses the combined route to it): the `mad_rpc` warning naming
/// that route, with the same stdout and exit status. (libumad2sim's own
/// `recv failed` line before it is not libibmad's and is not compared.)
#[test]
fn port_info_extended_and_unanswered_peer_warn_as_libibmad() {
    diags_compare::on_each_routed(
        &["smpquery", "ibportstate"],
        &["net.2sw2path4hca2port"],
        |name, sim, fails| {
            for args in [
                &["portinfoextended", "1", "1"][..],
                &["portinfoextended", "2", "1"],
            ] {
                diags_compare::compare_full(sim, name, "smpquery", args, fails);
            }
            let args = ["-t", "100", "1", "1", "query"];
            let t = diags_compare::full(&diags_compare::theirs_output(sim, "ibportstate", &args));
            let o = diags_compare::full(&diags_compare::ours_output(sim, "ibportstate", &args));
            let mad_rpc = |r: &diags_compare::FullRun| -> Vec<String> {
                r.stderr
                    .lines()
                    .filter(|l| l.contains("mad_rpc"))
                    .map(str::to_owned)
                    .collect()
            };
            assert!(!mad_rpc(&t).is_empty(), "the real one warns: {t:?}");
            if (&t.stdout, t.code, mad_rpc(&t)) != (&o.stdout, o.code, mad_rpc(&o)) {
                fails.push(format!("{name}: ibportstate {args:?}\n{t:?}\n{o:?}"));
            }
        },
    );
}

/// saquery on a table OpenSM's answer through ibsim cuts to its first
/// MAD (no RMPP segments there; the real saquery prints what arrived and
/// exits 0): ours prints the same records and exits 3 with a line on
/// stderr saying so (tools/README.md's rule), `complete: false` and
/// `truncated: true` with `--json`. An answer that fits in one MAD exits 0.
#[test]
fn saquery_tables_cut_by_ibsim_exit_3_with_a_line_on_stderr() {
    diags_compare::on_each_routed(&["saquery"], &["net.torus3x3"], |name, sim, fails| {
        for q in ["SWIR", "SL2VL", "NR"] {
            let o = diags_compare::ours_output(sim, "saquery", &[q]);
            let err = String::from_utf8_lossy(&o.stderr);
            if o.status.code() != Some(3)
                || !err.contains("arrived cut to its first MAD")
                || o.stdout.is_empty()
            {
                fails.push(format!("{name}: saquery {q}: {o:?}"));
            }
            let j = diags_compare::ours_output(sim, "saquery", &["--json", q]);
            let out = String::from_utf8_lossy(&j.stdout);
            if j.status.code() != Some(3)
                || !out.contains("\"complete\":false")
                || !out.contains("\"truncated\":true")
            {
                fails.push(format!("{name}: saquery --json {q}: {j:?}"));
            }
        }
        let o = diags_compare::ours_output(sim, "saquery", &["PIR", "1/1"]);
        if o.status.code() != Some(0) || o.stdout.is_empty() {
            fails.push(format!("{name}: saquery PIR 1/1 (fits in one MAD): {o:?}"));
        }
    });
}
