//! Lists the ports whose error counters are not zero (what sites script
//! around ibqueryerrors): discover, sweep every port's counters, print
//! the non-zero error counters. `cargo run --example port_errors -- --sim`.

use madstack::fabric::{self, Bounds};
use madstack::{open, Attribute, Options};

/// The PortCounters fields that count errors.
const ERRORS: &[&str] = &[
    "symbol_error_counter",
    "link_error_recovery_counter",
    "link_downed_counter",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "vl15_dropped",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = open(&Options::from_args(std::env::args().skip(1))?)?;
    let d = fabric::discover(&port, Bounds::default())?;
    let s = fabric::sweep(&port, &d.fabric, Bounds::default())?;
    let mut bad = 0;
    for n in &s.nodes {
        let node = &d.fabric.nodes[n.node];
        for p in &n.ports {
            let Some(c) = &p.counters else { continue };
            let a = Attribute::of(c);
            let errs: Vec<String> = ERRORS
                .iter()
                .filter_map(|f| a.uint(f).filter(|v| *v != 0).map(|v| format!("{f}={v}")))
                .collect();
            if !errs.is_empty() {
                bad += 1;
                println!(
                    "{:?} lid {} port {}: {}",
                    node.clean_desc(),
                    p.lid,
                    p.port,
                    errs.join(" ")
                );
            }
        }
    }
    println!("{bad} ports with errors of {} read", s.ports_read());
    port.close()?;
    Ok(())
}
