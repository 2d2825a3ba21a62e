//! Our commands against infiniband-diags on the same ibsim fabric, byte
//! for byte: for every topology in tests/fixtures/topologies/ and the
//! fixture fabrics of tools/tests/fixtures/topologies/, ibsim and OpenSM
//! (under libumad2sim) bring the fabric up, and each case of the older
//! commands (`all_cases`) runs
//!
//! 1. the real tool under libumad2sim,
//! 2. our `mad` under the tool's name with `--ibsim` (madstack's own
//!    ibsim transport, no libumad2sim),
//! 3. our `mad` under the tool's name under libumad2sim (the umad
//!    transport, libibumad's path on hardware),
//!
//! and compares stdout and the exit status (and stderr for usage
//! errors). Values the fabric changes between runs (port counters, the
//! SM's activity count) are checked by bracketing: the real tool runs
//! before and after ours, and where its two outputs differ ours must lie
//! between them, line by line; everything else must be identical. The
//! newer commands (`newer::cases`) run in the same bring-up, the real
//! tool against ours with `--ibsim`, compared on stdout, the first line
//! of stderr and the exit status.
//!
//! A second run uses SM-lite (`mad_sm` over madstack's ibsim
//! transport) as the subnet manager instead of OpenSM.
//!
//! Where each of the 30 programs is compared with infiniband-diags, per
//! topology. Columns: the shared net, net.1, net.2sw2path,
//! net.2sw2path4hca, net.2sw2path4hca2port (the same file is a fixture
//! too), net.medium, net.large, net.large3, then the fixtures
//! net.odd-names, net.torus3x3, net.mixed-rates. `I`: here, with OpenSM
//! (every sampled LID on net, elsewhere the first and last switch and a
//! CA); `D`: discover_ibsim.rs (no SM and SM-lite; OpenSM on 2port and
//! medium); in diags_*_ibsim.rs with the command's full option set: `R`
//! rest, `C` cache, `T` routes, `M` mcast, `P` perf, `V` vendor, `K`
//! diags_cc_vendor.rs; `x`: not comparable (below); `-`: not run (the
//! script runs ibroute for every switch: minutes on the big trees).
//!
//! ```text
//!                         net n.1 2sw 4hca 2port med lrg lrg3 odd tor mix
//! smpquery sminfo ibaddr   I   I   I   I    I     I   I   I    I   I   I
//! ibportstate ibstat       I   I   I   I    I     I   I   I    I   I   I
//! ibroute ibtracert        I   I   I   I    IM    I   I   I    IM  I   I
//! saquery                  I   I   I   I    IM    I   I   I    IM  I   I
//! perfquery                I   I   I   I    IP    I   I   I    IP  I   I
//! ibstatus                 x   x   x   x    x     x   x   x    x   x   x
//! ibnetdiscover            ID  ID  ID  ID   IDC   ID  ID  ID   IC  IC  IC
//! ibhosts ibswitches       ID  ID  ID  ID   ID    ID  ID  ID   I   IC  IC
//! ibnodes ibrouters        I   I   I   I    IR    I   I   I    IR  IC  IC
//! iblinkinfo ibqueryerrors I   I   I   I    IR    I   I   I    IR  I   I
//! smpdump                  I   I   I   I    IR    I   I   I    IR  I   I
//! ibcacheedit              I   I   I   I    IC    I   I   I    I   I   I
//! ibidsverify              I   I   I   I    IC    I   I   I    IC  IC  IC
//! ibccquery ibccconfig     I   I   I   I    IK    I   I   I    IK  I   I
//! dump_fts/_lfts/_mfts     I   I   I   I    IM    I   I   I    IM  I   I
//! check_lft_balance        I   I   I   I    IT    I   I   I    IT  IT  IT
//! ibfindnodesusing         I   I   I   I    IT    -   -   -    IT  IT  IT
//! ibping vendstat          I   I   I   I    IV    I   I   I    IV  I   I
//! ibsysstat                I   I   I   I    IV    I   I   I    I   I   I
//! ```
//!
//! Before issue 16 only the letters other than `I` were there, and `I`
//! on the eight shared files for the first nine commands.
//!
//! Documented differences (not compared): `ibstatus` (the shell script
//! reads sysfs, which libumad2sim does not intercept for it: it says "No
//! devices" under libumad2sim), the per-SL/VL perfquery counters and the
//! Congestion Control and vendor classes (ibsim answers none of them;
//! only the failure is compared); more in tools/README.md.
//!
//! Outside CI a missing ibsim / OpenSM / infiniband-diags / libumad2sim
//! makes these tests print "NOT RUN"; with `CI=true` they fail.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../diags_compare/mod.rs"]
mod diags_compare;
mod newer;
#[path = "../sm_lite/mod.rs"]
mod sm_lite;
#[path = "../../../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use mad_agents::smp::{SmpClient, SmpTarget};
use mad_agents::{EngineConfig, Runtime};
use mad_core::transport::ibsim::IbSimTransport;
use mad_core::wire::attr::NodeType;
use mad_core::wire::{Method, MgmtClass};
use mad_sm::SmConfig;
use mad_testkit::header;
use sm_lite::RunningSm;
use support::opensm::{sbin, OpenSm};
use support::{IbSim, UMAD2SIM};

const TOOLS: &[&str] = &[
    "smpquery",
    "saquery",
    "perfquery",
    "sminfo",
    "ibaddr",
    "ibportstate",
    "ibstat",
    "ibroute",
    "ibtracert",
];

fn ready() -> bool {
    let mut needs: Vec<(&str, &str)> = vec![
        ("ibsim", "ibsim-utils"),
        ("opensm", "opensm"),
        (UMAD2SIM, "libumad2sim0"),
    ];
    needs.extend(
        TOOLS
            .iter()
            .chain(newer::TOOLS)
            .map(|t| (*t, "infiniband-diags")),
    );
    support::opensm::require_sbin(&needs)
}

/// tests/fixtures/topologies beside the checkout (support's own helper
/// assumes the facade's manifest directory).
fn topologies_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/topologies")
}

/// A directory of symlinks named like the tools, pointing at `mad`.
struct Bins(PathBuf);

impl Bins {
    fn new(tag: &str) -> Bins {
        let d = std::env::temp_dir().join(format!("mad-tools-bins-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        for t in TOOLS {
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mad"), d.join(t)).unwrap();
        }
        Bins(d)
    }
}

impl Drop for Bins {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Out {
    stdout: String,
    stderr: String,
    code: i32,
}

/// The directory holding the real tools.
fn real_dir(tool: &str) -> PathBuf {
    sbin(tool)
        .parent()
        .map_or_else(|| PathBuf::from("/usr/sbin"), Path::to_path_buf)
}

/// Runs `tool args` by its bare name with `first` first in PATH, under
/// libumad2sim unless `ibsim_flag` (then with `--ibsim` instead).
fn exec(sim: &IbSim, first: &Path, tool: &str, args: &[&str], ibsim_flag: bool) -> Out {
    let path = format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", first.display());
    let command = || {
        let mut c = sim.umad2sim_command(tool);
        c.env("PATH", &path).args(args).stdin(Stdio::null());
        if ibsim_flag {
            c.env_remove("LD_PRELOAD").arg("--ibsim");
        }
        c
    };
    // Under libumad2sim a run it failed to attach is made again.
    let o = if ibsim_flag {
        command()
            .output()
            .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"))
    } else {
        support::output_attached(tool, command)
    };
    Out {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        code: o.status.code().unwrap_or(-1),
    }
}

struct Checker<'a> {
    sim: &'a IbSim,
    bins: &'a Bins,
    name: String,
    failures: Vec<String>,
    cases: usize,
}

impl<'a> Checker<'a> {
    /// A checker of no case yet on `sim`, reporting as `name`.
    fn new(sim: &'a IbSim, bins: &'a Bins, name: String) -> Self {
        Checker {
            sim,
            bins,
            name,
            failures: Vec::new(),
            cases: 0,
        }
    }

    /// One case: real, ours (--ibsim), ours (umad), real again.
    fn case(&mut self, tool: &str, args: &[&str]) {
        self.cases += 1;
        let real = real_dir(tool);
        let before = exec(self.sim, &real, tool, args, false);
        let via_ibsim = exec(self.sim, &self.bins.0, tool, args, true);
        let via_umad = exec(self.sim, &self.bins.0, tool, args, false);
        let after = exec(self.sim, &real, tool, args, false);
        let what = format!("{}: {tool} {}", self.name, args.join(" "));
        for (how, ours) in [("--ibsim", &via_ibsim), ("umad", &via_umad)] {
            assert!(
                !ours.stderr.contains("panicked"),
                "{what} ({how}) panicked: {}",
                ours.stderr
            );
            // A documented difference: a table that arrived cut to its
            // first MAD (no RMPP under libumad2sim) is printed the same,
            // but ours says so and exits 3 (EXIT_INCOMPLETE) where
            // saquery exits 0.
            let cut_table = tool == "saquery"
                && before.code == 0
                && ours.code == 3
                && ours.stderr.contains("arrived cut to its first MAD");
            // Exit statuses are bracketed like the outputs: the real tool
            // runs before and after ours, and a status it gave in either
            // run is accepted (under CI load the real `saquery IIR` once
            // failed against OpenSM in the run before ours, exit 255 with
            // no output, while ours and the run after exited 0).
            let real_code = [before.code, after.code].contains(&ours.code);
            if !real_code && !cut_table {
                self.failures.push(format!(
                    "{what} ({how}): exit {} vs {} (before) and {} (after)\nours:\n{}{}\ntheirs:\n{}{}",
                    ours.code,
                    before.code,
                    after.code,
                    ours.stdout,
                    ours.stderr,
                    before.stdout,
                    before.stderr
                ));
                continue;
            }
            if let Err(e) =
                diags_compare::check_bracketed(&before.stdout, &ours.stdout, &after.stdout)
            {
                self.failures.push(format!(
                    "{what} ({how}): {e}\nours:\n{}\ntheirs:\n{}",
                    ours.stdout, before.stdout
                ));
            }
            if before.code == 2 && ours.stderr != before.stderr {
                self.failures.push(format!(
                    "{what} ({how}): usage text differs\nours:\n{}\ntheirs:\n{}",
                    ours.stderr, before.stderr
                ));
            }
        }
    }

    fn finish(self) {
        assert!(
            self.failures.is_empty(),
            "{}: {} of {} cases differ:\n{}",
            self.name,
            self.failures.len(),
            self.cases,
            self.failures.join("\n----\n")
        );
        eprintln!("{}: {} cases byte-identical", self.name, self.cases);
    }
}

/// What the fabric looks like from ibsim's default node.
struct Layout {
    /// Switch LIDs and CA LIDs (a sample).
    switches: Vec<u16>,
    cas: Vec<u16>,
    /// The local node is a switch.
    local_switch: bool,
    /// The sampled LIDs of other nodes than the local one (OpenSM's,
    /// which ibsim hands the MADs it has no agent for: OpenSM 3.3.23
    /// dies of SIGSEGV on a PerfMgt Get it did not ask for).
    remote: Vec<u16>,
    /// The local switch's LinearFDBTop (about the number of LIDs).
    top: u16,
}

fn layout(sim: &IbSim) -> Layout {
    let t = IbSimTransport::attach(sim.config()).unwrap();
    let rt = Runtime::start(t, EngineConfig::default()).unwrap();
    let smp = SmpClient::new(&rt).unwrap();
    let local = smp.node_info(&SmpTarget::dr(&[]).unwrap()).unwrap();
    let local_switch = local.node_type == NodeType::SWITCH;
    let sw = if local_switch {
        SmpTarget::dr(&[]).unwrap()
    } else {
        SmpTarget::dr(&[local.local_port_num]).unwrap()
    };
    let top = smp.switch_info(&sw).unwrap().linear_fdb_top;
    let mut sample: Vec<u16> = vec![1, 2, 3, 4, 5, top / 2, top.saturating_sub(1), top];
    sample.retain(|l| (1..=top).contains(l));
    sample.sort_unstable();
    sample.dedup();
    let (mut switches, mut cas, mut remote) = (Vec::new(), Vec::new(), Vec::new());
    for lid in sample {
        if let Ok(ni) = smp.node_info(&SmpTarget::Lid(lid)) {
            if ni.node_guid != local.node_guid {
                remote.push(lid);
            }
            if ni.node_type == NodeType::SWITCH {
                switches.push(lid);
            } else {
                cas.push(lid);
            }
        }
    }
    drop(smp);
    rt.shutdown();
    Layout {
        switches,
        cas,
        local_switch,
        remote,
        top,
    }
}

/// Every case for one fabric.
#[allow(clippy::too_many_lines)]
fn all_cases(c: &mut Checker<'_>, l: &Layout, full: bool, sa: bool) {
    let s = |v: u16| v.to_string();
    let sw = l.switches.first().copied().unwrap_or(1);
    let ca = l.cas.first().copied().unwrap_or(1);
    let ca2 = l.cas.last().copied().unwrap_or(ca);
    let lids: Vec<u16> = l.switches.iter().chain(&l.cas).copied().collect();
    // smpquery by LID.
    for lid in &lids {
        let lid = s(*lid);
        for op in ["nodeinfo", "nodedesc", "switchinfo", "guidinfo"] {
            c.case("smpquery", &[op, &lid]);
        }
        for op in ["portinfo", "pkeys", "sl2vl", "vlarb"] {
            c.case("smpquery", &[op, &lid]);
            c.case("smpquery", &[op, &lid, "1"]);
        }
        if !full {
            break;
        }
    }
    c.case("smpquery", &["-x", "PI", &s(sw), "2"]);
    c.case("smpquery", &["mepi", &s(sw), "1"]);
    c.case("smpquery", &["pie", &s(ca), "1"]);
    c.case("smpquery", &["-K", "portinfo", &s(ca)]);
    // smpquery by directed route and by GUID (through the SA).
    for path in ["0", "0,1", "0,1,1", "0,2"] {
        c.case("smpquery", &["-D", "nodeinfo", path]);
        c.case("smpquery", &["-D", "portinfo", path, "1"]);
    }
    c.case("smpquery", &["-D", "nodedesc", "0"]);
    c.case("smpquery", &["-G", "NI", "0x200000"]);
    // Errors.
    c.case("smpquery", &["-t", "200", "nodeinfo", "0xbfff"]);
    c.case("smpquery", &["nodeinfo", "0xc000"]);
    c.case("smpquery", &["nodeinfo", "abc"]);
    c.case("smpquery", &["frob", "1"]);
    c.case("smpquery", &["-q", "nodeinfo", "1"]);
    c.case("smpquery", &["nodeinfo"]);
    c.case("smpquery", &["pkeys", &s(sw), "99"]);
    // perfquery.
    c.case("perfquery", &[]);
    c.case("perfquery", &["-x"]);
    c.case("perfquery", &[&s(sw), "1"]);
    c.case("perfquery", &["-x", &s(sw), "1"]);
    c.case("perfquery", &["-a", &s(sw)]);
    c.case("perfquery", &["-x", "-a", &s(sw)]);
    c.case("perfquery", &["-l", &s(sw), "1-3"]);
    c.case("perfquery", &["-a", &s(sw), "1,2,3"]);
    c.case("perfquery", &[&s(ca)]);
    c.case("perfquery", &["-a", &s(ca)]);
    // Not to the local node: ibsim hands a per-SL Get to OpenSM there.
    let other = l.remote.first().copied().unwrap_or(sw);
    c.case("perfquery", &["-X", &s(other), "1"]);
    c.case("perfquery", &["-R", &s(sw), "4", "0x1000"]);
    c.case("perfquery", &[&s(sw), "4-2"]);
    c.case("perfquery", &["--bogus"]);
    // sminfo, ibaddr.
    c.case("sminfo", &[]);
    c.case("sminfo", &["-D", "0"]);
    c.case("sminfo", &[&s(ca)]);
    c.case("ibaddr", &[]);
    for lid in &lids {
        c.case("ibaddr", &[&s(*lid)]);
    }
    c.case("ibaddr", &["-L", &s(ca2)]);
    c.case("ibaddr", &["-g", "-D", "0,1"]);
    // ibportstate queries.
    c.case("ibportstate", &[&s(sw), "1"]);
    c.case("ibportstate", &[&s(ca), "1"]);
    c.case("ibportstate", &["-D", "0", "1"]);
    c.case("ibportstate", &["-D", "0", "0"]);
    c.case("ibportstate", &[&s(sw), "1", "frob"]);
    c.case("ibportstate", &[&s(sw), "1", "speed"]);
    // ibroute, ibtracert.
    c.case("ibroute", &[&s(sw)]);
    c.case("ibroute", &["-n", &s(sw)]);
    c.case("ibroute", &[&s(sw), "1", "3"]);
    c.case("ibroute", &["-M", &s(sw)]);
    c.case("ibroute", &[&s(ca)]);
    if full {
        c.case("ibroute", &["-a", &s(sw)]);
        c.case("ibroute", &["-D", "0,1"]);
    }
    c.case("ibtracert", &[&s(ca), &s(ca2)]);
    c.case("ibtracert", &["-n", &s(ca2), &s(ca)]);
    c.case("ibtracert", &[&s(sw), &s(ca)]);
    c.case("ibtracert", &[&s(ca), &s(sw)]);
    c.case("ibtracert", &[&s(ca), "0xbfff", "-t", "200"]);
    // saquery. Under libumad2sim an SA table arrives cut to its first
    // MAD, whose bytes past 232 OpenSM's side garbles differently from
    // run to run: these queries have answers that fit (or are single
    // records); whole tables are compared on the built-in fabric.
    if sa {
        let (sw, ca, ca2) = (s(sw), s(ca), s(ca2));
        for args in [
            vec![],
            vec!["-D"],
            vec!["-s"],
            vec!["-c"],
            vec!["CPI"],
            vec!["NR", &ca],
            vec!["NR", &sw],
            vec![ca.as_str()],
            vec!["PIR", &format!("{ca}/1")],
            vec!["PIR", &format!("{sw}/0")],
            vec!["SWIR", &sw],
            vec!["SMIR"],
            vec!["LFTR", &format!("{sw}/0")],
            vec!["VLAR", &ca],
            vec!["GIR", &ca],
            vec!["PKTR", &format!("{ca}/1")],
            vec!["--src-to-dst", &format!("{ca}:{ca2}")],
            vec!["-p", "--slid", &ca, "--dlid", &ca2],
            vec!["-g"],
            vec!["MCMR"],
            vec!["-m"],
            vec!["-m", "0xc000"],
            vec!["SR"],
            vec!["IIR"],
            vec!["NR", "0xbfff"],
            vec!["-O", &ca],
            vec!["-L"],
            vec!["--src-to-dst", "nosuchnode:2"],
            vec!["-Z"],
        ] {
            let a: Vec<&str> = args.iter().map(|x| &**x).collect();
            c.case("saquery", &a);
        }
    }
    // ibstat (libumad2sim's view of the local port).
    for args in [
        &[][..],
        &["-l"],
        &["-p"],
        &["-s"],
        &["ibsim0"],
        &["ibsim0", "1"],
        &["nope"],
    ] {
        c.case("ibstat", args);
    }
    let _ = l.local_switch;
}

/// ibsim + OpenSM on `file` of `dir`, every case, the newer commands'
/// too.
fn opensm_fabric_in(dir: &Path, file: &str, full: bool) {
    let bins = Bins::new(file);
    let sim = IbSim::start(dir.join(file));
    let _osm = OpenSm::start(&sim, "", Duration::from_secs(120));
    let l = layout(&sim);
    let mut c = Checker::new(&sim, &bins, format!("{file} (OpenSM)"));
    all_cases(&mut c, &l, full, true);
    newer::cases(&mut c, &l, full);
    // Port changes on an uncabled port (its state does not disturb the
    // SM): disable, then enable, real tool first, then ours.
    let sw = l.switches.first().copied().unwrap_or(1).to_string();
    c.sequence(
        "ibportstate",
        &[
            &["-D", "0", "8", "disable"],
            &["-D", "0", "8", "enable"],
            &["-D", "0", "8", "off"],
            &["-D", "0", "8", "on"],
            &["-D", "0", "8", "reset"],
        ],
        false,
    );
    c.sequence(
        "perfquery",
        &[
            &["-r", &sw, "1"],
            &["-x", "-r", &sw, "1"],
            &["-R", &sw, "1"],
        ],
        true,
    );
    c.finish();
}

/// ibsim + OpenSM on shared topology `file`, every case.
fn opensm_fabric(file: &str, full: bool) {
    opensm_fabric_in(&topologies_dir(), file, full);
}

impl Checker<'_> {
    /// Commands that change the fabric, run as a sequence that leaves it
    /// as it was: the real tool runs the whole sequence, then ours
    /// (`--ibsim`), then ours (umad); the outputs are compared step by
    /// step, port counters masked with `mask`.
    fn sequence(&mut self, tool: &str, steps: &[&[&str]], mask: bool) {
        self.cases += steps.len();
        let real = real_dir(tool);
        let m = |s: &str| if mask { mask_counters(s) } else { s.to_owned() };
        // A first pass of the real tool leaves what a pass leaves behind
        // (a Set writes LID 0x1234 where the port had none).
        for a in steps {
            let _ = exec(self.sim, &real, tool, a, false);
        }
        let theirs: Vec<Out> = steps
            .iter()
            .map(|a| exec(self.sim, &real, tool, a, false))
            .collect();
        for (how, ibsim_flag) in [("--ibsim", true), ("umad", false)] {
            for (args, t) in steps.iter().zip(&theirs) {
                let ours = exec(self.sim, &self.bins.0, tool, args, ibsim_flag);
                if (ours.code, m(&ours.stdout)) != (t.code, m(&t.stdout)) {
                    self.failures.push(format!(
                        "{}: {tool} {} ({how}): exit {} vs {}\nours:\n{}\ntheirs:\n{}",
                        self.name,
                        args.join(" "),
                        ours.code,
                        t.code,
                        ours.stdout,
                        t.stdout
                    ));
                }
            }
        }
    }
}

/// The traffic counters of perfquery's output replaced by `N` (for
/// runs that reset them).
fn mask_counters(s: &str) -> String {
    s.lines()
        .map(|l| {
            let traffic = ["PortXmit", "PortRcv", "PortUnicast", "PortMulticast"]
                .iter()
                .any(|p| l.starts_with(p))
                && !l.contains("Errors")
                && !l.contains("Discards");
            match l.split_once(':') {
                Some((name, _)) if traffic => format!("{name}:N\n"),
                _ => format!("{l}\n"),
            }
        })
        .collect()
}

#[test]
fn ibsim_examples_with_opensm_give_byte_identical_output() {
    if !ready() {
        return;
    }
    // One ibsim + OpenSM per fabric, all at once.
    std::thread::scope(|s| {
        for file in [
            "net",
            "net.1",
            "net.2sw2path",
            "net.2sw2path4hca",
            "net.2sw2path4hca2port",
        ] {
            s.spawn(move || opensm_fabric(file, file == "net"));
        }
    });
}

#[test]
fn medium_fat_tree_with_opensm_gives_byte_identical_output() {
    if !ready() {
        return;
    }
    opensm_fabric("net.medium", false);
}

#[test]
fn large_fat_trees_with_opensm_give_byte_identical_output() {
    if !ready() {
        return;
    }
    opensm_fabric("net.large", false);
    opensm_fabric("net.large3", false);
}

/// The fixture fabrics of tools/tests/fixtures/topologies beyond the
/// shared ones (net.2sw2path4hca2port there is the shared file): odd
/// node descriptions, a 3x3 torus, links of mixed widths and speeds.
#[test]
fn fixture_fabrics_with_opensm_give_byte_identical_output() {
    if !ready() {
        return;
    }
    let dir = diags_compare::fixture("");
    std::thread::scope(|s| {
        for file in ["net.odd-names", "net.torus3x3", "net.mixed-rates"] {
            let dir = &dir;
            s.spawn(move || opensm_fabric_in(dir, file, false));
        }
    });
}

#[test]
fn every_shared_topology_is_covered() {
    let mut names: Vec<String> = std::fs::read_dir(topologies_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".md"))
        .collect();
    names.sort();
    let covered = [
        "net",
        "net.1",
        "net.2sw2path",
        "net.2sw2path4hca",
        "net.2sw2path4hca2port",
        "net.large",
        "net.large3",
        "net.medium",
    ];
    assert_eq!(names, covered, "a new topology file needs a test here");
}

// ------------------------------------------------------------- SM-lite

#[test]
fn with_sm_lite_as_the_sm_outputs_are_byte_identical() {
    if !ready() {
        return;
    }
    for (file, first) in [("net", "Switch1"), ("net.2sw2path4hca", "Switch1")] {
        let bins = Bins::new(&format!("smlite-{file}"));
        let sim = IbSim::start(topologies_dir().join(file));
        let _sm = RunningSm::start(
            &sim,
            first,
            SmConfig::default(),
            Duration::from_secs(60),
            false,
        );
        let l = layout(&sim);
        let mut c = Checker::new(&sim, &bins, format!("{file} (SM-lite)"));
        all_cases(&mut c, &l, false, false);
        // SM-lite has no SA: saquery times out the same way.
        c.case("saquery", &["-t", "100", "NR", "1"]);
        c.finish();
    }
}

#[test]
fn bracketing_accepts_only_values_between_the_real_runs() {
    use diags_compare::check_bracketed as bracketed;
    assert!(bracketed("a: 1\nb: 5\n", "a: 1\nb: 6\n", "a: 1\nb: 7\n").is_ok());
    assert!(bracketed("a: 1\nb: 5\n", "a: 1\nb: 8\n", "a: 1\nb: 7\n").is_err());
    assert!(bracketed("a: 1\nb: 5\n", "a: 2\nb: 6\n", "a: 1\nb: 7\n").is_err());
    assert!(bracketed(
        "sm lid 1 activity count 10, prio 0",
        "sm lid 1 activity count 11, prio 0",
        "sm lid 1 activity count 12, prio 0"
    )
    .is_ok());
    assert!(bracketed("x\n", "x\ny\n", "x\n").is_err());
    assert!(bracketed(
        "PortXmitData:....5",
        "PortXmitData:....6",
        "PortXmitData:....9"
    )
    .is_ok());
    // The same text before a moved number, or the line fails.
    assert!(bracketed("lid:5", "lid=6", "lid:7").is_err());
    // ibqueryerrors' counters with their human-readable forms.
    let iqe = |v: &str, h: &str| format!("   GUID 0x1 port 1: [XmitData == {v} ({h})]");
    assert!(bracketed(
        &iqe("1000", "3.906KB"),
        &iqe("1100", "4.297KB"),
        &iqe("300000", "1.144MB")
    )
    .is_ok());
    assert!(bracketed(
        &iqe("1000", "3.906KB"),
        &iqe("1100", "2.000MB"),
        &iqe("300000", "1.144MB")
    )
    .is_err());
    assert!(bracketed(
        &iqe("1000", "3.906KB"),
        &iqe("1100", "4.297XB"),
        &iqe("300000", "1.144MB")
    )
    .is_err());
}

#[test]
fn pcap_records_the_mads_on_the_ibsim_and_umad_transports() {
    if !ready() {
        return;
    }
    let bins = Bins::new("pcap");
    let sim = IbSim::start(topologies_dir().join("net"));
    for (how, ibsim_flag) in [("--ibsim", true), ("umad", false)] {
        let file =
            std::env::temp_dir().join(format!("mad-tools-pcap-{how}-{}.pcap", std::process::id()));
        let f = file.to_str().unwrap();
        let out = exec(
            &sim,
            &bins.0,
            "smpquery",
            &["--pcap", f, "-D", "nodeinfo", "0,1"],
            ibsim_flag,
        );
        assert_eq!(out.code, 0, "{how}: {}", out.stderr);
        let bytes = std::fs::read(&file).unwrap();
        let mut r = mad_core::pcap::PcapReader::new(&bytes[..]).unwrap();
        let mut recs = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            recs.push(rec);
        }
        assert_eq!(recs.len(), 2, "{how}: a Get and its answer");
        let (get, resp) = (header::of(&recs[0].mad), header::of(&recs[1].mad));
        let direct = MgmtClass::SUBN_DIRECTED_ROUTE;
        assert_eq!(
            (get.mgmt_class, get.method, get.response),
            (direct, Method::GET, false),
            "{how}"
        );
        assert_eq!((resp.method, resp.response), (Method::GET, true), "{how}");
        assert_eq!(get.tid, resp.tid, "{how}: same TID");
        let _ = std::fs::remove_file(&file);
    }
}
