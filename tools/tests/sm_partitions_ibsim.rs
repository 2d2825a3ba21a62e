//! Partitions in `mad sm --Pconfig` on a real ibsim (`net.2sw2path4hca`,
//! mad sm at Switch1), read with the real infiniband-diags under
//! libumad2sim: a partitions.conf with two tenants (Hca1 + Hca2, Hca3 +
//! Hca4, each pair across the two switches) gives the P_Key tables
//! `smpquery pkeys` shows on the CA ports, the SM's port and the switch
//! ports facing the CAs; `saquery` gets a PathRecord within a tenant,
//! with its P_Key, and none between tenants; the IPoIB broadcast groups
//! of the `ipoib` partitions are listed by `saquery -g` to their members
//! only. OpenSM 3.3 given the same
//! file on its own ibsim of the same fabric programs the same tables and
//! refuses the same PathRecord and lists the same broadcast groups. A malformed line is refused naming it.
//! Every process started is stopped by its PID. Outside CI a missing
//! ibsim / OpenSM / infiniband-diags / libumad2sim makes these tests
//! print "NOT RUN"; with `CI=true` it fails them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod sm_child;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use sm_child::MadSm;
use support::diags::{diag, ibnetdiscover_lids};
use support::opensm::{require_sbin, OpenSm, NEEDS_OPENSM};
use support::{IbSim, NEEDS_DIAGS};

const MAD: &str = env!("CARGO_BIN_EXE_mad");
const TOPOLOGY: &str = "net.2sw2path4hca";

/// Port GUIDs of the fixture's CAs (ibsim's numbering, as the built-in
/// fabric's).
const HCA1: u64 = 0x10_0001;
const HCA2: u64 = 0x10_0004;
const HCA3: u64 = 0x10_0007;
const HCA4: u64 = 0x10_000a;

/// Directed routes from Switch1 (where both SMs and the diags attach).
const ROUTES: &[(&str, &[&str], [u16; 2])] = &[
    ("Hca1", &["0,1"], [0x7FFF, 0x8001]),
    ("Hca3", &["0,2"], [0x7FFF, 0x8002]),
    ("Hca2", &["0,3,1"], [0x7FFF, 0x8001]),
    ("Hca4", &["0,3,2"], [0x7FFF, 0x8002]),
    ("Switch1 port 1 (to Hca1)", &["0", "1"], [0x7FFF, 0x8001]),
    ("Switch1 port 2 (to Hca3)", &["0", "2"], [0x7FFF, 0x8002]),
    ("Switch2 port 2 (to Hca4)", &["0,3", "2"], [0x7FFF, 0x8002]),
    ("Switch1 port 0 (the SM's)", &["0"], [0xFFFF, 0]),
];

fn needs() -> bool {
    support::require(NEEDS_DIAGS)
        && support::require(&[
            ("smpquery", "infiniband-diags"),
            ("saquery", "infiniband-diags"),
        ])
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mad-sm-parts-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The two tenants' partitions.conf.
fn partitions_file(test: &str) -> PathBuf {
    let p = scratch(test).join("partitions.conf");
    std::fs::write(
        &p,
        format!(
            "# two tenants; the default partition limited but for the SM\n\
             Default=0x7fff,ipoib : ALL=limited, SELF=full ;\n\
             tenantA=0x0001, ipoib : {HCA1:#x}=full, {HCA2:#x}=full ;\n\
             tenantB=0x0002, defmember=full :\n    {HCA3:#x},\n    {HCA4:#x} ;\n"
        ),
    )
    .unwrap();
    p
}

/// The first entries of a P_Key table as `smpquery pkeys` prints it
/// (`   0: 0x7fff 0x8001 ...`).
fn pkeys(sim: &IbSim, route: &[&str]) -> Vec<u16> {
    let mut args = vec!["-D", "pkeys"];
    args.extend_from_slice(route);
    let out = diag(sim, "smpquery", &args);
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("0:"))
        .unwrap_or_else(|| panic!("smpquery pkeys {route:?}:\n{out}"));
    line.split_whitespace()
        .skip(1)
        .map(|w| u16::from_str_radix(w.trim_start_matches("0x"), 16).unwrap())
        .collect()
}

/// Every table of [`ROUTES`], by name (first two entries).
fn tables(sim: &IbSim) -> BTreeMap<&'static str, [u16; 2]> {
    ROUTES
        .iter()
        .map(|(name, route, _)| {
            let t = pkeys(sim, route);
            (*name, [t[0], t[1]])
        })
        .collect()
}

/// `saquery --src-to-dst` between the ports with these GUIDs: the
/// P_Key of the PathRecord printed, or None when there is none.
fn path_pkey(sim: &IbSim, a: u64, b: u64) -> Option<String> {
    let lids = ibnetdiscover_lids(&diag(sim, "ibnetdiscover", &[]));
    let (la, lb) = (lids[&a], lids[&b]);
    let out = sim.umad2sim_output("saquery", ["--src-to-dst", &format!("{la}:{lb}")]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !text.contains("PathRecord dump") {
        return None;
    }
    assert!(
        text.contains(&format!("dlid....................{lb}\n")),
        "{text}"
    );
    text.lines()
        .find_map(|l| l.trim().strip_prefix("pkey...................."))
        .map(str::to_owned)
}

/// The MGIDs `saquery -g` lists (MCMemberRecords), asked from `host`
/// (`SIM_HOST`; None: Switch1, the SM's node).
fn mgids(sim: &IbSim, host: Option<&str>) -> std::collections::BTreeSet<String> {
    let mut c = sim.umad2sim_command("saquery");
    c.arg("-g");
    if let Some(h) = host {
        c.env("SIM_HOST", h);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "saquery -g: {o:?}");
    let listed: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("MGID"))
        .map(|r| r.trim_start_matches('.').to_owned())
        .collect();
    // saquery under libumad2sim counts records from the datagram's
    // length: an answer sent whole (256 bytes) would list its zero
    // padding as records with MGID ::.
    assert!(
        !listed.iter().any(|m| m == "::"),
        "zero padding read as records: {listed:?}"
    );
    listed.into_iter().collect()
}

/// The IPoIB broadcast groups of the two `ipoib` partitions.
const BROADCAST: [&str; 2] = ["ff12:401b:8001::ffff:ffff", "ff12:401b:ffff::ffff:ffff"];

/// Tenant A's broadcast group is listed to Hca1 (a member), not to the
/// SM's port (in the default partition only), nor to Hca3 (tenant B).
fn check_groups(sim: &IbSim, who: &str) {
    let g = mgids(sim, Some("Hca1"));
    assert_eq!(
        g,
        BROADCAST.iter().map(|m| (*m).to_owned()).collect(),
        "{who}, Hca1"
    );
    for host in [None, Some("Hca3")] {
        let g = mgids(sim, host);
        assert_eq!(g.len(), 1, "{who}, {host:?}: {g:?}");
        assert!(g.contains(BROADCAST[1]), "{who}, {host:?}: {g:?}");
    }
}

#[test]
fn mad_sm_pconfig_programs_p_key_tables_and_refuses_paths_between_tenants() {
    if !needs() {
        return;
    }
    let parts = partitions_file("mad");
    let sim = IbSim::start(support::topologies_dir().join(TOPOLOGY));
    let mut sm = MadSm::start(&sim, &["--Pconfig", parts.to_str().unwrap()]);
    sm.wait("subnet_up", Duration::from_secs(60));
    assert_eq!(sm.seen("sweep_done", "errors"), 0, "{:#?}", sm.seen);
    assert_eq!(sm.seen("partitions", "partitions"), 3, "{:#?}", sm.seen);

    let got = tables(&sim);
    for (name, _, want) in ROUTES {
        assert_eq!(got[name], *want, "{name}: {got:#x?}");
    }
    assert_eq!(path_pkey(&sim, HCA1, HCA2).as_deref(), Some("0x8001"));
    assert_eq!(path_pkey(&sim, HCA3, HCA4).as_deref(), Some("0x8002"));
    assert_eq!(path_pkey(&sim, HCA1, HCA3), None, "between tenants");
    assert_eq!(path_pkey(&sim, HCA4, HCA2), None, "between tenants");
    check_groups(&sim, "mad sm");
    sm.stop();
    let _ = std::fs::remove_dir_all(parts.parent().unwrap());
}

#[test]
fn opensm_given_the_same_partitions_programs_the_same_tables() {
    if !needs() || !require_sbin(NEEDS_OPENSM) {
        return;
    }
    let parts = partitions_file("osm");
    let sim = IbSim::start(support::topologies_dir().join(TOPOLOGY));
    let osm = OpenSm::start(
        &sim,
        &format!("partition_config_file {}", parts.display()),
        Duration::from_secs(30),
    );
    let got = tables(&sim);
    for (name, _, want) in ROUTES {
        assert_eq!(got[name], *want, "OpenSM, {name}: {got:#x?}");
    }
    assert_eq!(path_pkey(&sim, HCA1, HCA2).as_deref(), Some("0x8001"));
    assert_eq!(path_pkey(&sim, HCA1, HCA3), None, "OpenSM: between tenants");
    check_groups(&sim, "OpenSM");
    drop(osm);
    let _ = std::fs::remove_dir_all(parts.parent().unwrap());
}

#[test]
fn a_malformed_partitions_line_is_refused_naming_it() {
    let dir = scratch("bad");
    let bad = dir.join("partitions.conf");
    std::fs::write(
        &bad,
        "Default=0x7fff : ALL=full ;\n# tenants\ntenantA=0x0001 : 0x100001=full,\n  hca2 ;\n",
    )
    .unwrap();
    let o = Command::new(MAD)
        .args(["sm", "--Pconfig", bad.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}: line 4: 'hca2' is neither a port GUID",
            bad.display()
        )),
        "{err}"
    );
    let conf = dir.join("sm.conf");
    std::fs::write(&conf, format!("partition_config_file {}\n", bad.display())).unwrap();
    let o = Command::new(MAD)
        .args(["sm", "-F", conf.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("sm.conf:1") && err.contains("line 4"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
