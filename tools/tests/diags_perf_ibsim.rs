//! `perfquery`'s attribute queries (`-X -S -D -E -T -c` and the long-only
//! ones), their resets, and their failures, against infiniband-diags 44's
//! perfquery on the same ibsim + OpenSM fabric: stdout byte for byte, the
//! exit status and stderr's first line (see `diags_compare`).
//!
//! ibsim 0.10's PMA answers PortRcvErrorDetails, PortXmitDiscardDetails,
//! PortOpRcvCounters, PortFlowCtlCounters, PortVLOpPackets, PortVLOpData,
//! PortVLXmitFlowCtlUpdateErrors and PortVLXmitWaitCounters (both tools
//! decode the answer), not the others (both tools fail the same way).

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

mod diags_compare;

use diags_compare::{compare, needs, on_sim, real_on_served, FABRICS};
use support::IbSim;

/// The attribute queries ibsim 0.10's PMA answers.
const ANSWERED: &[&str] = &[
    "-D",
    "-E",
    "--oprcvcounters",
    "--flowctlcounters",
    "--vloppackets",
    "--vlopdata",
    "--vlxmitflowctlerrors",
    "--vlxmitcounters",
];

/// The ones it drops (status 110 at once to the sender).
const UNANSWERED: &[&str] = &[
    "-X",
    "-S",
    "-T",
    "-c",
    "--swportvlcong",
    "--rcvcc",
    "--slrcvfecn",
    "--slrcvbecn",
    "--xmitcc",
    "--vlxmittimecc",
];

fn cases(sim: &IbSim, what: &str, fails: &mut Vec<String>) {
    // The local port, a CA port by LID, a switch port and a switch's
    // port 0 (LIDs as OpenSM assigns them on these fabrics), a port the
    // node does not have.
    let dests: &[&[&str]] = &[
        &[],
        &["1"],
        &["2", "1"],
        &["3", "2"],
        &["2", "0"],
        &["1", "9"],
    ];
    for q in ANSWERED {
        for d in dests {
            let mut args = vec![*q];
            args.extend_from_slice(d);
            compare(sim, what, "perfquery", &args, fails);
        }
    }
    // ibsim refuses these at once, but our ibsim transport waits for the
    // timeout: keep it short (not so short that umad_recv times out in
    // infiniband-diags before ibsim's refusal arrives). Not to the local port: ibsim hands a MAD
    // for the local port to a client instead, and infiniband-diags'
    // umad_recv times out ("recv failed") where ours reports the timed
    // out send (tools/README.md).
    for q in UNANSWERED {
        compare(sim, what, "perfquery", &["-t", "300", q, "2", "1"], fails);
    }
    for args in [
        &["-E", "-r", "2", "1"][..],
        &["-R", "-D", "2", "1"],
        &["-R", "-E", "2", "1", "0x3"],
        &["-R", "--vloppackets", "2", "1", "0x1ffff"],
        &["-r", "--vlopdata", "3", "1", "0"],
        &["-t", "300", "-R", "-T", "2", "1", "0xff"],
        &["-t", "300", "-R", "-c", "2", "1"],
        &["-t", "300", "-E", "-X", "2", "1"],
        &["--vlxmitcounters", "-D", "2", "1"],
        &["-t", "300", "-c", "-E", "2", "1"],
        &["-E", "-x", "-a", "2", "1"],
        &["-E", "2", "1-3"],
        &["-E", "2", "255"],
        &["-t", "300", "-E", "99", "1"],
    ] {
        compare(sim, what, "perfquery", args, fails);
    }
}

/// perfquery's attribute queries print what infiniband-diags' perfquery
/// prints on both fixture fabrics after OpenSM.
#[test]
fn perfquery_attribute_queries_match_infiniband_diags() {
    diags_compare::on_each_routed(&["perfquery"], FABRICS, |name, sim, fails| {
        cases(sim, name, fails);
    });
}

/// On the built-in fabric (where ibsim goes further: every attribute is
/// answered) each option decodes its attribute, with the lines
/// libibmad prints, and resets it.
#[test]
fn perfquery_attribute_queries_work_on_the_built_in_fabric() {
    // (option, header name, counter lines after PortSelect/CounterSelect)
    let cases: &[(&str, &str, usize)] = &[
        ("-X", "PortXmitDataSL", 16),
        ("-S", "PortRcvDataSL", 16),
        ("-D", "PortXmitDiscardDetails", 4),
        ("-E", "PortRcvErrorDetails", 6),
        ("-T", "PortExtendedSpeedsCounters", 2 + 36),
        ("--oprcvcounters", "PortOpRcvCounters", 2),
        ("--flowctlcounters", "PortFlowCtlCounters", 2),
        ("--vloppackets", "PortVLOpPackets", 16),
        ("--vlopdata", "PortVLOpData", 16),
        ("--vlxmitflowctlerrors", "PortVLXmitFlowCtlUpdateErrors", 16),
        ("--vlxmitcounters", "PortVLXmitWaitCounters", 16),
        ("--rcvcc", "PortRcvConCtrl", 2),
        ("--slrcvfecn", "PortSLRcvFECN", 16),
        ("--slrcvbecn", "PortSLRcvBECN", 16),
        ("--xmitcc", "PortXmitConCtrl", 1),
        ("--vlxmittimecc", "PortVLXmitTimeCong", 15),
    ];
    for (opt, name, n) in cases {
        let (code, out) = on_sim("perfquery", &[opt, "3", "1"]);
        assert_eq!(code, Some(0), "{opt}: {out}");
        let mut lines = out.lines();
        assert_eq!(
            lines.next(),
            Some(format!("# {name} counters: Lid 3 port 1").as_str()),
            "{opt}"
        );
        assert_eq!(lines.next(), Some("PortSelect:......................1"));
        assert_eq!(lines.count(), 1 + n, "{opt}: {out}");
        // Read then reset, and reset only.
        assert_eq!(
            on_sim("perfquery", &[opt, "-r", "3", "1"]).0,
            Some(0),
            "{opt} -r"
        );
        let (code, out) = on_sim("perfquery", &["-R", opt, "3", "1", "0x3"]);
        assert_eq!((code, out.as_str()), (Some(0), ""), "{opt} -R");
    }
    // Traffic shows: the local CA port received the SM's sweep on SL 0.
    let (_, out) = on_sim("perfquery", &["-S"]);
    let sl0: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("RcvDataSL0:"))
        .map(|v| v.trim_start_matches('.').parse().unwrap())
        .unwrap();
    assert!(sl0 > 0, "{out}");
    // SwPortVLCongestion is a switch's: a CA fails it as perfquery does.
    let (code, _) = on_sim("perfquery", &["--swportvlcong", "3", "1"]);
    assert_eq!(code, Some(255));
    let (code, out) = on_sim("perfquery", &["-c", "3", "1"]);
    assert_eq!(code, Some(0));
    assert!(
        out.starts_with("# PortSamplesControl: Lid 3 port 1\nOpCode:"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 1 + 30);
}

/// The built-in fabric served in ibsim's protocol (`mad sim --serve`):
/// infiniband-diags' perfquery decodes the attributes ibsim does not
/// answer (`-T -c` and the congestion ones) and the details ones from our
/// PMA as ours does. (The per-SL / per-VL / per-opcode counters move with
/// the queries themselves, so they are compared on ibsim only.)
#[test]
fn perfquery_matches_infiniband_diags_on_the_served_fabric() {
    if !needs(&["perfquery"]) {
        return;
    }
    let served =
        support::served::Served::start(std::path::Path::new(env!("CARGO_BIN_EXE_mad")), "perf");
    for q in [
        "-D",
        "-E",
        "-T",
        "-c",
        "--flowctlcounters",
        "--vlxmitflowctlerrors",
        "--vlxmitcounters",
        "--swportvlcong",
        "--rcvcc",
        "--slrcvfecn",
        "--slrcvbecn",
        "--xmitcc",
        "--vlxmittimecc",
    ] {
        // LID 2 is a switch, LID 3 a CA of the default fabric.
        for dest in [["2", "1"], ["3", "1"]] {
            let args = [&[q][..], &dest[..]].concat();
            let t = real_on_served(&served, "perfquery", &args);
            let o = served.mad(&[&["--ibsim", "perfquery"][..], &args].concat());
            let o = (
                o.status.code(),
                String::from_utf8_lossy(&o.stdout).into_owned(),
            );
            assert_eq!(o, t, "perfquery {args:?}");
        }
    }
}
