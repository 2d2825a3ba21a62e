//! Operation sequences on SM-lite ([`mad_sm::SubnetManager`]) driving
//! the built-in fabric (its default topology, whose spines make loops) on a
//! virtual clock: sweeps, multicast groups set and changed at any moment
//! (during a sweep too), links pulled and plugged, raw bytes handed to it as
//! received MADs, time moved on. After every step SM-lite has no more SMPs
//! outstanding than its window and no deadline in the past once its timers
//! ran; at the end, with the links up and the clock run on, it is idle, and
//! a packet to each group's MLID reaches the fabric's end without looping
//! for ever (the fabric bounds a multicast packet's copies).

use crate::clock::Clock;
use arbitrary::{Arbitrary, Unstructured};
use mad_core::transport::{Address, Qp, Transport};
use mad_sm::{McGroup, SmConfig, SmDriver, SubnetManager};
use mad_sim::Fabric;
use std::time::Duration;

#[derive(Arbitrary, Debug)]
enum Op {
    Pump,
    Advance {
        ms: u16,
    },
    /// Groups: (MLID offset from 0xC000, member node indices).
    Groups {
        groups: Vec<(u8, Vec<u8>)>,
    },
    Resweep,
    Link {
        node: u8,
        port: u8,
        up: bool,
    },
    Raw {
        bytes: Vec<u8>,
    },
}

fn groups(fabric: &Fabric, spec: &[(u8, Vec<u8>)]) -> Vec<McGroup> {
    let nodes = fabric.nodes();
    spec.iter()
        .take(8)
        .map(|(off, members)| McGroup {
            mlid: 0xC000 + u16::from(*off),
            members: members
                .iter()
                .take(16)
                .filter_map(|i| nodes.get(usize::from(*i) % nodes.len().max(1)))
                // A CA's port 1 GUID is its node GUID + 1; a switch is a
                // member by its port 0 (its node GUID).
                .map(|n| n.node_guid + u64::from(n.kind != mad_sim::topology::NodeKind::Switch))
                .collect(),
        })
        .collect()
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let fabric = Fabric::builtin();
    let Ok(mut port) = fabric.attach_qp(0usize, 1, Qp::Qp0) else {
        return;
    };
    port.set_is_sm(true);
    // The first byte picks the LMC (0-7): LID ranges, their routes and
    // the PortInfo Sets that program them are fuzzed too.
    let lmc = u.arbitrary::<u8>().unwrap_or(0) % 8;
    let cfg = SmConfig {
        max_in_flight: 16,
        lmc,
        ..SmConfig::default()
    };
    let mut sm = SubnetManager::new(cfg, port.port_attrs());
    let mut driver = SmDriver::new();
    let mut clock = Clock::new();
    sm.start(clock.now());
    let mut steps = 0;
    while !u.is_empty() && steps < 200 {
        steps += 1;
        let Ok(op) = Op::arbitrary(&mut u) else { break };
        match op {
            Op::Pump => {}
            Op::Advance { ms } => clock.advance(Duration::from_millis(u64::from(ms % 2000))),
            Op::Groups { groups: g } => sm.set_mcast_groups(groups(&fabric, &g)),
            Op::Resweep => sm.resweep(clock.now()),
            Op::Link { node, port: p, up } => {
                let n = usize::from(node) % fabric.nodes().len().max(1);
                let p = p % 9;
                let _ = if up {
                    fabric.link_up(n, p)
                } else {
                    fabric.link_down(n, p)
                };
            }
            Op::Raw { bytes } => {
                let mut mad = bytes;
                mad.resize(256, 0);
                sm.handle_recv(clock.now(), &mad, &Address::smi(1));
            }
        }
        let _ = driver.pump(&mut sm, &mut port, clock.now());
        if sm.poll_timeout().is_some_and(|d| d <= clock.now()) {
            sm.handle_timeout(clock.now());
            assert!(
                sm.poll_timeout().is_none_or(|d| d > clock.now()),
                "a deadline left in the past"
            );
        }
        while sm.poll_event().is_some() {}
    }
    // Links up, time on: SM-lite settles.
    for n in 0..fabric.nodes().len() {
        for p in 1..=8 {
            let _ = fabric.link_up(n, p);
        }
    }
    for _ in 0..200 {
        let _ = driver.pump(&mut sm, &mut port, clock.now());
        while sm.poll_event().is_some() {}
        if !sm.is_sweeping() && sm.poll_timeout().is_none() {
            break;
        }
        clock.advance(Duration::from_millis(250));
        if sm.poll_timeout().is_some_and(|d| d <= clock.now()) {
            sm.handle_timeout(clock.now());
        }
    }
    assert!(!sm.is_sweeping(), "SM-lite did not settle");
    // A packet to each MLID ends.
    let mlids: Vec<u16> = sm.mcast_groups().iter().map(|g| g.mlid).collect();
    if let Ok(mut ep) = fabric.attach(2usize, 1) {
        for mlid in mlids {
            // A vendor range-1 Send (class 0x0A, method 0x03).
            let mad = mad_testkit::MadBuilder::new(
                mad_core::wire::MgmtClass(0x0A),
                1,
                mad_core::wire::Method(0x03),
                mad_core::wire::AttributeId(0),
            )
            .build();
            let _ = ep.post_send(Qp::Qp1, &mad, &Address::gsi(mlid));
        }
        fabric.run_until_idle();
    }
}
