//! LMC over a real ibsim, read by the real infiniband-diags under
//! libumad2sim: `mad sm -l 2` on the 2-level fat tree (net.medium: 9
//! spines, each leaf linked twice to each) gives every CA port four
//! aligned LIDs (`smpquery portinfo` LMC 2, `ibnetdiscover` lmc 0 on the
//! switches), `ibtracert` from sampled sources to each of a port's four
//! LIDs on another leaf crosses four different spines, `saquery` answers
//! a PathRecord for each (SLID, DLID) pair of the ranges, lists the pairs
//! of equal path bits first when asked by GIDs, and finds a NodeRecord by
//! the last LID of a range; `mad check-routes` over the same ibsim counts
//! every LID of every range and finds no cycle under ftree. OpenSM run
//! with `lmc 2` on the same fabric gives the same shape (four LIDs a CA
//! port, distinct spines), checked by the same reader; asked for ftree it
//! logs "LMC > 0 is not supported by fat-tree routing" and routes
//! min-hop (OpenSM 3.3.23), where mad sm's ftree routes the ranges. Outside CI a
//! missing ibsim / infiniband-diags / libumad2sim / opensm makes a test
//! print "NOT RUN"; with `CI=true` it fails.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod sm_child;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use sm_child::MadSm;
use support::diags::{diag, diags_parallel, field};
use support::opensm::{require_sbin, OpenSm, NEEDS_OPENSM};
use support::{ibnetdiscover, IbSim, NEEDS_DIAGS};

const MAD: &str = env!("CARGO_BIN_EXE_mad");
const UP_TIMEOUT: Duration = Duration::from_secs(60);
const FABRIC: &str = "net.medium";

fn needs() -> bool {
    support::require(NEEDS_DIAGS)
        && support::require(&[
            ("smpquery", "infiniband-diags"),
            ("ibtracert", "infiniband-diags"),
            ("saquery", "infiniband-diags"),
        ])
}

/// The CA ports' base LIDs as ibnetdiscover lists them, and the text.
fn ca_lids(sim: &IbSim) -> (Vec<u16>, String) {
    let text = diag(sim, "ibnetdiscover", &[]);
    let disc = ibnetdiscover::parse(&text).unwrap();
    let lids = support::diags::ibnetdiscover_lids(&text);
    let cas: Vec<u16> = disc
        .nodes
        .values()
        .filter(|n| n.kind == "Ca")
        .flat_map(|n| n.port_guids.values())
        .filter_map(|g| lids.get(g).copied())
        .collect();
    assert!(!cas.is_empty(), "ibnetdiscover found no CA:\n{text}");
    (cas, text)
}

/// The hops of one `ibtracert` (its lines from the first switch on),
/// checking it ends at the port holding `base .. base + 4`.
fn hops(out: &str, dlid: u16, base: u16) -> Vec<String> {
    let last = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert!(
        last.starts_with("To ") && last.contains(&format!(" lid {base}-{} ", base + 3)),
        "ibtracert to LID {dlid} does not reach the port of LIDs {base}-{}:\n{out}",
        base + 3
    );
    out.lines()
        .filter(|l| l.trim_start().starts_with('['))
        .map(str::to_owned)
        .collect()
}

/// From a seeded sample of sources, `ibtracert` to each of the four LIDs
/// of CA ports: every trace reaches the port; where the route leaves the
/// source's leaf (more than two hops), the four routes are four distinct
/// paths through four distinct spines. Returns how many (source,
/// destination port) pairs crossed the spines.
fn four_paths(sim: &IbSim, who: &str, cas: &[u16]) -> usize {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut pairs = BTreeSet::new();
    while pairs.len() < 24 {
        let a = cas[(next() % cas.len() as u64) as usize];
        let b = cas[(next() % cas.len() as u64) as usize];
        if a != b {
            pairs.insert((a, b));
        }
    }
    let args: Vec<Vec<String>> = pairs
        .iter()
        .flat_map(|&(a, b)| (0..4).map(move |k| vec![a.to_string(), (b + k).to_string()]))
        .collect();
    let outs = diags_parallel(sim, "ibtracert", &args);
    let mut crossed = 0;
    for ((a, b), four) in pairs.iter().zip(outs.chunks(4)) {
        let paths: Vec<Vec<String>> = four
            .iter()
            .enumerate()
            .map(|(k, o)| hops(o, b + k as u16, *b))
            .collect();
        if paths[0].len() <= 2 {
            // Source and destination on one leaf: one path only.
            continue;
        }
        crossed += 1;
        let distinct: BTreeSet<&Vec<String>> = paths.iter().collect();
        // The spine: the second hop line ("[out] -> switch port {guid}...").
        let spines: BTreeSet<&str> = paths
            .iter()
            .map(|p| p[1].split('{').nth(1).unwrap_or(""))
            .collect();
        assert!(
            distinct.len() == 4 && spines.len() == 4,
            "{who}: the four LIDs of {b} from {a} do not take four paths through four spines:\n{}",
            four.join("\n")
        );
    }
    crossed
}

/// `mad --ibsim check-routes --json` on `sim`.
fn check_routes(sim: &IbSim) -> serde_json::Value {
    let o = sim
        .mad_command(MAD, &["check-routes", "--json"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "check-routes ({}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The (slid, dlid) of every PathRecord `saquery` printed.
fn path_pairs(out: &str) -> Vec<(u16, u16)> {
    let num = |l: &str| {
        l.rsplit('.')
            .next()
            .unwrap_or("")
            .trim()
            .parse::<u16>()
            .unwrap_or(0)
    };
    let mut v = Vec::new();
    let mut dlid = None;
    for l in out.lines() {
        let t = l.trim();
        if t.starts_with("dlid.") {
            dlid = Some(num(t));
        } else if t.starts_with("slid.") {
            if let Some(d) = dlid.take() {
                v.push((num(t), d));
            }
        }
    }
    v
}

#[test]
fn mad_sm_lmc_2_ftree_gives_four_lids_a_port_distinct_paths_and_paths_from_the_sa() {
    mad_sm_lmc_2("ftree");
}

/// The same with min-hop (its own picker: a round robin over a leaf's
/// uplinks).
#[test]
fn mad_sm_lmc_2_minhop_gives_four_lids_a_port_distinct_paths_and_paths_from_the_sa() {
    mad_sm_lmc_2("minhop");
}

fn mad_sm_lmc_2(engine: &str) {
    if !needs() {
        return;
    }
    let sim = IbSim::start(support::topologies_dir().join(FABRIC));
    let mut sm = MadSm::start(&sim, &["-l", "2", "-R", engine]);
    sm.wait("subnet_up", UP_TIMEOUT);
    assert_eq!(sm.seen("sweep_done", "errors"), 0, "{:#?}", sm.seen);
    let (cas, text) = ca_lids(&sim);
    assert_eq!(cas.len(), 324);
    // Aligned ranges of four, none shared; the switches keep LMC 0.
    let mut all = BTreeSet::new();
    for &l in &cas {
        assert_eq!(l % 4, 0, "CA base LID {l} not aligned to 4");
        for k in 0..4 {
            assert!(all.insert(l + k), "LID {} given twice", l + k);
        }
    }
    let switches = text.lines().filter(|l| l.starts_with("Switch")).count();
    assert_eq!(switches, 27);
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("Switch") && l.ends_with(" lmc 0"))
            .count(),
        switches,
        "{text}"
    );
    for &l in &cas[..8] {
        let pi = diag(&sim, "smpquery", &["portinfo", &(l + 2).to_string()]);
        assert_eq!(
            field(&pi, "LMC"),
            Some("2"),
            "portinfo of LID {}:\n{pi}",
            l + 2
        );
        assert_eq!(field(&pi, "Lid"), Some(l.to_string().as_str()), "{pi}");
    }
    let crossed = four_paths(&sim, &format!("mad sm -R {engine}"), &cas);
    assert!(
        crossed >= 12,
        "only {crossed} sampled pairs crossed the spines"
    );

    // The SA: a PathRecord for each (SLID, DLID) pair of two ranges.
    let (a, b) = (cas[0], cas[cas.len() - 1]);
    let args: Vec<Vec<String>> = (0..4)
        .flat_map(|i| {
            (0..4).map(move |j| vec!["--src-to-dst".to_owned(), format!("{}:{}", a + i, b + j)])
        })
        .collect();
    let outs = diags_parallel(&sim, "saquery", &args);
    for (arg, out) in args.iter().zip(&outs) {
        let (s, d) = arg[1].split_once(':').unwrap();
        let want = (s.parse::<u16>().unwrap(), d.parse::<u16>().unwrap());
        assert_eq!(
            path_pairs(out).first(),
            Some(&want),
            "saquery {arg:?}:\n{out}"
        );
    }
    // By GIDs: the pairs of equal path bits come first (as many as the
    // first MAD carries: libumad2sim cuts answers to one MAD).
    let gid_of = |lid: u16| {
        let pi = diag(&sim, "smpquery", &["nodeinfo", &lid.to_string()]);
        let g = field(&pi, "PortGuid")
            .unwrap()
            .trim_start_matches("0x")
            .to_owned();
        let g = u64::from_str_radix(&g, 16).unwrap();
        format!(
            "fe80::{:x}:{:x}:{:x}:{:x}",
            g >> 48,
            (g >> 32) & 0xffff,
            (g >> 16) & 0xffff,
            g & 0xffff
        )
    };
    let out = diag(
        &sim,
        "saquery",
        &["--sgid-to-dgid", &format!("{}-{}", gid_of(a), gid_of(b))],
    );
    let got = path_pairs(&out);
    assert!(
        got.len() >= 2 && got[..2] == [(a, b), (a + 1, b + 1)],
        "saquery --sgid-to-dgid:\n{out}"
    );
    // A NodeRecord by the last LID of a range carries the base LID.
    let out = diag(&sim, "saquery", &["NR", &(b + 3).to_string()]);
    assert!(
        out.contains(&format!("lid.....................{b}\n")),
        "saquery NR {}:\n{out}",
        b + 3
    );

    // check-routes reads the LMC and checks every LID of every range.
    let r = check_routes(&sim);
    assert_eq!(r["pairs"], 324 * 323 * 4, "{r}");
    assert_eq!(r["deadlock_free"], true, "{r}");
    assert_eq!(r["unreachable"], 0, "{r}");
    sm.stop();
}

#[test]
fn opensm_lmc_2_on_the_same_fabric_gives_the_same_shape() {
    if !needs() || !require_sbin(NEEDS_OPENSM) {
        return;
    }
    let sim = IbSim::start(support::topologies_dir().join(FABRIC));
    let osm = OpenSm::start(&sim, "lmc 2\nrouting_engine ftree", UP_TIMEOUT);
    // OpenSM's ftree refuses LMC > 0 and its min-hop routes instead.
    let log = osm.log();
    assert!(
        log.contains("LMC > 0 is not supported by fat-tree routing")
            && log.contains("minhop tables configured"),
        "{}",
        osm.log_tail(30)
    );
    let (cas, _) = ca_lids(&sim);
    assert_eq!(cas.len(), 324);
    assert!(cas.iter().all(|l| l % 4 == 0), "{cas:?}");
    let pi = diag(&sim, "smpquery", &["portinfo", &cas[0].to_string()]);
    assert_eq!(field(&pi, "LMC"), Some("2"), "{pi}");
    let crossed = four_paths(&sim, "OpenSM", &cas);
    assert!(
        crossed >= 12,
        "only {crossed} sampled pairs crossed the spines"
    );
    let r = check_routes(&sim);
    assert_eq!(r["pairs"], 324 * 323 * 4, "{r}");
    assert_eq!(r["deadlock_free"], true, "{r}");
    drop(osm);
}

/// `mad sm --lmc 8`, `mad sm -l x`, `mad sim -l 9` are refused (exit 2)
/// naming the option; an LMC whose ranges do not fit the switches'
/// tables is reported by `mad sim`, not a panic.
#[test]
fn a_bad_lmc_is_refused_naming_the_option_and_ranges_that_do_not_fit_are_reported() {
    for args in [
        &["sm", "--lmc", "8"][..],
        &["sm", "-l", "x"],
        &["sm", "--lmc=", "-o"],
        &["sim", "-l", "9"],
        &["sim", "--lmc", "two"],
    ] {
        let o = Command::new(MAD).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--lmc"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // 324 CA ports x 128 LIDs: LID 41599 is past the built-in switches'
    // LinearFDBCap (30720).
    let o = Command::new(MAD)
        .args(["sim", "-l", "7", "-q", "--script", "/dev/null"])
        .arg(support::topologies_dir().join(FABRIC))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("did not bring the subnet up")
            && err.contains("LinearFDBCap 30720 cannot hold LID 41599"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
