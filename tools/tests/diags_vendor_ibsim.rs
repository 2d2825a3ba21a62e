//! The OpenIB vendor-class tools (`ibping`) against infiniband-diags 44's
//! on the same ibsim + OpenSM fabric, and end to end on the built-in
//! fabric, whose CAs run the ping server.
//!
//! ibsim delivers a QP1 request only to a client attached as the port's
//! SM (`SIM_SET_ISSM`), and infiniband-diags' `ibping -S` attached so
//! crashes under libumad2sim once OpenSM talks to it (tools/README.md):
//! our server is therefore answered by both clients, and both clients are
//! compared where nobody serves.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

mod diags_compare;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use diags_compare::{fixture, needs, real_on_served, summarize, theirs, Run, FABRICS};
use support::opensm::OpenSm;
use support::IbSim;

/// `run` with the times of ibping's lines (`time 0.123 ms`, `time 3 ms`,
/// `rtt min/avg/max = ...`) masked: they are measured, not computed.
fn masked(mut run: Run) -> Run {
    let mut out = String::new();
    for line in run.stdout.lines() {
        let l = if let Some((head, _)) = line.split_once("rtt min/avg/max = ") {
            format!("{head}rtt min/avg/max = T")
        } else if let Some((head, _)) = line.rsplit_once(" time ") {
            format!("{head} time T")
        } else {
            line.to_owned()
        };
        out.push_str(&l);
        out.push('\n');
    }
    run.stdout = out;
    run
}

/// Our `mad --ibsim ibping ARGS` attached at `node` (None: ibsim's
/// default).
fn ours_at(sim: &IbSim, node: Option<&str>, args: &[&str]) -> Run {
    ours_tool_at(sim, "ibping", node, args)
}

/// Our `mad --ibsim TOOL ARGS` attached at `node`.
fn ours_tool_at(sim: &IbSim, tool: &str, node: Option<&str>, args: &[&str]) -> Run {
    let o = ours_command(sim, tool, node).args(args).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("panicked"),
        "{args:?} panicked"
    );
    summarize(&o)
}

/// Our `mad --ibsim TOOL`, to be given its arguments, attached at `node`.
fn ours_command(sim: &IbSim, tool: &str, node: Option<&str>) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mad"));
    c.current_dir(std::env::temp_dir())
        .args(["--ibsim", tool])
        .env("IBSIM_SOCKNAME", sim.sockname())
        .env_remove("SIM_SET_ISSM")
        .env_remove("IBSIM_SERVER_NAME")
        .env_remove("IBSIM_SERVER_PORT")
        .stdin(Stdio::null());
    match node {
        Some(n) => c.env("SIM_HOST", n),
        None => c.env_remove("SIM_HOST"),
    };
    c
}

/// infiniband-diags' `ibping ARGS` attached at `node`.
fn theirs_at(sim: &IbSim, node: &str, args: &[&str]) -> Run {
    theirs_tool_at(sim, "ibping", node, args)
}

/// infiniband-diags' `TOOL ARGS` attached at `node`.
fn theirs_tool_at(sim: &IbSim, tool: &str, node: &str, args: &[&str]) -> Run {
    summarize(&support::output_attached(tool, || {
        let mut c = theirs_command(sim, tool, node);
        c.args(args);
        c
    }))
}

/// infiniband-diags' `TOOL`, to be given its arguments, attached at
/// `node`.
fn theirs_command(sim: &IbSim, tool: &str, node: &str) -> Command {
    // By its bare name, as ours runs (its IBEXIT line starts with it).
    let dir = support::opensm::sbin(tool).parent().unwrap().to_path_buf();
    let mut c = sim.umad2sim_command(tool);
    c.env(
        "PATH",
        format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", dir.display()),
    )
    .env("SIM_HOST", node)
    .stdin(Stdio::null());
    c
}

/// This machine's `hostname.domainname`, as ibping's server answers.
fn host_and_domain() -> String {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .unwrap()
            .trim_end()
            .to_owned()
    };
    let (h, d) = (read("hostname"), read("domainname"));
    if d.is_empty() {
        h
    } else {
        format!("{h}.{d}")
    }
}

/// The base LID of `node`'s port (the real ibaddr's `-L` there).
fn lid_of(sim: &IbSim, node: &str) -> String {
    let ibaddr = support::opensm::sbin("ibaddr");
    let o = support::output_attached("ibaddr", || {
        let mut c = sim.umad2sim_command(ibaddr.to_str().unwrap());
        c.env("SIM_HOST", node).arg("-L");
        c
    });
    let t = String::from_utf8_lossy(&o.stdout);
    t.split_whitespace().last().unwrap().to_owned()
}

/// The LID of a CA of fixture fabric `name` (one without a client).
fn ca_lid(sim: &IbSim, name: &str) -> String {
    lid_of(sim, if name == "net.odd-names" { "x" } else { "Hca1" })
}

/// Where nobody serves the class, both clients lose every ping and say
/// so alike; usage, option and destination errors are the C tool's.
#[test]
fn ibping_matches_infiniband_diags_on_ibsim() {
    diags_compare::on_each_routed(&["ibping", "ibaddr"], FABRICS, |name, sim, fails| {
        let ca = ca_lid(sim, name);
        let ca = ca.as_str();
        for args in [
            &["-t", "200", "-f", "-c", "3", ca][..],
            &["-c", "1", ca],
            &["-f", "-c", "0", ca],
            &["-f", "-c", "2", "-o", "0x2c9", ca],
            &["-G", "-f", "-c", "1", "0xdeadbeef"],
            &[],
            &["-h"],
            &["-c"],
            &["-D", "1"],
            &["-y", "1", "1"],
            &["--bogus", "1"],
        ] {
            let t = masked(theirs(sim, "ibping", args));
            let o = masked(diags_compare::ours(sim, "ibping", args));
            if t != o {
                fails.push(format!(
                    "{name}: ibping {args:?}\n--- infiniband-diags ({:?}, {:?}):\n{}--- ours ({:?}, {:?}):\n{}",
                    t.code, t.stderr_first, t.stdout, o.code, o.stderr_first, o.stdout
                ));
            }
        }
        // LID 1 is OpenSM's port: ibsim hands it the pings, which nobody
        // answers; libumad2sim's receive then times out itself and says
        // so first (tools/README.md), or libibmad's own warning when its
        // retries ran out first: stdout and status alike.
        for args in [&["-f", "-c", "2", "1"][..], &["-t", "100", "-c", "1", "1"]] {
            let t = masked(theirs(sim, "ibping", args));
            let o = masked(diags_compare::ours(sim, "ibping", args));
            let timed_out = "ibwarn: [PID] _do_madrpc: recv failed: Connection timed out";
            if (&t.stdout, t.code) != (&o.stdout, o.code)
                || ![timed_out, o.stderr_first.as_str()].contains(&t.stderr_first.as_str())
            {
                fails.push(format!("{name}: ibping {args:?}: {t:?} / {o:?}"));
            }
        }
    });
}

/// A server killed (by its PID) when the test ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Our `mad --ibsim TOOL -S` on Hca1, attached as its port's SM client
/// (ibsim hands QP1 requests to no other).
fn our_server(sim: &IbSim, tool: &str) -> Server {
    Server(
        Command::new(env!("CARGO_BIN_EXE_mad"))
            .current_dir(std::env::temp_dir())
            .args(["--ibsim", tool, "-S"])
            .env("IBSIM_SOCKNAME", sim.sockname())
            .env("SIM_HOST", "Hca1")
            .env("SIM_SET_ISSM", "1")
            .env_remove("IBSIM_SERVER_NAME")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// ibsim + OpenSM with our `ibping -S` on Hca1 (dropped in that
/// order: server, OpenSM, ibsim).
struct PingFabric {
    _server: Server,
    _sm: OpenSm,
    sim: IbSim,
    /// Hca1's LID.
    lid: String,
}

/// [`PingFabric`], when infiniband-diags' ibping is there (else "NOT RUN",
/// or a failure with `CI=true`).
fn ibping_served() -> Option<PingFabric> {
    if !needs(&["ibping", "ibaddr"]) {
        return None;
    }
    let sim = IbSim::start(fixture("net.2sw2path4hca2port"));
    let sm = OpenSm::start(&sim, "", Duration::from_secs(120));
    let lid = lid_of(&sim, "Hca1");
    let server = our_server(&sim, "ibping");
    Some(PingFabric {
        _server: server,
        _sm: sm,
        sim,
        lid,
    })
}

/// Our `mad --ibsim ibping -S` on Hca1 answers infiniband-diags' client
/// on Hca2 with this host's name, and ours alike (times masked).
#[test]
fn our_ibping_server_answers_infiniband_diags_client_over_ibsim() {
    let Some(fabric) = ibping_served() else {
        return;
    };
    let (sim, lid) = (&fabric.sim, fabric.lid.clone());

    // Ready once it answers (attaching takes a moment).
    let args = ["-f", "-c", "3", lid.as_str()];
    let mut t = theirs_at(sim, "Hca2", &args);
    for _ in 0..50 {
        if t.stdout.contains(" 3 received") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        t = theirs_at(sim, "Hca2", &args);
    }
    let host = host_and_domain();
    assert!(
        t.stdout
            .starts_with(&format!("\n--- {host} (Lid {lid}) ibping statistics ---\n3 packets transmitted, 3 received, 0% packet loss")),
        "{t:?}"
    );
    let o = ours_at(sim, Some("Hca2"), &args);
    assert_eq!(masked(o), masked(t));
    // Not flooding: a line per pong.
    let args = ["-c", "2", lid.as_str()];
    let t = masked(theirs_at(sim, "Hca2", &args));
    let o = masked(ours_at(sim, Some("Hca2"), &args));
    assert_eq!(o, t);
    assert!(
        o.stdout.starts_with(&format!(
            "Pong from {host} (Lid {lid}): time T\nPong from {host} (Lid {lid}): time T\n"
        )),
        "{o:?}"
    );
    // Another OUI is nobody's: lost.
    let args = ["-f", "-c", "1", "-o", "0x2c9", lid.as_str()];
    let t = masked(theirs_at(sim, "Hca2", &args));
    assert_eq!(masked(ours_at(sim, Some("Hca2"), &args)), t);
    assert!(t
        .stdout
        .contains("1 packets transmitted, 0 received, 100% packet loss"));
}

/// `command` (a client run without `-c`) sent `signal` (`INT`, `TERM`)
/// after 2 s: what it printed and returned, every number masked and a
/// run of equal lines kept once (how many pongs came in 2 s varies). One
/// still running 10 s after the signal is killed and its status given
/// as -1.
fn interrupted(mut command: Command, signal: &str) -> Run {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let sent = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} {}", child.id());
    let mut ended = false;
    for _ in 0..100 {
        if child.try_wait().unwrap().is_some() {
            ended = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if !ended {
        let _ = child.kill();
    }
    let mut run = summarize(&child.wait_with_output().unwrap());
    if !ended {
        run.code = Some(-1);
    }
    let digits = regex::Regex::new("[0-9]+").unwrap();
    let mut lines: Vec<String> = Vec::new();
    for line in run.stdout.lines() {
        let l = digits.replace_all(line, "N").into_owned();
        if lines.last() != Some(&l) {
            lines.push(l);
        }
    }
    run.stdout = lines.join("\n");
    run
}

/// Without `-c` both clients ping until SIGINT or SIGTERM, then print
/// ping's statistics and exit 0, alike (numbers masked); flooding, ours
/// prints the same statistics.
#[test]
fn ibping_without_count_reports_on_sigint_and_sigterm_as_infiniband_diags() {
    let Some(fabric) = ibping_served() else {
        return;
    };
    let (sim, lid) = (&fabric.sim, fabric.lid.clone());
    // Ready once it answers (attaching takes a moment).
    for _ in 0..50 {
        if theirs_at(sim, "Hca2", &["-f", "-c", "1", &lid])
            .stdout
            .contains(" 1 received")
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The statistics line as `interrupted` masks it.
    let stats = format!("--- {} (Lid N) ibping statistics ---", host_and_domain());
    let stats = regex::Regex::new("[0-9]+")
        .unwrap()
        .replace_all(&stats, "N")
        .into_owned();
    let mut fails = Vec::new();
    let mut flood_like = None;
    for (signal, args) in [("INT", &[lid.as_str()][..]), ("TERM", &[lid.as_str()])] {
        // ibping's handler calls printf and exit: a signal landing while
        // libumad2sim holds a lock now and then deadlocks it; such a run
        // is made again.
        let mut t = Run {
            stdout: String::new(),
            stderr_first: String::new(),
            code: Some(-1),
        };
        for _ in 0..3 {
            let mut c = theirs_command(sim, "ibping", "Hca2");
            c.args(args);
            t = interrupted(c, signal);
            if t.code != Some(-1) {
                break;
            }
        }
        let mut o = ours_command(sim, "ibping", Some("Hca2"));
        o.args(args);
        let o = interrupted(o, signal);
        if t != o || t.code != Some(0) || !o.stdout.contains(&stats) {
            fails.push(diags_compare::differ(
                &format!("SIG{signal} to ibping {args:?}"),
                "infiniband-diags",
                &t,
                "ours",
                &o,
            ));
        }
        // Flooding, the same without the pong lines.
        let mut quiet = t;
        quiet.stdout = quiet
            .stdout
            .lines()
            .filter(|l| !l.starts_with("Pong from "))
            .collect::<Vec<_>>()
            .join("\n");
        flood_like = Some(quiet);
    }
    // Flooding, the real client deadlocks in its handler nearly every
    // time (the signal lands while libumad2sim holds its lock): ours is
    // held to what the real one prints without flooding, less the pongs.
    let mut o = ours_command(sim, "ibping", Some("Hca2"));
    o.args(["-f", lid.as_str()]);
    let o = interrupted(o, "INT");
    let t = flood_like.unwrap();
    if t != o {
        fails.push(diags_compare::differ(
            "SIGINT to ibping -f",
            "infiniband-diags without -f, less its pongs",
            &t,
            "ours",
            &o,
        ));
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// On the built-in fabric every CA answers as a running server (its host
/// the node description's first word); a switch does not; infiniband-diags'
/// ibping on the served fabric gets the same answers.
#[test]
fn ibping_works_on_the_built_in_fabric() {
    let ibping = |args: &[&str]| diags_compare::on_sim("ibping", args);
    let (code, out) = ibping(&["-f", "-c", "2", "3"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("\n--- host-2 (Lid 3) ibping statistics ---\n2 packets transmitted, 2 received, 0% packet loss"), "{out}");
    let (code, out) = ibping(&["-c", "1", "1"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("Pong from host-1 (Lid 1): time "), "{out}");
    let (code, out) = ibping(&["-f", "-c", "2", "2"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("2 packets transmitted, 0 received, 100% packet loss"),
        "{out}"
    );
    let (code, out) = ibping(&["--json", "-f", "-c", "2", "3"]);
    assert_eq!(code, Some(0), "{out}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["host"], "host-2");
    assert_eq!(j["received"], 2);
    assert_eq!(j["pongs"][1]["host"], "host-2");
    if !needs(&["ibping"]) {
        return;
    }
    let served =
        support::served::Served::start(std::path::Path::new(env!("CARGO_BIN_EXE_mad")), "ping");
    let (code, out) = real_on_served(&served, "ibping", &["-f", "-c", "2", "3"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("\n--- host-2 (Lid 3) ibping statistics ---\n2 packets transmitted, 2 received, 0% packet loss"), "{out}");
    let (code, out) = real_on_served(&served, "ibping", &["-f", "-c", "1", "2"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("1 packets transmitted, 0 received, 100% packet loss"),
        "{out}"
    );
}

/// ibsysstat where nobody serves (a lost request: the same IBEXIT), its
/// usage and option errors, and against our `ibsysstat -S` on Hca1:
/// ping, host and cpu answered to infiniband-diags' client and ours
/// alike, the host this machine's and the CPUs /proc/cpuinfo's.
#[test]
fn ibsysstat_matches_infiniband_diags_on_ibsim() {
    if !needs(&["ibsysstat", "ibaddr"]) {
        return;
    }
    let mut fails = Vec::new();
    let sim = IbSim::start(fixture("net.2sw2path4hca2port"));
    let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
    let lid = lid_of(&sim, "Hca1");
    let lid = lid.as_str();
    let mut check = |args: &[&str]| {
        let t = theirs_tool_at(&sim, "ibsysstat", "Hca2", args);
        let o = ours_tool_at(&sim, "ibsysstat", Some("Hca2"), args);
        if t != o {
            fails.push(format!(
                "ibsysstat {args:?}\n--- infiniband-diags: {t:?}\n--- ours: {o:?}"
            ));
        }
        t
    };
    for args in [
        &[lid][..],
        &[lid, "host"],
        &["-t", "200", lid, "cpu"],
        &[lid, "bogus"],
        &[lid, "Host"],
        &[],
        &["-h"],
        &["-o"],
        &["-D", "1"],
        &["-G", "0xdeadbeef"],
    ] {
        check(args);
    }
    let _server = our_server(&sim, "ibsysstat");
    // Ready once it answers (attaching takes a moment).
    for _ in 0..50 {
        if theirs_tool_at(&sim, "ibsysstat", "Hca2", &[lid]).code == Some(0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let t = check(&[lid]);
    assert_eq!(t.stdout, "sysstat ping succeeded\n");
    let t = check(&[lid, "host"]);
    assert_eq!(t.stdout, format!("{}\n", host_and_domain()));
    let t = check(&[lid, "cpu"]);
    let n = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("processor\t"))
        .count();
    assert_eq!(
        t.stdout.lines().filter(|l| l.starts_with("cpu ")).count(),
        n,
        "{t:?}"
    );
    check(&[lid, "ping"]);
    check(&["-o", "0x2c9", "-t", "200", lid]);
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// On the built-in fabric every CA runs the sysstat server (host: its
/// node description's first word; no CPU lines), and infiniband-diags'
/// ibsysstat on the served fabric gets the same answers.
#[test]
fn ibsysstat_works_on_the_built_in_fabric() {
    let ours = |args: &[&str]| diags_compare::on_sim("ibsysstat", args);
    assert_eq!(ours(&["3"]), (Some(0), "sysstat ping succeeded\n".into()));
    assert_eq!(ours(&["3", "host"]), (Some(0), "host-2\n".into()));
    assert_eq!(ours(&["1", "cpu"]), (Some(0), "\n".into()));
    let (code, out) = ours(&["--json", "3", "host"]);
    assert_eq!(code, Some(0));
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (j["op"].as_str(), j["text"].as_str()),
        (Some("host"), Some("host-2"))
    );
    if !needs(&["ibsysstat"]) {
        return;
    }
    let served =
        support::served::Served::start(std::path::Path::new(env!("CARGO_BIN_EXE_mad")), "sysstat");
    for args in [&["3"][..], &["3", "host"], &["1", "cpu"], &["1", "ping"]] {
        let t = real_on_served(&served, "ibsysstat", args);
        assert_eq!(t, ours(args), "{args:?}");
    }
}

/// vendstat: ibsim has no Mellanox vendor-class agent, so every query is
/// lost; the failures, the usage and the option errors are compared.
#[test]
fn vendstat_matches_infiniband_diags_on_ibsim() {
    diags_compare::on_each_routed(&["vendstat", "ibaddr"], FABRICS, |name, sim, fails| {
        let ca = ca_lid(sim, name);
        let ca = ca.as_str();
        for args in [
            &["-t", "200", "-N", ca][..],
            &["-t", "200", "-w", ca],
            &["-t", "200", "-N", "-w", ca],
            &["-t", "200", "-i", ca, "3"],
            &["-t", "200", "-c", "0,1", ca, "3"],
            &["-t", "200", "-R", "0x10013c", ca],
            &["-t", "200", "-R", "10,ff", "-W", "20,1", ca],
            &[ca],
            &["-c", "1", ca],
            &["-R", "zz", ca],
            &["-W", "10", ca],
            &["-G", "0xdeadbeef"],
            &["-h"],
            &["-D", "1"],
        ] {
            diags_compare::compare(sim, name, "vendstat", args, fails);
        }
    });
}

/// On the built-in fabric every node answers vendstat's ClassPortInfo
/// and GeneralInfo (`-N`); `-w` is refused as on any non-IS3 device, and
/// infiniband-diags' vendstat on the served fabric prints what ours does.
#[test]
fn vendstat_works_on_the_built_in_fabric() {
    let ours = |args: &[&str]| diags_compare::on_sim("vendstat", args);
    let (code, out) = ours(&["-N", "2"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.starts_with("hw_dev_rev:  0x0000\nhw_dev_id:   0xcb20\n"),
        "{out}"
    );
    assert!(
        out.contains("fw_version:  01.00.00\n") && out.contains("fw_psid:     'MADSTACK_SIM'\n"),
        "{out}"
    );
    let (code, out) = ours(&["-N", "3"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("hw_dev_id:   0x1017\n"), "{out}");
    let (code, out) = ours(&["-w", "3"]);
    assert_eq!(code, Some(255));
    assert!(out.contains("Unsupported device ID 0x1017"), "{out}");
    if !needs(&["vendstat"]) {
        return;
    }
    let served =
        support::served::Served::start(std::path::Path::new(env!("CARGO_BIN_EXE_mad")), "vendstat");
    for args in [
        &["-N", "2"][..],
        &["-N", "3"],
        &["-w", "3"],
        &["-t", "200", "-i", "3", "1"],
    ] {
        assert_eq!(
            real_on_served(&served, "vendstat", args),
            ours(args),
            "{args:?}"
        );
    }
}
