//! ibnetdiscover's cache file and the tools that read it, against
//! infiniband-diags 44 on the same ibsim fabric (before any SM and after
//! OpenSM): the real `ibnetdiscover --load-cache` reads the cache ours
//! wrote and ours reads the real one's, both printing what the real tool
//! prints (the two cache files are byte-identical too); `--diff`,
//! iblinkinfo's `--load-cache` / `--diff` / `--filterdownports` and
//! ibqueryerrors' `--load-cache` print what the real ones print; a
//! broken cache file fails as the real tools fail (same stdout and exit
//! status), with the fault named on stderr.
//!
//! Fabrics: ibsim's two-switch example with two-port HCAs, one with odd
//! node descriptions, a 3x3 torus of switches, and one whose links have
//! mixed widths and speeds (`tools/tests/fixtures/topologies`).

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

mod diags_compare;

use std::path::Path;
use std::time::Duration;

use diags_compare::{differ, fixture, needs, ours, theirs, Run, Scratch};
use support::opensm::OpenSm;
use support::IbSim;

/// The fabrics the cache is compared on.
const FABRICS: &[&str] = diags_compare::FOUR_FABRICS;

/// The date line of the topology output, which differs between runs.
fn undated(r: &Run) -> Run {
    Run {
        stdout: r
            .stdout
            .lines()
            .map(|l| {
                if l.starts_with("# Topology file: generated on ") {
                    "# Topology file: generated on (date)"
                } else {
                    l
                }
            })
            .fold(String::new(), |mut s, l| {
                s.push_str(l);
                s.push('\n');
                s
            }),
        stderr_first: r.stderr_first.clone(),
        code: r.code,
    }
}

/// Writes both caches of the fabric; returns (theirs, ours).
fn write_caches(
    sim: &IbSim,
    dir: &Scratch,
    tag: &str,
    fails: &mut Vec<String>,
) -> (String, String) {
    let (t, o) = (
        dir.path(&format!("{tag}.theirs")),
        dir.path(&format!("{tag}.ours")),
    );
    let rt = theirs(sim, "ibnetdiscover", &["--cache", &t]);
    let ro = ours(sim, "ibnetdiscover", &["--cache", &o]);
    if undated(&rt) != undated(&ro) {
        fails.push(differ(
            &format!("{tag}: ibnetdiscover --cache"),
            "theirs",
            &rt,
            "ours",
            &ro,
        ));
    }
    if std::fs::read(&t).unwrap() != std::fs::read(&o).unwrap() {
        fails.push(format!("{tag}: the cache files differ ({t} vs {o})"));
    }
    (t, o)
}

/// Reading caches: the real tool reads ours as its own, ours reads the
/// real one's as the real tool does, and from a fresh cache both print
/// what the real tool prints from the fabric.
/// `all`: every option; else the main forms only.
fn load_cases(sim: &IbSim, dir: &Scratch, tag: &str, all: bool, fails: &mut Vec<String>) {
    let (t, o) = write_caches(sim, dir, tag, fails);
    let map = dir.path("map");
    let first_switch = theirs(sim, "ibnetdiscover", &["-S"]).stdout;
    let guid = first_switch
        .split_whitespace()
        .nth(2)
        .unwrap_or("0x0")
        .to_owned();
    std::fs::write(&map, format!("{guid} \"a mapped name\"\n")).unwrap();
    for args in [
        &[][..],
        &["-p"],
        &["-l"],
        &["-H"],
        &["-S"],
        &["-R"],
        &["-g"],
        &["-f"],
        &["-m"],
        &["-s"],
        &["--node-name-map", &map],
        &["-p", "--node-name-map", &map],
    ]
    .into_iter()
    .filter(|a| all || a.len() < 2 && !a.contains(&"-g") && !a.contains(&"-s"))
    {
        fn with<'a>(file: &'a str, args: &[&'a str]) -> Vec<&'a str> {
            let mut v = vec!["--load-cache", file];
            v.extend_from_slice(args);
            v
        }
        let real_on_theirs = undated(&theirs(sim, "ibnetdiscover", &with(&t, args)));
        let real_on_ours = undated(&theirs(sim, "ibnetdiscover", &with(&o, args)));
        let ours_on_theirs = undated(&ours(sim, "ibnetdiscover", &with(&t, args)));
        let ours_on_ours = undated(&ours(sim, "ibnetdiscover", &with(&o, args)));
        let what = format!("{tag}: ibnetdiscover --load-cache {args:?}");
        if real_on_ours != real_on_theirs {
            fails.push(differ(
                &what,
                "real on its cache",
                &real_on_theirs,
                "real on ours",
                &real_on_ours,
            ));
        }
        if ours_on_theirs != real_on_theirs {
            fails.push(differ(
                &what,
                "real on its cache",
                &real_on_theirs,
                "ours on it",
                &ours_on_theirs,
            ));
        }
        if ours_on_ours != real_on_theirs {
            fails.push(differ(
                &what,
                "real on its cache",
                &real_on_theirs,
                "ours on ours",
                &ours_on_ours,
            ));
        }
        // What only discovery has (-s lines, MADs used) aside, a cache
        // prints what the fabric printed.
        if !args.contains(&"-s") && !args.contains(&"-m") {
            let fabric = undated(&theirs(sim, "ibnetdiscover", args));
            if fabric != real_on_ours {
                fails.push(differ(
                    &what,
                    "real from the fabric",
                    &fabric,
                    "real on ours",
                    &real_on_ours,
                ));
            }
        }
    }
}

/// The real ibnetdiscover, ours, loading the cache and writing it again:
/// the cache of a loaded fabric loads to the same output.
fn recache_case(sim: &IbSim, dir: &Scratch, t: &str, fails: &mut Vec<String>) {
    let again = dir.path("again");
    let r = ours(
        sim,
        "ibnetdiscover",
        &["--load-cache", t, "--cache", &again],
    );
    let back = theirs(sim, "ibnetdiscover", &["--load-cache", &again]);
    if undated(&r) != undated(&back) || r.code != Some(0) {
        fails.push(differ(
            "re-cached",
            "ours loading",
            &r,
            "real on the re-cache",
            &back,
        ));
    }
}

/// The cache is read and written as infiniband-diags does, in both
/// directions, on every fixture fabric, before an SM and after OpenSM.
#[test]
fn ibnetdiscover_cache_files_interoperate_both_ways() {
    if !needs(&["ibnetdiscover"]) {
        return;
    }
    let mut fails = Vec::new();
    for name in FABRICS {
        let dir = Scratch::new(name);
        let sim = IbSim::start(fixture(name));
        load_cases(&sim, &dir, &format!("{name} (no SM)"), true, &mut fails);
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        load_cases(&sim, &dir, &format!("{name} (OpenSM)"), false, &mut fails);
        let t = dir.path(&format!("{name} (OpenSM).theirs"));
        recache_case(&sim, &dir, &t, &mut fails);
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// The caches the diff cases compare: each fabric before an SM and after
/// OpenSM, by the real ibnetdiscover.
fn diff_caches(dir: &Scratch) -> Vec<String> {
    let mut v = Vec::new();
    for name in ["net.2sw2path4hca2port", "net.torus3x3", "net.mixed-rates"] {
        let sim = IbSim::start(fixture(name));
        let before = dir.path(&format!("{name}.nosm"));
        assert_eq!(
            theirs(&sim, "ibnetdiscover", &["--cache", &before]).code,
            Some(0)
        );
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        let after = dir.path(&format!("{name}.sm"));
        assert_eq!(
            theirs(&sim, "ibnetdiscover", &["--cache", &after]).code,
            Some(0)
        );
        v.push(before);
        v.push(after);
    }
    v
}

/// An ibsim fabric that can be started again: a client killed by a
/// signal never says goodbye, and ibsim has few client slots.
struct Sim {
    name: &'static str,
    sim: IbSim,
}

impl Sim {
    fn start(name: &'static str) -> Self {
        Self {
            name,
            sim: IbSim::start(fixture(name)),
        }
    }
}

/// Compares a case; where the real tool dies of a signal (its `--diff`
/// crashes on a switch port whose LID changed and that has no link:
/// see tools/README.md) ours must still finish and print something, and
/// ibsim is started again.
fn compare_or_crash(s: &mut Sim, what: &str, tool: &str, args: &[&str], fails: &mut Vec<String>) {
    let t = theirs(&s.sim, tool, args);
    let o = ours(&s.sim, tool, args);
    if t.code.is_none() {
        if o.code != Some(0) || o.stdout.is_empty() {
            fails.push(differ(
                &format!("{what}: {tool} {args:?} (the real one crashed)"),
                "theirs",
                &t,
                "ours",
                &o,
            ));
        }
        s.sim = IbSim::start(fixture(s.name));
    } else if t != o {
        fails.push(differ(
            &format!("{what}: {tool} {args:?}"),
            "theirs",
            &t,
            "ours",
            &o,
        ));
    }
}

/// `ibnetdiscover --diff` and `iblinkinfo --diff` / `--filterdownports`
/// with every `--diffcheck` key, between caches of the same fabric before
/// and after the SM and of different fabrics, and `--load-cache` of
/// iblinkinfo and ibqueryerrors, print what the real tools print.
#[test]
fn diff_and_load_cache_of_the_fabric_tools_match_infiniband_diags() {
    if !needs(&["ibnetdiscover", "iblinkinfo", "ibqueryerrors"]) {
        return;
    }
    let dir = Scratch::new("diff");
    let caches = diff_caches(&dir);
    let mut fails = Vec::new();
    let mut sim = Sim::start("net.2sw2path4hca2port");
    let pairs: Vec<(&str, &str)> = vec![
        (&caches[0], &caches[1]),
        (&caches[1], &caches[0]),
        (&caches[1], &caches[3]),
        (&caches[2], &caches[3]),
        (&caches[5], &caches[1]),
        (&caches[4], &caches[5]),
    ];
    for (old, new) in &pairs {
        for check in [
            None,
            Some("sw"),
            Some("ca,port"),
            Some("CA,NodeDesc,port"),
            Some("sw,port,nodedesc"),
            Some("lid"),
            Some("sw,lid,port"),
            Some("router,port"),
        ] {
            let mut args = vec!["--load-cache", new, "--diff", old];
            if let Some(c) = check {
                args.extend(["--diffcheck", c]);
            }
            compare_or_crash(&mut sim, "diff", "ibnetdiscover", &args, &mut fails);
        }
        for check in [
            None,
            Some("port"),
            Some("state"),
            Some("lid,port"),
            Some("nodedesc,port"),
            Some("state,lid"),
        ] {
            for line in [false, true] {
                let mut args = vec!["--load-cache", new, "--diff", old];
                if let Some(c) = check {
                    args.extend(["--diffcheck", c]);
                }
                if line {
                    args.push("-l");
                }
                compare_or_crash(&mut sim, "diff", "iblinkinfo", &args, &mut fails);
            }
        }
        for extra in [
            &[][..],
            &["--switches-only"],
            &["--cas-only", "-l"],
            &["-d"],
        ] {
            let mut args = vec!["--load-cache", new, "--filterdownports", old];
            args.extend_from_slice(extra);
            compare_or_crash(&mut sim, "filterdownports", "iblinkinfo", &args, &mut fails);
        }
    }
    // Against the live fabric with an SM, and one node's diff.
    let mut sim = Sim::start("net.2sw2path4hca2port");
    let _sm = OpenSm::start(&sim.sim, "", Duration::from_secs(120));
    for args in [
        vec!["--diff", caches[1].as_str()],
        vec!["--diff", caches[0].as_str(), "-l"],
        vec!["--diff", caches[3].as_str(), "--switches-only"],
        vec!["--load-cache", caches[1].as_str(), "-S", "0x200000"],
        vec!["--load-cache", caches[1].as_str(), "-D", "0"],
        vec!["--load-cache", caches[1].as_str(), "-l", "--cas-only"],
        vec!["--diffcheck", "port,bogus"],
    ] {
        compare_or_crash(&mut sim, "live", "iblinkinfo", &args, &mut fails);
    }
    for args in [
        vec!["--diff", caches[1].as_str()],
        vec!["--diff", caches[0].as_str(), "--diffcheck", "ca,port"],
        vec!["--diffcheck", "sw,nope"],
    ] {
        compare_or_crash(&mut sim, "live", "ibnetdiscover", &args, &mut fails);
    }
    for args in [
        vec!["--load-cache", caches[1].as_str()],
        vec!["--load-cache", caches[1].as_str(), "--data"],
        vec!["--load-cache", caches[1].as_str(), "--switch", "-r"],
        vec!["--load-cache", caches[1].as_str(), "-S", "0x200000"],
        vec!["--load-cache", caches[0].as_str()],
        vec!["--load-cache", caches[1].as_str(), "-D", "0"],
    ] {
        compare_or_crash(&mut sim, "live", "ibqueryerrors", &args, &mut fails);
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// Broken cache files: what the real tools print on stdout and their
/// exit status, and ours names the fault on stderr (the real ones say
/// nothing, or only "loading cached fabric failed").
#[test]
fn a_broken_cache_fails_as_infiniband_diags_and_says_why() {
    if !needs(&["ibnetdiscover", "iblinkinfo", "ibqueryerrors"]) {
        return;
    }
    let dir = Scratch::new("broken");
    let sim = IbSim::start(fixture("net.2sw2path4hca2port"));
    let good = dir.path("good");
    assert_eq!(
        ours(&sim, "ibnetdiscover", &["--cache", &good]).code,
        Some(0)
    );
    let bytes = std::fs::read(&good).unwrap();
    let mut broken: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "truncated"),
        ("truncated", bytes[..bytes.len() / 2].to_vec(), "truncated"),
        (
            "garbage",
            b"not a cache at all, just some text".to_vec(),
            "not an ibnetdiscover cache",
        ),
    ];
    let mut version = bytes.clone();
    version[4] = 9;
    broken.push(("version", version, "unsupported cache version 9"));
    let mut counts = bytes.clone();
    counts[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    broken.push(("counts", counts, "promises"));
    let mut from = bytes.clone();
    from[16] ^= 0xff;
    broken.push(("from", from, "discovery started from"));
    let mut fails = Vec::new();
    for (name, content, reason) in &broken {
        let path = dir.path(name);
        std::fs::write(&path, content).unwrap();
        for (tool, args) in [
            ("ibnetdiscover", vec!["--load-cache", path.as_str()]),
            ("ibnetdiscover", vec!["--diff", path.as_str()]),
            ("iblinkinfo", vec!["--load-cache", path.as_str()]),
            ("iblinkinfo", vec!["--diff", path.as_str()]),
            ("iblinkinfo", vec!["--filterdownports", path.as_str()]),
            ("ibqueryerrors", vec!["--load-cache", path.as_str()]),
        ] {
            let t = theirs(&sim, tool, &args);
            let o = ours(&sim, tool, &args);
            if (t.stdout.as_str(), t.code) != (o.stdout.as_str(), o.code) {
                fails.push(differ(
                    &format!("{name}: {tool} {args:?}"),
                    "theirs",
                    &t,
                    "ours",
                    &o,
                ));
            }
            let full = std::process::Command::new(env!("CARGO_BIN_EXE_mad"))
                .arg("--ibsim")
                .arg(tool)
                .args(&args)
                .env("IBSIM_SOCKNAME", sim.sockname())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&full.stderr);
            if !err.contains(reason) {
                fails.push(format!(
                    "{name}: {tool} {args:?}: stderr does not say {reason:?}: {err}"
                ));
            }
        }
    }
    // A missing file names the file.
    let missing = dir.path("missing");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mad"))
        .args(["ibnetdiscover", "--load-cache", &missing])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&o.stderr).contains(&missing));
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// `--cache` replaces an existing file, and a cache that cannot be
/// written fails as the real tool does.
#[test]
fn ibnetdiscover_cache_replaces_a_file_and_reports_an_unwritable_one() {
    if !needs(&["ibnetdiscover"]) {
        return;
    }
    let dir = Scratch::new("write");
    let sim = IbSim::start(fixture("net.2sw2path4hca2port"));
    let path = dir.path("old");
    std::fs::write(&path, b"something else").unwrap();
    let r = ours(&sim, "ibnetdiscover", &["--cache", &path]);
    assert_eq!(r.code, Some(0));
    assert_eq!(
        &std::fs::read(&path).unwrap()[..4],
        &0x8FE7_832Bu32.to_le_bytes()
    );
    let nowhere = Path::new(&dir.path("no-such-dir")).join("cache");
    let nowhere = nowhere.to_str().unwrap();
    let t = theirs(&sim, "ibnetdiscover", &["--cache", nowhere, "-l"]);
    let o = ours(&sim, "ibnetdiscover", &["--cache", nowhere, "-l"]);
    assert_eq!((t.stdout, t.code), (o.stdout, o.code));
}

/// ibcacheedit edits a cache as the real one does: same stdout, first
/// stderr line and exit status for every edit and every bad argument,
/// and the file it writes loads (in the real ibnetdiscover) to what the
/// real ibcacheedit's file loads to; unedited, the bytes are the same.
#[test]
fn ibcacheedit_matches_infiniband_diags() {
    if !needs(&["ibcacheedit", "ibnetdiscover"]) {
        return;
    }
    let dir = Scratch::new("cacheedit");
    let sim = IbSim::start(fixture("net.2sw2path4hca2port"));
    let orig = dir.path("orig");
    assert_eq!(
        theirs(&sim, "ibnetdiscover", &["--cache", &orig]).code,
        Some(0)
    );
    let (t, o) = (dir.path("t"), dir.path("o"));
    let mut fails = Vec::new();
    for edit in [
        &[][..],
        &["--switchguid", "0x200000:0x300000"],
        &["--caguid", "0x100003:0x400003"],
        &["--caguid", "0x200000:0x1"],
        &["--sysimgguid", "0x200000:0x555"],
        &["--sysimgguid", "0x9:0x555"],
        &["--portguid", "0x100003:0x100004:0x999"],
        &["--portguid", "0x200000:0x200000:0x777"],
        &["--portguid", "0x123:0x1:0x2"],
        &["--portguid", "0x100003:0x1:0x2"],
        &["--switchguid", "0x200000"],
        &["--caguid", "0x1:"],
        &["--portguid", "1:2"],
        &[
            "--switchguid",
            "0x200000:0x300000",
            "--caguid",
            "0x100003:0x400003",
            "--sysimgguid",
            "0x100000:0x42",
        ],
    ] {
        let _ = std::fs::remove_file(&t);
        let _ = std::fs::remove_file(&o);
        let with = |out: &str| -> Vec<String> {
            let mut v: Vec<String> = edit.iter().map(|s| (*s).to_owned()).collect();
            v.push(orig.clone());
            v.push(out.to_owned());
            v
        };
        let (wt, wo) = (with(&t), with(&o));
        let rt = theirs(
            &sim,
            "ibcacheedit",
            &wt.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let ro = ours(
            &sim,
            "ibcacheedit",
            &wo.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        if rt != ro {
            fails.push(differ(
                &format!("ibcacheedit {edit:?}"),
                "theirs",
                &rt,
                "ours",
                &ro,
            ));
        }
        if Path::new(&t).exists() != Path::new(&o).exists() {
            fails.push(format!(
                "ibcacheedit {edit:?}: one wrote a file, the other not"
            ));
        } else if Path::new(&t).exists() {
            let lt = undated(&theirs(&sim, "ibnetdiscover", &["--load-cache", &t]));
            let lo = undated(&theirs(&sim, "ibnetdiscover", &["--load-cache", &o]));
            if lt != lo {
                fails.push(differ(
                    &format!("ibcacheedit {edit:?}: loaded"),
                    "theirs",
                    &lt,
                    "ours",
                    &lo,
                ));
            }
            if edit.is_empty() && std::fs::read(&t).unwrap() != std::fs::read(&o).unwrap() {
                fails.push("ibcacheedit without edits: the files differ".into());
            }
        }
    }
    for args in [&[][..], &["only-one"], &["-x"], &["/nonexistent/cache", &o]] {
        let rt = theirs(&sim, "ibcacheedit", args);
        let ro = ours(&sim, "ibcacheedit", args);
        if (rt.stdout.as_str(), rt.code) != (ro.stdout.as_str(), ro.code) {
            fails.push(differ(
                &format!("ibcacheedit {args:?}"),
                "theirs",
                &rt,
                "ours",
                &ro,
            ));
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// ibcacheedit under its own name (a symlink to `mad`) reports as
/// ibcacheedit, and `--json` gives the shape of its schema, on success
/// and on failure.
#[test]
fn ibcacheedit_by_its_name_and_in_json() {
    let dir = Scratch::new("cacheedit-name");
    let link = dir.0.join("ibcacheedit");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mad"), &link).unwrap();
    // Found in PATH, so that argv[0] is the bare name (as the C tool's).
    let o = std::process::Command::new("ibcacheedit")
        .env("PATH", &dir.0)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(255));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "ibcacheedit: iberror: failed: original cache file not specified\n"
    );
    // A cache of the built-in fabric, edited with --json.
    let orig = dir.path("orig");
    let new = dir.path("new");
    let mad = env!("CARGO_BIN_EXE_mad");
    let made = std::process::Command::new(mad)
        .args(["--sim", "ibnetdiscover", "--cache", &orig])
        .output()
        .unwrap();
    assert_eq!(made.status.code(), Some(0));
    let sys = mad_tools::discover::cache::load(&orig).unwrap().nodes[0]
        .info
        .system_image_guid;
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/ibcacheedit.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let edit = format!("{sys:#x}:0x1234");
    for (args, ok) in [
        (
            vec!["--sysimgguid", edit.as_str(), orig.as_str(), new.as_str()],
            true,
        ),
        (
            vec!["--caguid", "0x1:0x2", orig.as_str(), new.as_str()],
            false,
        ),
    ] {
        let o = std::process::Command::new(mad)
            .arg("--json")
            .arg("ibcacheedit")
            .args(&args)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(validator.is_valid(&v), "{args:?}: {v}");
        assert_eq!(v["complete"], ok, "{args:?}: {v}");
        assert_eq!(o.status.success(), ok);
        if ok {
            assert!(v["edits"].as_u64().unwrap() >= 1);
            let back = mad_tools::discover::cache::load(&new).unwrap();
            assert!(back
                .nodes
                .iter()
                .any(|n| n.info.system_image_guid == 0x1234));
        }
    }
}

/// ibhosts, ibswitches, ibnodes and ibrouters (shell scripts over
/// ibnetdiscover in infiniband-diags 44) print what the real ones print
/// on the torus and on the fabric of mixed link rates, from the fabric
/// and from a topology file the real ibnetdiscover wrote.
#[test]
fn node_list_scripts_match_infiniband_diags_on_the_torus_and_mixed_rates() {
    if !needs(&[
        "ibhosts",
        "ibswitches",
        "ibnodes",
        "ibrouters",
        "ibnetdiscover",
    ]) {
        return;
    }
    let mut fails = Vec::new();
    for name in ["net.torus3x3", "net.mixed-rates"] {
        let dir = Scratch::new(&format!("scripts-{name}"));
        let sim = IbSim::start(fixture(name));
        let topo = dir.path("topo");
        assert_eq!(theirs(&sim, "ibnetdiscover", &[&topo]).code, Some(0));
        for tool in ["ibhosts", "ibswitches", "ibnodes", "ibrouters"] {
            for args in [&[][..], &[topo.as_str()], &["-t", "500"]] {
                diags_compare::compare(&sim, name, tool, args, &mut fails);
            }
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// ibidsverify (a Perl script over `ibnetdiscover -g` in
/// infiniband-diags 44) prints what the real one prints and exits as it
/// does: regenerating the shared topology file (`-R`), reading the one
/// the other wrote, before an SM (every LID 0) and after OpenSM, with
/// its usage errors.
#[test]
fn ibidsverify_matches_infiniband_diags() {
    if !needs(&["ibidsverify", "ibnetdiscover"]) {
        return;
    }
    let mut fails = Vec::new();
    for name in FABRICS {
        let sim = IbSim::start(fixture(name));
        let what = format!("{name} (no SM)");
        diags_compare::compare(&sim, &what, "ibidsverify", &["-R"], &mut fails);
        // Each reads the file the other wrote.
        let _ = theirs(&sim, "ibidsverify", &["-R"]);
        diags_compare::compare(&sim, &what, "ibidsverify", &[], &mut fails);
        let _ = ours(&sim, "ibidsverify", &["-R"]);
        diags_compare::compare(&sim, &what, "ibidsverify", &[], &mut fails);
        for args in [&["-x"][..], &["-h"], &["-Rx"], &["-h", "-x"], &["-C"]] {
            diags_compare::compare(&sim, &what, "ibidsverify", args, &mut fails);
        }
        let _sm = OpenSm::start(&sim, "", Duration::from_secs(120));
        diags_compare::compare(
            &sim,
            &format!("{name} (OpenSM)"),
            "ibidsverify",
            &["-R"],
            &mut fails,
        );
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}
