//! Finds a node by name (its NodeDescription) and traces the route to it
//! through the switches' forwarding tables, hop by hop.
//! `cargo run --example trace_route -- --sim [NAME]` (default: the last
//! CA discovered).

use madstack::fabric::{self, Bounds};
use madstack::{open, Options, Target};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let want = match args.iter().position(|a| !a.starts_with('-')) {
        Some(i) if i == 0 || !matches!(args[i - 1].as_str(), "-C" | "-P") => Some(args.remove(i)),
        _ => None,
    };
    let port = open(&Options::from_args(args)?)?;
    let d = fabric::discover(&port, Bounds::default())?;
    let f = &d.fabric;
    let node = match &want {
        Some(w) => f.nodes.iter().find(|n| n.clean_desc().trim() == w.as_str()),
        None => f
            .nodes
            .iter()
            .rev()
            .find(|n| !n.is_switch() && n.path.len() > 1),
    }
    .ok_or_else(|| format!("no node named {want:?}"))?;
    let lid = node
        .ports
        .iter()
        .flatten()
        .map(|p| p.base_lid)
        .find(|l| *l != 0)
        .unwrap_or(node.smalid);
    println!("{:?} is LID {lid}", node.clean_desc());
    let hops = port.route_to(lid).ok_or("no route")?;
    for i in 0..=hops.len() {
        let at = Target::Dr(hops[..i].to_vec());
        let nd = port.smp_get("NodeDescription", &at, 0)?;
        let ni = port.smp_get("NodeInfo", &at, 0)?;
        let out = hops
            .get(i)
            .map_or(String::from("(end)"), |p| format!("out port {p}"));
        println!(
            "hop {i}: {} guid {:#018x} {out}",
            nd.to_json()["desc"].as_str().unwrap_or("?"),
            ni.uint("node_guid").unwrap_or(0)
        );
    }
    port.close()?;
    Ok(())
}
