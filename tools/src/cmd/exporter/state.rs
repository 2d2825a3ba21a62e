//! What the exporter keeps between sweeps: the totals of its own
//! metrics (MADs, retries, failures, fabric changes, counter resets) and
//! the snapshot it serves, updated from each discovery and sweep. No
//! I/O: the sweep loop feeds it, the HTTP side reads its snapshots.

use std::collections::HashMap;
use std::time::Duration;

use crate::discover::counters::Sweep;
use crate::discover::model::Fabric;
use crate::discover::{Discovery, Stats};
use crate::namemap::NameMap;

use super::snapshot::{component, node_name, port_rows, Link, PortRow};

/// Query failures of one node, over the exporter's life.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFailures {
    /// `component` label.
    pub component: &'static str,
    /// `local_name` label.
    pub name: String,
    /// Queries without an answer (timeouts).
    pub timeouts: u64,
    /// Queries answered with an error status, or failed to send.
    pub failures: u64,
}

/// Running totals of the exporter's own metrics.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// Sweeps done (complete or not).
    pub sweeps: u64,
    /// Discoveries done.
    pub discoveries: u64,
    /// SMPs sent by discovery (resends included).
    pub smps_sent: u64,
    /// PerfMgt MADs sent by sweeps and resets (resends included).
    pub perf_sent: u64,
    /// SMP resends after a timeout.
    pub smp_retries: u64,
    /// PerfMgt resends after a timeout.
    pub perf_retries: u64,
    /// Discovery queries that went unanswered.
    pub discovery_failures: u64,
    /// Per node GUID: its counter query failures.
    pub nodes: HashMap<u64, NodeFailures>,
    /// Ports whose link changed, appeared or went away between two
    /// discoveries.
    pub fabric_changes: u64,
    /// Counters seen going down between two sweeps (a reset or a
    /// wrap), and counters the exporter reset itself.
    pub counter_resets: u64,
    /// Counter resets the exporter sent (`--can-reset-counter`).
    pub resets_sent: u64,
}

/// What `/metrics` serves: the last complete sweep and the totals at
/// its end.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Every port.
    pub ports: Vec<PortRow>,
    /// Nodes per `component`.
    pub nodes: Vec<(&'static str, u64)>,
    /// Wall time of the sweep.
    pub sweep_time: Duration,
    /// Wall time of the last discovery.
    pub discovery_time: Duration,
    /// True when every port and every discovery query was answered.
    pub ok: bool,
    /// Ports whose counters could not be read in this sweep.
    pub ports_failed: u64,
    /// The totals.
    pub totals: Totals,
}

/// The exporter's state.
#[derive(Debug, Default)]
pub struct State {
    /// The totals so far.
    pub totals: Totals,
    /// Link of every port of the last discovery, by (node GUID, port).
    links: HashMap<(u64, u8), Option<Link>>,
    /// Counters of the last sweep, by (node GUID, port).
    last: HashMap<(u64, u8), Vec<Option<u64>>>,
    discovery_failed: bool,
    discovery_time: Duration,
}

fn add_stats(sent: &mut u64, retries: &mut u64, s: &Stats) {
    *sent += s.sent;
    *retries += s.retries;
}

fn links_of(f: &Fabric) -> HashMap<(u64, u8), Option<Link>> {
    let mut out = HashMap::new();
    for n in &f.nodes {
        for p in n.ports.iter().flatten() {
            let link = p.info.as_ref().map(|pi| Link {
                state: pi.port_state.0,
                phys: pi.port_phys_state.0,
                width: pi.link_width_active,
                speed: f64::from(pi.link_speed_active),
            });
            out.insert((n.guid(), p.num), link);
        }
    }
    out
}

impl State {
    /// Takes a discovery in: the MADs it sent (`mads`), its failures, and
    /// the ports whose link changed since the last one (state, physical
    /// state, width, speed; ports that appeared or went away). The first
    /// discovery changes nothing.
    pub fn discovered(&mut self, d: &Discovery, mads: &Stats) {
        let t = &mut self.totals;
        t.discoveries += 1;
        add_stats(&mut t.smps_sent, &mut t.smp_retries, mads);
        t.discovery_failures += d.failures.len() as u64;
        self.discovery_failed = !d.failures.is_empty();
        self.discovery_time = d.elapsed;
        let now = links_of(&d.fabric);
        if t.discoveries > 1 {
            let changed = now
                .iter()
                .filter(|(k, v)| self.links.get(k) != Some(v))
                .count()
                + self.links.keys().filter(|k| !now.contains_key(k)).count();
            t.fabric_changes += changed as u64;
        }
        self.links = now;
    }

    /// Counts PerfMgt MADs sent outside a sweep (counter resets).
    pub fn resets_sent(&mut self, stats: &Stats, counters: u64) {
        add_stats(
            &mut self.totals.perf_sent,
            &mut self.totals.perf_retries,
            stats,
        );
        self.totals.resets_sent += counters;
        self.totals.counter_resets += counters;
    }

    /// Takes a sweep in (`mads`: the MADs it sent) and returns the
    /// snapshot to serve.
    #[must_use]
    pub fn swept(
        &mut self,
        f: &Fabric,
        s: &Sweep,
        mads: &Stats,
        map: Option<&NameMap>,
    ) -> Snapshot {
        let t = &mut self.totals;
        t.sweeps += 1;
        add_stats(&mut t.perf_sent, &mut t.perf_retries, mads);
        for ns in &s.nodes {
            let Some(n) = f.nodes.get(ns.node) else {
                continue;
            };
            let e = t.nodes.entry(n.guid()).or_default();
            e.component = component(n);
            e.name = node_name(n, map);
            for p in &ns.ports {
                match p.error.as_deref() {
                    None | Some("no LID") => {}
                    Some("timeout") => e.timeouts += 1,
                    Some(_) => e.failures += 1,
                }
            }
        }
        let ports = port_rows(f, s, map);
        let mut last = HashMap::with_capacity(ports.len());
        for r in &ports {
            if let Some(prev) = self.last.get(&r.key) {
                let down = prev
                    .iter()
                    .zip(&r.counters)
                    .filter(|(a, b)| matches!((a, b), (Some(a), Some(b)) if b < a))
                    .count();
                // The exporter's own resets were counted when sent (and
                // their ports forgotten).
                t.counter_resets += down as u64;
            }
            if r.error.is_none() {
                last.insert(r.key, r.counters.clone());
            } else if let Some(prev) = self.last.remove(&r.key) {
                last.insert(r.key, prev);
            }
        }
        self.last = last;
        let mut nodes: Vec<(&'static str, u64)> = Vec::new();
        for ns in &s.nodes {
            if let Some(n) = f.nodes.get(ns.node) {
                let c = component(n);
                match nodes.iter_mut().find(|(k, _)| *k == c) {
                    Some(e) => e.1 += 1,
                    None => nodes.push((c, 1)),
                }
            }
        }
        let ports_failed = s.ports_failed() as u64;
        Snapshot {
            ports,
            nodes,
            sweep_time: s.elapsed,
            discovery_time: self.discovery_time,
            ok: ports_failed == 0 && !self.discovery_failed,
            ports_failed,
            totals: self.totals.clone(),
        }
    }

    /// Forgets the counters of ports the exporter just reset, so their
    /// drop is not counted twice.
    pub fn forget(&mut self, key: (u64, u8)) {
        self.last.remove(&key);
    }
}
