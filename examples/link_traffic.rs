//! A per-link traffic report: for every link of the discovered fabric,
//! the data each end sent and received (PortCountersExtended where the
//! PMA has it, else PortCounters), in bytes.
//! `cargo run --example link_traffic -- --sim`.

use std::collections::HashMap;

use madstack::fabric::{self, Bounds, PortSample};
use madstack::{open, Options};

fn bytes(p: &PortSample) -> (u64, u64) {
    // PortXmitData / PortRcvData count 4-byte words.
    match (&p.extended, &p.counters) {
        (Some(e), _) => (e.port_xmit_data * 4, e.port_rcv_data * 4),
        (None, Some(c)) => (
            u64::from(c.port_xmit_data) * 4,
            u64::from(c.port_rcv_data) * 4,
        ),
        _ => (0, 0),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = open(&Options::from_args(std::env::args().skip(1))?)?;
    let d = fabric::discover(&port, Bounds::default())?;
    let s = fabric::sweep(&port, &d.fabric, Bounds::default())?;
    let by_port: HashMap<(usize, u8), &PortSample> = s
        .nodes
        .iter()
        .flat_map(|n| n.ports.iter().map(move |p| ((n.node, p.port), p)))
        .collect();
    let name = |i: usize| d.fabric.nodes[i].clean_desc();
    let mut n = 0;
    for (a, b) in d.fabric.links() {
        let (Some(pa), Some(pb)) = (
            by_port.get(&(a.node, a.port)),
            by_port.get(&(b.node, b.port)),
        ) else {
            continue;
        };
        let ((ax, ar), (bx, br)) = (bytes(pa), bytes(pb));
        println!(
            "{:?}[{}] -> {:?}[{}]: {ax} B sent, {br} B received; back: {bx} B sent, {ar} B received",
            name(a.node), a.port, name(b.node), b.port
        );
        n += 1;
    }
    println!("{n} links");
    port.close()?;
    Ok(())
}
