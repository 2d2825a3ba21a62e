//! One complete sweep as the exporter serves it: a row per port of the
//! discovered fabric (its cable's labels, link gauges, counters) built
//! from the discovery model and the counter sweep, free of I/O.

use mad_core::wire::attr::{port_cap, PortInfo};

use crate::discover::counters::{counter_fields, PortSample, Sweep};
use crate::discover::format::link_rate;
use crate::discover::model::{Fabric, Node};
use crate::namemap::NameMap;

/// The counters exported, by their libibmad names (the metric is
/// `infiniband_<name in lower case>_total`), with their help text and
/// whether PortCountersExtended carries the 64-bit value the exporter
/// prefers (the data and packet counters; the error counters come from
/// PortCounters, which every PMA has).
pub const COUNTERS: &[(&str, &str, bool)] = &[
    ("SymbolErrorCounter", "Total number of minor link errors detected on one or more physical lanes.", false),
    ("LinkErrorRecoveryCounter", "Total number of times the Port Training state machine has successfully completed the link error recovery process.", false),
    ("LinkDownedCounter", "Total number of times the Port Training state machine has failed the link error recovery process and downed the link.", false),
    ("PortRcvErrors", "Total number of packets containing an error that were received on the port.", false),
    ("PortRcvRemotePhysicalErrors", "Total number of packets marked with the EBP delimiter received on the port.", false),
    ("PortRcvSwitchRelayErrors", "Total number of packets received on the port that were discarded because they could not be forwarded by the switch relay.", false),
    ("PortXmitDiscards", "Total number of outbound packets discarded by the port because the port is down or congested.", false),
    ("PortXmitConstraintErrors", "Total number of packets not transmitted from the port because of outbound raw filtering or partition enforcement.", false),
    ("PortRcvConstraintErrors", "Total number of packets received on the port that were discarded because of inbound raw filtering or partition enforcement.", false),
    ("LocalLinkIntegrityErrors", "The number of times that the count of local physical errors exceeded the threshold specified by LocalPhyErrors.", false),
    ("ExcessiveBufferOverrunErrors", "The number of times that OverrunErrors consecutive flow control update periods occurred with an overrun error.", false),
    ("QP1Dropped", "Total number of QP1 MADs dropped by the port.", false),
    ("VL15Dropped", "The number of incoming VL15 packets dropped due to resource limitations (for example, lack of buffers) in the port.", false),
    ("PortXmitData", "Total number of data octets, divided by 4 (lanes), transmitted on all VLs.", true),
    ("PortRcvData", "Total number of data octets, divided by 4 (lanes), received on all VLs.", true),
    ("PortXmitPkts", "Total number of packets transmitted on all VLs from this port. This may include packets with errors.", true),
    ("PortRcvPkts", "Total number of packets received. This may include packets containing errors.", true),
    ("PortXmitWait", "The number of ticks during which the port had data to transmit but no data was sent during the entire tick.", false),
    ("PortUnicastXmitPkts", "Total number of unicast packets transmitted on all VLs from the port. This may include unicast packets with errors.", true),
    ("PortUnicastRcvPkts", "Total number of unicast packets, including unicast packets containing errors.", true),
    ("PortMulticastXmitPkts", "Total number of multicast packets transmitted on all VLs from the port. This may include multicast packets with errors.", true),
    ("PortMulticastRcvPkts", "Total number of multicast packets, including multicast packets containing errors.", true),
];

/// The label names of a port's series, as guilbaults/infiniband-exporter
/// names them: each series is one cable.
pub const PORT_LABELS: [&str; 7] = [
    "component",
    "local_name",
    "local_guid",
    "local_port",
    "remote_guid",
    "remote_port",
    "remote_name",
];

/// The link of a port as discovery read its PortInfo.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// PortState (1 Down, 2 Init, 3 Armed, 4 Active).
    pub state: u8,
    /// PortPhysicalState (5 LinkUp, 2 Polling, 3 Disabled, ...).
    pub phys: u8,
    /// Lanes (1, 2, 4, 8, 12; 0 unknown).
    pub width: u8,
    /// Gbit/s per lane (0 unknown).
    pub speed: f64,
}

/// One port: its labels, link, counters.
#[derive(Debug, Clone)]
pub struct PortRow {
    /// Node GUID and port number: what identifies the port across sweeps.
    pub key: (u64, u8),
    /// The values of [`PORT_LABELS`].
    pub labels: [String; 7],
    /// The LID it was read at.
    pub lid: u16,
    /// Its link, if discovery read its PortInfo.
    pub link: Option<Link>,
    /// The values of [`COUNTERS`], `None` where not read.
    pub counters: Vec<Option<u64>>,
    /// Why its counters could not be read.
    pub error: Option<String>,
}

/// `component` label of a node.
#[must_use]
pub fn component(n: &Node) -> &'static str {
    match n.node_type().0 {
        1 => "ca",
        2 => "switch",
        3 => "router",
        _ => "unknown",
    }
}

/// A node's name: the node name map's, else its description.
#[must_use]
pub fn node_name(n: &Node, map: Option<&NameMap>) -> String {
    map.and_then(|m| m.get(n.guid()))
        .map_or_else(|| n.clean_desc(), str::to_owned)
}

/// Lanes of a LinkWidthActive name (`4x` → 4).
fn lanes(name: &str) -> u8 {
    name.trim_end_matches(['x', 'X']).parse().unwrap_or(0)
}

/// Gbit/s per lane of a speed name (`EDR` → 25.78125).
fn lane_gbps(name: &str) -> f64 {
    match name {
        "SDR" => 2.5,
        "DDR" => 5.0,
        "QDR" => 10.0,
        "FDR10" => 10.3125,
        "FDR" => 14.0625,
        "EDR" => 25.781_25,
        "HDR" => 53.125,
        "NDR" => 106.25,
        _ => 0.0,
    }
}

/// The link gauges of `pi` on `n` (a switch's extended speeds are valid
/// per its port 0's CapabilityMask).
fn link_of(n: &Node, pi: &PortInfo, ext_speed_active: u8) -> Link {
    let cap = if n.is_switch() {
        n.port(0)
            .and_then(|p| p.info.as_ref())
            .map_or(0, |i| i.capability_mask)
    } else {
        pi.capability_mask
    };
    let (w, s) = link_rate(pi, cap & port_cap::HAS_EXT_SPEEDS, ext_speed_active);
    Link {
        state: pi.port_state.0,
        phys: pi.port_phys_state.0,
        width: lanes(w),
        speed: lane_gbps(s),
    }
}

/// The values of [`COUNTERS`] for one port sample: 64-bit
/// PortCountersExtended values for the data and packet counters where
/// read, PortCounters for the rest.
#[must_use]
pub fn counter_values(s: &PortSample) -> Vec<Option<u64>> {
    let basic = s
        .counters
        .as_ref()
        .map(|c| counter_fields(c))
        .unwrap_or_default();
    let ext = s
        .extended
        .as_ref()
        .map(|c| counter_fields(c))
        .unwrap_or_default();
    let find = |v: &[(&str, u64)], name: &str| v.iter().find(|(l, _)| *l == name).map(|x| x.1);
    COUNTERS
        .iter()
        .map(|(name, _, prefer_ext)| {
            let e = if *prefer_ext { find(&ext, name) } else { None };
            e.or_else(|| find(&basic, name))
        })
        .collect()
}

/// Every port of the sweep as a row, in the sweep's order.
#[must_use]
pub fn port_rows(f: &Fabric, s: &Sweep, map: Option<&NameMap>) -> Vec<PortRow> {
    let mut rows = Vec::new();
    for ns in &s.nodes {
        let Some(n) = f.nodes.get(ns.node) else {
            continue;
        };
        let name = node_name(n, map);
        let guid = format!("0x{:016x}", n.guid());
        for p in &ns.ports {
            let mp = n.port(p.port);
            let remote = mp
                .and_then(|mp| mp.remote)
                .and_then(|r| f.nodes.get(r.node).map(|rn| (rn, r.port)));
            let (rguid, rport, rname) = remote.map_or_else(
                || (String::new(), String::new(), String::new()),
                |(rn, rp)| {
                    (
                        format!("0x{:016x}", rn.guid()),
                        rp.to_string(),
                        node_name(rn, map),
                    )
                },
            );
            rows.push(PortRow {
                key: (n.guid(), p.port),
                labels: [
                    component(n).to_owned(),
                    name.clone(),
                    guid.clone(),
                    p.port.to_string(),
                    rguid,
                    rport,
                    rname,
                ],
                lid: p.lid,
                link: mp.and_then(|mp| {
                    mp.info
                        .as_ref()
                        .map(|pi| link_of(n, pi, mp.ext_speed_active))
                }),
                counters: if p.error.is_some() {
                    vec![None; COUNTERS.len()]
                } else {
                    counter_values(p)
                },
                error: p.error.clone(),
            });
        }
    }
    rows
}

/// The PortCounters fields of `s` at or above half their range (what
/// guilbaults/infiniband-exporter resets with `--can-reset-counter`):
/// a counter there saturates soon and then stops counting. Only
/// counters the exporter takes from PortCounters count (the 64-bit
/// extended ones never saturate).
#[must_use]
pub fn near_saturation(s: &PortSample) -> Vec<&'static str> {
    use mad_core::wire::Fields;
    let Some(c) = &s.counters else {
        return Vec::new();
    };
    let has_ext = s.extended.is_some();
    let mut out = Vec::new();
    for (i, d) in c.field_descs().iter().enumerate() {
        let Some(label) = d.label else { continue };
        let Some((name, _, prefer_ext)) = COUNTERS.iter().find(|(n, _, _)| *n == label) else {
            continue;
        };
        if *prefer_ext && has_ext {
            continue;
        }
        if let Some(mad_core::wire::FieldValue::Uint(v)) = c.field_value(i) {
            let half = 1u64 << (d.bit_len.clamp(1, 64) - 1);
            if v >= half {
                out.push(*name);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::wire::attr::{PortCounters, PortCountersExt};

    fn sample() -> PortSample {
        PortSample {
            port: 1,
            lid: 2,
            counters: Some(PortCounters {
                symbol_error_counter: 7,
                port_xmit_data: 0xffff_ffff,
                port_rcv_pkts: 12,
                ..PortCounters::default()
            }),
            extended: None,
            error: None,
        }
    }

    fn value(v: &[Option<u64>], name: &str) -> Option<u64> {
        let i = COUNTERS
            .iter()
            .position(|c| c.0 == name)
            .unwrap_or(usize::MAX);
        v.get(i).copied().flatten()
    }

    #[test]
    fn extended_data_counters_replace_the_32_bit_ones_and_errors_stay() {
        let mut s = sample();
        assert_eq!(
            value(&counter_values(&s), "PortXmitData"),
            Some(0xffff_ffff)
        );
        assert_eq!(value(&counter_values(&s), "PortUnicastXmitPkts"), None);
        s.extended = Some(PortCountersExt {
            port_xmit_data: 0x1_0000_0000,
            port_unicast_xmit_pkts: 5,
            symbol_error_counter: 0,
            ..PortCountersExt::default()
        });
        let v = counter_values(&s);
        assert_eq!(value(&v, "PortXmitData"), Some(0x1_0000_0000));
        assert_eq!(value(&v, "PortUnicastXmitPkts"), Some(5));
        // An extended PMA without the additional counters reads 0 there:
        // the 16-bit PortCounters value is the one kept.
        assert_eq!(value(&v, "SymbolErrorCounter"), Some(7));
        assert_eq!(v.len(), COUNTERS.len());
    }

    #[test]
    fn a_counter_past_half_its_range_is_near_saturation_unless_extended() {
        let mut s = sample();
        assert_eq!(near_saturation(&s), vec!["PortXmitData"]);
        s.counters = s.counters.map(|c| PortCounters {
            link_downed_counter: 0x80,
            ..c
        });
        assert_eq!(
            near_saturation(&s),
            vec!["LinkDownedCounter", "PortXmitData"]
        );
        s.extended = Some(PortCountersExt::default());
        assert_eq!(near_saturation(&s), vec!["LinkDownedCounter"]);
        s.counters = None;
        assert!(near_saturation(&s).is_empty());
    }

    #[test]
    fn widths_and_speeds_are_numbers() {
        assert_eq!(lanes("4x"), 4);
        assert_eq!(lanes("12x"), 12);
        assert_eq!(lanes("??"), 0);
        assert!((lane_gbps("EDR") - 25.78125).abs() < 1e-9);
        assert!(lane_gbps("???").abs() < f64::EPSILON);
    }
}
