//! `mad sweep`: PortCounters (and PortCountersExtended where the PMA has
//! them) of every port of a discovered fabric, read in parallel.
//!
//! Which ports, as infiniband-diags' ibqueryerrors reads them: every port
//! of the model (switches: 1..=N, and 0 with enhanced port 0; CAs and
//! routers: the ports discovery reached), at the switch's LID or the CA
//! port's own LID. One ClassPortInfo per PMA (LID) says whether
//! PortCountersExtended exists (CapabilityMask bit 9 or 10).
//!
//! PerfMgt MADs are LID routed: on a fabric without LIDs (no SM ran) the
//! sweep reads nothing and says so ([`SweepError::NoLids`]).
//!
//! # Output shapes (stable)
//! Text ([`format_text`]): one header line per node, one line per port:
//! ```text
//! Switch 0x0000000000200000 "Switch1" lid 1
//!   [1] lid 1 PortXmitData=32 PortRcvData=32 ... PortMulticastRcvPkts=0
//! Ca 0x0000000000100000 "Hca1" lid 3
//!   [1] lid 3 ...
//!   [2] lid 4 error: timeout
//! ```
//! The counters of a port line are the PortCounters fields (libibmad
//! names, wire order), where PortCountersExtended was read its 64-bit
//! values replacing the 32-bit ones of the same name, followed by the
//! extended-only fields (`PortUnicastXmitPkts`, ...).
//!
//! JSON ([`to_json`]):
//! ```json
//! {"nodes": [{"guid": "0x0000000000200000", "type": "Switch",
//!             "description": "Switch1", "lid": 1,
//!             "ports": [{"port": 1, "lid": 1,
//!                        "remote": {"guid": "0x...", "port": 3,
//!                                   "description": "Switch2"} | null,
//!                        "counters": {"symbol_error_counter": 0, ...} | null,
//!                        "extended": {"port_xmit_data": "0x…", ...} | null,
//!                        "error": null | "timeout"}]}],
//!  "summary": {"nodes": 4, "ports": 12, "ports_read": 12,
//!              "ports_failed": 0, "mads_sent": 28, "elapsed_us": 1234}}
//! ```
//! GUIDs are `0x` + 16 hex digits (strings: JSON numbers lose 64-bit
//! precision); counters are named as mad-core names the fields (snake
//! case, as `perfquery --json`), 32-bit and narrower ones JSON integers,
//! 64-bit ones `"0x…"` strings (reserved, PortSelect and CounterSelect
//! fields are left out). The envelope (`command`, `version`, `complete`,
//! `missing`, `error`) is [`crate::json::Envelope`]'s.

use mad_core::hash::FastMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use mad_core::transport::{Address, Qp};
use mad_core::wire::attr::{pm_cap, ClassPortInfo, PortCounters, PortCountersExt};
use mad_core::wire::perf::{PERF_CLASS_VERSION, PERF_DATA_OFFSET};
use mad_core::wire::{
    AttributeId, FieldDesc, FieldValue, Fields, Mad, Method, MgmtClass, Repr, MAD_LEN,
};

use super::model::{type_word, Fabric, Node};
use super::pipeline::{Exchange, Limits, Outcome, Pipeline, PipelineError, Request, Stats};
use crate::json::{Json, JsonExt};

/// What was read of one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSample {
    /// Port number.
    pub port: u8,
    /// The LID it was read at.
    pub lid: u16,
    /// PortCounters, if answered.
    pub counters: Option<PortCounters>,
    /// PortCountersExtended, if the PMA has it and answered.
    pub extended: Option<PortCountersExt>,
    /// Why something could not be read.
    pub error: Option<String>,
}

/// What was read of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSample {
    /// Index in [`Fabric::nodes`].
    pub node: usize,
    /// The PMA's ClassPortInfo CapabilityMask (of the first LID read).
    pub cap_mask: Option<u16>,
    /// Its ports, in port order.
    pub ports: Vec<PortSample>,
}

/// A finished sweep.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// Nodes in the fabric's list order (newest first, as ibnetdiscover).
    pub nodes: Vec<NodeSample>,
    /// MADs sent, answered, retried.
    pub stats: Stats,
    /// Wall time.
    pub elapsed: Duration,
}

impl Sweep {
    /// Ports read completely.
    #[must_use]
    pub fn ports_read(&self) -> usize {
        self.nodes
            .iter()
            .flat_map(|n| &n.ports)
            .filter(|p| p.error.is_none() && p.counters.is_some())
            .count()
    }

    /// Ports with an error.
    #[must_use]
    pub fn ports_failed(&self) -> usize {
        self.nodes
            .iter()
            .flat_map(|n| &n.ports)
            .filter(|p| p.error.is_some())
            .count()
    }
}

/// Why a sweep could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepError {
    /// No port of the fabric has a LID: PerfMgt MADs cannot be routed.
    NoLids,
    /// The transport or the wait failed.
    Transport(String),
}

impl std::fmt::Display for SweepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoLids => f.write_str(
                "no port of the fabric has a LID (is a subnet manager running?): \
                 PerfMgt counters are read by LID, so none can be read",
            ),
            Self::Transport(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SweepError {}

#[derive(Debug, Clone, Copy)]
enum Q {
    ClassPortInfo { node: usize },
    Counters { node: usize, slot: usize },
    Extended { node: usize, slot: usize },
}

/// A PerfMgt Get of `attr` to `lid` with PortSelect `port`.
fn perf_get(lid: u16, attr: AttributeId, port: Option<u8>, dest_key: u64, ctx: Q) -> Request<Q> {
    let mut mad = [0u8; MAD_LEN];
    {
        let mut m = Mad::new_unchecked(&mut mad[..]);
        m.set_request(
            MgmtClass::PERF_MGT,
            PERF_CLASS_VERSION,
            Method::GET,
            attr,
            0,
        );
    }
    if let Some(p) = port {
        // PortSelect: byte 1 of PortCounters / PortCountersExtended.
        mad[PERF_DATA_OFFSET + 1] = p;
    }
    Request {
        qp: Qp::Qp1,
        mad,
        dest: Address::gsi(lid),
        dest_key: Some(dest_key),
        ctx,
    }
}

/// Reads the counters of every port of `f` through `ex`, at most
/// `limits.per_dest` MADs in flight per LID and `limits.window` in
/// total. `progress(done, total)` is called as ports complete.
///
/// # Errors
/// [`SweepError::NoLids`] on an unconfigured fabric; a transport
/// failure.
pub fn sweep(
    ex: &mut dyn Exchange,
    f: &Fabric,
    limits: Limits,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Sweep, SweepError> {
    let start = Instant::now();
    let mut nodes: Vec<NodeSample> = Vec::new();
    let mut any_lid = false;
    let mut p: Pipeline<Q> = Pipeline::new(limits);
    let mut total_ports = 0u64;
    for (slot_node, i) in f.listed().enumerate() {
        let n = &f.nodes[i];
        let first = if n.is_switch() && !n.enhanced_port0 {
            1
        } else {
            u8::from(!n.is_switch())
        };
        let mut ports = Vec::new();
        for pn in first..=n.num_ports() {
            if n.port(pn).is_none() {
                continue;
            }
            let lid = n.lid_of(pn);
            ports.push(PortSample {
                port: pn,
                lid,
                counters: None,
                extended: None,
                error: (lid == 0).then(|| "no LID".to_owned()),
            });
        }
        any_lid |= ports.iter().any(|s| s.lid != 0);
        // One ClassPortInfo per PMA: the switch's LID, a CA's first.
        if let Some(lid) = ports.iter().map(|s| s.lid).find(|&l| l != 0) {
            p.submit(perf_get(
                lid,
                AttributeId::CLASS_PORT_INFO,
                None,
                u64::from(lid),
                Q::ClassPortInfo { node: slot_node },
            ));
        }
        for (slot, s) in ports.iter().enumerate() {
            if s.lid != 0 {
                p.submit(perf_get(
                    s.lid,
                    AttributeId::PM_PORT_COUNTERS,
                    Some(s.port),
                    u64::from(s.lid),
                    Q::Counters {
                        node: slot_node,
                        slot,
                    },
                ));
            }
        }
        total_ports += ports.len() as u64;
        nodes.push(NodeSample {
            node: i,
            cap_mask: None,
            ports,
        });
    }
    if !any_lid {
        return Err(SweepError::NoLids);
    }
    // Ports still waiting for an answer, per node slot, to count progress.
    let mut pending: FastMap<(usize, usize), u8> = FastMap::default();
    for (ni, n) in nodes.iter().enumerate() {
        for (si, s) in n.ports.iter().enumerate() {
            if s.lid != 0 {
                pending.insert((ni, si), 1);
            }
        }
    }
    let mut done = total_ports - pending.len() as u64;
    let run = p.run(ex, &mut |p: &mut Pipeline<Q>, q: Q, o: Outcome| {
        let answer: Result<Vec<u8>, String> = match o {
            Outcome::Answer(m) => {
                let st = Mad::new_unchecked(&m[..]).status().0;
                if st == 0 {
                    Ok(m.to_vec())
                } else {
                    Err(format!("MAD status 0x{st:04x}"))
                }
            }
            Outcome::Timeout => Err("timeout".into()),
            Outcome::Failed(e) => Err(e),
        };
        let data = |m: &[u8]| {
            m.get(PERF_DATA_OFFSET..)
                .map(<[u8]>::to_vec)
                .unwrap_or_default()
        };
        let mut finish = |key: (usize, usize)| {
            if let Some(c) = pending.get_mut(&key) {
                *c = c.saturating_sub(1);
                if *c == 0 {
                    pending.remove(&key);
                    done += 1;
                    progress(done, total_ports);
                }
            }
        };
        match q {
            Q::ClassPortInfo { node } => {
                let cap = answer
                    .ok()
                    .and_then(|m| ClassPortInfo::parse(&data(&m)).ok())
                    .map(|c| c.capability_mask);
                let Some(ns) = nodes.get_mut(node) else {
                    return Ok(());
                };
                ns.cap_mask = cap;
                let ext = cap.is_some_and(|c| {
                    c & (pm_cap::EXT_WIDTH_SUPPORTED | pm_cap::EXT_WIDTH_NOIETF_SUP) != 0
                });
                if ext {
                    for (slot, s) in ns.ports.iter().enumerate() {
                        if s.lid != 0 {
                            if let Some(c) = pending.get_mut(&(node, slot)) {
                                *c += 1;
                                p.submit(perf_get(
                                    s.lid,
                                    AttributeId::PM_PORT_COUNTERS_EXT,
                                    Some(s.port),
                                    u64::from(s.lid),
                                    Q::Extended { node, slot },
                                ));
                            }
                        }
                    }
                }
            }
            Q::Counters { node, slot } => {
                if let Some(s) = nodes.get_mut(node).and_then(|n| n.ports.get_mut(slot)) {
                    match answer
                        .and_then(|m| PortCounters::parse(&data(&m)).map_err(|e| e.to_string()))
                    {
                        Ok(c) => s.counters = Some(c),
                        Err(e) => s.error = Some(e),
                    }
                }
                finish((node, slot));
            }
            Q::Extended { node, slot } => {
                if let Some(s) = nodes.get_mut(node).and_then(|n| n.ports.get_mut(slot)) {
                    match answer
                        .and_then(|m| PortCountersExt::parse(&data(&m)).map_err(|e| e.to_string()))
                    {
                        Ok(c) => s.extended = Some(c),
                        Err(e) => s.error = Some(format!("PortCountersExtended: {e}")),
                    }
                }
                finish((node, slot));
            }
        }
        Ok(())
    });
    run.map_err(|e: PipelineError| SweepError::Transport(e.to_string()))?;
    Ok(Sweep {
        nodes,
        stats: p.stats(),
        elapsed: start.elapsed(),
    })
}

/// The counter fields of a PerfMgt attribute: (libibmad name, value),
/// without reserved, PortSelect and CounterSelect fields.
#[must_use]
pub fn counter_fields(s: &dyn Fields) -> Vec<(&'static str, u64)> {
    counter_values(s)
        .map(|(d, x)| (d.label.unwrap_or(d.name), x))
        .collect()
}

/// The labelled unsigned fields of `s` but PortSelect and CounterSelect*,
/// with their values, in field order.
fn counter_values(s: &dyn Fields) -> impl Iterator<Item = (&'static FieldDesc, u64)> + '_ {
    s.field_descs().iter().enumerate().filter_map(|(i, d)| {
        let label = d.label?;
        if matches!(label, "PortSelect" | "CounterSelect" | "CounterSelect2") {
            return None;
        }
        match s.field_value(i) {
            Some(FieldValue::Uint(x)) => Some((d, x)),
            _ => None,
        }
    })
}

/// The counters of `s` for JSON: the fields [`counter_fields`] lists,
/// by their snake-case names (as `perfquery --json` names them), 64-bit
/// values as `"0x…"` strings.
#[must_use]
pub fn counter_fields_json(s: &dyn Fields) -> Vec<(&'static str, Json)> {
    counter_values(s)
        .map(|(d, x)| (d.name, crate::json::uint_field(d.bit_len, x)))
        .collect()
}

/// The merged counters of a port line (see the module documentation).
#[must_use]
pub fn merged_counters(s: &PortSample) -> Vec<(&'static str, u64)> {
    let mut v = s
        .counters
        .as_ref()
        .map(|c| counter_fields(c))
        .unwrap_or_default();
    if let Some(x) = &s.extended {
        for (label, val) in counter_fields(x) {
            match v.iter_mut().find(|(l, _)| *l == label) {
                Some(e) => e.1 = val,
                None => v.push((label, val)),
            }
        }
    }
    v
}

/// The fabric node a sweep entry is about and its first nonzero port LID
/// (0 when none); `None` for an entry naming no node of `f`.
fn node_and_lid<'f>(f: &'f Fabric, ns: &NodeSample) -> Option<(&'f Node, u16)> {
    let n = f.nodes.get(ns.node)?;
    let lid = ns
        .ports
        .iter()
        .map(|p| p.lid)
        .find(|&l| l != 0)
        .unwrap_or(0);
    Some((n, lid))
}

/// The text form (see the module documentation).
#[must_use]
pub fn format_text(f: &Fabric, s: &Sweep) -> String {
    let mut o = String::new();
    for ns in &s.nodes {
        let Some((n, lid)) = node_and_lid(f, ns) else {
            continue;
        };
        let _ = writeln!(
            o,
            "{} 0x{:016x} \"{}\" lid {lid}",
            type_word(n.node_type()),
            n.guid(),
            n.clean_desc()
        );
        for p in &ns.ports {
            let _ = write!(o, "  [{}] lid {}", p.port, p.lid);
            for (l, v) in merged_counters(p) {
                let _ = write!(o, " {l}={v}");
            }
            if let Some(e) = &p.error {
                let _ = write!(o, " error: {e}");
            }
            o.push('\n');
        }
    }
    o
}

fn guid_str(g: u64) -> Json {
    crate::json::u64_hex(g)
}

fn counters_json(s: Option<&dyn Fields>) -> Json {
    match s {
        None => Json::Null,
        Some(s) => Json::Object(
            counter_fields_json(s)
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v))
                .collect(),
        ),
    }
}

/// The JSON form (see the module documentation).
#[must_use]
pub fn to_json(f: &Fabric, s: &Sweep) -> Json {
    let mut nodes = Vec::new();
    for ns in &s.nodes {
        let Some((n, lid)) = node_and_lid(f, ns) else {
            continue;
        };
        let mut ports = Vec::new();
        for p in &ns.ports {
            let remote = n
                .port(p.port)
                .and_then(|mp| mp.remote)
                .and_then(|r| f.nodes.get(r.node).map(|rn| (rn, r.port)))
                .map_or(Json::Null, |(rn, rp)| {
                    Json::obj()
                        .with("guid", guid_str(rn.guid()))
                        .with("port", Json::from(u64::from(rp)))
                        .with("description", Json::String(rn.clean_desc()))
                });
            ports.push(
                Json::obj()
                    .with("port", Json::from(u64::from(p.port)))
                    .with("lid", Json::from(u64::from(p.lid)))
                    .with("remote", remote)
                    .with(
                        "counters",
                        counters_json(p.counters.as_ref().map(|c| c as &dyn Fields)),
                    )
                    .with(
                        "extended",
                        counters_json(p.extended.as_ref().map(|c| c as &dyn Fields)),
                    )
                    .with("error", Json::opt_str(p.error.as_deref())),
            );
        }
        nodes.push(
            Json::obj()
                .with("guid", guid_str(n.guid()))
                .with("type", Json::String(type_word(n.node_type()).to_owned()))
                .with("description", Json::String(n.clean_desc()))
                .with("lid", Json::from(u64::from(lid)))
                .with("ports", Json::Array(ports)),
        );
    }
    let nports: usize = s.nodes.iter().map(|n| n.ports.len()).sum();
    Json::obj().with("nodes", Json::Array(nodes)).with(
        "summary",
        Json::obj()
            .with("nodes", Json::from(s.nodes.len() as u64))
            .with("ports", Json::from(nports as u64))
            .with("ports_read", Json::from(s.ports_read() as u64))
            .with("ports_failed", Json::from(s.ports_failed() as u64))
            .with("mads_sent", Json::from(s.stats.sent))
            .with(
                "elapsed_us",
                Json::from(u64::try_from(s.elapsed.as_micros()).unwrap_or(u64::MAX)),
            ),
    )
}
