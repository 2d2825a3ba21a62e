//! Every command on the built-in fabric (`--sim`): it runs through the
//! whole stack (SM-lite brings the fabric up, the command's queries go
//! through the agent runtime over a SimPort) and prints what the fabric
//! holds; `--json` parses and agrees with the text; bad input gives a
//! clear error and the infiniband-diags exit status, never a panic; the
//! tool-named forms (a symlink) behave as `mad COMMAND`; `--pcap` records
//! the command's MADs.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod mad_cli;
use mad_cli::{mad as run, text, MAD};

use std::path::{Path, PathBuf};
use std::process::Command;

use mad_core::pcap::{Direction, PcapReader};
use mad_core::wire::{Method, MgmtClass};
use mad_testkit::header;

/// `mad --sim ARGS`: (stdout, stderr, exit status).
fn sim(args: &[&str]) -> (String, String, i32) {
    let mut a = vec!["--sim"];
    a.extend_from_slice(args);
    let o = run(&a);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    (out, err, o.status.code().unwrap_or(-1))
}

fn ok(args: &[&str]) -> String {
    let (out, err, code) = sim(args);
    assert_eq!(code, 0, "mad --sim {args:?}: {err}\n{out}");
    out
}

/// [`ok`], asserting that the output starts with `prefix`.
fn ok_starting(args: &[&str], prefix: &str) -> String {
    let out = ok(args);
    assert!(out.starts_with(prefix), "mad --sim {args:?}: {out}");
    out
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = ok(args);
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// The value of a `Name:.....value` line.
fn field<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find_map(|l| {
            l.strip_prefix(name)
                .and_then(|r| r.strip_prefix(':'))
                .map(|r| r.trim_start_matches('.'))
        })
        .unwrap_or_else(|| panic!("no {name} line in:\n{out}"))
}

fn topology(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/topologies")
        .join(name)
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mad-tools-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

// mad-sim's default topology as SM-lite numbers it: host-1 (LID 1,
// SM-lite and the SA), leaf-1 (2), host-2 (3, the command's port),
// host-3 (4), host-4 (5), spine-1 (6), spine-2 (7), leaf-2 (8),
// host-5 .. host-8 (9 .. 12).

#[test]
fn smpquery_reads_every_attribute_of_the_built_in_fabric() {
    let out = ok_starting(&["smpquery", "nodeinfo", "2"], "# Node info: Lid 2\n");
    assert_eq!(field(&out, "NodeType"), "Switch");
    assert_eq!(field(&out, "NumPorts"), "8");
    let out = ok(&["smpquery", "-D", "nodedesc", "0,1"]);
    assert_eq!(out, "Node Description:.leaf-1 madsim 8-port leaf switch\n");
    let out = ok_starting(
        &["smpquery", "portinfo", "3", "1"],
        "# Port info: Lid 3 port 1\n",
    );
    assert_eq!(field(&out, "LinkState"), "Active");
    assert_eq!(field(&out, "Lid"), "3");
    assert_eq!(field(&out, "SMLid"), "1");
    assert_eq!(field(&out, "Mkey"), "<not displayed>");
    let out = ok(&["smpquery", "switchinfo", "8"]);
    assert_eq!(field(&out, "LinearFdbTop"), "12");
    let out = ok(&["smpquery", "pkeys", "3", "1"]);
    assert!(out.contains("0xffff") && out.ends_with("pkeys capacity for this port\n"));
    let out = ok(&["smpquery", "sl2vl", "2", "1"]);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ports: in")).count(),
        9
    );
    let out = ok(&["smpquery", "vlarb", "3", "1"]);
    assert!(
        out.contains("# Low priority VL Arbitration Table:"),
        "{out}"
    );
    let out = ok(&["smpquery", "GI", "3"]);
    assert!(out.ends_with("guids capacity for this port\n"), "{out}");
    ok_starting(
        &["smpquery", "-x", "PI", "-D", "0"],
        "# Port info: DR path slid 65535; dlid 65535; 0 port 0",
    );
}

#[test]
fn perfquery_counts_the_commands_own_traffic() {
    let out = ok_starting(&["perfquery"], "# Port counters: Lid 3 port 1 (CapMask: 0x");
    let pkts: u64 = field(&out, "PortXmitPkts").parse().unwrap();
    assert!(pkts > 0, "SM-lite's and our MADs crossed this port: {out}");
    ok_starting(
        &["perfquery", "-x", "2", "1"],
        "# Port extended counters: Lid 2 port 1",
    );
    ok_starting(&["perfquery", "-a", "2"], "# Port counters: Lid 2 port 255");
    let out = ok(&["perfquery", "-l", "2", "1-3"]);
    assert_eq!(out.matches("# Port counters: Lid 2 port").count(), 3);
    let (out, _, code) = sim(&["perfquery", "-R", "2", "1"]);
    assert_eq!((out.as_str(), code), ("", 0));
    // Read, then reset: the counters printed are before the reset.
    let out = ok(&["perfquery", "-r", "3", "1"]);
    assert!(field(&out, "PortRcvPkts").parse::<u64>().unwrap() > 0);
}

#[test]
fn sminfo_ibaddr_and_ibstat_show_the_sm_and_the_local_port() {
    let out = ok_starting(
        &["sminfo"],
        "sminfo: sm lid 1 sm guid 0x100001, activity count ",
    );
    assert!(
        out.ends_with(" priority 0 state 3 SMINFO_MASTER\n"),
        "{out}"
    );
    assert_eq!(ok(&["ibaddr"]), "GID fe80::10:4 LID start 0x3 end 0x3\n");
    assert_eq!(ok(&["ibaddr", "-L", "8"]), "LID start 8 end 8\n");
    let out = ok_starting(&["ibstat"], "CA 'host-2'\n\tCA type: simulator\n");
    assert!(out.contains("\t\tBase lid: 3\n\t\tLMC: 0\n\t\tSM lid: 1\n"));
    let out = ok(&["ibstatus"]);
    assert!(out.contains("\tbase lid:\t 0x3\n\tsm lid:\t\t 0x1\n\tstate:\t\t 4: ACTIVE\n"));
}

#[test]
fn ibportstate_disables_and_enables_a_link_of_the_built_in_fabric() {
    let out = ok_starting(
        &["ibportstate", "8", "7"],
        "Switch PortInfo:\n# Port info: Lid 8 port 7\n",
    );
    assert_eq!(field(&out, "LinkState"), "Active");
    // The peer of an active switch port (spine-1 port 2), as hardware
    // shows it.
    let peer = out.split("Peer PortInfo:\n").nth(1).unwrap();
    assert!(peer.starts_with("# Port info: Lid 8 DR path slid 3; dlid 65535; 0,7 port 2\n"));
    assert_eq!(field(peer, "LinkState"), "Active");
    // host-8's link (leaf-2 port 4); our answers come back another way.
    let out = ok(&["ibportstate", "8", "4", "disable"]);
    assert!(out.contains("Disable may be irreversible\n\nAfter PortInfo set:\n"));
    let after = out.split("After PortInfo set:").nth(1).unwrap();
    assert_eq!(field(after, "PhysLinkState"), "Disabled");
    let out = ok(&["ibportstate", "-D", "0,1", "4", "reset"]);
    // Polling retrains the cable at once: the link is up again, and
    // back in Initialize until an SM arms it.
    let after = out.split("After PortInfo set:").nth(1).unwrap();
    assert_eq!(field(after, "PhysLinkState"), "LinkUp");
    assert_eq!(field(after, "LinkState"), "Initialize");
    // An unlinked port of a CA; `on` only acts on a disabled port.
    let out = ok(&["ibportstate", "3", "2", "on"]);
    assert!(out.ends_with("Port is already in enable state\n"), "{out}");
    let (out, _, code) = sim(&["ibportstate", "3", "1", "lid", "0xc000"]);
    assert_eq!(code, 255);
    assert_eq!(
        out,
        "ibportstate: iberror: failed: invalid lid value 0xc000\n"
    );
}

#[test]
fn ibroute_and_ibtracert_follow_sm_lite_s_tables() {
    let out = ok(&["ibroute", "2"]);
    assert!(out.starts_with(
        "Unicast lids [0x0-0xc] of switch Lid 2 guid 0x0000000000200000 (leaf-1 madsim 8-port leaf switch):\n"
    ));
    assert!(out
        .contains("0x0003 002 : (Channel Adapter portguid 0x0000000000100004: 'host-2 HCA-1')\n"));
    assert!(out.ends_with("12 valid lids dumped \n"), "{out}");
    let out = ok(&["ibroute", "-M", "8"]);
    assert!(out.ends_with("0 valid mlids dumped \n"), "{out}");
    let out = ok(&["ibtracert", "3", "12"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert_eq!(
        lines[0],
        "From ca {0x0000000000100003} portnum 1 lid 3-3 \"host-2 HCA-1\""
    );
    assert!(lines[1].starts_with("[1] -> switch port {0x0000000000200000}[2] lid 2-2 "));
    assert!(lines[3].starts_with("[2] -> switch port {0x0000000000200001}[8] lid 8-8 "));
    assert_eq!(
        lines[5],
        "To ca {0x0000000000100015} portnum 1 lid 12-12 \"host-8 HCA-1\""
    );
}

#[test]
fn a_topology_file_and_a_node_choose_the_fabric_and_the_port() {
    let net = topology("net.2sw2path4hca");
    let arg = format!("--sim={}", net.display());
    let o = run(&[&arg, "--sim-node", "Hca3", "ibaddr"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.starts_with("GID fe80::") && out.contains("LID start"),
        "{out}"
    );
    let o = run(&[
        &arg,
        "--sim-node",
        "Switch2",
        "smpquery",
        "-D",
        "nodeinfo",
        "0",
    ]);
    let out = text(&o.stdout);
    assert_eq!(field(&out, "NodeType"), "Switch");
    // The IBEXIT line on stdout says what was wrong.
    let o = run(&["--sim=/nonexistent/net", "sminfo"]);
    assert_eq!(o.status.code(), Some(255));
    assert!(text(&o.stdout).contains("/nonexistent/net"));
    let o = run(&[&arg, "--sim-node", "NoSuchNode", "sminfo"]);
    assert_eq!(o.status.code(), Some(255));
    assert!(text(&o.stdout).contains("no node named \"NoSuchNode\""));
}

#[test]
fn json_output_parses_and_agrees_with_the_text() {
    let text_out = ok(&["smpquery", "nodeinfo", "8"]);
    let j = json(&["smpquery", "--json", "nodeinfo", "8"]);
    assert_eq!(j["command"], "smpquery");
    assert_eq!(j["dest"]["lid"], 8);
    // GUIDs are "0x" + 16 hex digits, as the text prints them.
    assert_eq!(j["node_info"]["node_guid"], field(&text_out, "Guid"));
    assert_eq!(
        j["node_info"]["num_ports"].as_u64().unwrap().to_string(),
        field(&text_out, "NumPorts")
    );
    let j = json(&["--json", "smpquery", "portinfo", "3", "1"]);
    assert_eq!(j["port_info"]["lid"], 3);
    assert!(
        j["port_info"].get("m_key").is_none(),
        "M_Key hidden without -K"
    );
    let j = json(&["perfquery", "--json", "2", "1"]);
    assert_eq!(j["ports"][0]["port"], 1);
    assert!(
        j["ports"][0]["counters"]["port_xmit_pkts"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(j["cap_mask"].as_u64().is_some());
    let j = json(&["sminfo", "--json"]);
    assert_eq!(j["sm_lid"], 1);
    assert_eq!(j["state_name"], "SMINFO_MASTER");
    assert_eq!(j["sm_info"]["guid"], "0x0000000000100001");
    let j = json(&["ibaddr", "--json"]);
    assert_eq!(j["gid"], "fe80::10:4");
    assert_eq!(
        (j["lid_start"].as_u64(), j["lid_end"].as_u64()),
        (Some(3), Some(3))
    );
    let routes = ok(&["ibroute", "2"]);
    let j = json(&["ibroute", "--json", "2"]);
    let rows = j["unicast"].as_array().unwrap();
    assert!(routes.ends_with(&format!("{} valid lids dumped \n", rows.len())));
    assert_eq!(
        j["switch"]["node_description"],
        "leaf-1 madsim 8-port leaf switch"
    );
    let j = json(&["ibtracert", "--json", "3", "12"]);
    assert_eq!(j["routes"][0]["hops"].as_array().unwrap().len(), 4);
    assert_eq!(j["routes"][0]["to"]["lid"], 12);
    let j = json(&["ibportstate", "--json", "3", "1"]);
    assert_eq!(j["is_switch"], false);
    assert_eq!(j["port_info"]["port_state"], 4);
    let j = json(&["ibstat", "--json"]);
    assert_eq!(j["cas"][0]["ports"][0]["base_lid"], 3);
    let j = json(&["smpquery", "--json", "pkeys", "3"]);
    assert_eq!(j["pkeys"][0], "0xffff");
    // A failure in JSON mode: an "error" member and exit status 255.
    let (out, _, code) = sim(&["smpquery", "--json", "switchinfo", "3"]);
    assert_eq!(code, 255);
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        j["error"]["message"],
        "operation switchinfo: switch info query failed"
    );
    assert_eq!(j["error"]["status"], 255);
    assert_eq!(j["complete"], false);
}

#[test]
fn bad_input_gives_the_diags_errors_and_never_a_panic() {
    // An unknown option: getopt's complaint and the usage on stderr, 2.
    let (out, err, code) = sim(&["smpquery", "-q", "nodeinfo", "1"]);
    assert_eq!((out.as_str(), code), ("", 2));
    assert!(err.starts_with("smpquery: invalid option -- 'q'\n\nUsage: smpquery [options] <op>"));
    let (_, err, code) = sim(&["perfquery", "--bogus"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("perfquery: unrecognized option '--bogus'\n"),
        "{err}"
    );
    let (_, err, code) = sim(&["ibroute", "-t"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("ibroute: option requires an argument -- 't'\n"),
        "{err}"
    );
    // Too few arguments: the usage alone.
    let (_, err, code) = sim(&["smpquery", "nodeinfo"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("\nUsage: smpquery"), "{err}");
    // Bad LIDs, paths and ops: IBEXIT on stdout, 255.
    let cases: &[(&[&str], &str)] = &[
        (
            &["smpquery", "nodeinfo", "abc"],
            "can't resolve destination port abc",
        ),
        (
            &["smpquery", "nodeinfo", "0xc000"],
            "can't resolve destination port 0xc000",
        ),
        (
            &["smpquery", "-D", "nodeinfo", ""],
            "can't resolve destination port ",
        ),
        (&["smpquery", "frob", "1"], "operation 'frob' not supported"),
        (
            &["smpquery", "-t", "0", "nodeinfo", "1"],
            "Invalid timeout \"0\".  Timeout requires a positive integer value < 2147483647.",
        ),
        (
            &["perfquery", "1", "5-2"],
            "max port must be greater than min port in range",
        ),
        (
            &["ibportstate", "1", "1", "frob"],
            "invalid operation: frob",
        ),
        (&["ibroute", "3"], "dump tables: not a switch"),
        (&["sminfo", "-D", "0,0,9"], "query"),
    ];
    for (args, msg) in cases {
        let (out, err, code) = sim(args);
        assert_eq!(code, 255, "{args:?}: {out}{err}");
        assert_eq!(
            out,
            format!("{}: iberror: failed: {msg}\n", args[0]),
            "{args:?}"
        );
    }
    let long: String = vec!["1"; 70].join(",");
    let (out, _, code) = sim(&["smpquery", "-D", "nodeinfo", &long]);
    assert_eq!(code, 255);
    assert!(out.contains("can't resolve destination port"));
    // An unknown LID times out (short timeout here) with libibmad's
    // warning on stderr.
    let (out, err, code) = sim(&["smpquery", "-t", "50", "nodeinfo", "99"]);
    assert_eq!(code, 255);
    assert_eq!(
        out,
        "smpquery: iberror: failed: operation nodeinfo: node info query failed\n"
    );
    assert!(
        err.contains("mad_rpc: _do_madrpc failed; dport (Lid 99)"),
        "{err}"
    );
    // Odd arguments to every command: no panic, a defined status.
    let odd: &[&[&str]] = &[
        &["smpquery", "portinfo", "1", "-99999999999999"],
        &["smpquery", "vlarb", "-D", "0,300", "0x7fffffff"],
        &["perfquery", "-a", "1", ",,,"],
        &["perfquery", "-x", "0xffffffffffffffffff", "1"],
        &["ibroute", "1", "0xffffffff", "0x1"],
        &["ibroute", "-M", "1", "1", "0xffffffff"],
        &["ibtracert", "1", "1"],
        &["ibportstate", "-D", "0", "99", "width", "255"],
        &["ibstat", "nope"],
        &["ibstat", "host-1", "-5"],
        &["ibaddr", "-D", "0,1,2,3,4,5,6,7"],
    ];
    for args in odd {
        let (_, _, code) = sim(args);
        assert!([0, 1, 2, 255].contains(&code), "{args:?}: status {code}");
    }
}

#[test]
fn tool_named_symlinks_run_their_command_with_the_transport_options_anywhere() {
    let dir = temp_dir("symlinks");
    for name in ["smpquery", "sminfo", "perfquery"] {
        std::os::unix::fs::symlink(MAD, dir.join(name)).unwrap();
    }
    let via_mad = ok(&["smpquery", "nodeinfo", "4"]);
    let o = Command::new(dir.join("smpquery"))
        .args(["nodeinfo", "--sim", "4"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), via_mad);
    // Errors name the program as invoked (argv[0]), as the C tools do.
    let o = Command::new(dir.join("sminfo"))
        .args(["--sim", "-D", "0,0,9"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(255));
    assert_eq!(
        text(&o.stdout),
        format!("{}: iberror: failed: query\n", dir.join("sminfo").display())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pcap_records_every_mad_the_command_sends_and_receives() {
    let dir = temp_dir("pcap");
    let file = dir.join("q.pcap");
    let f = file.to_str().unwrap();
    ok_starting(
        &["--pcap", f, "smpquery", "nodeinfo", "4"],
        "# Node info: Lid 4",
    );
    let bytes = std::fs::read(&file).unwrap();
    let mut r = PcapReader::new(&bytes[..]).unwrap();
    let mut recs = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        recs.push(rec);
    }
    assert_eq!(recs.len(), 2, "one NodeInfo Get and its answer");
    assert_eq!(recs[0].meta.direction, Direction::Sent);
    let (get, resp) = (header::of(&recs[0].mad), header::of(&recs[1].mad));
    let lid_routed = MgmtClass::SUBN_LID_ROUTED;
    assert_eq!(
        (get.mgmt_class, get.method, get.response),
        (lid_routed, Method::GET, false)
    );
    assert_eq!(recs[1].meta.direction, Direction::Received);
    assert_eq!((resp.method, resp.response), (Method::GET, true));
    assert_eq!(get.tid, resp.tid, "same TID");
    assert_eq!((recs[0].meta.slid, recs[0].meta.dlid), (3, 4));
    // perfquery: ClassPortInfo and PortCounters, both ways.
    ok_starting(&["perfquery", "--pcap", f, "1", "1"], "# Port counters");
    let bytes = std::fs::read(&file).unwrap();
    let mut r = PcapReader::new(&bytes[..]).unwrap();
    let mut n = 0;
    while let Some(rec) = r.next_record().unwrap() {
        assert_eq!(
            header::of(&rec.mad).mgmt_class,
            MgmtClass::PERF_MGT,
            "PerfMgt only"
        );
        n += 1;
    }
    assert_eq!(n, 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_device_or_a_transport_flag_the_message_names_the_flags() {
    let devices = mad_core::transport::umad::is_available()
        && mad_core::transport::umad::list_cas().is_ok_and(|c| !c.is_empty());
    let o = run(&["sminfo"]);
    // The IBEXIT line (stdout) is the whole message.
    let err = text(&o.stdout);
    if devices {
        // A real device exists here: the command uses it (no message).
        assert!(!err.contains("--sim[=TOPOLOGY]"), "{err}");
    } else {
        assert_eq!(o.status.code(), Some(255));
        assert!(
            err.contains("--sim[=TOPOLOGY]") && err.contains("--ibsim"),
            "{err}"
        );
        assert!(
            err.starts_with("sminfo: iberror: failed: Failed to open a port: no InfiniBand device"),
            "{err}"
        );
        assert!(!err.contains("(null)"), "no CA was named: {err}");
    }
}

#[test]
fn saquery_returns_whole_tables_from_the_built_in_sa() {
    // Every node: 12 NodeRecords, far more than one MAD holds (RMPP).
    let out = ok(&["saquery"]);
    assert_eq!(out.matches("NodeRecord dump:").count(), 12, "{out}");
    let out = ok_starting(&["saquery", "-D"], "   LID \"name\"\n================\n");
    assert_eq!(out.lines().count(), 2 + 8, "{out}");
    // Links: every cable, both ways (8 host cables, 4 leaf-spine ones).
    let out = ok(&["saquery", "LR"]);
    assert_eq!(
        out.matches("LinkRecord dump:").count(),
        2 * (8 + 4),
        "{out}"
    );
    let out = ok(&["saquery", "PR"]);
    assert!(
        out.matches("PathRecord dump:").count() >= 12 * 12,
        "all-pairs paths"
    );
    let out = ok(&["saquery", "--src-to-dst", "3:12"]);
    assert_eq!(out.matches("PathRecord dump:").count(), 1, "{out}");
    assert!(out.contains("\t\tdlid....................12\n\t\tslid....................3\n"));
    assert_eq!(ok(&["saquery", "-L", "host-5 HCA-1"]), "9\n");
    assert_eq!(ok(&["saquery", "-O", "9"]), "host-5 HCA-1\n");
    assert_eq!(
        ok(&["saquery", "-G", "host-2 HCA-1"]),
        "0x0000000000100004\n"
    );
    let out = ok(&["saquery", "PIR", "3/1"]);
    assert!(out.contains("\t\tEndPortLid..............3\n\t\tPortNum.................1\n"));
    let out = ok(&["saquery", "SWIR"]);
    assert_eq!(out.matches("SwitchInfoRecord dump:").count(), 4);
    ok_starting(&["saquery", "-c"], "SA ClassPortInfo:\n");
    let out = ok(&["saquery", "SMIR"]);
    assert!(out.contains("SMInfoRecord dump:"), "{out}");
    // JSON: the records and their fields.
    let j = json(&["saquery", "--json", "NR"]);
    assert_eq!(j["attribute"], "NodeRecord");
    assert_eq!(j["records"].as_array().unwrap().len(), 12);
    assert_eq!(j["records"][0]["lid"], 1);
    assert_eq!(j["truncated"], false);
    // An unknown name: saquery's message and status.
    let (_, err, code) = sim(&["saquery", "--src-to-dst", "nosuchnode:3"]);
    assert_eq!(code, 64);
    assert_eq!(
        err,
        "Failed to find lid for \"nosuchnode\": Machine is not on the network\n"
    );
    let (_, err, code) = sim(&["saquery", "NR", "70000"]);
    assert_eq!(code, 22);
    assert_eq!(err, "Invalid lid specified: \"70000\"\n");
}
