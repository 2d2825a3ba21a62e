//! The exposition of a [`Snapshot`]: a `prometheus-client`
//! [`Collector`] that writes every family straight from the snapshot at
//! each scrape (no copy of the fabric into metric objects), and the
//! registry and text encoding `/metrics` serves.

use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::TypedMetric;
use prometheus_client::registry::Registry;

use super::snapshot::{Link, PortRow, COUNTERS, PORT_LABELS};
use super::state::Snapshot;

/// The snapshot being served; the sweep loop replaces it.
pub type Shared = Arc<Mutex<Option<Arc<Snapshot>>>>;

/// The two exposition formats `/metrics` offers: OpenMetrics text to a
/// client that asks for it in `Accept` (Prometheus does), the classic
/// Prometheus text format (0.0.4) to the others (`curl`, `promtool
/// check metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
    /// `text/plain; version=0.0.4`.
    Text,
}

impl Format {
    /// The format an `Accept` header asks for.
    #[must_use]
    pub fn from_accept(accept: Option<&str>) -> Self {
        if accept.is_some_and(|a| a.contains("application/openmetrics-text")) {
            Self::OpenMetrics
        } else {
            Self::Text
        }
    }

    /// Its `Content-Type`.
    #[must_use]
    pub fn content_type(self) -> &'static str {
        match self {
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Self::Text => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// Writes the families of one snapshot (none yet: `infiniband_scrape_ok
/// 0` alone).
#[derive(Debug, Clone)]
pub struct FabricCollector {
    snap: Option<Arc<Snapshot>>,
    lean: bool,
}

type Fam<'a> = [(&'static str, &'a str); 7];

fn labels(r: &PortRow) -> Fam<'_> {
    let l = &r.labels;
    [
        (PORT_LABELS[0], l[0].as_str()),
        (PORT_LABELS[1], l[1].as_str()),
        (PORT_LABELS[2], l[2].as_str()),
        (PORT_LABELS[3], l[3].as_str()),
        (PORT_LABELS[4], l[4].as_str()),
        (PORT_LABELS[5], l[5].as_str()),
        (PORT_LABELS[6], l[6].as_str()),
    ]
}

/// One family with one sample per item that has a value.
fn family<I, T, M>(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    items: I,
    value: impl Fn(&T) -> Option<M>,
    labels: impl Fn(&T) -> Vec<(&'static str, String)>,
) -> Result<(), std::fmt::Error>
where
    I: IntoIterator<Item = T> + Clone,
    M: EncodeMetric + TypedMetric,
{
    if !items.clone().into_iter().any(|t| value(&t).is_some()) {
        return Ok(());
    }
    let mut me = enc.encode_descriptor(name, help, None, M::TYPE)?;
    for t in items {
        if let Some(m) = value(&t) {
            let l = labels(&t);
            m.encode(me.encode_family(&l)?)?;
        }
    }
    Ok(())
}

/// The ports of a snapshot and how their series are labelled.
#[derive(Clone, Copy)]
struct Ports<'a> {
    rows: &'a [PortRow],
    /// Only `local_guid` and `local_port` on each series (the rest on
    /// `infiniband_port_info`).
    lean: bool,
}

/// One family over every port.
fn port_family<M: EncodeMetric + TypedMetric>(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    ports: Ports<'_>,
    value: impl Fn(&PortRow) -> Option<M>,
) -> Result<(), std::fmt::Error> {
    if !ports.rows.iter().any(|r| value(r).is_some()) {
        return Ok(());
    }
    let mut me = enc.encode_descriptor(name, help, None, M::TYPE)?;
    for r in ports.rows {
        if let Some(m) = value(r) {
            if ports.lean {
                let l = &r.labels;
                let key = [
                    (PORT_LABELS[2], l[2].as_str()),
                    (PORT_LABELS[3], l[3].as_str()),
                ];
                m.encode(me.encode_family(&key)?)?;
            } else {
                m.encode(me.encode_family(&labels(r))?)?;
            }
        }
    }
    Ok(())
}

/// The info family of lean series: one `infiniband_port_info` sample
/// (value 1) per port with every label of the cable.
fn port_info(enc: &mut DescriptorEncoder<'_>, rows: &[PortRow]) -> Result<(), std::fmt::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut me = enc.encode_descriptor(
        "infiniband_port",
        "The cable of a port: its node's component and name, the remote end. Join on local_guid and local_port.",
        None,
        prometheus_client::metrics::MetricType::Info,
    )?;
    for r in rows {
        Info::new(labels(r)).encode(me.encode_family(&NO_LABELS)?)?;
    }
    Ok(())
}

/// No labels of its own (an info sample's are its family's).
const NO_LABELS: [(&str, &str); 0] = [];

fn scalar<M: EncodeMetric + TypedMetric>(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    m: &M,
) -> Result<(), std::fmt::Error> {
    m.encode(enc.encode_descriptor(name, help, None, M::TYPE)?)
}

fn link<M>(f: impl Fn(&Link) -> M) -> impl Fn(&PortRow) -> Option<M> {
    move |r| r.link.as_ref().map(&f)
}

impl FabricCollector {
    /// A collector of `snap`, with lean series when `lean`.
    #[must_use]
    pub fn new(snap: Option<Arc<Snapshot>>, lean: bool) -> Self {
        Self { snap, lean }
    }
}

impl Collector for FabricCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let Some(s) = &self.snap else {
            return scalar(
                &mut enc,
                "infiniband_scrape_ok",
                "1 if the last sweep read every port and discovery query, else 0 (no sweep done yet).",
                &ConstGauge::new(0i64),
            );
        };
        encode_snapshot(&mut enc, s, self.lean)
    }
}

fn encode_snapshot(
    enc: &mut DescriptorEncoder<'_>,
    s: &Snapshot,
    lean: bool,
) -> Result<(), std::fmt::Error> {
    let p = Ports {
        rows: &s.ports,
        lean,
    };
    if lean {
        port_info(enc, &s.ports)?;
    }
    for (i, (name, help, _)) in COUNTERS.iter().enumerate() {
        let metric = format!("infiniband_{}", name.to_ascii_lowercase());
        port_family(enc, &metric, help, p, |r| {
            r.counters.get(i).copied().flatten().map(ConstCounter::new)
        })?;
    }
    port_family(
        enc,
        "infiniband_speed",
        "Link current speed per lane, Gbit/s.",
        p,
        link(|l| ConstGauge::new(l.speed)),
    )?;
    port_family(
        enc,
        "infiniband_width",
        "Lanes per link.",
        p,
        link(|l| ConstGauge::new(i64::from(l.width))),
    )?;
    port_family(
        enc,
        "infiniband_link_state",
        "PortState: 1 Down, 2 Init, 3 Armed, 4 Active.",
        p,
        link(|l| ConstGauge::new(i64::from(l.state))),
    )?;
    port_family(enc, "infiniband_physical_state", "PortPhysicalState: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.", p, link(|l| ConstGauge::new(i64::from(l.phys))))?;
    port_family(
        enc,
        "infiniband_lid",
        "LID the port's counters are read at (a switch's: its port 0's).",
        p,
        |r| Some(ConstGauge::new(i64::from(r.lid))),
    )?;
    port_family(
        enc,
        "infiniband_exporter_port_query_ok",
        "1 if the port's counters were read in the last sweep, else 0.",
        p,
        |r| Some(ConstGauge::new(i64::from(r.error.is_none()))),
    )?;
    let t = &s.totals;
    scalar(
        enc,
        "infiniband_scrape_duration_seconds",
        "Seconds the last sweep of every port's counters took.",
        &ConstGauge::new(s.sweep_time.as_secs_f64()),
    )?;
    scalar(
        enc,
        "infiniband_exporter_discovery_duration_seconds",
        "Seconds the last discovery of the fabric took.",
        &ConstGauge::new(s.discovery_time.as_secs_f64()),
    )?;
    scalar(
        enc,
        "infiniband_scrape_ok",
        "1 if the last sweep read every port and discovery query, else 0.",
        &ConstGauge::new(i64::from(s.ok)),
    )?;
    scalar(
        enc,
        "infiniband_exporter_ports_failed",
        "Ports whose counters the last sweep could not read.",
        &ConstGauge::new(s.ports_failed),
    )?;
    family(
        enc,
        "infiniband_exporter_nodes",
        "Nodes of the fabric in the last sweep, by component.",
        s.nodes.iter(),
        |(_, n)| Some(ConstGauge::new(*n)),
        |(c, _)| vec![("component", (*c).to_owned())],
    )?;
    scalar(
        enc,
        "infiniband_exporter_sweeps",
        "Counter sweeps done.",
        &ConstCounter::new(t.sweeps),
    )?;
    scalar(
        enc,
        "infiniband_exporter_discoveries",
        "Fabric discoveries done.",
        &ConstCounter::new(t.discoveries),
    )?;
    let classes = [
        ("smp", t.smps_sent, t.smp_retries),
        ("perfmgt", t.perf_sent, t.perf_retries),
    ];
    for (name, help, retries) in [
        (
            "infiniband_exporter_mads_sent",
            "MADs sent, resends included, by management class.",
            false,
        ),
        (
            "infiniband_exporter_mad_retries",
            "MADs resent after a timeout, by management class.",
            true,
        ),
    ] {
        family(
            enc,
            name,
            help,
            classes.iter(),
            |c| Some(ConstCounter::new(if retries { c.2 } else { c.1 })),
            |c| vec![("class", c.0.to_owned())],
        )?;
    }
    scalar(
        enc,
        "infiniband_exporter_discovery_query_failures",
        "Discovery queries (SMPs) that went unanswered.",
        &ConstCounter::new(t.discovery_failures),
    )?;
    let mut nodes: Vec<_> = t.nodes.iter().collect();
    nodes.sort_unstable_by_key(|(g, _)| **g);
    let node_labels = |(g, n): &(&u64, &super::state::NodeFailures)| {
        vec![
            ("component", n.component.to_owned()),
            ("local_name", n.name.clone()),
            ("local_guid", format!("0x{g:016x}")),
        ]
    };
    family(
        enc,
        "infiniband_exporter_node_query_timeouts",
        "Counter queries of the node that timed out.",
        nodes.iter().copied(),
        |(_, n)| Some(ConstCounter::new(n.timeouts)),
        node_labels,
    )?;
    family(
        enc,
        "infiniband_exporter_node_query_failures",
        "Counter queries of the node that failed otherwise (error status, send failure).",
        nodes.iter().copied(),
        |(_, n)| Some(ConstCounter::new(n.failures)),
        node_labels,
    )?;
    scalar(enc, "infiniband_exporter_fabric_changes", "Ports whose link changed (state, physical state, width, speed), appeared or went away between two discoveries.", &ConstCounter::new(t.fabric_changes))?;
    scalar(enc, "infiniband_exporter_resets_detected", "Port counters seen going down between two sweeps, plus those the exporter reset (--can-reset-counter).", &ConstCounter::new(t.counter_resets))?;
    scalar(
        enc,
        "infiniband_exporter_resets_sent",
        "Port counters the exporter reset because they neared saturation (--can-reset-counter).",
        &ConstCounter::new(t.resets_sent),
    )?;
    Ok(())
}

/// The snapshot `shared` holds now.
#[must_use]
pub fn current(shared: &Shared) -> Option<Arc<Snapshot>> {
    shared
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Writes the exposition of `snap` in `format` to `out` (lean series
/// when `lean`).
///
/// # Errors
/// `out` refused a write.
pub fn write_exposition(
    snap: Option<Arc<Snapshot>>,
    lean: bool,
    format: Format,
    out: &mut impl std::fmt::Write,
) -> Result<(), std::fmt::Error> {
    let mut r = Registry::default();
    r.register_collector(Box::new(FabricCollector::new(snap, lean)));
    match format {
        Format::OpenMetrics => prometheus_client::encoding::text::encode(out, &r),
        Format::Text => prometheus_client::encoding::prometheus_text::encode(out, &r),
    }
}

/// The exposition of `snap` in `format` as text.
///
/// # Errors
/// Formatting failed (it writes to a `String`, so only a bug would).
pub fn exposition(
    snap: Option<Arc<Snapshot>>,
    lean: bool,
    format: Format,
) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    write_exposition(snap, lean, format, &mut out)?;
    Ok(out)
}
