//! Discovery and counter sweeps on the built-in fabric (`--sim`): the
//! discovered model agrees with the topology file, the sweep reads every
//! port and its counters agree with the fabric's PMA, and both stay
//! within their in-flight bounds; a partial scan over a bounded read is
//! the scan over the whole fabric.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use mad_core::wire::attr::NodeType;
use mad_sim::topology::Topology;
use mad_sim::SimPort;
use mad_tools::discover::counters::{self, merged_counters};
use mad_tools::discover::gather::GatherOptions;
use mad_tools::discover::{discover_transport, Discovery, Limits, TransportExchange};
use mad_tools::session::sim::{bring_up, SimFabric};
// Partial scans (iblinkinfo `-n` / `-D`, ibqueryerrors `-D`).
use mad_tools::discover::gather::{gather, gather_within, Gathered};
use mad_tools::discover::model::{replay_scan, Fabric, Scan};

fn topo_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/topologies")
        .join(name)
}

/// `(guid, port) - (guid, port)` links of a topology, ends sorted.
type Links = BTreeSet<((u64, u8), (u64, u8))>;

fn norm(a: (u64, u8), b: (u64, u8)) -> ((u64, u8), (u64, u8)) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

fn topology_view(t: &Topology) -> (BTreeMap<u64, (NodeType, u8, String)>, Links) {
    let nodes = t
        .nodes()
        .iter()
        .map(|n| {
            (
                n.node_guid,
                (n.kind.node_type(), n.num_ports, n.description.clone()),
            )
        })
        .collect();
    let links = t
        .links()
        .iter()
        .map(|l| {
            let g = |r: mad_sim::topology::PortRef| (t.nodes()[r.node].node_guid, r.port);
            norm(g(l.a), g(l.b))
        })
        .collect();
    (nodes, links)
}

fn model_view(d: &Discovery) -> (BTreeMap<u64, (NodeType, u8, String)>, Links) {
    let f = &d.fabric;
    let nodes = f
        .nodes
        .iter()
        .map(|n| (n.guid(), (n.node_type(), n.num_ports(), n.clean_desc())))
        .collect();
    let links = f
        .links()
        .iter()
        .map(|(a, b)| {
            norm(
                (f.nodes[a.node].guid(), a.port),
                (f.nodes[b.node].guid(), b.port),
            )
        })
        .collect();
    (nodes, links)
}

fn attach(sf: &SimFabric) -> SimPort {
    let at = sf.endpoint_at(None).unwrap();
    sf.attach(at).unwrap()
}

fn idle(_t: &mut SimPort, max: Duration) -> Result<(), String> {
    std::thread::sleep(max.min(Duration::from_micros(200)));
    Ok(())
}

fn discover_sim(sf: &SimFabric, limits: Limits) -> Discovery {
    let mut port = attach(sf);
    let opts = GatherOptions {
        limits,
        ..GatherOptions::default()
    };
    discover_transport(&mut port, &opts, false, idle, &mut |_| {}).unwrap()
}

/// The discovered model has exactly the topology's nodes (type, ports,
/// description), links and CA port GUIDs, and every port a LID.
#[test]
fn discovery_agrees_with_the_topology_file() {
    for name in ["net", "net.2sw2path4hca2port", "net.medium", "net.large3"] {
        let path = topo_path(name);
        let sf = bring_up(Some(path.to_str().unwrap())).unwrap();
        let t0 = Instant::now();
        let d = discover_sim(&sf, Limits::default());
        let took = t0.elapsed();
        let topo = Topology::load(&path).unwrap();
        assert_eq!(model_view(&d), topology_view(&topo), "{name}");
        for n in topo.nodes() {
            let i = d.fabric.find(n.node_guid).unwrap();
            let m = &d.fabric.nodes[i];
            for p in n.existing_ports().filter(|p| p.remote.is_some()) {
                let mp = m.port(p.num).unwrap();
                if !n.is_switch() {
                    assert_eq!(mp.guid, p.guid, "{name}: {} port {}", n.id, p.num);
                }
                assert_ne!(
                    m.lid_of(p.num),
                    0,
                    "{name}: {} port {} has no LID",
                    n.id,
                    p.num
                );
            }
        }
        assert!(d.failures.is_empty(), "{name}: {:?}", d.failures);
        assert!(d.stats.max_in_flight <= 256);
        eprintln!(
            "{name}: {} nodes, {} SMPs in {took:?} (max {} in flight)",
            d.fabric.nodes.len(),
            d.stats.sent,
            d.stats.max_in_flight
        );
    }
}

/// The topology text written in two halves on two threads is the one
/// written on one, byte for byte (and handed over in pieces).
#[test]
fn the_topology_in_two_halves_is_the_same_text() {
    use mad_tools::discover::format::{topology_split, TopologyOptions};
    let path = topo_path("net.large");
    let sf = bring_up(Some(path.to_str().unwrap())).unwrap();
    let d = discover_sim(&sf, Limits::default());
    let opts = TopologyOptions {
        full: true,
        ctime: "Thu Jan  1 00:00:00 1970\n".into(),
        ..TopologyOptions::default()
    };
    let text = |from: usize| {
        let (mut all, mut pieces) = (String::new(), 0);
        topology_split(&d.fabric, &opts, from, &mut |s| {
            all.push_str(s);
            pieces += 1;
        });
        (all, pieces)
    };
    let (one, _) = text(usize::MAX);
    let (two, pieces) = text(1);
    assert!(one.len() > 3 * 64 * 1024, "{} bytes", one.len());
    assert!(pieces > 3, "{pieces} pieces");
    assert_eq!(one, two);
}

/// The window and per-node bounds hold (few in flight still discovers
/// everything).
#[test]
fn discovery_with_a_small_window_finds_the_same_fabric() {
    let path = topo_path("net.medium");
    let sf = bring_up(Some(path.to_str().unwrap())).unwrap();
    let wide = discover_sim(&sf, Limits::default());
    let narrow = discover_sim(
        &sf,
        Limits {
            window: 2,
            per_dest: 1,
            ..Limits::default()
        },
    );
    assert!(narrow.stats.max_in_flight <= 2);
    assert!(wide.stats.max_in_flight > 2);
    // Same model, node for node, in the same order.
    assert_eq!(narrow.fabric, wide.fabric);
}

/// Every port of the model is read, without error, and each counter lies
/// between the fabric's PMA values just before and just after the sweep.
#[test]
fn sweep_reads_every_port_and_agrees_with_the_pma() {
    let path = topo_path("net.medium");
    let sf = bring_up(Some(path.to_str().unwrap())).unwrap();
    let d = discover_sim(&sf, Limits::default());
    let f = &d.fabric;
    // (sim node index, port) of every model port.
    let index_of: BTreeMap<u64, usize> = sf
        .fabric
        .nodes()
        .iter()
        .map(|n| (n.node_guid, n.index))
        .collect();
    let snapshot = || {
        let mut m = BTreeMap::new();
        for n in &f.nodes {
            for p in n.ports.iter().flatten() {
                let i = index_of[&n.guid()];
                let c = sf.fabric.counters(i, p.num).unwrap();
                let x = sf.fabric.counters_ext(i, p.num).unwrap();
                let mut v: BTreeMap<&'static str, u64> =
                    counters::counter_fields(&c).into_iter().collect();
                for (k, val) in counters::counter_fields(&x) {
                    v.insert(k, val);
                }
                m.insert((n.guid(), p.num), v);
            }
        }
        m
    };
    let before = snapshot();
    let mut port = attach(&sf);
    let mut ex = TransportExchange::new(&mut port, idle);
    let s = counters::sweep(&mut ex, f, Limits::default(), &mut |_, _| {}).unwrap();
    drop(ex);
    let after = snapshot();
    let mut ports = 0;
    for ns in &s.nodes {
        let n = &f.nodes[ns.node];
        for p in &ns.ports {
            assert!(
                p.error.is_none(),
                "{:x}/{}: {:?}",
                n.guid(),
                p.port,
                p.error
            );
            assert!(p.counters.is_some());
            let (lo, hi) = (&before[&(n.guid(), p.port)], &after[&(n.guid(), p.port)]);
            let merged = merged_counters(p);
            assert!(merged.len() >= 18, "{merged:?}");
            for (k, v) in merged {
                // 32-bit PortCounters data fields of a busy port saturate:
                // compare the values as read at the same width.
                let (l, h) = (lo[k], hi[k]);
                assert!(
                    l <= v && v <= h,
                    "{:x}/{} {k}: {l} <= {v} <= {h}",
                    n.guid(),
                    p.port
                );
            }
            ports += 1;
        }
    }
    let want: usize = f
        .nodes
        .iter()
        .map(|n| n.ports.iter().skip(1).flatten().count())
        .sum();
    assert_eq!(ports, want);
    assert_eq!(s.ports_read(), want);
    assert!(s.stats.max_in_flight <= 256);
    let text = counters::format_text(f, &s);
    assert_eq!(text.lines().count(), f.nodes.len() + want);
}

/// `mad --sim=FILE ibnetdiscover` and `mad --sim=FILE sweep --json` as a
/// user runs them.
#[test]
fn commands_on_the_builtin_fabric() {
    let mad = env!("CARGO_BIN_EXE_mad");
    let path = topo_path("net.2sw2path4hca2port");
    let topo = Topology::load(&path).unwrap();
    let sim = format!("--sim={}", path.display());
    let o = Command::new(mad)
        .args([&sim, "ibnetdiscover", "-l"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let listed: BTreeSet<u64> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| u64::from_str_radix(&l.split(" : 0x").nth(1).unwrap()[..16], 16).unwrap())
        .collect();
    let want: BTreeSet<u64> = topo.nodes().iter().map(|n| n.node_guid).collect();
    assert_eq!(listed, want);

    let o = Command::new(mad)
        .args([&sim, "sweep", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let nodes = j["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), topo.nodes().len());
    for n in nodes {
        let guid =
            u64::from_str_radix(n["guid"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let tn = topo.nodes().iter().find(|t| t.node_guid == guid).unwrap();
        assert_eq!(n["description"].as_str().unwrap(), tn.description);
        let ports: BTreeSet<u64> = n["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                assert!(p["error"].is_null(), "{p}");
                assert!(p["counters"].is_object(), "{p}");
                p["port"].as_u64().unwrap()
            })
            .collect();
        if tn.is_switch() {
            assert_eq!(ports, (1..=u64::from(tn.num_ports)).collect());
        } else {
            let linked: BTreeSet<u64> = tn
                .existing_ports()
                .filter(|p| p.remote.is_some())
                .map(|p| u64::from(p.num))
                .collect();
            assert_eq!(ports, linked, "{}", tn.id);
        }
    }
    assert_eq!(j["summary"]["ports_failed"].as_u64(), Some(0));

    // The default built-in fabric too.
    let o = Command::new(mad)
        .args(["--sim", "ibnetdiscover"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = String::from_utf8_lossy(&o.stdout);
    let (default, _) = mad_tools::session::sim::load_topology(None).unwrap();
    let headers = t
        .lines()
        .filter(|l| l.starts_with("Switch\t") || l.starts_with("Ca\t"))
        .count();
    assert_eq!(headers, default.nodes().len());
}

/// A sweep of a fabric with more than a thousand CAs, through the
/// library on the built-in fabric: every port read; the time is printed
/// (the release figure goes to docs/benchmarks/fabric-scale.md).
#[test]
fn sweep_of_a_thousand_cas() {
    let path = topo_path("net.large");
    let sf = bring_up(Some(path.to_str().unwrap())).unwrap();
    let d = discover_sim(&sf, Limits::default());
    let cas = d.fabric.listed_of(NodeType::CA).count();
    assert!(cas >= 1000, "{cas} CAs");
    let mut port = attach(&sf);
    let mut ex = TransportExchange::new(&mut port, idle);
    let t0 = Instant::now();
    let s = counters::sweep(&mut ex, &d.fabric, Limits::default(), &mut |_, _| {}).unwrap();
    let took = t0.elapsed();
    drop(ex);
    assert_eq!(s.ports_failed(), 0);
    eprintln!(
        "sweep of net.large ({} nodes, {cas} CAs, {} ports, {} MADs): {took:?}; discovery {:?} ({} SMPs)",
        d.fabric.nodes.len(),
        s.ports_read(),
        s.stats.sent,
        d.elapsed,
        d.stats.sent
    );
    // The sweep keeps its window full (a sweep gone serial would show as
    // one request in flight, not as a slow test): the time is the
    // benchmark's to judge.
    assert!(s.stats.max_in_flight > 1, "{:?}", s.stats);
}

// Partial scans: reading only what lies within the scan's reach
// (`gather_within`) replays the same scan as reading the whole fabric,
// whatever order the answers come in, and reads less.

/// Phase 1 on the fabric's default port, within `depth` hops (`None`:
/// all), `window` SMPs in flight (which changes the order answers are
/// handled in).
fn read_within(sf: &SimFabric, depth: Option<usize>, window: usize) -> Gathered {
    let mut port = attach(sf);
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
        Some(d) => gather_within(&mut ex, &opts, d, &mut |_| {}).unwrap(),
        None => gather(&mut ex, &opts, &mut |_| {}).unwrap(),
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
        let full = read_within(&sf, None, 64);
        for scan in scans(&full) {
            let want = replay_scan(&full, false, &scan).unwrap();
            for window in [1, 3, 64] {
                let part = read_within(&sf, Some(depth_of(&scan)), window);
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
    let full = read_within(&sf, None, 256);
    let near = read_within(&sf, Some(2), 256);
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
