//! `mad sim --Pconfig FILE`: the built-in fabric's SM-lite given a
//! partitions.conf with two tenants, served in ibsim's protocol
//! (`--serve`) and read by `mad --ibsim` commands in other processes:
//! `smpquery pkeys` shows each tenant's table; a PMA query from a host
//! of tenant A (where clients naming no node attach: host-2) to a host
//! of tenant B goes unanswered, the packets dropped at host-3 (both ends
//! only limited members of the default partition) and counted in its
//! PortInfo P_KeyViolations and in the fabric's `stats`; from host-7 (a
//! full member of the default partition) the same query is answered. A malformed line is refused naming it. The served fabric
//! is stopped by `quit` on its console, then reaped.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::served::Served;

const MAD: &str = env!("CARGO_BIN_EXE_mad");

/// LIDs SM-lite gives the default fabric (stable: by discovery order).
const HOST2: &str = "3";
const HOST3: &str = "4";

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mad-sim-parts-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Tenant A: host-2, host-5; tenant B: host-3, host-6; host-7 (a
/// management host) and the SM full members of the default partition,
/// the others limited (port GUIDs of the built-in default fabric).
fn partitions_file(dir: &Path) -> PathBuf {
    let p = dir.join("partitions.conf");
    std::fs::write(
        &p,
        "Default=0x7fff : ALL=limited, SELF=full, 0x100013=full ;\n\
         tenantA=0x0001 : 0x100004=full, 0x10000d=full ;\n\
         tenantB=0x0002 : 0x100007=full, 0x100010=full ;\n",
    )
    .unwrap();
    p
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The first table line of `mad --ibsim smpquery pkeys LID`.
fn pkeys(s: &Served, lid: &str) -> String {
    let o = s.mad(&["smpquery", "pkeys", lid]);
    assert!(o.status.success(), "{o:?}");
    stdout(&o).lines().next().unwrap().trim().to_owned()
}

/// P_KeyViolations of the port with `lid`, as smpquery prints it.
fn pkey_violations(s: &Served, lid: &str) -> u64 {
    let o = s.mad(&["smpquery", "portinfo", lid]);
    let text = stdout(&o);
    text.lines()
        .find_map(|l| l.strip_prefix("PkeyViolations:"))
        .map(|v| v.trim_start_matches('.').parse().unwrap())
        .unwrap_or_else(|| panic!("{text}"))
}

#[test]
fn served_fabric_with_two_tenants_shows_their_tables_and_drops_between_them() {
    let dir = scratch("served");
    let parts = partitions_file(&dir);
    let mut s = Served::start_with(
        Path::new(MAD),
        "pk",
        &["--Pconfig", parts.to_str().unwrap()],
    );
    assert!(pkeys(&s, HOST2).starts_with("0: 0x7fff 0x8001 0x0000"));
    assert!(pkeys(&s, HOST3).starts_with("0: 0x7fff 0x8002 0x0000"));
    assert!(
        pkeys(&s, "1").starts_with("0: 0xffff 0x0000"),
        "the SM's port"
    );
    assert_eq!(pkey_violations(&s, HOST3), 0);

    // From host-2 (tenant A) to host-3 (tenant B): dropped and counted.
    let o = s.mad(&["perfquery", HOST3, "1"]);
    assert!(!o.status.success(), "answered across tenants: {o:?}");
    assert!(pkey_violations(&s, HOST3) > 0);
    let stats = s.console("stats");
    assert!(stats.contains("dropped PKey: "), "{stats}");

    // From host-7, a full member of the default partition.
    assert!(pkeys(&s, "11").starts_with("0: 0xffff 0x0000"));
    let o = s
        .command(&["perfquery", HOST3, "1"])
        .env("SIM_HOST", "host-7")
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(stdout(&o).contains("PortXmitData"), "{}", stdout(&o));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mad_sim_refuses_a_malformed_partitions_line_naming_it() {
    let dir = scratch("bad");
    let bad = dir.join("partitions.conf");
    std::fs::write(&bad, "A=0x1 : 0x100004=full ;\nB=0x2, sl=16 : ALL ;\n").unwrap();
    let o = Command::new(MAD)
        .args(["sim", "--Pconfig", bad.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("line 2: sl=16 is out of range"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
