//! Scale run: a fat tree with at least 10,000 CAs is loaded, swept and
//! configured by SM-lite, and an SA client on one of its hosts reads the
//! whole NodeRecord table (over RMPP). Prints the time of each step and
//! the memory per node.
//!
//! ```text
//! cargo run --release -p mad-sim --example scale [-- TOPOLOGY]
//! ```
//! Without a file, `../shared/tools/gen_fattree.py 3level --radix 36
//! --pods 32` (10,368 HCAs, 1,476 switches) is generated into a temporary
//! directory.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "an example")]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mad_agents::sa::{SaClient, SaClientConfig};
use mad_agents::{EngineConfig, Runtime};
use mad_core::wire::sa_records::NodeRecord;
use mad_sim::{Fabric, Subnet, SubnetOptions, Topology};

/// Resident set size of this process, in KiB (Linux).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn generate() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mad-sim-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("net.fattree-10k");
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/tools/gen_fattree.py");
    let st = std::process::Command::new("python3")
        .arg(&script)
        .args(["3level", "--radix", "36", "--pods", "32", "-o"])
        .arg(&out)
        .status()
        .expect("python3 gen_fattree.py");
    assert!(st.success(), "gen_fattree.py failed");
    out
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn main() {
    let given = std::env::args_os().nth(1).map(PathBuf::from);
    let generated = given.is_none();
    let path = given.unwrap_or_else(generate);
    println!("topology: {}", path.display());
    let rss0 = rss_kib();

    let t = Instant::now();
    let topo = Topology::load(&path).expect("topology");
    let t_parse = t.elapsed();
    let cas = topo.nodes().len() - topo.switch_count();
    println!(
        "parsed:   {} nodes ({} switches, {} CAs), {} links in {}",
        topo.nodes().len(),
        topo.switch_count(),
        cas,
        topo.links().len(),
        secs(t_parse)
    );

    let rss1 = rss_kib();
    let t = Instant::now();
    let fabric = Fabric::new(&topo);
    let t_build = t.elapsed();
    let rss2 = rss_kib();
    let nodes = fabric.node_count();
    drop(topo);
    println!(
        "fabric:   built in {}, {} KiB resident ({:.0} bytes per node)",
        secs(t_build),
        rss2.saturating_sub(rss1),
        (rss2.saturating_sub(rss1) * 1024) as f64 / nodes as f64
    );

    let t = Instant::now();
    let subnet = Subnet::on_fabric(
        fabric.clone(),
        &path.display().to_string(),
        SubnetOptions::default(),
    )
    .expect("SM-lite brings the subnet up");
    let t_up = t.elapsed();
    let rss3 = rss_kib();
    let st = subnet.sm_status();
    println!(
        "SM-lite:  SubnetUp in {} ({} nodes, {} LIDs, {} SMPs sent, {} packets moved)",
        secs(t_up),
        st.nodes,
        st.lids,
        st.smps_sent,
        fabric.stats().packets
    );
    println!(
        "          after bring-up: {} KiB more resident ({:.0} bytes per node: LFTs, SM-lite's and the SA's views)",
        rss3.saturating_sub(rss2),
        (rss3.saturating_sub(rss2) * 1024) as f64 / nodes as f64
    );

    let (n, p) = subnet.free_endpoint().expect("a host");
    let ep = fabric.attach(n, p).unwrap();
    let rt = Runtime::start(ep, EngineConfig::default()).unwrap();
    let sa = SaClient::new(
        &rt,
        SaClientConfig {
            timeout: Duration::from_secs(30),
            retries: 0,
            ..SaClientConfig::default()
        },
    )
    .unwrap();
    let t = Instant::now();
    let table = sa.all::<NodeRecord>().expect("NodeRecord GetTable");
    let t_sa = t.elapsed();
    println!(
        "SA:       NodeRecord GetTable: {} records ({} KiB over RMPP) in {}",
        table.records.len(),
        table.records.len() * 112 / 1024,
        secs(t_sa)
    );
    let t = Instant::now();
    let one = sa
        .node_record(table.records[table.records.len() / 2].lid)
        .unwrap();
    println!(
        "          NodeRecord Get by LID {}: {}",
        one.lid,
        secs(t.elapsed())
    );
    let sweeps = subnet.sm_status().sweeps;
    let t = Instant::now();
    fabric.link_down(n, p).unwrap();
    let t_down = t.elapsed();
    let t = Instant::now();
    fabric.link_up(n, p).unwrap();
    let t_up2 = t.elapsed();
    println!(
        "re-sweep: cable pulled {} / plugged back {} (Trap 128, {} re-sweeps, port {})",
        secs(t_down),
        secs(t_up2),
        subnet.sm_status().sweeps - sweeps,
        fabric.port_info(n, p).unwrap().port_state
    );
    let rss4 = rss_kib();
    println!(
        "memory:   {} KiB resident in all ({:.0} bytes per node)",
        rss4.saturating_sub(rss0),
        (rss4.saturating_sub(rss0) * 1024) as f64 / nodes as f64
    );
    drop(sa);
    drop(rt);
    drop(subnet);
    if generated {
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
