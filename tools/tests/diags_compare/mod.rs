//! What the comparisons with infiniband-diags over ibsim share (used by
//! `diags_rest_ibsim.rs`, `diags_cache_ibsim.rs`, `diags_perf_ibsim.rs`, `diags_cc_vendor.rs`, `diags_bench.rs`): running ours and
//! the real tool against the same ibsim fabric, and comparing stdout, the
//! first line of stderr and the exit status. Not every test uses every
//! helper, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::opensm::{require_sbin, sbin};
use crate::support::{self, IbSim, NEEDS_DIAGS};

/// The fixture fabrics every command is compared on.
pub const FABRICS: &[&str] = &["net.2sw2path4hca2port", "net.odd-names"];

/// A topology of `tools/tests/fixtures/topologies`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topologies")
        .join(name)
}

/// True when infiniband-diags' `tools`, libumad2sim, ibsim and OpenSM
/// are there (else "NOT RUN", or a failure with `CI=true`).
pub fn needs(tools: &[&str]) -> bool {
    let mut n: Vec<(&str, &str)> = tools.iter().map(|t| (*t, "infiniband-diags")).collect();
    n.push(("opensm", "opensm"));
    support::require(NEEDS_DIAGS) && require_sbin(&n)
}

/// A fixture fabric on ibsim brought up by OpenSM (OpenSM stops first
/// when it is dropped).
pub struct Routed {
    _sm: crate::support::opensm::OpenSm,
    /// The ibsim running the fabric.
    pub sim: IbSim,
}

/// Fixture fabric `name` on ibsim, brought up by OpenSM.
pub fn routed(name: &str) -> Routed {
    let sim = IbSim::start(fixture(name));
    let sm = crate::support::opensm::OpenSm::start(&sim, "", std::time::Duration::from_secs(120));
    Routed { _sm: sm, sim }
}

/// Runs `cases` on each fixture fabric of `names` brought up by OpenSM,
/// when infiniband-diags' `tools` are there (else "NOT RUN", or a
/// failure with `CI=true`); fails with every difference `cases`
/// collected.
pub fn on_each_routed(
    tools: &[&str],
    names: &[&str],
    mut cases: impl FnMut(&str, &IbSim, &mut Vec<String>),
) {
    if !needs(tools) {
        return;
    }
    let mut fails = Vec::new();
    for name in names {
        let up = routed(name);
        cases(name, &up.sim, &mut fails);
    }
    assert!(fails.is_empty(), "{}", fails.join("\n====\n"));
}

/// Our `mad --sim TOOL ARGS` on the built-in fabric: (exit status,
/// stdout).
pub fn on_sim(tool: &str, args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_mad"))
        .args(["--sim", tool])
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// What a run printed and returned.
#[derive(Debug, PartialEq, Eq)]
pub struct Run {
    /// Standard output.
    pub stdout: String,
    /// The first line of stderr (PIDs masked).
    pub stderr_first: String,
    /// The exit status.
    pub code: Option<i32>,
}

/// The first line of stderr that is not libumad2sim's own, with the PID
/// of `ibwarn: [PID]` masked.
pub fn first_stderr_line(stderr: &[u8]) -> String {
    let t = String::from_utf8_lossy(stderr);
    let line = t
        .lines()
        .find(|l| !l.contains("sim_connect: attached as client"))
        .unwrap_or("");
    // `ibwarn: [12345] f: ...` -> `ibwarn: [PID] f: ...`
    for tag in ["ibwarn: [", "ibpanic: ["] {
        if let Some(rest) = line.strip_prefix(tag) {
            if let Some((_, tail)) = rest.split_once(']') {
                return format!("{tag}PID]{tail}");
            }
        }
    }
    line.to_owned()
}

/// What a finished process printed and returned.
pub fn summarize(o: &Output) -> Run {
    Run {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr_first: first_stderr_line(&o.stderr),
        code: o.status.code(),
    }
}

/// Our `mad --ibsim TOOL ARGS` against `sim`.
pub fn ours(sim: &IbSim, tool: &str, args: &[&str]) -> Run {
    summarize(&ours_output(sim, tool, args))
}

/// Our `mad --ibsim TOOL ARGS` against `sim`: what the process gave
/// (a panic fails the test).
pub fn ours_output(sim: &IbSim, tool: &str, args: &[&str]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_mad"))
        .current_dir(std::env::temp_dir())
        .arg("--ibsim")
        .arg(tool)
        .args(args)
        .env("IBSIM_SOCKNAME", sim.sockname())
        .env_remove("SIM_HOST")
        .env_remove("IBSIM_SERVER_NAME")
        .env_remove("IBSIM_SERVER_PORT")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("panicked"),
        "{tool} {args:?} panicked: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// infiniband-diags' `tool args` under libumad2sim against `sim`, by
/// its bare name (found in PATH, so that argv[0] is the bare name as
/// ours is).
pub fn theirs(sim: &IbSim, tool: &str, args: &[&str]) -> Run {
    summarize(&theirs_output(sim, tool, args))
}

/// As [`theirs`]: what the process gave.
pub fn theirs_output(sim: &IbSim, tool: &str, args: &[&str]) -> Output {
    let dir = sbin(tool).parent().unwrap().to_path_buf();
    let o = support::output_attached(tool, || {
        let mut c = sim.umad2sim_command(tool);
        c.env(
            "PATH",
            format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", dir.display()),
        )
        .args(args)
        .stdin(Stdio::null());
        c
    });
    o
}

/// A run with all of its stderr: libumad2sim's own lines left out, and
/// the PIDs of libibmad's `[PID]` and `[pid PID]` masked in both streams.
#[derive(Debug, PartialEq, Eq)]
pub struct FullRun {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The exit status.
    pub code: Option<i32>,
}

/// `text` with each `[PID]` and `[pid PID]` of libibmad's lines masked.
pub fn mask_pids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('[') {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        let (prefix, body) = match rest.strip_prefix("pid ") {
            Some(b) => ("pid ", b),
            None => ("", rest),
        };
        let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && body[digits..].starts_with(']') {
            out.push_str(prefix);
            out.push_str("PID");
            rest = &body[digits..];
        }
    }
    out.push_str(rest);
    out
}

/// [`FullRun`] of a finished process.
pub fn full(o: &Output) -> FullRun {
    let err = String::from_utf8_lossy(&o.stderr);
    let stderr: String = err
        .lines()
        .filter(|l| !l.contains("sim_connect: attached as client"))
        .map(|l| format!("{l}\n"))
        .collect();
    FullRun {
        stdout: mask_pids(&String::from_utf8_lossy(&o.stdout)),
        stderr: mask_pids(&stderr),
        code: o.status.code(),
    }
}

/// Compares one case with all of stderr ([`FullRun`]); a difference is
/// collected in `fails`.
pub fn compare_full(sim: &IbSim, what: &str, tool: &str, args: &[&str], fails: &mut Vec<String>) {
    let t = full(&theirs_output(sim, tool, args));
    let o = full(&ours_output(sim, tool, args));
    if t != o {
        fails.push(format!(
            "{what}: {tool} {args:?}\n--- infiniband-diags ({:?}):\n{}{}--- ours ({:?}):\n{}{}",
            t.code, t.stderr, t.stdout, o.code, o.stderr, o.stdout
        ));
    }
}

/// Compares one case; a difference is collected in `fails`. The one
/// difference accepted is the documented one of [`cut_table`].
pub fn compare(sim: &IbSim, what: &str, tool: &str, args: &[&str], fails: &mut Vec<String>) {
    compare_with(sim, what, tool, args, fails, |t, o| {
        t == o || cut_table(tool, t, o)
    });
}

/// The documented difference (tools/README.md, exit statuses): an SA
/// answer that arrived cut to its first MAD (no RMPP under libumad2sim
/// or over ibsim's protocol) is printed as saquery prints it, but ours
/// says so on stderr and exits 3 where saquery exits 0.
pub fn cut_table(tool: &str, theirs: &Run, ours: &Run) -> bool {
    tool == "saquery"
        && theirs.code == Some(0)
        && ours.code == Some(3)
        && theirs.stdout == ours.stdout
        && ours.stderr_first.contains("arrived cut to its first MAD")
}

/// Compares one case by `same(theirs, ours)`; a difference is collected
/// in `fails`.
pub fn compare_with(
    sim: &IbSim,
    what: &str,
    tool: &str,
    args: &[&str],
    fails: &mut Vec<String>,
    same: impl Fn(&Run, &Run) -> bool,
) {
    // (`theirs` makes a run libumad2sim failed to attach again.)
    let t = theirs(sim, tool, args);
    let o = ours(sim, tool, args);
    if !same(&t, &o) {
        fails.push(differ(
            &format!("{what}: {tool} {args:?}"),
            "infiniband-diags",
            &t,
            "ours",
            &o,
        ));
    }
}

/// The report of two runs that differ.
pub fn differ(what: &str, a_name: &str, a: &Run, b_name: &str, b: &Run) -> String {
    format!(
        "{what}\n--- {a_name} ({:?}, stderr {:?}):\n{}--- {b_name} ({:?}, stderr {:?}):\n{}",
        a.code, a.stderr_first, a.stdout, b.code, b.stderr_first, b.stdout
    )
}

/// The fabrics of `tests/fixtures/topologies` the scripts are compared
/// on: ibsim's two-switch example with two-port HCAs, one with odd node
/// descriptions, a 3x3 torus of switches, and one whose links have mixed
/// widths and speeds.
pub const FOUR_FABRICS: &[&str] = &[
    "net.2sw2path4hca2port",
    "net.odd-names",
    "net.torus3x3",
    "net.mixed-rates",
];

/// A scratch directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A new directory for `what` under the temporary directory.
    pub fn new(what: &str) -> Self {
        let d = std::env::temp_dir().join(format!(
            "madstack-diags-{}-{}",
            std::process::id(),
            what.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        ));
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }

    /// The path of `name` in the directory.
    pub fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The port GUIDs of a fabric (from the real ibnetdiscover's `-p`
/// report): a switch's and a CA's.
pub fn some_guids(sim: &IbSim) -> (String, String) {
    let o = sim.umad2sim_output(sbin("ibnetdiscover").to_str().unwrap(), ["-p"]);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    let guid = |kind: &str| {
        t.lines()
            .find(|l| l.starts_with(kind))
            .and_then(|l| l.split_whitespace().nth(3))
            .unwrap()
            .to_owned()
    };
    (guid("SW"), guid("CA"))
}

/// infiniband-diags' `tool args` under libumad2sim against the served
/// built-in fabric: (exit status, stdout).
pub fn real_on_served(
    served: &crate::support::served::Served,
    tool: &str,
    args: &[&str],
) -> (Option<i32>, String) {
    // By its bare name, as ours runs (its IBEXIT line starts with it).
    let dir = sbin(tool).parent().unwrap().to_path_buf();
    let o = std::process::Command::new(tool)
        .env(
            "PATH",
            format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", dir.display()),
        )
        .args(args)
        .env("LD_PRELOAD", crate::support::UMAD2SIM)
        .env("IBSIM_SOCKNAME", served.name())
        .env_remove("SIM_HOST")
        .env_remove("IBSIM_SERVER_NAME")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// True when `ours` lies between `before` and `after` (two runs of the
/// real tool around ours), by [`check_bracketed`]'s rule.
pub fn bracketed(before: &str, ours: &str, after: &str) -> bool {
    check_bracketed(before, ours, after).is_ok()
}

/// Checks `ours` against two runs of the real tool around it, `before`
/// and `after`: the same lines, and in each line the same words, where
/// those two agree; where a word differs (a counter moved) ours must be
/// the same text with a trailing number (a `,` or `]` after it left
/// out) between theirs, or, for a human-readable form such as
/// `(12.060KB)`, a value between theirs. The error names the first line
/// that is not bracketed.
pub fn check_bracketed(before: &str, ours: &str, after: &str) -> Result<(), String> {
    let (b, o, a): (Vec<&str>, Vec<&str>, Vec<&str>) = (
        before.lines().collect(),
        ours.lines().collect(),
        after.lines().collect(),
    );
    if b.len() != o.len() || a.len() != o.len() {
        return Err(format!("{} / {} / {} lines", b.len(), o.len(), a.len()));
    }
    for (i, ((lb, lo), la)) in b.iter().zip(&o).zip(&a).enumerate() {
        if lb == la {
            if lb != lo {
                return Err(format!("line {}: {lo:?}, want {lb:?}", i + 1));
            }
            continue;
        }
        let (wb, wo, wa): (Vec<&str>, Vec<&str>, Vec<&str>) = (
            lb.split(' ').collect(),
            lo.split(' ').collect(),
            la.split(' ').collect(),
        );
        let words_bracketed = wb.len() == wo.len()
            && wa.len() == wo.len()
            && wb
                .iter()
                .zip(&wo)
                .zip(&wa)
                .all(|((xb, xo), xa)| word_bracketed(xb, xo, xa));
        if !words_bracketed {
            return Err(format!(
                "line {}: {lo:?} not between {lb:?} and {la:?}",
                i + 1
            ));
        }
    }
    Ok(())
}

/// One word of [`check_bracketed`]: equal where theirs agree, else a
/// moved number of ours between theirs.
fn word_bracketed(before: &str, ours: &str, after: &str) -> bool {
    if before == after {
        return before == ours;
    }
    if let (Some((pb, nb)), Some((po, no)), Some((pa, na))) =
        (split_num(before), split_num(ours), split_num(after))
    {
        return pb == po && po == pa && nb <= no && no <= na;
    }
    match (human(before), human(ours), human(after)) {
        (Some(hb), Some(ho), Some(ha)) => hb <= ho && ho <= ha,
        _ => false,
    }
}

/// The trailing number of a word (a `,` or `]` after it left out), and
/// the text before it.
fn split_num(word: &str) -> Option<(&str, u64)> {
    let word = word.trim_end_matches([',', ']']);
    let digits = word
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_digit())
        .last()?
        .0;
    Some((&word[..digits], word[digits..].parse().ok()?))
}

/// The value of a human-readable number as ibqueryerrors prints one
/// after a counter, `(12.060KB)` or `(3.000K)` (a `]` after it left
/// out): the number times 1024 to the power of its unit.
fn human(word: &str) -> Option<f64> {
    let inner = word
        .trim_end_matches(']')
        .strip_prefix('(')?
        .strip_suffix(')')?;
    let split = inner
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(inner.len());
    let (value, unit) = inner.split_at(split);
    let power = match unit.trim_end_matches('B') {
        "" => 0,
        u => 1 + "KMGTPE".find(u).filter(|_| u.len() == 1)?,
    };
    Some(value.parse::<f64>().ok()? * 1024f64.powi(i32::try_from(power).ok()?))
}
