//! Partial scans (iblinkinfo `-n` / `-D`, ibqueryerrors `-D`) on the
//! built-in fabric: reading only what lies within the scan's reach
//! (`gather_within`) replays the same scan as reading the whole fabric,
//! whatever order the answers come in, and reads less.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::path::PathBuf;
use std::time::Duration;

use mad_sim::SimPort;
use mad_tools::discover::gather::{self, GatherOptions, Gathered};
use mad_tools::discover::model::{replay_scan, Fabric, Scan};
use mad_tools::discover::{Limits, TransportExchange};
use mad_tools::session::sim::{bring_up, SimFabric};

fn topo_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/topologies")
        .join(name)
}

fn idle(_t: &mut SimPort, max: Duration) -> Result<(), String> {
    std::thread::sleep(max.min(Duration::from_micros(200)));
    Ok(())
}

/// Phase 1 on the fabric's default port, within `depth` hops (`None`:
/// all), `window` SMPs in flight (which changes the order answers are
/// handled in).
fn read(sf: &SimFabric, depth: Option<usize>, window: usize) -> Gathered {
    let at = sf.endpoint_at(None).unwrap();
    let mut port = sf.attach(at).unwrap();
    let opts = GatherOptions {
        limits: Limits {
            window,
            per_dest: 2,
            ..Limits::default()
        },
        ..GatherOptions::default()
    };
    let mut ex = TransportExchange::new(&mut port, idle);
    match depth {
        Some(d) => gather::gather_within(&mut ex, &opts, d, &mut |_| {}).unwrap(),
        None => gather::gather(&mut ex, &opts, &mut |_| {}).unwrap(),
    }
}

/// The scans: from the local port within 1..=4 hops, and from routes to
/// nodes 1 to 3 hops away (switches and CAs) within 1 and 2 hops.
fn scans(full: &Gathered) -> Vec<Scan> {
    let mut v: Vec<Scan> = (1..=4)
        .map(|h| Scan {
            max_hops: h,
            ..Scan::default()
        })
        .collect();
    let mut routes: Vec<Vec<u8>> = full
        .nodes
        .values()
        .map(|n| n.path.clone())
        .filter(|p| (1..=3).contains(&p.len()))
        .collect();
    routes.sort();
    routes.dedup();
    for path in routes.into_iter().step_by(7).take(12) {
        for h in [1, 2] {
            v.push(Scan {
                path: path.clone(),
                lid_start: None,
                max_hops: h,
                dr_lids: 0xffff,
            });
        }
    }
    v
}

/// A fabric in short: per node (newest first) its GUID, route and
/// ports with their far ends.
fn view(f: &Fabric) -> Vec<String> {
    f.listed()
        .map(|i| {
            let n = &f.nodes[i];
            let ports: Vec<String> = n
                .ports
                .iter()
                .flatten()
                .map(|p| {
                    let far = p.remote.map_or(String::from("-"), |r| {
                        format!("{:x}:{}", f.nodes[r.node].guid(), r.port)
                    });
                    format!("{}->{far}", p.num)
                })
                .collect();
            format!("{:x} {:?} [{}]", n.guid(), n.path, ports.join(" "))
        })
        .collect()
}

/// The depth `scan` needs read (as iblinkinfo computes it).
fn depth_of(scan: &Scan) -> usize {
    scan.path.len() + scan.max_hops as usize + 1
}

/// Every scan replayed over a bounded read equals the scan replayed over
/// the whole fabric (nodes, ports, links, LIDs, libibnetdisc's stderr
/// lines), with 1, 3 and 64 SMPs in flight, on a fabric with many equal
/// routes (a fat tree: a node is often first reached by a longer route
/// than its shortest).
#[test]
fn a_bounded_read_replays_the_same_partial_scan() {
    for name in ["net.2sw2path4hca2port", "net.medium"] {
        let path = topo_path(name);
        let sf = bring_up(Some(path.to_str().unwrap())).unwrap();
        let full = read(&sf, None, 64);
        for scan in scans(&full) {
            let want = replay_scan(&full, false, &scan).unwrap();
            for window in [1, 3, 64] {
                let part = read(&sf, Some(depth_of(&scan)), window);
                let got = replay_scan(&part, false, &scan).unwrap();
                assert_eq!(
                    view(&got.fabric),
                    view(&want.fabric),
                    "{name}: {scan:?}, window {window}"
                );
                assert!(
                    got.fabric == want.fabric,
                    "{name}: {scan:?}, window {window}"
                );
                assert_eq!(got.errors, want.errors, "{name}: {scan:?}");
            }
        }
    }
}

/// A scan one hop deep reads a small part of a large fabric: far fewer
/// SMPs than the whole (3-level fat tree, 468 switches).
#[test]
fn a_one_hop_scan_reads_only_the_neighbourhood() {
    let path = topo_path("net.large3");
    let sf = bring_up(Some(path.to_str().unwrap())).unwrap();
    let full = read(&sf, None, 256);
    let near = read(&sf, Some(2), 256);
    assert!(
        near.stats.sent * 10 < full.stats.sent,
        "{} SMPs within 2 hops, {} for the whole fabric",
        near.stats.sent,
        full.stats.sent
    );
    let scan = Scan {
        max_hops: 1,
        ..Scan::default()
    };
    assert_eq!(
        replay_scan(&near, false, &scan).unwrap().fabric,
        replay_scan(&full, false, &scan).unwrap().fabric
    );
}
