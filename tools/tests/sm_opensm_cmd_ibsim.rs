//! `mad --ibsim sm --json` (the binary, as a child process) next to
//! OpenSM 3.3 on one ibsim fabric (`net.2sw2path4hca`): mad sm attached
//! at Hca1, OpenSM under libumad2sim at Hca2 (`SIM_HOST`), both setting
//! IsSM on their ports. Checked: mad sm stands by under a better OpenSM,
//! polls it, and takes over when OpenSM is killed (by its PID) within
//! the polling timeout x retries, keeping every LID; OpenSM stands by
//! under a better mad sm; a better OpenSM joining gets the fabric by
//! HANDOVER (OpenSM Master and SUBNET UP, mad sm Standby, no LID
//! changes) and the real `saquery` then gets its answers from OpenSM's
//! SA. Every process started is stopped by its PID. Outside CI a
//! missing ibsim / OpenSM / infiniband-diags / libumad2sim makes these
//! tests print "NOT RUN"; with `CI=true` it fails them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod sm_child;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use sm_child::MadSm;
use support::diags::{diag, ibnetdiscover_lids};
use support::opensm::{require_sbin, OpenSm, NEEDS_OPENSM};
use support::IbSim;

const TOPOLOGY: &str = "net.2sw2path4hca";
/// Both SMs poll every second; two polls missed make the master lost.
const POLLING_MS: u64 = 1000;
const POLLING_RETRIES: u32 = 2;
/// mad sm's SMP timeout (ms).
const TIMEOUT_MS: u64 = 250;

fn needs() -> bool {
    require_sbin(NEEDS_OPENSM) && require_sbin(&[("ibnetdiscover", "infiniband-diags")])
}

/// Every port's LID as ibnetdiscover reads it (by GUID), none 0.
fn lids(sim: &IbSim) -> BTreeMap<u64, u16> {
    let l = ibnetdiscover_lids(&diag(sim, "ibnetdiscover", &[]));
    assert!(!l.is_empty() && l.values().all(|&x| x != 0), "{l:?}");
    l
}

/// A config file for mad sm with the tests' polling settings (OpenSM's
/// key names), in a directory of this test's own.
fn sm_conf(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mad-sm-osm-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("sm.conf");
    std::fs::write(
        &p,
        format!(
            "sminfo_polling_timeout {POLLING_MS}\npolling_retry_number {POLLING_RETRIES}\n\
             sweep_interval 1\n"
        ),
    )
    .unwrap();
    p
}

/// `mad --ibsim sm --json` at Hca1 with priority `priority` and
/// OpenSM's default SM_Key (OpenSM 3.3.23 ignores an SM whose SMInfo
/// carries another key than its own).
fn mad_sm(sim: &IbSim, test: &str, priority: u8) -> MadSm {
    let conf = sm_conf(test);
    MadSm::start_at(
        sim,
        Some("Hca1"),
        &[
            "-F",
            conf.to_str().unwrap(),
            "-p",
            &priority.to_string(),
            "-k",
            "1",
            "-t",
            &TIMEOUT_MS.to_string(),
        ],
    )
}

/// OpenSM at Hca2 with priority `priority` and the tests' polling
/// settings, once `until` is in its log.
fn opensm(sim: &IbSim, priority: u8, until: &str) -> OpenSm {
    let conf = format!(
        "sm_priority {priority}\nsminfo_polling_timeout {POLLING_MS}\n\
         polling_retry_number {POLLING_RETRIES}\n"
    );
    OpenSm::start_at(sim, Some("Hca2"), &conf, until, Duration::from_secs(15))
}

/// Waits (10 s at most) for mad sm's `state` event naming `state`,
/// among those seen already or coming.
fn wait_state(sm: &mut MadSm, state: &str) {
    let is = |v: &serde_json::Value| v["event"] == "state" && v["state"] == state;
    let end = Instant::now() + Duration::from_secs(10);
    while !sm.seen.iter().any(is) {
        assert!(
            Instant::now() < end,
            "mad sm not {state} within 10 s: {:#?}",
            sm.seen
        );
        let _ = sm.try_wait("state", Duration::from_millis(100));
    }
}

/// No `state` or `master_lost` event for `d` (mad sm keeps its state).
fn keeps_state(sm: &mut MadSm, d: Duration) {
    let n = sm.seen.len();
    let end = Instant::now() + d;
    while Instant::now() < end {
        let _ = sm.try_wait("exit", Duration::from_millis(100));
    }
    let changed: Vec<_> = sm.seen[n..]
        .iter()
        .filter(|v| v["event"] == "state" || v["event"] == "master_lost")
        .collect();
    assert!(changed.is_empty(), "mad sm changed state: {changed:#?}");
}

#[test]
fn mad_sm_stands_by_under_a_better_opensm_polls_it_and_takes_over_when_it_is_killed() {
    if !needs() {
        return;
    }
    let sim = IbSim::start(support::topologies_dir().join(TOPOLOGY));
    let osm = opensm(&sim, 15, "SUBNET UP");
    let before = lids(&sim);
    let mut sm = mad_sm(&sim, "a", 1);
    let remote = sm.wait("remote_sm", Duration::from_secs(10));
    assert_eq!(remote["state"], "MASTER", "{remote}");
    assert_eq!(remote["priority"], 15, "{remote}");
    wait_state(&mut sm, "STANDBY");
    assert!(
        !sm.seen
            .iter()
            .any(|v| v["event"] == "state" && v["state"] == "MASTER"),
        "{:#?}",
        sm.seen
    );
    // Polling: while OpenSM answers, mad sm stays Standby (two polls
    // missed would make it master) and configures nothing.
    keeps_state(&mut sm, Duration::from_secs(3));
    assert!(
        !sm.seen.iter().any(|v| v["event"] == "subnet_up"),
        "{:#?}",
        sm.seen
    );
    assert_eq!(lids(&sim), before);
    // OpenSM is killed (SIGKILL to its PID).
    let killed = Instant::now();
    drop(osm);
    sm.wait("master_lost", Duration::from_secs(10));
    let lost = killed.elapsed();
    // Polling timeout x retries, plus one poll resend, plus up to one
    // period already under way when it died.
    let bound =
        Duration::from_millis(POLLING_MS * (u64::from(POLLING_RETRIES) + 1) + 2 * TIMEOUT_MS);
    assert!(
        lost <= bound,
        "master lost after {lost:?} (bound {bound:?})"
    );
    sm.wait("subnet_up", Duration::from_secs(10));
    assert!(
        sm.seen
            .iter()
            .any(|v| v["event"] == "state" && v["state"] == "MASTER"),
        "{:#?}",
        sm.seen
    );
    assert_eq!(lids(&sim), before, "LIDs changed on take-over");
    eprintln!("take-over: OpenSM killed, master lost after {lost:?}");
    sm.stop();
}

#[test]
fn opensm_at_a_lower_priority_stands_by_under_mad_sm() {
    if !needs() {
        return;
    }
    let sim = IbSim::start(support::topologies_dir().join(TOPOLOGY));
    let mut sm = mad_sm(&sim, "b", 15);
    sm.wait("subnet_up", Duration::from_secs(10));
    let osm = opensm(&sim, 1, "Entering STANDBY state");
    // A few polling periods later: mad sm still master, OpenSM still
    // standing by.
    keeps_state(&mut sm, Duration::from_secs(3));
    assert!(
        !osm.log().contains("Entering MASTER state"),
        "{}",
        osm.log_tail(30)
    );
    drop(osm);
    sm.stop();
}

#[test]
fn a_better_opensm_joining_gets_the_fabric_by_handover_and_saquery_works_after() {
    if !needs() {
        return;
    }
    let sim = IbSim::start(support::topologies_dir().join(TOPOLOGY));
    let mut sm = mad_sm(&sim, "c", 1);
    sm.wait("subnet_up", Duration::from_secs(10));
    let before = lids(&sim);
    // OpenSM (priority 15) asks mad sm for SMInfo during its discovery;
    // mad sm sweeps, finds the better SM and hands over at once; OpenSM
    // becomes master and brings the subnet up.
    let osm = opensm(&sim, 15, "SUBNET UP");
    let h = sm.wait("handover_sent", Duration::from_secs(10));
    assert!(h["guid"].as_str().is_some(), "{h}");
    wait_state(&mut sm, "STANDBY");
    assert!(
        osm.log().contains("Entering MASTER state"),
        "{}",
        osm.log_tail(40)
    );
    assert_eq!(lids(&sim), before, "LIDs changed on handover");
    // mad sm keeps standing by, polling the new master.
    keeps_state(&mut sm, Duration::from_secs(3));
    // The real saquery gets its answers from the new master's SA: a
    // NodeRecord table (under libumad2sim only its first RMPP segment
    // arrives, as with OpenSM alone) and a PathRecord between two ports.
    let out = diag(&sim, "saquery", &["-N"]);
    assert!(
        out.contains("NodeRecord dump") && out.contains("NodeDescription"),
        "saquery -N:\n{out}"
    );
    let mut cas: Vec<u16> = before.values().copied().collect();
    cas.sort_unstable();
    let (a, b) = (cas[0], cas[cas.len() - 1]);
    let out = diag(&sim, "saquery", &["--src-to-dst", &format!("{a}:{b}")]);
    assert!(
        out.contains("PathRecord dump")
            && out.contains(&format!("dlid....................{b}\n"))
            && out.contains(&format!("slid....................{a}\n")),
        "saquery PathRecord {a} -> {b}:\n{out}"
    );
    let out = diag(&sim, "sminfo", &[]);
    assert!(
        out.contains("SMINFO_MASTER") && out.contains("priority 15"),
        "{out}"
    );
    drop(osm);
    sm.stop();
}
