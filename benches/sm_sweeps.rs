//! SM-lite's sweeps on the built-in fabric, in process: the heavy sweep
//! that brings a fabric up, a light sweep of the unchanged fabric, and
//! the reroute after one inter-switch link fails (from the link going
//! down, which sends the switch's Trap 128 to the SM, to SubnetUp with
//! the new routes). [`SmDriver`] pumps [`SubnetManager`] over a
//! [`SimPort`] on this thread; the SM's clock is virtual (it jumps to
//! the next deadline when nothing is in flight), so the times printed
//! are the wall time of the work itself.
//!
//! ```text
//! cargo bench --bench sm_sweeps -- [TOPOLOGY] [--runs N]
//! ```
//! TOPOLOGY: an ibsim / ibnetdiscover topology file (default
//! tests/fixtures/topologies/net.large). The numbers in BENCHMARKS.md
//! are of the 30,528-node fat tree of `gen_fattree.py 3level --radix 48
//! --pods 48`.

use std::time::{Duration, Instant};

use mad_core::transport::Transport;
use mad_sim::topology::NodeKind;
use mad_sim::{Fabric, SimPort};
use mad_sm::{SmConfig, SmDriver, SmEvent, SubnetManager};

struct Rig {
    port: SimPort,
    sm: SubnetManager,
    drv: SmDriver,
    now: Instant,
}

impl Rig {
    /// Pumps until an event satisfies `done`; the wall time it took.
    fn until(&mut self, done: impl Fn(&SmEvent) -> bool) -> (Duration, Vec<SmEvent>) {
        let t0 = Instant::now();
        let mut seen = Vec::new();
        loop {
            let busy = self
                .drv
                .pump(&mut self.sm, &mut self.port, self.now)
                .expect("pump");
            let mut hit = false;
            while let Some(e) = self.sm.poll_event() {
                hit |= done(&e);
                seen.push(e);
            }
            if hit {
                return (t0.elapsed(), seen);
            }
            if !busy {
                match self.sm.poll_timeout() {
                    Some(t) => self.now = self.now.max(t),
                    None => panic!("the SM stalled; events {seen:?}"),
                }
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mut topo = String::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/topologies/net.large"
    ));
    let mut runs = 3usize;
    while let Some(a) = args.next() {
        if a == "--runs" {
            runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(3);
        } else if !a.starts_with('-') {
            topo = a;
        }
    }
    let t = Instant::now();
    let fabric = Fabric::load(&topo).unwrap_or_else(|e| panic!("{topo}: {e}"));
    let nodes = fabric.nodes();
    let switches = nodes.iter().filter(|n| n.kind == NodeKind::Switch).count();
    println!(
        "{topo}: {} nodes ({switches} switches), loaded in {:.2} s",
        nodes.len(),
        t.elapsed().as_secs_f64()
    );
    // An inter-switch link: the first switch port cabled to a switch.
    let (sw, sw_port) = nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Switch)
        .find_map(|n| {
            (1..=n.num_ports).find_map(|p| {
                let r = fabric.remote(n.index, p)?;
                (nodes[r.node].kind == NodeKind::Switch).then_some((n.index, p))
            })
        })
        .expect("an inter-switch link");
    let mut port = fabric.attach_default().expect("attach the SM");
    port.set_is_sm(true);
    let cfg = SmConfig {
        sweep_interval: Some(Duration::from_secs(10)),
        ..SmConfig::default()
    };
    let sm = SubnetManager::new(cfg, port.port_attrs());
    let mut r = Rig {
        port,
        sm,
        drv: SmDriver::new(),
        now: Instant::now(),
    };
    r.sm.start(r.now);
    let (heavy, _) = r.until(|e| *e == SmEvent::SubnetUp);
    let st = r.sm.stats();
    println!(
        "heavy sweep to SubnetUp: {:.3} s ({} SMPs, {} LFT blocks)",
        heavy.as_secs_f64(),
        st.last_sweep_smps,
        st.last_lft_blocks
    );
    for i in 0..runs {
        let (light, ev) = r.until(|e| matches!(e, SmEvent::LightSweepDone { .. }));
        let smps = ev.iter().find_map(|e| match e {
            SmEvent::LightSweepDone { smps, changed } => {
                assert!(!changed, "the unchanged fabric changed");
                Some(*smps)
            }
            _ => None,
        });
        println!(
            "light sweep {}: {:.3} s ({} SMPs)",
            i + 1,
            light.as_secs_f64(),
            smps.unwrap_or(0)
        );
    }
    let name = &nodes[sw].id;
    for (i, up) in [false, true].iter().cycle().take(2 * runs).enumerate() {
        let t0 = Instant::now();
        if *up {
            fabric.link_up(sw, sw_port).expect("link up");
        } else {
            fabric.link_down(sw, sw_port).expect("link down");
        }
        let cable = t0.elapsed();
        let (reroute, ev) = r.until(|e| *e == SmEvent::SubnetUp);
        let traps = ev
            .iter()
            .filter(|e| matches!(e, SmEvent::Trap { .. }))
            .count();
        let st = r.sm.stats();
        println!(
            "link {name}[{sw_port}] {} ({}): trap to SubnetUp {:.3} s ({} traps, {} SMPs, {} LFT blocks)",
            if *up { "up" } else { "down" },
            i / 2 + 1,
            reroute.as_secs_f64() + cable.as_secs_f64(),
            traps,
            st.last_sweep_smps,
            st.last_lft_blocks
        );
    }
}
