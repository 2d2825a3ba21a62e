//! `mad sm -x` (`--honor_guid2lid`, opensm.conf `honor_guid2lid_file`):
//! the LIDs of a guid2lid file in OpenSM's format
//! (`$OSM_CACHE_DIR/guid2lid`, `0xGUID 0xMIN 0xMAX` lines) are the LIDs
//! ibsim's ports hold after `mad --ibsim sm -x -o`, as the real
//! `ibnetdiscover` and `ibtracert` under libumad2sim see them; a bad
//! line is an error naming it. Each ibsim and `mad sm` started is
//! stopped by its PID. Outside CI a missing ibsim / infiniband-diags /
//! libumad2sim makes the ibsim test print "NOT RUN"; with `CI=true` it
//! fails it.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::diags::{diag, ibnetdiscover_lids};
use support::{IbSim, NEEDS_DIAGS};

const MAD: &str = env!("CARGO_BIN_EXE_mad");

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mad-g2l-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `mad --ibsim ARGS` on `sim` with `OSM_CACHE_DIR=cache`.
fn mad(sim: Option<&IbSim>, cache: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(MAD);
    c.arg("--ibsim")
        .args(args)
        .env("OSM_CACHE_DIR", cache)
        .env_remove("SIM_HOST")
        .env_remove("IBSIM_SERVER_NAME");
    if let Some(s) = sim {
        c.env("IBSIM_SOCKNAME", s.sockname());
    }
    // `output` waits for the child: it is reaped by its PID.
    c.output().unwrap()
}

#[test]
fn mad_sm_x_gives_ibsims_ports_the_lids_of_the_guid2lid_file() {
    if !support::require(NEEDS_DIAGS) || !support::require(&[("ibtracert", "infiniband-diags")]) {
        return;
    }
    let sim = IbSim::start(support::topologies_dir().join("net.2sw2path4hca"));
    let cache = temp_dir("ibsim");
    // Before any SM: every port by directed route, LID 0.
    let o = mad(Some(&sim), &cache, &["ibnetdiscover"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bare = ibnetdiscover_lids(&String::from_utf8_lossy(&o.stdout));
    assert!(bare.len() > 4 && bare.values().all(|l| *l == 0), "{bare:?}");
    // LIDs no SM would pick by itself: from 0x100 up, in reverse GUID
    // order, written as OpenSM writes them.
    let want: BTreeMap<u64, u16> = bare
        .keys()
        .rev()
        .enumerate()
        .map(|(k, g)| (*g, 0x100 + k as u16))
        .collect();
    let mut text = String::from("# written as OpenSM writes it\n");
    for (g, l) in &want {
        text.push_str(&format!("0x{g:016x} 0x{l:04x} 0x{l:04x}\n"));
    }
    std::fs::write(cache.join("guid2lid"), text).unwrap();
    let o = mad(Some(&sim), &cache, &["sm", "-x", "-o", "--json"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.lines().any(|l| l.contains("\"event\":\"guid2lid\"")
            && l.contains(&format!("\"lids\":{}", want.len()))),
        "{out}"
    );
    assert!(out.contains("\"event\":\"subnet_up\""), "{out}");
    let seen = ibnetdiscover_lids(&diag(&sim, "ibnetdiscover", &[]));
    assert_eq!(seen, want);
    // Routed by those LIDs: the first CA port reaches the last.
    let cas: Vec<u16> = want
        .iter()
        .filter(|(g, _)| bare.contains_key(g))
        .map(|(_, l)| *l)
        .collect();
    let (a, b) = (cas[0], cas[cas.len() - 1]);
    let t = diag(&sim, "ibtracert", &[&a.to_string(), &b.to_string()]);
    assert!(t.contains(&format!(" lid {b}-{b} ")), "{t}");
    drop(sim);
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn a_bad_guid2lid_line_is_an_error_naming_the_file_and_line() {
    let cache = temp_dir("bad");
    std::fs::write(
        cache.join("guid2lid"),
        "0x0000000000000001 0x0001 0x0001\n0x0000000000000002 0x0002\n",
    )
    .unwrap();
    let want = format!("{}:2: 2 words", cache.join("guid2lid").display());
    let o = mad(None, &cache, &["sm", "-x", "-o"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains(&want), "{err}");
    // The opensm.conf key does the same.
    let conf = cache.join("sm.conf");
    std::fs::write(&conf, "honor_guid2lid_file TRUE\n").unwrap();
    let o = mad(None, &cache, &["sm", "-F", conf.to_str().unwrap(), "-o"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains(&want), "{err}");
    let _ = std::fs::remove_dir_all(&cache);
}
