//! The ibsim transport against a real ibsim (Debian `ibsim-utils`),
//! compared with infiniband-diags' `ibnetdiscover` run under
//! libumad2sim against the same ibsim; and the SMP answers ibsim gives,
//! kept as fixtures in `tests/fixtures/ibsim/`.
//!
//! Every test starts its own ibsim under a unique `IBSIM_SOCKNAME`.
//! Outside CI a missing ibsim / ibnetdiscover / libumad2sim makes these
//! tests print "NOT RUN" and return; with `CI=true` it fails them.
//!
//! `MADSTACK_UPDATE_FIXTURES=1 cargo test --test ibsim_sweep fixtures`
//! rewrites the fixtures from the running ibsim.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "../support/mod.rs"]
mod support;

mod captures;
mod netfile;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mad_core::transport::ibsim::{IbSimConfig, IbSimTransport, IBSIM_MAX_IN_FLIGHT};
use mad_core::transport::{Address, AsyncEvent, Qp, Transport, TransportError, PERMISSIVE_LID};
use mad_core::wire::attr::{NodeInfo, NodeType};
use mad_core::wire::smp::{DrPath, Smp};
use mad_core::wire::{AttributeId, Method, MgmtClass, Repr, MAD_HEADER_LEN, SMP_DATA_OFFSET};
use mad_testkit::MadBuilder;
use support::sweep::{compare_with_ibnetdiscover, dr_sweep, Fabric};
use support::{ibnetdiscover, IbSim, NEEDS_DIAGS, NEEDS_IBSIM};

/// SMPs kept in flight by the sweep.
const WINDOW: usize = 64;

fn topology(name: &str) -> PathBuf {
    support::topologies_dir().join(name)
}

fn attach(cfg: IbSimConfig) -> IbSimTransport {
    IbSimTransport::attach(cfg).unwrap_or_else(|e| panic!("attach: {e}"))
}

/// The sweep through an ibsim transport: waits on the data socket when
/// idle and fails on any MAD ibsim could not deliver.
fn sweep(t: &mut IbSimTransport) -> (Fabric, support::sweep::SweepStats) {
    dr_sweep(t, WINDOW, |t: &mut IbSimTransport| {
        support::sweep::ibsim_idle(t, Duration::from_millis(5))
    })
    .unwrap_or_else(|e| panic!("sweep: {e}"))
}

#[test]
fn sweep_equals_ibnetdiscover_on_every_topology() {
    if !support::require(NEEDS_DIAGS) {
        return;
    }
    let files = support::topology_files();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for must in ["net", "net.medium", "net.large", "net.large3"] {
        assert!(
            names.iter().any(|n| n == must),
            "topology {must} missing: {names:?}"
        );
    }
    let mut report = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let t0 = Instant::now();
        let sim = IbSim::start(file);
        let started = t0.elapsed();
        let t1 = Instant::now();
        let theirs = ibnetdiscover::run(&sim);
        let diag_time = t1.elapsed();
        let mut t = attach(sim.config());
        let (ours, stats) = sweep(&mut t);
        drop(t);
        assert!(stats.max_in_flight <= WINDOW);
        assert_eq!(stats.retries, 0, "{name}: ibsim lost SMPs");
        assert!(!ours.nodes.is_empty());
        // Every port of every node was read.
        for (g, n) in &ours.nodes {
            let first = u8::from(n.info.node_type != NodeType::SWITCH);
            let want: Vec<u8> = (first..=n.info.num_ports).collect();
            let got: Vec<u8> = n.ports.keys().copied().collect();
            assert_eq!(got, want, "{name}: ports read of {g:#x}");
            assert!(!n.desc.is_empty(), "{name}: {g:#x} has no description");
        }
        compare_with_ibnetdiscover(&name, &ours, &theirs);
        let line = format!(
            "{name:<24} {:>5} nodes {:>5} links {:>6} SMPs in {:>8.3?} ({:>7.0} SMP/s, max {} in flight); ibnetdiscover {:.3?}; ibsim start {:.3?}",
            ours.nodes.len(),
            ours.links.len(),
            stats.sent,
            stats.elapsed,
            stats.sent as f64 / stats.elapsed.as_secs_f64(),
            stats.max_in_flight,
            diag_time,
            started
        );
        eprintln!("{line}");
        report.push(line);
        assert!(
            stats.elapsed < Duration::from_secs(60),
            "{name}: sweep took {:?}",
            stats.elapsed
        );
    }
    assert_eq!(report.len(), files.len());
}

#[test]
fn sweep_over_udp_to_a_remote_mode_ibsim_equals_ibnetdiscover() {
    if !support::require(NEEDS_DIAGS) {
        return;
    }
    let sim = IbSim::start_udp(topology("net.2sw2path4hca2port"));
    let theirs = ibnetdiscover::run(&sim);
    let cfg = sim.config();
    assert!(cfg.server.is_some());
    let mut t = attach(cfg);
    let (ours, _) = sweep(&mut t);
    compare_with_ibnetdiscover("net.2sw2path4hca2port over UDP", &ours, &theirs);
}

#[test]
fn attach_at_a_named_node_reads_that_port() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net"));
    // Default node: the first in the file, Switch1, at port 0 (the SMA
    // port, always active).
    let t = attach(sim.config());
    let a = t.port_attrs();
    assert_eq!(a.ca_name, "Switch1");
    assert!(a.is_switch);
    assert_eq!(
        (a.port_num, a.node_guid, a.port_guid),
        (0, 0x20_0000, 0x20_0000)
    );
    assert_eq!((a.state, a.phys_state), (4, 5));
    assert_eq!(a.pkeys.first(), Some(&0xFFFF));
    drop(t);
    // Hca1: a CA attaches at its first port (linked to Switch1, so
    // Initialize / LinkUp without an SM).
    let t = attach(sim.config().node("Hca1"));
    let a = t.port_attrs();
    assert_eq!(a.ca_name, "Hca1");
    assert!(!a.is_switch);
    assert_eq!(
        (a.port_num, a.node_guid, a.port_guid),
        (1, 0x10_0000, 0x10_0001)
    );
    assert_eq!((a.state, a.phys_state), (2, 5));
    assert_eq!(a.pkeys.first(), Some(&0xFFFF));
    drop(t);
    // Hca2's port 1 is not linked (its port 2 is): Down / Polling.
    let t = attach(sim.config().node("Hca2"));
    let a = t.port_attrs();
    assert_eq!(
        (a.port_num, a.node_guid, a.port_guid),
        (1, 0x10_0003, 0x10_0004)
    );
    assert_eq!((a.state, a.phys_state), (1, 2));
}

#[test]
fn wrong_node_name_is_named_in_the_error() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net"));
    let err = IbSimTransport::attach(sim.config().node("NoSuchHca")).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, TransportError::Open(_)), "{err:?}");
    assert!(msg.contains("no node \"NoSuchHca\""), "{msg}");
    // The probes that worked this out left no client attached: ten
    // clients still fit.
    let all: Vec<IbSimTransport> = (0..10).map(|_| attach(sim.config())).collect();
    assert_eq!(all.len(), 10);
}

#[test]
fn ibsim_not_running_names_the_socket() {
    let cfg = IbSimConfig::local(format!("madstack-absent-{}", std::process::id()));
    let msg = IbSimTransport::attach(cfg.clone()).unwrap_err().to_string();
    assert!(msg.contains("not running"), "{msg}");
    assert!(msg.contains(&format!("@{}:ctl", cfg.sockname)), "{msg}");
}

#[test]
fn eleventh_client_is_refused_and_a_detach_frees_a_slot() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net"));
    let mut clients: Vec<IbSimTransport> = (0..10).map(|_| attach(sim.config())).collect();
    let ids: std::collections::BTreeSet<u32> =
        clients.iter().map(IbSimTransport::client_id).collect();
    assert_eq!(ids, (0..10).collect());
    let msg = IbSimTransport::attach(sim.config())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("all 10 client slots are taken"), "{msg}");
    let freed = clients.remove(3).client_id();
    let again = attach(sim.config());
    assert_eq!(again.client_id(), freed);
}

#[test]
fn second_sm_at_a_node_is_refused_and_issm_sets_the_capability_bit() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    const IS_SM: u32 = 1 << 1;
    let sim = IbSim::start(topology("net"));
    let sm_cfg = IbSimConfig {
        issm: true,
        ..sim.config().node("Hca1")
    };
    let sm = attach(sm_cfg.clone());
    assert_ne!(sm.port_attrs().capability_mask & IS_SM, 0);
    let msg = IbSimTransport::attach(sm_cfg.clone())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("node \"Hca1\": an SM client is already attached there"),
        "{msg}"
    );
    // A non-SM client at the same node is fine, and sees the bit.
    let mut other = attach(sim.config().node("Hca1"));
    assert_ne!(other.port_attrs().capability_mask & IS_SM, 0);
    drop(sm);
    // Detaching the SM clears the bit (ibsim's DISCONNECT alone would
    // not), and a refresh reports no spurious events for it.
    other.refresh_port_attrs().unwrap();
    assert_eq!(other.port_attrs().capability_mask & IS_SM, 0);
    assert_eq!(other.poll_event(), None);
    let again = attach(sm_cfg);
    assert_ne!(again.port_attrs().capability_mask & IS_SM, 0);
}

fn dr_get(path: &[u8], attr: AttributeId, attr_mod: u32, tid: u64) -> [u8; 256] {
    DrPath::from_hops(path)
        .unwrap()
        .build_request(Method::GET, attr, attr_mod, tid, 0)
}

/// Sends one DR Get and returns the answer (or panics).
fn query(t: &mut IbSimTransport, path: &[u8], attr: AttributeId, attr_mod: u32) -> Vec<u8> {
    static TID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0x77_0000);
    let tid = TID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    t.post_send(
        Qp::Qp0,
        &dr_get(path, attr, attr_mod, tid),
        &Address::smi(PERMISSIVE_LID),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        t.wait_readable(Duration::from_millis(50)).unwrap();
        if let Some(u) = t.poll_undeliverable() {
            panic!(
                "{attr:?} mod {attr_mod:#x} via {path:?} undeliverable: {:02x?}",
                &u.mad[..24]
            );
        }
        if let Some(rx) = t.poll_recv().unwrap() {
            if Smp::new_checked(&rx.mad[..]).unwrap().tid() & 0xFFFF_FFFF_FFFF == tid {
                return rx.mad.into();
            }
        }
    }
    panic!("no answer to {attr:?} via {path:?}");
}

#[test]
fn responses_carry_the_client_id_in_tid_bits_48_to_63() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net"));
    let _first = attach(sim.config());
    let mut t = attach(sim.config());
    assert_eq!(t.client_id(), 1);
    let tid = 0xABCD_0000_1234_5678;
    t.post_send(
        Qp::Qp0,
        &dr_get(&[], AttributeId::NODE_INFO, 0, tid),
        &Address::smi(PERMISSIVE_LID),
    )
    .unwrap();
    assert!(t.wait_readable(Duration::from_secs(5)).unwrap());
    let rx = t.poll_recv().unwrap().unwrap();
    let smp = Smp::new_checked(&rx.mad[..]).unwrap();
    assert_eq!(smp.tid(), (1 << 48) | 0x1234_5678);
    assert!(smp.response_bit());
    assert_eq!(rx.qp, Qp::Qp0);
    assert_eq!((rx.src.lid, rx.src.qpn), (PERMISSIVE_LID, 0));
    let mut done = Vec::new();
    assert_eq!(t.poll_send_completions(&mut done).unwrap(), 1);
    assert_eq!(done[0].status, mad_core::transport::WcStatus::Success);
}

#[test]
fn undeliverable_mads_come_back_apart_from_receives() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net"));
    let mut t = attach(sim.config());
    // Out of Switch1 port 5, which is not linked.
    t.post_send(
        Qp::Qp0,
        &dr_get(&[5], AttributeId::NODE_INFO, 0, 0x42),
        &Address::smi(PERMISSIVE_LID),
    )
    .unwrap();
    // LID-routed before any SM assigned LIDs.
    let mut lid_routed = dr_get(&[], AttributeId::NODE_INFO, 0, 0x43);
    lid_routed[1] = 0x01;
    t.post_send(Qp::Qp0, &lid_routed, &Address::smi(7)).unwrap();
    // SMInfo: ibsim has no handler; without an SM client nobody answers.
    t.post_send(
        Qp::Qp0,
        &dr_get(&[], AttributeId::SM_INFO, 0, 0x44),
        &Address::smi(PERMISSIVE_LID),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut back = Vec::new();
    while back.len() < 3 && Instant::now() < deadline {
        t.wait_readable(Duration::from_millis(20)).unwrap();
        assert!(
            t.poll_recv().unwrap().is_none(),
            "an undeliverable MAD was received"
        );
        while let Some(u) = t.poll_undeliverable() {
            back.push(Smp::new_checked(&u.mad[..]).unwrap().tid() & 0xFFFF);
        }
    }
    back.sort_unstable();
    assert_eq!(back, vec![0x42, 0x43, 0x44]);
    assert_eq!(t.undeliverable_count(), 3);
    assert_eq!(t.malformed_count(), 0);
}

#[test]
fn a_full_window_of_256_smps_is_answered() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net.medium"));
    let mut t = attach(sim.config());
    let mut posted = 0u64;
    let mut answered = std::collections::BTreeSet::new();
    let mut queue_full = 0;
    while posted < IBSIM_MAX_IN_FLIGHT as u64 {
        let mad = dr_get(&[], AttributeId::PORT_INFO, (posted % 37) as u32, posted);
        match t.post_send(Qp::Qp0, &mad, &Address::smi(PERMISSIVE_LID)) {
            Ok(_) => posted += 1,
            Err(TransportError::QueueFull { .. }) => {
                queue_full += 1;
                while let Some(rx) = t.poll_recv().unwrap() {
                    answered.insert(Smp::new_checked(&rx.mad[..]).unwrap().tid() & 0xFFFF);
                }
            }
            Err(e) => panic!("{e}"),
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while answered.len() < IBSIM_MAX_IN_FLIGHT && Instant::now() < deadline {
        t.wait_readable(Duration::from_millis(20)).unwrap();
        while let Some(rx) = t.poll_recv().unwrap() {
            answered.insert(Smp::new_checked(&rx.mad[..]).unwrap().tid() & 0xFFFF);
        }
    }
    assert_eq!(
        answered,
        (0..IBSIM_MAX_IN_FLIGHT as u64).collect(),
        "{queue_full} QueueFull"
    );
    let mut done = Vec::new();
    t.poll_send_completions(&mut done).unwrap();
    assert_eq!(done.len(), IBSIM_MAX_IN_FLIGHT);
}

/// Posts requests without reading until ibsim stops taking them: the
/// socket to ibsim stays full across a pause, i.e. ibsim is stuck
/// writing an answer to our full queue. Returns how many were posted.
fn saturate(t: &mut IbSimTransport, attr: AttributeId) -> u64 {
    let mut posted = 0u64;
    let mut stalled = false;
    loop {
        let mad = dr_get(&[], attr, 0, posted);
        match t.post_send(Qp::Qp0, &mad, &Address::smi(PERMISSIVE_LID)) {
            Ok(_) => {
                posted += 1;
                stalled = false;
            }
            Err(TransportError::QueueFull { qp, .. }) => {
                assert_eq!(qp, Qp::Qp0);
                if stalled {
                    return posted;
                }
                stalled = true;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("{e}"),
        }
        assert!(posted < 100_000, "no back-pressure from ibsim's socket");
    }
}

/// A client that posts without reading fills the socket between it and
/// ibsim: `post_send` says `QueueFull` instead of blocking (a blocking
/// libumad2sim client deadlocks with ibsim here), and once the client
/// reads, every request is answered and ibsim serves others again.
#[test]
fn flooding_ibsim_gives_queue_full_not_a_wedge() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net.medium"));
    let mut t = attach(sim.config());
    let posted = saturate(&mut t, AttributeId::NODE_INFO);
    eprintln!("ibsim stopped taking requests after {posted} unanswered");
    // Leave ibsim stuck on our full queue for a while.
    std::thread::sleep(Duration::from_millis(200));
    let mut answered = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while (answered.len() as u64) < posted && Instant::now() < deadline {
        t.wait_readable(Duration::from_millis(20)).unwrap();
        while let Some(rx) = t.poll_recv().unwrap() {
            answered.insert(Smp::new_checked(&rx.mad[..]).unwrap().tid() & 0xFFFF_FFFF);
        }
    }
    assert_eq!(answered, (0..posted).collect());
    let mut other = attach(sim.config());
    let answer = query(&mut other, &[], AttributeId::NODE_INFO, 0);
    assert_eq!(
        NodeInfo::parse(data(&answer)).unwrap().node_guid,
        other.port_attrs().node_guid
    );
}

/// With ibsim busy-waiting to write to our full queue, a control call
/// (refresh_port_attrs) still gets its answer, because the transport
/// reads the data socket while it waits; nothing read that way is lost.
#[test]
fn control_calls_work_while_ibsim_waits_on_our_full_queue() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net"));
    let mut t = attach(sim.config());
    let posted = saturate(&mut t, AttributeId::NODE_DESC);
    std::thread::sleep(Duration::from_millis(100));
    let before = t.port_attrs().clone();
    // Without the data socket read while waiting, ibsim would stay stuck
    // writing to us and the call would fail at the control timeout (5 s)
    // with "did not answer": the unwrap is the check, not a clock.
    t.refresh_port_attrs().unwrap();
    assert_eq!(t.port_attrs(), &before);
    let mut answered = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while answered < posted && Instant::now() < deadline {
        t.wait_readable(Duration::from_millis(20)).unwrap();
        while t.poll_recv().unwrap().is_some() {
            answered += 1;
        }
    }
    assert_eq!(answered, posted);
}

#[test]
fn ibsim_going_away_is_a_device_fatal_event() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net"));
    let mut t = attach(sim.config());
    sim.stop();
    let mad = dr_get(&[], AttributeId::NODE_INFO, 0, 1);
    let err = t
        .post_send(Qp::Qp0, &mad, &Address::smi(PERMISSIVE_LID))
        .unwrap_err();
    assert!(matches!(err, TransportError::DeviceDead(_)), "{err:?}");
    assert_eq!(t.poll_event(), Some(AsyncEvent::DeviceFatal));
    assert_eq!(t.poll_event(), None);
    assert!(matches!(
        t.post_send(Qp::Qp0, &mad, &Address::smi(PERMISSIVE_LID)),
        Err(TransportError::DeviceDead(_))
    ));
}

#[test]
fn sends_on_the_wrong_qp_or_with_a_grh_are_refused() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net"));
    let mut t = attach(sim.config());
    let smp = dr_get(&[], AttributeId::NODE_INFO, 0, 1);
    let err = t.post_send(Qp::Qp1, &smp, &Address::gsi(1)).unwrap_err();
    assert!(err.to_string().contains("0x81"), "{err}");
    let gmp = MadBuilder::parse(&smp)
        .unwrap()
        .class(MgmtClass::PERF_MGT)
        .build();
    assert!(t.post_send(Qp::Qp0, &gmp, &Address::smi(1)).is_err());
    let grh = Address {
        grh: Some(mad_core::transport::Grh::default()),
        ..Address::smi(PERMISSIVE_LID)
    };
    assert!(t
        .post_send(Qp::Qp0, &smp, &grh)
        .unwrap_err()
        .to_string()
        .contains("GRH"));
    assert!(t
        .post_send(
            Qp::Qp0,
            &smp[..MAD_HEADER_LEN - 4],
            &Address::smi(PERMISSIVE_LID)
        ) // shorter than a header
        .is_err());
    let mut done = Vec::new();
    assert_eq!(t.poll_send_completions(&mut done).unwrap(), 0);
}

fn data(mad: &[u8]) -> &[u8] {
    &mad[SMP_DATA_OFFSET..SMP_DATA_OFFSET + 64]
}
