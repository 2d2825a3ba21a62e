//! `mad ibnetdiscover`, `ibhosts`, `ibswitches` and `mad sweep` against a
//! real ibsim, compared byte for byte with infiniband-diags 44 run under
//! libumad2sim against the same ibsim: on every topology of
//! `tests/fixtures/topologies`, unconfigured (every LID 0) and after an SM
//! (SM-lite over the ibsim transport; OpenSM on two of them).
//!
//! The only line allowed to differ is the topology file's "generated on"
//! date (two runs need not fall in the same second); it must be a
//! `ctime()` date within a few seconds of infiniband-diags' one.
//!
//! Outside CI a missing ibsim / infiniband-diags / libumad2sim makes these
//! tests print "NOT RUN" and return; with `CI=true` it fails them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod sm_lite;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use mad_sm::SmConfig;
use sm_lite::RunningSm;
use support::opensm::{require_sbin, sbin, OpenSm};
use support::{ibnetdiscover, IbSim, NEEDS_DIAGS};

/// Every ibnetdiscover option set compared.
const OPTION_SETS: &[&[&str]] = &[
    &[],
    &["-l"],
    &["-H"],
    &["-S"],
    &["-R"],
    &["-p"],
    &["-g"],
    &["-f"],
    &["-m"],
    &["-s"],
    &["--Switch_list", "--full"],
];

/// Option sets compared again once LIDs are assigned (the ones that show
/// LIDs).
const OPTION_SETS_SM: &[&[&str]] = &[&[], &["-p"], &["-s"], &["-f", "-m"]];

/// `tests/fixtures/topologies` beside the checkout (the support module's
/// `topologies_dir` is relative to the facade crate, two levels up from
/// here it is one more `..`).
fn topologies_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/topologies")
}

fn needs() -> bool {
    support::require(NEEDS_DIAGS)
        && require_sbin(&[
            ("ibhosts", "infiniband-diags"),
            ("ibswitches", "infiniband-diags"),
        ])
}

/// Our binary with `--ibsim` against `sim`.
fn ours(sim: &IbSim, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mad"));
    c.current_dir(std::env::temp_dir())
        .arg("--ibsim")
        .args(args)
        .env("IBSIM_SOCKNAME", sim.sockname())
        .env_remove("SIM_HOST")
        .env_remove("IBSIM_SERVER_NAME")
        .env_remove("IBSIM_SERVER_PORT");
    c.output().unwrap()
}

/// infiniband-diags' `program` under libumad2sim against `sim`.
fn theirs(sim: &IbSim, program: &str, args: &[&str]) -> Output {
    sim.umad2sim_output(sbin(program).to_str().unwrap(), args)
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The text without its "generated on" line, and that line's date.
fn split_date(t: &str) -> (String, Option<String>) {
    let mut date = None;
    let mut rest = String::new();
    for l in t.split_inclusive('\n') {
        match l.strip_prefix("# Topology file: generated on ") {
            Some(d) => date = Some(d.trim_end().to_owned()),
            None => rest.push_str(l),
        }
    }
    (rest, date)
}

/// Seconds since the epoch of a `ctime()` date (`Sun Nov 22 00:12:04
/// 2026`), the zone ignored (both sides use the same).
fn ctime_secs(d: &str) -> i64 {
    let w: Vec<&str> = d.split_whitespace().collect();
    assert_eq!(w.len(), 5, "not a ctime date: {d:?}");
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = months.iter().position(|x| *x == w[1]).unwrap() as i64 + 1;
    let day: i64 = w[2].parse().unwrap();
    let hms: Vec<i64> = w[3].split(':').map(|x| x.parse().unwrap()).collect();
    let y: i64 = w[4].parse().unwrap();
    // Days from civil (Howard Hinnant).
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2]
}

/// Runs ibnetdiscover with `args` both ways and asserts identical output.
fn compare_ibnetdiscover(name: &str, sim: &IbSim, args: &[&str]) {
    let t = theirs(sim, "ibnetdiscover", args);
    assert!(
        t.status.success(),
        "{name}: ibnetdiscover {args:?} failed: {}",
        String::from_utf8_lossy(&t.stderr)
    );
    let mut full = vec!["ibnetdiscover"];
    full.extend_from_slice(args);
    let o = ours(sim, &full);
    assert!(
        o.status.success(),
        "{name}: our ibnetdiscover {args:?} failed ({}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let (tt, td) = split_date(&text(&t));
    let (ot, od) = split_date(&text(&o));
    assert_eq!(td.is_some(), od.is_some(), "{name} {args:?}: date line");
    if let (Some(td), Some(od)) = (td, od) {
        let gap = (ctime_secs(&td) - ctime_secs(&od)).abs();
        assert!(gap <= 120, "{name} {args:?}: dates {td:?} and {od:?}");
    }
    if tt != ot {
        let first = tt
            .lines()
            .zip(ot.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(tt.lines().count().min(ot.lines().count()));
        let ctx = |s: &str| {
            s.lines()
                .skip(first.saturating_sub(2))
                .take(6)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "{name}: ibnetdiscover {args:?} differs at line {} ({} vs {} lines)\n--- infiniband-diags:\n{}\n--- ours:\n{}",
            first + 1,
            tt.lines().count(),
            ot.lines().count(),
            ctx(&tt),
            ctx(&ot)
        );
    }
    assert!(
        !ot.is_empty() || args.contains(&"-R"),
        "{name} {args:?}: no output"
    );
}

fn compare_script(name: &str, sim: &IbSim, script: &str) {
    let t = theirs(sim, script, &[]);
    let o = ours(sim, &[script]);
    assert!(
        o.status.success(),
        "{name}: our {script}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        t.status.code(),
        o.status.code(),
        "{name}: {script} exit status"
    );
    assert_eq!(text(&t), text(&o), "{name}: {script} output");
    assert!(!text(&o).is_empty(), "{name}: {script} printed nothing");
}

/// The first node of a topology file (where ibsim attaches clients that
/// name none).
fn first_node(netfile: &Path) -> String {
    let text = std::fs::read_to_string(netfile).unwrap();
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with("Switch") || l.starts_with("Hca") || l.starts_with("Ca"))
        .and_then(|l| l.split('"').nth(1))
        .map(str::to_owned)
        .unwrap()
}

/// SM-lite at the first node, as SM-lite brings a fabric up for these
/// comparisons (1 s SMP timeout, 180 s to come up, an error fails).
fn bring_up_sm(sim: &IbSim) -> RunningSm {
    let cfg = SmConfig {
        timeout: Duration::from_secs(1),
        ..SmConfig::default()
    };
    RunningSm::start(
        sim,
        &first_node(sim.netfile()),
        cfg,
        Duration::from_secs(180),
        true,
    )
}

/// Every comparison on one topology: unconfigured, then after SM-lite.
fn identical_on(name: &str) {
    if !needs() {
        return;
    }
    let netfile = topologies_dir().join(name);
    let sim = IbSim::start(&netfile);
    for args in OPTION_SETS {
        compare_ibnetdiscover(name, &sim, args);
    }
    compare_script(name, &sim, "ibhosts");
    compare_script(name, &sim, "ibswitches");
    // Unconfigured: no LIDs, the sweep says so.
    let o = ours(&sim, &["sweep"]);
    assert_eq!(o.status.code(), Some(1), "{name}: sweep without LIDs");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no port of the fabric has a LID"),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    let sm = bring_up_sm(&sim);
    // Stop SM-lite once the subnet is up: its state stays in ibsim.
    drop(sm);
    for args in OPTION_SETS_SM {
        compare_ibnetdiscover(&format!("{name} (SM-lite)"), &sim, args);
    }
    compare_script(&format!("{name} (SM-lite)"), &sim, "ibswitches");
    let lids = ibnetdiscover_lids(&text(&ours(&sim, &["ibnetdiscover"])));
    assert!(
        lids.values().all(|&l| l != 0),
        "{name}: a node without LID after SM-lite"
    );
}

/// (node GUID, port) -> LID from a topology's comments: a switch's
/// "port 0 lid N" (port 0), a CA port line's "# lid N".
fn ibnetdiscover_lids(text: &str) -> BTreeMap<(u64, u8), u16> {
    let mut m = BTreeMap::new();
    let mut current: Option<u64> = None;
    for l in text.lines() {
        if let Some(g) = l.strip_prefix("switchguid=0x") {
            current = u64::from_str_radix(g.split('(').next().unwrap(), 16).ok();
        } else if let Some(g) = l.strip_prefix("caguid=0x") {
            current = u64::from_str_radix(g, 16).ok();
        } else if l.starts_with("Switch\t") {
            let lid = l
                .split(" port 0 lid ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            m.insert((current.unwrap(), 0), lid.parse().unwrap());
        } else if l.starts_with('[') && l.contains("# lid ") {
            let port: u8 = l[1..].split(']').next().unwrap().parse().unwrap();
            let lid = l.split("# lid ").nth(1).unwrap().split(' ').next().unwrap();
            m.insert((current.unwrap(), port), lid.parse().unwrap());
        }
    }
    m
}

macro_rules! identical_tests {
    ($($fn_name:ident => $topo:literal,)*) => {
        $(
            #[test]
            fn $fn_name() {
                identical_on($topo);
            }
        )*

        /// Every topology in the directory has its test above.
        #[test]
        fn every_shared_topology_is_compared() {
            let covered: BTreeSet<&str> = [$($topo),*].into_iter().collect();
            let present: BTreeSet<String> = std::fs::read_dir(topologies_dir())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| !n.ends_with(".md"))
                .collect();
            let present: BTreeSet<&str> = present.iter().map(String::as_str).collect();
            assert_eq!(present, covered);
        }
    };
}

identical_tests! {
    identical_on_net => "net",
    identical_on_net_1 => "net.1",
    identical_on_net_2sw2path => "net.2sw2path",
    identical_on_net_2sw2path4hca => "net.2sw2path4hca",
    identical_on_net_2sw2path4hca2port => "net.2sw2path4hca2port",
    identical_on_net_medium => "net.medium",
    identical_on_net_large => "net.large",
    identical_on_net_large3 => "net.large3",
}

/// After OpenSM (a real SM's LIDs, LMC, SM port state) too.
#[test]
fn identical_after_opensm() {
    if !needs() || !require_sbin(&[("opensm", "opensm")]) {
        return;
    }
    for name in ["net.2sw2path4hca2port", "net.medium"] {
        let sim = IbSim::start(topologies_dir().join(name));
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        for args in OPTION_SETS_SM {
            compare_ibnetdiscover(&format!("{name} (OpenSM)"), &sim, args);
        }
        compare_script(&format!("{name} (OpenSM)"), &sim, "ibhosts");
        compare_script(&format!("{name} (OpenSM)"), &sim, "ibswitches");
    }
}

/// The tool-named form (a symlink called ibnetdiscover) behaves as
/// `mad ibnetdiscover`, options and transport flag among its arguments.
#[test]
fn runs_under_its_own_name() {
    if !needs() {
        return;
    }
    let sim = IbSim::start(topologies_dir().join("net.2sw2path4hca"));
    let dir = std::env::temp_dir().join(format!("madstack-discover-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for prog in ["ibnetdiscover", "ibswitches"] {
        let link = dir.join(prog);
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mad"), &link).unwrap();
        let args: &[&str] = if prog == "ibnetdiscover" {
            &["-l", "--ibsim"]
        } else {
            &["--ibsim"]
        };
        let o = Command::new(&link)
            .args(args)
            .env("IBSIM_SOCKNAME", sim.sockname())
            .env_remove("SIM_HOST")
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{prog}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let want = theirs(&sim, prog, &args[..args.len() - 1]);
        assert_eq!(text(&o), text(&want), "{prog}");
    }
    // Usage (-h) and a bad option: same text on stderr, same status, with
    // both started by the bare name from PATH (argv[0] is in the text).
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sbin_path = format!(
        "/usr/sbin:/sbin:{}",
        std::env::var("PATH").unwrap_or_default()
    );
    for args in [&["-h"][..], &["--bogus"][..], &["-t", "0"][..]] {
        let o = Command::new("ibnetdiscover")
            .args(args)
            .env("PATH", &path)
            .current_dir(&dir)
            .output()
            .unwrap();
        let t = support::output_attached("ibnetdiscover", || {
            let mut c = sim.umad2sim_command("ibnetdiscover");
            c.args(args).env("PATH", &sbin_path);
            c
        });
        assert_eq!(o.status.code(), t.status.code(), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&t.stderr)
                .lines()
                .filter(|l| !l.starts_with("ibwarn: "))
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
            "{args:?}"
        );
        assert_eq!(text(&o), text(&t), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--json` parses, and says what the text says: the same nodes (GUID,
/// type, ports, description), links and LIDs.
#[test]
fn json_agrees_with_the_text() {
    if !needs() {
        return;
    }
    let sim = IbSim::start(topologies_dir().join("net.2sw2path4hca2port"));
    drop(bring_up_sm(&sim));
    let t = text(&ours(&sim, &["ibnetdiscover"]));
    let parsed = ibnetdiscover::parse(&t).unwrap();
    let lids = ibnetdiscover_lids(&t);
    let j: serde_json::Value =
        serde_json::from_str(&text(&ours(&sim, &["--json", "ibnetdiscover"]))).unwrap();
    let g = |v: &serde_json::Value| {
        u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    let nodes = j["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), parsed.nodes.len());
    let mut links = BTreeSet::new();
    // Same order as the text's node headers.
    let text_order: Vec<u64> = t
        .lines()
        .filter_map(|l| {
            l.strip_prefix("switchguid=0x")
                .map(|g| g.split('(').next().unwrap())
                .or_else(|| l.strip_prefix("caguid=0x"))
        })
        .map(|g| u64::from_str_radix(g, 16).unwrap())
        .collect();
    let json_order: Vec<u64> = nodes.iter().map(|n| g(&n["guid"])).collect();
    assert_eq!(json_order, text_order);
    for n in nodes {
        let guid = g(&n["guid"]);
        let d = &parsed.nodes[&guid];
        let kind = n["type"].as_str().unwrap();
        assert_eq!(kind, d.kind.as_str());
        assert_eq!(n["num_ports"].as_u64().unwrap(), u64::from(d.num_ports));
        assert_eq!(n["description"].as_str().unwrap(), d.desc);
        for p in n["ports"].as_array().unwrap() {
            let port = p["port"].as_u64().unwrap() as u8;
            if kind != "Switch" {
                assert_eq!(
                    Some(&g(&p["guid"])),
                    d.port_guids.get(&port),
                    "{guid:x}/{port}"
                );
            }
            let lid_port = if kind == "Switch" { 0 } else { port };
            assert_eq!(
                p["lid"].as_u64().unwrap(),
                u64::from(lids[&(guid, lid_port)]),
                "{guid:x}/{port}"
            );
            if let Some(r) = p["remote"].as_object() {
                let a = (guid, port);
                let b = (g(&r["guid"]), r["port"].as_u64().unwrap() as u8);
                links.insert(support::sweep::Link::new(a, b));
                let rate = format!(
                    "{}{}",
                    p["width"].as_str().unwrap(),
                    p["speed"].as_str().unwrap()
                );
                assert_eq!(
                    Some(&rate),
                    parsed.link_rates.get(&support::sweep::Link::new(a, b))
                );
            }
        }
    }
    assert_eq!(links, parsed.links);
    assert_eq!(
        j["summary"]["links"].as_u64().unwrap(),
        parsed.links.len() as u64
    );
}

/// ibhosts / ibswitches read a topology file instead when given one,
/// and reject bad options with their usage line (stdout, status 255).
#[test]
fn scripts_read_topology_files_and_reject_bad_options() {
    if !needs() {
        return;
    }
    let sim = IbSim::start(topologies_dir().join("net"));
    let file = std::env::temp_dir().join(format!("madstack-topo-{}.txt", std::process::id()));
    std::fs::write(&file, text(&theirs(&sim, "ibnetdiscover", &[]))).unwrap();
    let f = file.to_str().unwrap();
    for script in ["ibhosts", "ibswitches"] {
        assert_eq!(
            text(&theirs(&sim, script, &[f])),
            text(&ours(&sim, &[script, f])),
            "{script} FILE"
        );
        let t = theirs(&sim, script, &["-x"]);
        let o = ours(&sim, &[script, "-x"]);
        assert_eq!(t.status.code(), Some(255));
        assert_eq!(o.status.code(), Some(255), "{script} -x");
        assert_eq!(text(&t), text(&o), "{script} -x usage");
    }
    let _ = std::fs::remove_file(&file);
}

/// Parses perfquery's `Name:....value` lines.
fn perfquery_fields(t: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in t.lines() {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let v = v.trim_start_matches('.');
        if let Ok(n) = v.trim().parse::<u64>() {
            m.insert(k.trim().to_owned(), n);
        } else if let Some(h) = v.trim().strip_prefix("0x") {
            if let Ok(n) = u64::from_str_radix(h, 16) {
                m.insert(k.trim().to_owned(), n);
            }
        }
    }
    m
}

/// The sweep's counters of a few ports equal what perfquery reads: each
/// lies between perfquery's reading just before and just after it (the
/// counters only grow, and MADs move them).
#[test]
fn sweep_counters_equal_perfquery() {
    if !needs() || !require_sbin(&[("perfquery", "infiniband-diags")]) {
        return;
    }
    let sim = IbSim::start(topologies_dir().join("net.2sw2path4hca2port"));
    drop(bring_up_sm(&sim));
    // (lid, port) of every port the sweep reads, from its JSON.
    let read = || -> serde_json::Value {
        let o = ours(&sim, &["sweep", "--json"]);
        assert!(
            o.status.success(),
            "sweep: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_str(&text(&o)).unwrap()
    };
    let first = read();
    let mut targets = Vec::new();
    for n in first["nodes"].as_array().unwrap() {
        for p in n["ports"].as_array().unwrap() {
            targets.push((p["lid"].as_u64().unwrap(), p["port"].as_u64().unwrap()));
        }
    }
    assert!(targets.len() >= 6, "{targets:?}");
    let pick: Vec<(u64, u64)> = targets.iter().step_by(targets.len() / 4).copied().collect();
    let pq = |lid: u64, port: u64| {
        let o = theirs(&sim, "perfquery", &[&lid.to_string(), &port.to_string()]);
        assert!(
            o.status.success(),
            "perfquery {lid} {port}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        perfquery_fields(&text(&o))
    };
    let before: Vec<_> = pick.iter().map(|&(l, p)| pq(l, p)).collect();
    let mid = read();
    let after: Vec<_> = pick.iter().map(|&(l, p)| pq(l, p)).collect();
    let mut compared = 0;
    for (i, &(lid, port)) in pick.iter().enumerate() {
        let ours = mid["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|n| n["ports"].as_array().unwrap())
            .find(|p| p["lid"].as_u64() == Some(lid) && p["port"].as_u64() == Some(port))
            .unwrap();
        let c = ours["counters"].as_object().unwrap();
        for (k, v) in c {
            // perfquery prints the 16 PortCounters fields by libibmad's
            // names (`SymbolErrorCounter`), the JSON by mad-core's
            // (`symbol_error_counter`): the same words.
            let key = |s: &str| s.replace('_', "").to_ascii_lowercase();
            let find = |m: &BTreeMap<String, u64>| {
                m.iter().find(|(n, _)| key(n) == key(k)).map(|(_, v)| *v)
            };
            let (Some(lo), Some(hi)) = (find(&before[i]), find(&after[i])) else {
                continue;
            };
            let (lo, hi) = (&lo, &hi);
            let v = v.as_u64().unwrap();
            assert!(
                *lo <= v && v <= *hi,
                "lid {lid} port {port} {k}: {lo} <= {v} <= {hi}"
            );
            compared += 1;
        }
    }
    assert!(
        compared >= pick.len() * 10,
        "only {compared} fields compared"
    );
}

/// Without a terminal on stderr nothing but warnings goes there; with
/// one, the progress line is drawn and erased.
#[test]
fn progress_line_only_on_a_terminal() {
    if !needs() {
        return;
    }
    let sim = IbSim::start(topologies_dir().join("net.medium"));
    let o = ours(&sim, &["ibnetdiscover", "-l"]);
    assert!(o.status.success());
    assert!(
        o.stderr.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&o.stderr)
    );
    // script(1) gives the command a terminal.
    if support::which("script").is_none() {
        assert!(!support::in_ci(), "script (bsdutils) missing");
        eprintln!("NOT RUN (outside CI): script missing");
        return;
    }
    let cmd = format!(
        "{} --ibsim ibnetdiscover -l >/dev/null",
        env!("CARGO_BIN_EXE_mad")
    );
    let o = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("IBSIM_SOCKNAME", sim.sockname())
        .env("MADSTACK_PROGRESS_AFTER_MS", "0")
        .env_remove("SIM_HOST")
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tty = String::from_utf8_lossy(&o.stdout);
    // indicatif's line: a spinner, the label, the counts; erased with
    // CR + erase-line at the end.
    assert!(tty.contains(" discovering "), "{tty:?}");
    assert!(tty.ends_with("\r\x1b[2K"), "{tty:?}");
}

/// Our ibnetdiscover through the umad transport (libibumad with
/// libumad2sim preloaded, no transport flag) prints what it prints
/// through `--ibsim`, and what infiniband-diags prints.
#[test]
fn umad_transport_gives_the_same_output() {
    if !needs() {
        return;
    }
    let name = "net.medium";
    let sim = IbSim::start(topologies_dir().join(name));
    for args in [&[][..], &["-p"][..]] {
        let via_umad = sim
            .umad2sim_command(env!("CARGO_BIN_EXE_mad"))
            .arg("ibnetdiscover")
            .args(args)
            .output()
            .unwrap();
        assert!(
            via_umad.status.success(),
            "{}",
            String::from_utf8_lossy(&via_umad.stderr)
        );
        let mut full = vec!["ibnetdiscover"];
        full.extend_from_slice(args);
        let via_ibsim = ours(&sim, &full);
        let t = theirs(&sim, "ibnetdiscover", args);
        let (u, _) = split_date(&text(&via_umad));
        let (i, _) = split_date(&text(&via_ibsim));
        let (th, _) = split_date(&text(&t));
        assert_eq!(u, i, "{name} {args:?}: umad vs --ibsim");
        assert_eq!(u, th, "{name} {args:?}: umad vs infiniband-diags");
    }
}

/// `--node-name-map FILE`, an output file argument and `-o 1` behave as
/// infiniband-diags' options do.
#[test]
fn node_name_map_output_file_and_window_options() {
    if !needs() {
        return;
    }
    let sim = IbSim::start(topologies_dir().join("net.2sw2path4hca"));
    let dir = std::env::temp_dir().join(format!("madstack-discover-opts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Map a switch and a CA (quoted, unquoted with a comment).
    let plain = text(&theirs(&sim, "ibnetdiscover", &["-l"]));
    let guids: Vec<&str> = plain
        .lines()
        .map(|l| l.split(" : ").nth(1).unwrap().split(' ').next().unwrap())
        .collect();
    let map = dir.join("map");
    std::fs::write(
        &map,
        format!(
            "# test map\n{} \"first mapped\"\n{}   second-mapped # comment\n",
            guids[0],
            guids[guids.len() - 1]
        ),
    )
    .unwrap();
    let m = map.to_str().unwrap();
    for args in [
        vec!["--node-name-map", m],
        vec!["--node-name-map", m, "-l"],
        vec!["--node-name-map", m, "-p"],
        vec!["-o", "1"],
    ] {
        compare_ibnetdiscover("net.2sw2path4hca", &sim, &args);
    }
    assert!(text(&ours(&sim, &["ibnetdiscover", "--node-name-map", m])).contains("first mapped"));
    // Output file.
    let (tf, of) = (dir.join("theirs.topo"), dir.join("ours.topo"));
    let t = theirs(&sim, "ibnetdiscover", &[tf.to_str().unwrap()]);
    let o = ours(&sim, &["ibnetdiscover", of.to_str().unwrap()]);
    assert!(t.status.success() && o.status.success());
    assert!(text(&o).is_empty());
    let (a, _) = split_date(&std::fs::read_to_string(&tf).unwrap());
    let (b, _) = split_date(&std::fs::read_to_string(&of).unwrap());
    assert_eq!(a, b);
    assert!(!b.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
