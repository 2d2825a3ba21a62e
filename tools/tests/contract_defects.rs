//! The command contract's defects, one test each: partial results that
//! exited 0, errors that misled, Rust Debug text where a person reads.
//! Exit status 3 is `mad_tools::cli::EXIT_INCOMPLETE`: the output is
//! valid but something is missing, and stderr says what.

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod mad_cli;
use mad_cli::text;

#[path = "../../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;
use support::served::Served;

const INCOMPLETE: i32 = 3;

fn mad(args: &[&str], env: &[(&str, &str)]) -> Output {
    mad_cli::mad_with(args, b"", env)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mad-contract-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// `mad sim --serve NAME` (`support::served`).
fn served(tag: &str) -> Served {
    Served::start(std::path::Path::new(env!("CARGO_BIN_EXE_mad")), tag)
}

/// Discovery under injected packet loss (every packet out of spine-1's
/// port 1 dropped, through the fault console): ibnetdiscover prints what
/// it found, names what it did not get, and exits 3 — text and JSON.
/// Without the loss the same command exits 0.
#[test]
fn discovery_under_packet_loss_reports_what_it_missed_and_exits_non_zero() {
    let mut sim = served("d");
    let clean = sim.mad(&["ibnetdiscover", "-t", "100"]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stderr));
    let answer = sim.console("drop spine-1 1 1");
    assert!(answer.starts_with("ok:"), "{answer}");
    let o = sim.mad(&["ibnetdiscover", "-t", "100"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(INCOMPLETE), "{err}");
    assert!(
        text(&o.stdout).contains("Switch"),
        "the topology is printed"
    );
    assert!(
        err.contains("discovery incomplete: 2 queries went unanswered"),
        "{err}"
    );
    let o = sim.mad(&["--json", "ibnetdiscover", "-t", "100"]);
    assert_eq!(o.status.code(), Some(INCOMPLETE));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["complete"], false);
    assert_eq!(v["missing"][0]["what"], "queries");
    assert_eq!(v["missing"][0]["count"], 2);
    assert!(v["missing"][0]["items"][0]
        .as_str()
        .unwrap()
        .starts_with("DR path 0,1,"));
    assert_eq!(v["error"]["status"], INCOMPLETE);
    assert!(!v["nodes"].as_array().unwrap().is_empty());
    // sweep and ibhosts run the same discovery.
    let o = sim.mad(&["sweep", "-t", "100"]);
    assert_eq!(o.status.code(), Some(INCOMPLETE));
    assert!(text(&o.stderr).contains("sweep incomplete"));
    let o = sim.mad(&["ibhosts", "-t", "100"]);
    assert_eq!(o.status.code(), Some(INCOMPLETE));
}

/// saquery over --ibsim gets a table cut to its first MAD (no RMPP on
/// that transport): it printed 1 of 12 node records and exited 0; now it
/// says the table is cut, how to get all of it, and exits 3.
#[test]
fn saquery_over_ibsim_says_the_table_is_cut_and_exits_non_zero() {
    let sim = served("s");
    let o = sim.mad(&["saquery"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(INCOMPLETE), "{err}");
    assert!(
        err.contains("incomplete NodeRecord table")
            && err.contains("arrived cut to its first MAD")
            && err.contains("--sim"),
        "{err}"
    );
    assert!(text(&o.stdout).contains("NodeRecord dump"));
    drop(sim);
    // A fresh fabric: the served SA is still resending the cut transfer
    // to the first client for a while.
    let sim = served("j");
    let o = sim.mad(&["--json", "saquery"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (&v["truncated"], &v["complete"]),
        (&true.into(), &false.into())
    );
}

/// A fabric of 341 LIDs has 116,281 paths; the built-in SA answers
/// 65,536 of them to a PathRecord query naming neither end. saquery said
/// `truncated: false` and exited 0; now the table is marked cut.
#[test]
fn saquery_path_records_capped_by_the_built_in_sa_are_marked_incomplete() {
    let (leaves, hosts) = (20, 16);
    let mut t = format!("Switch {leaves} \"spine\"\n");
    for l in 1..=leaves {
        t.push_str(&format!("[{l}] \"leaf-{l}\"[{}]\n", hosts + 1));
    }
    for l in 1..=leaves {
        t.push_str(&format!(
            "\nSwitch {} \"leaf-{l}\"\n[{}] \"spine\"[{l}]\n",
            hosts + 1,
            hosts + 1
        ));
        for h in 1..=hosts {
            t.push_str(&format!("[{h}] \"h-{l}-{h}\"[1]\n"));
        }
    }
    for l in 1..=leaves {
        for h in 1..=hosts {
            t.push_str(&format!("\nCa 1 \"h-{l}-{h}\"\n[1] \"leaf-{l}\"[{h}]\n"));
        }
    }
    let file = tmp("big.topo");
    std::fs::write(&file, t).unwrap();
    let sim = format!("--sim={}", file.display());
    // A generous timeout: 4 MB of records over RMPP on a loaded machine.
    let o = mad(&[&sim, "--json", "saquery", "-t", "30000", "PR"], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(INCOMPLETE), "{err}");
    assert!(err.contains("at most 65536 PathRecords"), "{err}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["records"].as_array().unwrap().len(), 65_536);
    assert_eq!(
        (&v["truncated"], &v["complete"]),
        (&true.into(), &false.into())
    );
    // Naming one end is not capped: complete, exit 0.
    let o = mad(&[&sim, "saquery", "-t", "30000", "PR", "--slid", "1"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn without_a_device_ibstat_names_sim_and_ibsim_not_a_ca_nobody_named() {
    let devices = mad_core::transport::umad::is_available()
        && mad_core::transport::umad::list_cas().is_ok_and(|c| !c.is_empty());
    if devices {
        return;
    }
    let o = mad(&["ibstat"], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(255));
    assert!(!err.contains("mthca0"), "{err}");
    assert!(err.contains("--sim") && err.contains("--ibsim"), "{err}");
    // Other commands: the IBEXIT line is the reason, no "(null)" CA.
    let o = mad(&["perfquery"], &[]);
    let out = text(&o.stdout);
    assert!(!out.contains("(null)"), "{out}");
    assert!(out.contains("--sim"), "{out}");
}

#[test]
fn sim_topology_errors_name_the_file_and_what_is_wrong() {
    // A missing file: not "line 0".
    let o = mad(&["--sim=/nonexistent/topo", "sminfo"], &[]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(255));
    assert!(
        out.contains("cannot read the topology file /nonexistent/topo: No such file"),
        "{out}"
    );
    assert!(!out.contains(":0:"), "{out}");
    // An empty file: not "node #0: no such node".
    let empty = tmp("empty.topo");
    std::fs::write(&empty, "").unwrap();
    let o = mad(&[&format!("--sim={}", empty.display()), "sminfo"], &[]);
    let out = text(&o.stdout);
    assert!(
        out.contains("has no nodes") && out.contains("empty"),
        "{out}"
    );
    assert!(!out.contains("node #0"), "{out}");
    // A line the loader skips: named with its file and line.
    let garbage = tmp("garbage.topo");
    std::fs::write(
        &garbage,
        "Switch 2 \"sw\"\n[1] \"h\"[1]\n\nthis is not a topology line\nCa 1 \"h\"\n[1] \"sw\"[1]\n",
    )
    .unwrap();
    let o = mad(&[&format!("--sim={}", garbage.display()), "sminfo"], &[]);
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!("{}:4: line ignored", garbage.display())),
        "{err}"
    );
}

#[test]
fn a_topology_given_after_a_bare_sim_gets_a_did_you_mean() {
    let o = mad(&["--sim", "net", "ibstat"], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("did you mean --sim=net?"), "{err}");
    assert!(err.lines().count() <= 3, "no 30 lines of usage: {err}");
}

#[test]
fn bad_numbers_are_refused_not_taken_as_zero() {
    for bad in ["0", "abc", "-5"] {
        let o = mad(&["--sim", "sweep", "-o", bad], &[]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "-o {bad}: {err}");
        assert!(err.contains("-o takes a positive number"), "{err}");
    }
    let o = mad(&["--sim", "sweep", "--per-node", "x"], &[]);
    assert_eq!(o.status.code(), Some(2));
    // A reset mask that is not a number would reset every counter.
    let o = mad(&["--sim", "perfquery", "-R", "2", "1", "0xzzz"], &[]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(255), "{out}");
    assert!(out.contains("bad reset mask \"0xzzz\""), "{out}");
    let o = mad(&["--sim", "perfquery", "-R", "2", "1", "0x1000"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn verbose_durations_are_not_rust_debug_text() {
    let o = mad(&["--sim", "sweep", "-v"], &[]);
    assert!(o.status.success());
    let err = text(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("nodes discovered with"))
        .unwrap();
    assert!(line.contains(" ms") || line.contains(" s;"), "{line}");
    assert!(!line.contains("µs") && !line.contains("ns;"), "{line}");
    let o = mad(&["--sim", "ibnetdiscover", "-v"], &[]);
    let err = text(&o.stderr);
    let line = err.lines().find(|l| l.starts_with("# discovered")).unwrap();
    assert!(line.ends_with(" ms") || line.ends_with(" s"), "{line}");
}

#[test]
fn version_says_madstack_and_the_diags_release_it_matches() {
    let o = mad(&["--version"], &[]);
    assert!(o.status.success());
    let out = text(&o.stdout);
    assert!(
        out.starts_with("mad (madstack) ") && out.contains("infiniband-diags 44.0"),
        "{out}"
    );
    let o = mad(&["--sim", "smpquery", "-V"], &[]);
    assert_eq!(o.status.code(), Some(0));
    let err = text(&o.stderr);
    assert!(
        err.starts_with("smpquery BUILD VERSION: madstack ")
            && err.contains("matches infiniband-diags 44.0"),
        "{err}"
    );
}

/// `mad sweep` lists only the common options it honours: not `-e` (its
/// failed reads are reported anyway), which it refuses as unknown; `-d`
/// prints libibmad's `DEBUG` line for each PerfMgt query it makes.
#[test]
fn sweep_lists_only_the_common_options_it_honours() {
    let o = mad(&["--sim", "sweep", "-h"], &[]);
    let help = text(&o.stderr);
    assert!(
        help.contains("--debug, -d") && !help.contains("--errors, -e"),
        "{help}"
    );
    let o = mad(&["--sim", "sweep", "-e"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let o = mad(&["--sim", "sweep", "-d"], &[]);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.lines().any(|l| l.contains("] pma_query_via: lid ")),
        "{err}"
    );
}

/// `-s LID`: the SA query that resolves a `-G` GUID goes to that LID
/// (seen in `--pcap`), and with nobody there the GUID does not resolve;
/// without `-s` it goes to the port's SM and resolves.
#[test]
fn sm_port_option_sends_the_sa_query_to_that_lid() {
    let sa_dlids = |pcap: &PathBuf| -> Vec<u16> {
        let bytes = std::fs::read(pcap).unwrap();
        let mut r = mad_core::pcap::PcapReader::new(&bytes[..]).unwrap();
        let mut v = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            if rec.meta.direction == mad_core::pcap::Direction::Sent
                && mad_testkit::header::of(&rec.mad).mgmt_class
                    == mad_core::wire::MgmtClass::SUBN_ADM
            {
                v.push(rec.meta.dlid);
            }
        }
        v
    };
    // The built-in fabric's own port (ibstat -p).
    let guid = "0x0000000000100004";
    let pcap = tmp("sm-port.pcap");
    let p = pcap.to_str().unwrap();
    let o = mad(
        &[
            "--sim", "--pcap", p, "smpquery", "-G", "-s", "99", "-t", "100", "nodeinfo", guid,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(255), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("mad_rpc_rmpp: _do_madrpc failed; dport (Lid 99)"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(sa_dlids(&pcap), [99, 99, 99], "three tries to LID 99");
    let o = mad(
        &["--sim", "--pcap", p, "smpquery", "-G", "nodeinfo", guid],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let to = sa_dlids(&pcap);
    assert!(!to.is_empty() && !to.contains(&99), "{to:?}");
    let _ = std::fs::remove_file(&pcap);
}
