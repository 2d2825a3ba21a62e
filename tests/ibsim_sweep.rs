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

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mad_core::transport::ibsim::{IbSimConfig, IbSimTransport, IBSIM_MAX_IN_FLIGHT};
use mad_core::transport::{Address, AsyncEvent, Qp, Transport, TransportError, PERMISSIVE_LID};
use mad_core::wire::attr::{
    GuidInfo, LinearFwdTable, MulticastFwdTable, NodeDescription, NodeInfo, NodeType, PKeyTable,
    PhysPortState, PortInfo, PortState, SlToVlTable, SwitchInfo, VlArbTable,
};
use mad_core::wire::smp::{DrPath, Smp};
use mad_core::wire::{AttributeId, Method, Repr, SMP_DATA_OFFSET};
use support::sweep::{compare_with_ibnetdiscover, dr_sweep, width_speed, Fabric};
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
        t.wait_readable(Duration::from_millis(5))
            .map_err(|e| e.to_string())?;
        match t.poll_undeliverable() {
            Some(u) => Err(format!(
                "ibsim returned an SMP undelivered: {:02x?}",
                &u.mad[..24]
            )),
            None => Ok(()),
        }
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
    let t0 = Instant::now();
    t.refresh_port_attrs().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
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
    let mut gmp = smp;
    gmp[1] = 0x04;
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
        .post_send(Qp::Qp0, &smp[..20], &Address::smi(PERMISSIVE_LID))
        .is_err());
    let mut done = Vec::new();
    assert_eq!(t.poll_send_completions(&mut done).unwrap(), 0);
}

// ---------------------------------------------------------------------
// Fixtures: the SMP answers ibsim gives, from the `net` topology.

/// Mellanox's vendor SMP attribute ibsim also answers (`smpquery MEPI`).
const MLNX_EXT_PORT_INFO: AttributeId = AttributeId(0xFF90);

/// One captured answer: file name, query, and what it proves.
struct Capture {
    file: &'static str,
    path: &'static [u8],
    attr: AttributeId,
    attr_mod: u32,
    what: &'static str,
}

/// Every SMP attribute ibsim answers, from Switch1 (ibsim's default node
/// for `net`) and Hca1 (behind Switch1 port 1).
const CAPTURES: &[Capture] = &[
    Capture {
        file: "node_info_switch1.hex",
        path: &[],
        attr: AttributeId::NODE_INFO,
        attr_mod: 0,
        what: "NodeInfo of Switch1",
    },
    Capture {
        file: "node_info_hca1.hex",
        path: &[1],
        attr: AttributeId::NODE_INFO,
        attr_mod: 0,
        what: "NodeInfo of Hca1",
    },
    Capture {
        file: "node_desc_switch1.hex",
        path: &[],
        attr: AttributeId::NODE_DESC,
        attr_mod: 0,
        what: "NodeDescription of Switch1",
    },
    Capture {
        file: "node_desc_hca1.hex",
        path: &[1],
        attr: AttributeId::NODE_DESC,
        attr_mod: 0,
        what: "NodeDescription of Hca1",
    },
    Capture {
        file: "port_info_switch1_p0.hex",
        path: &[],
        attr: AttributeId::PORT_INFO,
        attr_mod: 0,
        what: "PortInfo of Switch1 port 0",
    },
    Capture {
        file: "port_info_switch1_p1.hex",
        path: &[],
        attr: AttributeId::PORT_INFO,
        attr_mod: 1,
        what: "PortInfo of Switch1 port 1 (to Hca1)",
    },
    Capture {
        file: "port_info_switch1_p5.hex",
        path: &[],
        attr: AttributeId::PORT_INFO,
        attr_mod: 5,
        what: "PortInfo of Switch1 port 5 (unlinked)",
    },
    Capture {
        file: "port_info_hca1_p1.hex",
        path: &[1],
        attr: AttributeId::PORT_INFO,
        attr_mod: 1,
        what: "PortInfo of Hca1 port 1",
    },
    Capture {
        file: "switch_info_switch1.hex",
        path: &[],
        attr: AttributeId::SWITCH_INFO,
        attr_mod: 0,
        what: "SwitchInfo of Switch1",
    },
    Capture {
        file: "pkey_table_hca1.hex",
        path: &[1],
        attr: AttributeId::PKEY_TABLE,
        attr_mod: 0,
        what: "P_KeyTable block 0 of Hca1",
    },
    Capture {
        file: "pkey_table_switch1_p1.hex",
        path: &[],
        attr: AttributeId::PKEY_TABLE,
        attr_mod: 1 << 16,
        what: "P_KeyTable block 0 of Switch1 port 1",
    },
    Capture {
        file: "sl2vl_hca1.hex",
        path: &[1],
        attr: AttributeId::SL_TO_VL_TABLE,
        attr_mod: 0,
        what: "SLtoVLMappingTable of Hca1",
    },
    Capture {
        file: "sl2vl_switch1_in1_out3.hex",
        path: &[],
        attr: AttributeId::SL_TO_VL_TABLE,
        attr_mod: 0x0103,
        what: "SLtoVLMappingTable of Switch1, input port 1, output port 3",
    },
    Capture {
        file: "vlarb_low_hca1.hex",
        path: &[1],
        attr: AttributeId::VL_ARB_TABLE,
        attr_mod: 1 << 16,
        what: "VLArbitrationTable low entries 0-31 of Hca1",
    },
    Capture {
        file: "vlarb_high_switch1_p1.hex",
        path: &[],
        attr: AttributeId::VL_ARB_TABLE,
        attr_mod: (3 << 16) | 1,
        what: "VLArbitrationTable high entries 0-31 of Switch1 port 1",
    },
    Capture {
        file: "lft_switch1_b0.hex",
        path: &[],
        attr: AttributeId::LINEAR_FWD_TABLE,
        attr_mod: 0,
        what: "LinearForwardingTable block 0 of Switch1",
    },
    Capture {
        file: "mft_switch1_b0.hex",
        path: &[],
        attr: AttributeId::MCAST_FWD_TABLE,
        attr_mod: 0,
        what: "MulticastForwardingTable block 0, position 0 of Switch1",
    },
    Capture {
        file: "guid_info_hca1.hex",
        path: &[1],
        attr: AttributeId::GUID_INFO,
        attr_mod: 0,
        what: "GUIDInfo block 0 of Hca1",
    },
    Capture {
        file: "mlnx_ext_port_info_switch1_p1.hex",
        path: &[],
        attr: MLNX_EXT_PORT_INFO,
        attr_mod: 1,
        what: "MlnxExtPortInfo (vendor attribute 0xFF90) of Switch1 port 1",
    },
];

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ibsim")
}

fn path_text(path: &[u8]) -> String {
    std::iter::once(0u8)
        .chain(path.iter().copied())
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn to_hex_file(c: &Capture, mad: &[u8]) -> String {
    let mut s = format!(
        "# {}: ibsim 0.10 answer, topology `net` (client at Switch1), to DR SMP Get {} (0x{:04x}) attr mod 0x{:08x} path {}\n",
        c.what,
        c.attr.name().unwrap_or("MlnxExtPortInfo"),
        c.attr.0,
        c.attr_mod,
        path_text(c.path)
    );
    for row in mad.chunks(16) {
        let line: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
        s.push_str(&line.join(" "));
        s.push('\n');
    }
    s
}

fn read_hex_file(path: &Path) -> Vec<u8> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (regenerate with MADSTACK_UPDATE_FIXTURES=1)",
            path.display()
        )
    });
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(str::split_whitespace)
        .map(|b| {
            u8::from_str_radix(b, 16).unwrap_or_else(|e| panic!("{}: {b:?}: {e}", path.display()))
        })
        .collect()
}

fn fixture(file: &str) -> Vec<u8> {
    let mad = read_hex_file(&fixture_dir().join(file));
    assert_eq!(mad.len(), 256, "{file}");
    mad
}

fn data(mad: &[u8]) -> &[u8] {
    &mad[SMP_DATA_OFFSET..SMP_DATA_OFFSET + 64]
}

/// The TID bytes differ between runs; everything else is ibsim's answer.
fn without_tid(mad: &[u8]) -> Vec<u8> {
    let mut m = mad.to_vec();
    m[8..16].fill(0);
    m
}

#[test]
fn fixtures_equal_what_ibsim_answers_now() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let update = std::env::var("MADSTACK_UPDATE_FIXTURES").is_ok_and(|v| v == "1");
    let sim = IbSim::start(topology("net"));
    let mut t = attach(sim.config());
    assert_eq!(t.port_attrs().ca_name, "Switch1");
    if update {
        std::fs::create_dir_all(fixture_dir()).unwrap();
    }
    for c in CAPTURES {
        let mad = query(&mut t, c.path, c.attr, c.attr_mod);
        let smp = Smp::new_checked(&mad[..]).unwrap();
        assert_eq!(smp.dr_status() & 0x7FFF, 0, "{}: status", c.file);
        assert_eq!(smp.attr_id(), c.attr, "{}", c.file);
        if update {
            std::fs::write(fixture_dir().join(c.file), to_hex_file(c, &mad)).unwrap();
        }
        assert_eq!(
            without_tid(&fixture(c.file)),
            without_tid(&mad),
            "{} differs from ibsim's answer now",
            c.file
        );
    }
    // Nothing else in the directory: every fixture is checked here.
    let mut on_disk: Vec<String> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CAPTURES.iter().map(|c| c.file.to_owned()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn fixtures_parse_to_what_the_sweep_reports() {
    if !support::require(NEEDS_IBSIM) {
        return;
    }
    let sim = IbSim::start(topology("net"));
    let mut t = attach(sim.config());
    let (fabric, _) = sweep(&mut t);
    let sw1 = &fabric.nodes[&0x20_0000];
    let hca1 = &fabric.nodes[&0x10_0000];
    assert_eq!(
        NodeInfo::parse(data(&fixture("node_info_switch1.hex"))).unwrap(),
        sw1.info
    );
    assert_eq!(
        NodeInfo::parse(data(&fixture("node_info_hca1.hex"))).unwrap(),
        hca1.info
    );
    assert_eq!(
        NodeDescription::parse(data(&fixture("node_desc_switch1.hex")))
            .unwrap()
            .text(),
        sw1.desc
    );
    assert_eq!(
        NodeDescription::parse(data(&fixture("node_desc_hca1.hex")))
            .unwrap()
            .text(),
        hca1.desc
    );
    for (file, port) in [
        ("port_info_switch1_p0.hex", 0u8),
        ("port_info_switch1_p1.hex", 1),
        ("port_info_switch1_p5.hex", 5),
    ] {
        assert_eq!(
            PortInfo::parse(data(&fixture(file))).unwrap(),
            sw1.ports[&port],
            "{file}"
        );
    }
    assert_eq!(
        PortInfo::parse(data(&fixture("port_info_hca1_p1.hex"))).unwrap(),
        hca1.ports[&1]
    );
}

// --- The topology file `net`, read independently of ibsim.

/// A node of a topology file: kind, port count, links (port -> (peer
/// name, peer port, width)).
#[derive(Debug)]
struct NetNode {
    switch: bool,
    ports: u8,
    links: BTreeMap<u8, (String, u8, Option<u8>)>,
}

/// Reads the nodes of an ibsim topology file, in file order.
fn read_netfile(path: &Path) -> Vec<(String, NetNode)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut nodes: Vec<(String, NetNode)> = Vec::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        if line.starts_with("Switch") || line.starts_with("Hca") {
            let mut it = line.split('"');
            let head: Vec<&str> = it.next().unwrap().split_whitespace().collect();
            let name = it.next().unwrap().to_owned();
            nodes.push((
                name,
                NetNode {
                    switch: head[0] == "Switch",
                    ports: head[1].parse().unwrap(),
                    links: BTreeMap::new(),
                },
            ));
        } else if let Some(rest) = line.strip_prefix('[') {
            let (port, rest) = rest.split_once(']').unwrap();
            let mut q = rest.split('"');
            q.next();
            let peer = q.next().unwrap().to_owned();
            let after = q.next().unwrap();
            let peer_port = after
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let width = after.split("w=").nth(1).map(|w| w.trim().parse().unwrap());
            nodes
                .last_mut()
                .unwrap()
                .1
                .links
                .insert(port.parse().unwrap(), (peer, peer_port, width));
        }
    }
    nodes
}

/// Node GUIDs the way ibsim hands them out (`sim_net.c` `new_node`): CAs
/// from 0x100000 and switches from 0x200000, in file order; a CA takes
/// `ports + 1` GUIDs (node GUID, then one per port), a switch one.
fn ibsim_guids(nodes: &[(String, NetNode)]) -> BTreeMap<String, u64> {
    let (mut ca, mut sw) = (0x10_0000u64, 0x20_0000u64);
    nodes
        .iter()
        .map(|(name, n)| {
            let g = if n.switch {
                sw += 1;
                sw - 1
            } else {
                ca += u64::from(n.ports) + 1;
                ca - u64::from(n.ports) - 1
            };
            (name.clone(), g)
        })
        .collect()
}

#[test]
fn fixtures_parse_to_what_the_topology_file_says() {
    let net = read_netfile(&topology("net"));
    let guids = ibsim_guids(&net);
    let node = |name: &str| &net.iter().find(|(n, _)| n == name).unwrap().1;
    let (sw1, hca1) = (node("Switch1"), node("Hca1"));

    let ni = NodeInfo::parse(data(&fixture("node_info_switch1.hex"))).unwrap();
    assert_eq!(ni.node_type, NodeType::SWITCH);
    assert_eq!(ni.num_ports, sw1.ports);
    assert_eq!(
        (ni.node_guid, ni.port_guid, ni.system_image_guid),
        (guids["Switch1"], guids["Switch1"], guids["Switch1"])
    );
    assert_eq!(ni.local_port_num, 0);
    assert_eq!(
        ni.to_vec().unwrap(),
        data(&fixture("node_info_switch1.hex"))[..40].to_vec()
    );

    let ni = NodeInfo::parse(data(&fixture("node_info_hca1.hex"))).unwrap();
    assert_eq!(ni.node_type, NodeType::CA);
    assert_eq!(ni.num_ports, hca1.ports);
    assert_eq!(ni.node_guid, guids["Hca1"]);
    // Entered at Hca1 port 1 (Switch1 port 1 links to it): port GUID is
    // node GUID + 1.
    assert_eq!(sw1.links[&1], ("Hca1".to_owned(), 1, None));
    assert_eq!((ni.local_port_num, ni.port_guid), (1, guids["Hca1"] + 1));

    for (file, name) in [
        ("node_desc_switch1.hex", "Switch1"),
        ("node_desc_hca1.hex", "Hca1"),
    ] {
        assert_eq!(
            NodeDescription::parse(data(&fixture(file))).unwrap().text(),
            name,
            "{file}"
        );
    }

    // Linked ports: 4x (no w= given; ibsim's default), SDR, LinkUp,
    // Initialize (no SM has run). The unlinked port: Down / Polling.
    let p1 = PortInfo::parse(data(&fixture("port_info_switch1_p1.hex"))).unwrap();
    assert_eq!(sw1.links[&1].2, None);
    assert_eq!(width_speed(&p1), "4xSDR");
    assert_eq!(
        (p1.port_state, p1.port_phys_state),
        (PortState::INIT, PhysPortState::LINK_UP)
    );
    assert!(!sw1.links.contains_key(&5));
    let p5 = PortInfo::parse(data(&fixture("port_info_switch1_p5.hex"))).unwrap();
    assert_eq!(
        (p5.port_state, p5.port_phys_state),
        (PortState::DOWN, PhysPortState::POLLING)
    );
    let p0 = PortInfo::parse(data(&fixture("port_info_switch1_p0.hex"))).unwrap();
    assert_eq!(p0.port_state, PortState::ACTIVE);
    let h1 = PortInfo::parse(data(&fixture("port_info_hca1_p1.hex"))).unwrap();
    assert_eq!(width_speed(&h1), "4xSDR");
    assert_eq!((h1.local_port_num, h1.port_state), (1, PortState::INIT));
    // Switch PortInfo answers carry the port the SMP arrived at (0).
    assert_eq!(p1.local_port_num, 0);

    let si = SwitchInfo::parse(data(&fixture("switch_info_switch1.hex"))).unwrap();
    // ibsim's defaults (MaxLinearCap / MaxMcastCap it prints at start).
    assert_eq!((si.linear_fdb_cap, si.multicast_fdb_cap), (30720, 1024));
    assert_eq!(si.linear_fdb_top, 0);
    // Its links came up and no SM has cleared PortStateChange.
    assert!(si.port_state_change);
    assert_eq!(si.partition_enforcement_cap, 64);

    for file in ["pkey_table_hca1.hex", "pkey_table_switch1_p1.hex"] {
        let pk = PKeyTable::parse(data(&fixture(file))).unwrap();
        assert_eq!(pk.pkeys[0], 0xFFFF, "{file}: default full-member P_Key");
    }
    // ibsim's default SL-to-VL map (sim_net.c `default_sl2vl`): SL n to
    // VL n, SL 15 to VL 7 (VL 15 carries no data).
    let mut sl2vl: Vec<u8> = (0..15).collect();
    sl2vl.push(7);
    for file in ["sl2vl_hca1.hex", "sl2vl_switch1_in1_out3.hex"] {
        let t = SlToVlTable::parse(data(&fixture(file))).unwrap();
        assert_eq!(t.vl.to_vec(), sl2vl, "{file}");
    }
    // ibsim's default arbitration tables (`default_vlarb_low` / `_high`):
    // low VL 0 weight 0, VLs 1.. weight 4; high VL 0 weight 4, VLs 1..
    // weight 0; cut to the port's VLArbLowCap / VLArbHighCap entries.
    let low = VlArbTable::parse(data(&fixture("vlarb_low_hca1.hex"))).unwrap();
    let low_cap = usize::from(h1.vl_arb_low_cap);
    assert!(low_cap > 1 && low_cap <= 32);
    for i in 0..32 {
        let want = if i < low_cap {
            VlArbTable::entry(i as u8, if i == 0 { 0 } else { 4 })
        } else {
            0
        };
        assert_eq!(low.entries[i], want, "low entry {i}");
    }
    let high = VlArbTable::parse(data(&fixture("vlarb_high_switch1_p1.hex"))).unwrap();
    let high_cap = usize::from(p1.vl_arb_high_cap);
    assert!(high_cap > 1 && high_cap <= 32);
    for i in 0..32 {
        let want = if i < high_cap {
            VlArbTable::entry(i as u8, if i == 0 { 4 } else { 0 })
        } else {
            0
        };
        assert_eq!(high.entries[i], want, "high entry {i}");
    }
    // No SM has programmed the switch: every LID unrouted, no groups.
    let lft = LinearFwdTable::parse(data(&fixture("lft_switch1_b0.hex"))).unwrap();
    assert!(lft.ports.iter().all(|p| *p == 0xFF));
    let mft = MulticastFwdTable::parse(data(&fixture("mft_switch1_b0.hex"))).unwrap();
    assert_eq!(mft.to_vec().unwrap(), vec![0u8; 64]);
    // GUIDInfo: ibsim 0.10 answers block 0 with the port GUID as GUID0.
    let gi = GuidInfo::parse(data(&fixture("guid_info_hca1.hex"))).unwrap();
    assert_eq!(gi.guids[0], guids["Hca1"] + 1);
    assert!(gi.guids[1..].iter().all(|g| *g == 0));

    // MlnxExtPortInfo: no FDR10 in `net`, so ibsim reports nothing.
    assert_eq!(
        data(&fixture("mlnx_ext_port_info_switch1_p1.hex")),
        &[0u8; 64][..]
    );

    // Every fixture is a GetResp to a DR Get of its attribute.
    for c in CAPTURES {
        let mad = fixture(c.file);
        let smp = Smp::new_checked(&mad[..]).unwrap();
        assert!(
            smp.is_directed_route() && smp.response_bit() && smp.direction(),
            "{}",
            c.file
        );
        assert_eq!(
            (smp.attr_id(), smp.attr_mod()),
            (c.attr, c.attr_mod),
            "{}",
            c.file
        );
        assert_eq!(usize::from(smp.hop_cnt()), c.path.len(), "{}", c.file);
        assert_eq!(&smp.initial_path()[1..=c.path.len()], c.path, "{}", c.file);
    }
}
