//! `mad exporter --once --json`: the sweep's snapshot as one JSON object
//! (schema `tools/schemas/exporter.schema.json`), beside the envelope's
//! `command`, `version` and `complete`:
//!
//! ```text
//! {"scrape_ok":B,"sweep_seconds":F,"discovery_seconds":F,"ports_failed":N,
//!  "nodes":{"switch":N,"ca":N,...},
//!  "ports":[{"component","local_name","local_guid","local_port","lid",
//!            "remote":{"guid","port","name"}|null,
//!            "link":{"state","phys_state","width","speed_gbps"}|null,
//!            "counters":{"symbol_error_counter":N,...,"port_xmit_data":HEX,...}|null,
//!            "error":TEXT|null}],
//!  "exporter":{"sweeps","discoveries","mads_sent":{"smp","perfmgt"},
//!              "mad_retries":{"smp","perfmgt"},"discovery_query_failures",
//!              "fabric_changes","resets_detected","resets_sent"}}
//! ```
//!
//! The values are those of the metrics of the same name; counter names
//! are the metrics' in snake case (`PortXmitData` → `port_xmit_data`).
//! The counters PortCountersExtended carries as 64 bits (data and packet
//! counts) are `"0x"` + 16 hex digits strings, as the JSON contract
//! writes every 64-bit value; the error counters are numbers. A port
//! whose counters were not read has `counters: null` and its `error`.

use crate::json::{u64_hex, Json, JsonExt};

use super::snapshot::{PortRow, COUNTERS};
use super::state::Snapshot;

/// `PortXmitData` → `port_xmit_data`, `QP1Dropped` → `qp1_dropped`.
#[must_use]
pub fn snake(name: &str) -> String {
    let mut out = String::new();
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if c.is_ascii_uppercase()
            && prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
        {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
        prev = Some(c);
    }
    out
}

fn port(r: &PortRow) -> Json {
    let l = &r.labels;
    let remote = if l[4].is_empty() {
        Json::Null
    } else {
        Json::obj()
            .with("guid", Json::String(l[4].clone()))
            .with("port", Json::from(l[5].parse::<u64>().unwrap_or(0)))
            .with("name", Json::String(l[6].clone()))
    };
    let link = r.link.map_or(Json::Null, |k| {
        Json::obj()
            .with("state", Json::from(k.state))
            .with("phys_state", Json::from(k.phys))
            .with("width", Json::from(k.width))
            .with("speed_gbps", Json::from(k.speed))
    });
    let counters = if r.error.is_some() {
        Json::Null
    } else {
        let mut c = Json::obj();
        for ((name, _, wide), v) in COUNTERS.iter().zip(&r.counters) {
            if let Some(v) = v {
                let v = if *wide { u64_hex(*v) } else { Json::from(*v) };
                c.push(&snake(name), v);
            }
        }
        c
    };
    Json::obj()
        .with("component", Json::String(l[0].clone()))
        .with("local_name", Json::String(l[1].clone()))
        .with("local_guid", Json::String(l[2].clone()))
        .with("local_port", Json::from(u64::from(r.key.1)))
        .with("lid", Json::from(r.lid))
        .with("remote", remote)
        .with("link", link)
        .with("counters", counters)
        .with("error", Json::opt_str(r.error.as_deref()))
}

/// The JSON form of `s` (see the module documentation).
#[must_use]
pub fn to_json(s: &Snapshot) -> Json {
    let t = &s.totals;
    let mut nodes = Json::obj();
    for (c, n) in &s.nodes {
        nodes.push(c, Json::from(*n));
    }
    let by_class = |smp: u64, perf: u64| {
        Json::obj()
            .with("smp", Json::from(smp))
            .with("perfmgt", Json::from(perf))
    };
    Json::obj()
        .with("scrape_ok", Json::Bool(s.ok))
        .with("sweep_seconds", Json::from(s.sweep_time.as_secs_f64()))
        .with(
            "discovery_seconds",
            Json::from(s.discovery_time.as_secs_f64()),
        )
        .with("ports_failed", Json::from(s.ports_failed))
        .with("nodes", nodes)
        .with("ports", Json::Array(s.ports.iter().map(port).collect()))
        .with(
            "exporter",
            Json::obj()
                .with("sweeps", Json::from(t.sweeps))
                .with("discoveries", Json::from(t.discoveries))
                .with("mads_sent", by_class(t.smps_sent, t.perf_sent))
                .with("mad_retries", by_class(t.smp_retries, t.perf_retries))
                .with("discovery_query_failures", Json::from(t.discovery_failures))
                .with("fabric_changes", Json::from(t.fabric_changes))
                .with("resets_detected", Json::from(t.counter_resets))
                .with("resets_sent", Json::from(t.resets_sent)),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_names_become_snake_case() {
        assert_eq!(snake("PortXmitData"), "port_xmit_data");
        assert_eq!(snake("QP1Dropped"), "qp1_dropped");
        assert_eq!(snake("VL15Dropped"), "vl15_dropped");
        assert_eq!(snake("SymbolErrorCounter"), "symbol_error_counter");
    }
}
