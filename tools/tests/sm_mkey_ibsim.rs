//! M_Key from `mad sm -F FILE` (OpenSM's `m_key`,
//! `m_key_protection_level`, `m_key_lease_period`), checked with the real
//! infiniband-diags under libumad2sim:
//!
//! - On the built-in fabric served over ibsim's protocol with no SM of its
//!   own (`mad sim --serve NAME --no-sm`), which enforces M_Key (IBA
//!   14.2.4): at protection level 2 a `smpquery` Get and an `ibportstate`
//!   Set from another host port without the key are refused, counted in
//!   the port's M_KeyViolations and reported to mad sm by Trap 256; with
//!   `-y KEY` the same tools read the key, level and lease back; mad sm
//!   keeps managing the fabric (a reroute after an inter-switch link
//!   fails, `ibtracert -y KEY` across it); a lease run out after a
//!   violation (while mad sm was held: running, it stops the lease timer)
//!   drops the protection, and mad sm's next light sweep finds that and
//!   programs the port again.
//! - On a real ibsim, which neither keeps nor checks M_Key (its PortInfo
//!   Set ignores the M_Key fields, its SMA reads no key): mad sm with the
//!   same settings brings the fabric up and keeps sweeping, and
//!   `smpquery portinfo` shows what ibsim lacks (M_Key 0, level 0).
//!
//! Every process is stopped by its PID. Outside CI a missing ibsim /
//! infiniband-diags / libumad2sim makes these tests print "NOT RUN"; with
//! `CI=true` it fails them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod sm_child;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use sm_child::MadSm;
use support::diags::{field, ibnetdiscover_lids};
use support::opensm::{require_sbin, sbin};
use support::served::Served;
use support::IbSim;

const MAD: &str = env!("CARGO_BIN_EXE_mad");
const TOPOLOGY: &str = "net.2sw2path4hca";
const KEY: &str = "0x00c0ffee00000001";
/// Hca2's port GUID in `net.2sw2path4hca` (the port the tests attack).
const HCA2: u64 = 0x10_0004;

fn needs() -> bool {
    require_sbin(&[
        ("ibsim", "ibsim-utils"),
        (support::UMAD2SIM, "libumad2sim0"),
        ("smpquery", "infiniband-diags"),
        ("ibportstate", "infiniband-diags"),
        ("ibtracert", "infiniband-diags"),
        ("ibnetdiscover", "infiniband-diags"),
    ])
}

fn conf(tag: &str, sweep: u32) -> PathBuf {
    conf_level(tag, sweep, 2)
}

fn conf_level(tag: &str, sweep: u32, level: u8) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mad-sm-mkey-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("sm.conf");
    std::fs::write(
        &p,
        format!(
            "m_key {KEY}\nm_key_protection_level {level}\nm_key_lease_period 60\nsweep_interval {sweep}\n"
        ),
    )
    .unwrap();
    p
}

/// A real diag on the served fabric, attached at node `host`.
fn diag_at(s: &Served, host: Option<&str>, program: &str, args: &[&str]) -> Output {
    support::output_attached(program, || {
        let mut c = s.umad2sim_command(sbin(program).to_str().unwrap());
        if let Some(h) = host {
            c.env("SIM_HOST", h);
        }
        c.args(args).stdin(Stdio::null());
        c
    })
}

fn ok(o: &Output) -> String {
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    text
}

/// Hca2's PortInfo read with the key (keys shown).
fn hca2_info(s: &Served, lid: &str) -> String {
    ok(&diag_at(
        s,
        None,
        "smpquery",
        &["-y", KEY, "-K", "portinfo", lid],
    ))
}

fn num(pi: &str, f: &str) -> u64 {
    let v = field(pi, f)
        .unwrap_or_else(|| panic!("no {f} in\n{pi}"))
        .trim();
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap(),
    }
}

fn lids(s: &Served) -> BTreeMap<u64, u16> {
    let l = ibnetdiscover_lids(&ok(&diag_at(s, None, "ibnetdiscover", &["-y", KEY])));
    assert!(!l.is_empty() && l.values().all(|&x| x != 0), "{l:?}");
    l
}

/// Waits until `cond` holds of Hca2's PortInfo (read with the key).
fn wait_info(s: &Served, lid: &str, what: &str, cond: impl Fn(&str) -> bool) -> String {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let pi = hca2_info(s, lid);
        if cond(&pi) {
            return pi;
        }
        assert!(Instant::now() < end, "{what}: never; last:\n{pi}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn protection_level_2_refuses_and_counts_smps_without_the_key_while_mad_sm_keeps_managing() {
    if !needs() {
        return;
    }
    let topo = support::topologies_dir().join(TOPOLOGY);
    let mut s = Served::start_with(Path::new(MAD), "mkey", &[topo.to_str().unwrap(), "--no-sm"]);
    let c = conf("builtin", 0);
    let cmd = s.command(&["sm", "--json", "-t", "1000", "-F", c.to_str().unwrap()]);
    let mut sm = MadSm::spawn(cmd);
    sm.wait("subnet_up", Duration::from_secs(60));

    let l = lids(&s);
    let hca2 = l[&HCA2].to_string();
    let pi = hca2_info(&s, &hca2);
    assert_eq!(
        num(&pi, "Mkey"),
        u64::from_str_radix(&KEY[2..], 16).unwrap(),
        "{pi}"
    );
    assert_eq!(num(&pi, "ProtectBits"), 2, "{pi}");
    assert_eq!(num(&pi, "MkeyLeasePeriod"), 60, "{pi}");
    assert_eq!(
        num(&pi, "MkeyViolations"),
        0,
        "mad sm's own SMPs were refused:\n{pi}"
    );

    // From Hca4, without the key: a Get is refused, and so is
    // ibportstate's Set (it gets no answer to the Get it starts with).
    let o = diag_at(
        &s,
        Some("Hca4"),
        "smpquery",
        &["-t", "100", "portinfo", &hca2],
    );
    assert!(!o.status.success(), "a Get without the key was answered");
    let o = diag_at(
        &s,
        Some("Hca4"),
        "ibportstate",
        &["-t", "100", &hca2, "1", "disable"],
    );
    assert!(!o.status.success(), "ibportstate without the key succeeded");
    let pi = hca2_info(&s, &hca2);
    assert!(num(&pi, "MkeyViolations") >= 2, "{pi}");
    assert_eq!(field(&pi, "LinkState").unwrap(), "Active", "{pi}");
    // The SMA reported the violations to the SM (Trap 256).
    let end = Instant::now() + Duration::from_secs(10);
    while !sm
        .seen
        .iter()
        .any(|v| v["event"] == "trap" && v["number"] == 256)
    {
        assert!(Instant::now() < end, "no Trap 256: {:#?}", sm.seen);
        let _ = sm.try_wait("trap", Duration::from_millis(200));
    }

    // mad sm keeps managing: one of the two inter-switch links fails;
    // mad sm (presenting its key) reroutes and the CAs still reach each
    // other.
    let _ = s.console("link down Switch1 3");
    sm.wait("sweep_done", Duration::from_secs(30));
    let hca1 = l[&0x10_0001].to_string();
    let t = ok(&diag_at(&s, None, "ibtracert", &["-y", KEY, &hca1, &hca2]));
    assert!(t.lines().any(|l| l.starts_with("To ")), "{t}");
    assert!(
        t.contains("[5]"),
        "the route takes the remaining link (port 5):\n{t}"
    );

    drop(sm);
}

/// Sends `sig` (STOP, CONT) to the process `pid` (one this test started).
fn signal(sig: &str, pid: u32) {
    let st = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn at_level_1_a_get_without_the_key_sees_m_key_0_and_a_set_is_refused_and_counted() {
    if !needs() {
        return;
    }
    let topo = support::topologies_dir().join(TOPOLOGY);
    let s = Served::start_with(Path::new(MAD), "lvl1", &[topo.to_str().unwrap(), "--no-sm"]);
    let c = conf_level("lvl1", 0, 1);
    let cmd = s.command(&["sm", "--json", "-t", "1000", "-F", c.to_str().unwrap()]);
    let mut sm = MadSm::spawn(cmd);
    sm.wait("subnet_up", Duration::from_secs(60));
    let hca2 = lids(&s)[&HCA2].to_string();
    // The Get goes through, with the key hidden.
    let pi = ok(&diag_at(
        &s,
        Some("Hca4"),
        "smpquery",
        &["-K", "portinfo", &hca2],
    ));
    assert_eq!(num(&pi, "Mkey"), 0, "{pi}");
    assert_eq!(num(&pi, "ProtectBits"), 1, "{pi}");
    // ibportstate's Set (disable) is dropped: no answer, the port stays
    // up, one violation.
    let o = diag_at(
        &s,
        Some("Hca4"),
        "ibportstate",
        &["-t", "100", &hca2, "1", "disable"],
    );
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let pi = hca2_info(&s, &hca2);
    assert_eq!(field(&pi, "LinkState").unwrap(), "Active", "{pi}");
    assert!(num(&pi, "MkeyViolations") >= 1, "{pi}");
    assert_eq!(
        num(&pi, "Mkey"),
        u64::from_str_radix(&KEY[2..], 16).unwrap(),
        "{pi}"
    );
    drop(sm);
}

#[test]
fn light_sweeps_restore_a_protection_whose_lease_ran_out() {
    if !needs() {
        return;
    }
    let topo = support::topologies_dir().join(TOPOLOGY);
    let mut s = Served::start_with(
        Path::new(MAD),
        "lease",
        &[topo.to_str().unwrap(), "--no-sm"],
    );
    let c = conf("lease", 1);
    let cmd = s.command(&["sm", "--json", "-t", "1000", "-F", c.to_str().unwrap()]);
    let mut sm = MadSm::spawn(cmd);
    sm.wait("subnet_up", Duration::from_secs(60));
    let l = lids(&s);
    let hca2 = l[&HCA2].to_string();
    // While mad sm runs, the lease cannot run out: its light sweeps read
    // the port with the key, and even its TrapRepress of the Trap 256
    // carries the key, each of which stops the timer (IBA 14.2.4.2). So
    // mad sm is held (SIGSTOP) while the violation happens and 61 s of
    // virtual time pass: the port drops its protection ...
    signal("STOP", sm.pid());
    let o = diag_at(
        &s,
        Some("Hca4"),
        "smpquery",
        &["-t", "50", "nodeinfo", &hca2],
    );
    assert!(!o.status.success());
    let _ = s.console("advance 61000");
    let pi = hca2_info(&s, &hca2);
    signal("CONT", sm.pid());
    assert_eq!(num(&pi, "ProtectBits"), 0, "the lease ran out:\n{pi}");
    // ... and mad sm's next light sweep finds that and a heavy sweep
    // programs the port again.
    let v = sm.wait("light_sweep_changed", Duration::from_secs(30));
    assert!(v.is_object());
    wait_info(&s, &hca2, "protection restored", |pi| {
        num(pi, "ProtectBits") == 2
    });
    drop(sm);
}

#[test]
fn on_ibsim_mad_sm_presents_its_key_and_keeps_sweeping_though_ibsim_keeps_no_m_key() {
    if !needs() {
        return;
    }
    let sim = IbSim::start(support::topologies_dir().join(TOPOLOGY));
    let c = conf("ibsim", 1);
    let mut sm = MadSm::start(&sim, &["-F", c.to_str().unwrap()]);
    sm.wait("subnet_up", Duration::from_secs(60));
    let bringup = sm.seen("sweep_done", "smps").as_u64().unwrap();
    // Light sweeps go on, each reading SwitchInfo of the 2 switches and,
    // level 2 being configured, PortInfo of the 6 LID-bearing ports with
    // the key, and find no change: ibsim answers M_Key 0 before and after
    // (it keeps none), which is no lapse.
    assert!(
        sm.try_wait("light_sweep_changed", Duration::from_millis(3500))
            .is_none(),
        "{:#?}",
        sm.seen
    );
    assert!(
        sm.seen
            .iter()
            .filter(|v| v["event"] == "sweep_done")
            .count()
            == 1,
        "a heavy sweep on an unchanged fabric: {:#?}",
        sm.seen
    );
    // ibsim keeps no M_Key: what mad sm set is not there to read.
    let l = ibnetdiscover_lids(&support::diags::diag(&sim, "ibnetdiscover", &[]));
    let pi = support::diags::diag(&sim, "smpquery", &["-K", "portinfo", &l[&HCA2].to_string()]);
    assert_eq!(num(&pi, "Mkey"), 0, "{pi}");
    assert_eq!(num(&pi, "ProtectBits"), 0, "{pi}");
    let st = std::process::Command::new("kill")
        .args(["-TERM", &sm.pid().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let exit = sm.wait("exit", Duration::from_secs(10));
    let sent = exit["smps_sent"].as_u64().unwrap();
    assert!(
        sent >= bringup + 2 * 8,
        "{sent} SMPs in all, {bringup} to bring up"
    );
}
