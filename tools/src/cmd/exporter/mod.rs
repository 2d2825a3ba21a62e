//! `mad exporter`: a Prometheus exporter for a whole fabric, on any
//! transport (`--sim`, `--ibsim`, a real port).
//!
//! ```text
//! mad [--sim|--ibsim|-C CA -P PORT] exporter [--listen ADDR:PORT] [--interval S]
//!     [--rediscover S] [--node-name-map FILE] [--can-reset-counter]
//!     [-o N] [--per-node N] [-t MS] [--once [--json]] [--sweeps N] [--lean] [-v]
//! ```
//!
//! It discovers the fabric ([`crate::discover`]), keeps the model, and
//! sweeps the counters of every port of every node, switches and CAs
//! ([`crate::discover::counters`]: PortCountersExtended where the PMA
//! has it, PortCounters otherwise) every `--interval` seconds (default
//! 10), with at most `-o` MADs in flight on the port (default 256) and
//! `--per-node` per node (default 4). It re-discovers every
//! `--rediscover` seconds (default 300) and after a sweep in which some
//! port did not answer (a pulled cable, a rebooted node), and counts the
//! ports whose link changed.
//!
//! `/metrics` serves the last complete sweep ([`encode`]), `/-/healthy`
//! answers `OK` (default listen address `0.0.0.0:9683`, the port of
//! guilbaults/infiniband-exporter, whose metric and label names these
//! are). `--once` sweeps once and prints the exposition on stdout
//! instead of serving it (exit status 3 when some port or discovery
//! query went unanswered; `--json`: the snapshot as JSON, [`json`]);
//! `--sweeps N` stops after N sweeps. `--lean` writes lean series (the
//! port key alone on each, the cable's labels on one
//! `infiniband_port_info` series per port).
//! `--can-reset-counter` resets the PortCounters of a port when one of
//! them passes half its range (a 32-bit counter stops counting when it
//! saturates); the drop shows as a counter reset to Prometheus.
//!
//! Module layout: [`snapshot`] turns a sweep into rows (labels, link
//! gauges, counters), [`state`] keeps the exporter's totals between
//! sweeps, [`encode`] writes them with `prometheus-client`, [`body`]
//! encodes and gzips them once per snapshot, [`http`] serves them with
//! hyper ([`conn`]: a connection's write timeout and the cap's choice),
//! [`json`] is `--once --json`; this file parses the command line and
//! runs the sweep loop.

pub mod body;
pub mod conn;
pub mod encode;
pub mod http;
pub mod json;
pub mod snapshot;
pub mod state;

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use mad_core::wire::attr::pm_cap;
use mad_core::wire::AttributeId;

use crate::command::{CliError, Invocation};
use crate::discover::agent::AgentExchange;
use crate::discover::counters::{self, Sweep, SweepError};
use crate::discover::model::Fabric;
use crate::discover::pma::{run_batch, PmaQuery};
use crate::discover::{self, Exchange, GatherOptions, Limits, Stats};
use crate::ibdiag::{self, Opt, ToolSpec};
use crate::ibdiag::{limits, open_name_map};
use crate::namemap::NameMap;

use encode::Shared;
use state::State;

const OPT_LISTEN: i32 = 11;
const OPT_INTERVAL: i32 = 12;
const OPT_REDISCOVER: i32 = 13;
const OPT_NAME_MAP: i32 = 14;
const OPT_CAN_RESET: i32 = 15;
const OPT_ONCE: i32 = 16;
const OPT_SWEEPS: i32 = 17;
const OPT_LEAN: i32 = 18;
/// `--per-node`: `mad sweep`'s key.
use crate::ibdiag::OPT_PER_NODE;

/// The default listen address (guilbaults/infiniband-exporter's port).
pub const DEFAULT_LISTEN: &str = "0.0.0.0:9683";

/// `mad exporter`'s own options.
pub const OPTS: &[Opt] = &[
    Opt::long(
        "listen",
        OPT_LISTEN,
        true,
        Some("<addr:port>"),
        "serve /metrics there (default 0.0.0.0:9683)",
    ),
    Opt::long(
        "interval",
        OPT_INTERVAL,
        true,
        Some("<s>"),
        "seconds between counter sweeps (default 10)",
    ),
    Opt::long(
        "rediscover",
        OPT_REDISCOVER,
        true,
        Some("<s>"),
        "seconds between discoveries (default 300)",
    ),
    ibdiag::node_name_map_opt(OPT_NAME_MAP),
    Opt::long(
        "can-reset-counter",
        OPT_CAN_RESET,
        false,
        None,
        "reset PortCounters past half their range",
    ),
    Opt::long(
        "once",
        OPT_ONCE,
        false,
        None,
        "sweep once, print the metrics on stdout, exit",
    ),
    Opt::long(
        "lean",
        OPT_LEAN,
        false,
        None,
        "port series keyed by local_guid and local_port only; the rest on infiniband_port_info",
    ),
    Opt::long(
        "sweeps",
        OPT_SWEEPS,
        true,
        Some("<n>"),
        "stop after n sweeps (default: never)",
    ),
    // `-o` and `--per-node`, as `mad sweep` has them.
    ibdiag::SWEEP_WINDOW_OPTS[0],
    ibdiag::SWEEP_WINDOW_OPTS[1],
];

/// The command line of `mad exporter`: no `-e` (a port whose counters
/// could not be read is reported in `infiniband_exporter_port_query_ok`
/// and `infiniband_exporter_ports_failed` anyway).
pub const SPEC: ToolSpec<'static> = ToolSpec {
    opts: OPTS,
    exclude: "DGLKse",
    usage_args: "",
    examples: &[
        "--listen 127.0.0.1:9683 --interval 5",
        "--once",
        "--once --json",
        "--lean",
    ],
};

/// The settings of a run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--listen`.
    pub listen: String,
    /// `--interval`.
    pub interval: Duration,
    /// `--rediscover`.
    pub rediscover: Duration,
    /// `--node-name-map`.
    pub name_map: Option<String>,
    /// `--can-reset-counter`.
    pub can_reset: bool,
    /// `--once`.
    pub once: bool,
    /// `--sweeps` (0: no end).
    pub sweeps: u64,
    /// `--lean`.
    pub lean: bool,
    /// `-o`.
    pub window: Option<usize>,
    /// `--per-node`.
    pub per_node: Option<usize>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN.to_owned(),
            interval: Duration::from_secs(10),
            rediscover: Duration::from_secs(300),
            name_map: None,
            can_reset: false,
            once: false,
            sweeps: 0,
            lean: false,
            window: None,
            per_node: None,
        }
    }
}

fn seconds(flag: &str, v: &str, zero_ok: bool) -> Result<Duration, String> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (*s > 0.0 || (zero_ok && *s == 0.0)) && *s < 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            format!(
                "exporter: {flag} takes {} number of seconds, not {v:?} (e.g. {flag} 10)",
                if zero_ok { "a" } else { "a positive" }
            )
        })
}

fn count(flag: &str, v: &str) -> Result<u64, String> {
    crate::cnum::c_strtoul_full(v)
        .filter(|n| *n > 0 && !v.trim_start().starts_with('-'))
        .ok_or_else(|| {
            format!("exporter: {flag} takes a positive number, not {v:?} (e.g. {flag} 64)")
        })
}

/// Reads the exporter's own options (value checks included).
///
/// # Errors
/// A bad value, with what was expected.
pub fn settings(custom: &[(i32, Option<String>)]) -> Result<Settings, String> {
    let mut s = Settings::default();
    for (key, val) in custom {
        let v = val.as_deref().unwrap_or("");
        match *key {
            OPT_LISTEN => {
                if v.rsplit_once(':')
                    .is_none_or(|(_, p)| p.parse::<u16>().is_err())
                {
                    return Err(format!(
                        "exporter: --listen takes ADDR:PORT, not {v:?} (e.g. --listen 127.0.0.1:9683)"
                    ));
                }
                s.listen = v.to_owned();
            }
            OPT_INTERVAL => s.interval = seconds("--interval", v, true)?,
            OPT_REDISCOVER => s.rediscover = seconds("--rediscover", v, false)?,
            OPT_NAME_MAP => s.name_map = Some(v.to_owned()),
            OPT_CAN_RESET => s.can_reset = true,
            OPT_ONCE => s.once = true,
            OPT_LEAN => s.lean = true,
            OPT_SWEEPS => s.sweeps = count("--sweeps", v)?,
            OPT_PER_NODE => {
                s.per_node = Some(usize::try_from(count("--per-node", v)?).unwrap_or(usize::MAX))
            }
            k if k == i32::from(b'o') => {
                s.window = Some(usize::try_from(count("-o", v)?).unwrap_or(usize::MAX))
            }
            _ => {}
        }
    }
    Ok(s)
}

/// The sweep loop's context.
struct Run<'a> {
    settings: Settings,
    limits: Limits,
    gather: GatherOptions,
    map: Option<NameMap>,
    state: State,
    fabric: Option<Fabric>,
    last_discovery: Option<Instant>,
    rediscover_now: bool,
    shared: Shared,
    verbose: bool,
    ex: AgentExchange<'a>,
}

impl Run<'_> {
    /// Runs `f` on the exchange; its result and the MADs it sent and
    /// resent (the exchange counts over its whole life).
    fn counted<T>(&mut self, f: impl FnOnce(&mut AgentExchange<'_>) -> T) -> (T, Stats) {
        let (sent, resent) = (self.ex.sent(), self.ex.resent());
        let r = f(&mut self.ex);
        let mads = Stats {
            sent: self.ex.sent() - sent,
            retries: self.ex.resent() - resent,
            ..Stats::default()
        };
        (r, mads)
    }

    /// Discovers the fabric when it is time; false when there is no
    /// model to sweep.
    fn maybe_discover(&mut self, inv: &mut Invocation<'_, '_>) -> Result<bool, CliError> {
        let due = self.fabric.is_none()
            || self.rediscover_now
            || self
                .last_discovery
                .is_none_or(|t| t.elapsed() >= self.settings.rediscover);
        if !due {
            return Ok(true);
        }
        self.last_discovery = Some(Instant::now());
        self.rediscover_now = false;
        let gather = self.gather;
        let (r, mads) = self.counted(|ex| discover::discover(ex, &gather, false, &mut |_| {}));
        match r {
            Ok(d) => {
                let before = self.state.totals.fabric_changes;
                self.state.discovered(&d, &mads);
                if self.verbose || self.state.totals.fabric_changes > before {
                    inv.io.err(&format!(
                        "{}: discovered {} nodes with {} SMPs in {} ({} unanswered; {} ports changed)\n",
                        inv.prog,
                        d.fabric.nodes.len(),
                        mads.sent,
                        ibdiag::human_duration(d.elapsed),
                        d.failures.len(),
                        self.state.totals.fabric_changes - before
                    ));
                }
                self.fabric = Some(d.fabric);
            }
            Err(e) => {
                self.state.totals.discoveries += 1;
                self.state.totals.discovery_failures += 1;
                if self.settings.once {
                    return Err(CliError::Failed(format!("exporter: discovery failed: {e}")));
                }
                inv.io
                    .err(&format!("{}: discovery failed: {e}\n", inv.prog));
            }
        }
        Ok(self.fabric.is_some())
    }

    /// Resets the PortCounters of the ports of `s` near saturation.
    fn reset_counters(
        &mut self,
        inv: &mut Invocation<'_, '_>,
        f: &Fabric,
        s: &Sweep,
    ) -> Result<(), CliError> {
        let mut batch = Vec::new();
        let mut keys = Vec::new();
        let mut names = 0u64;
        for ns in &s.nodes {
            let Some(n) = f.nodes.get(ns.node) else {
                continue;
            };
            for p in &ns.ports {
                let near = snapshot::near_saturation(p);
                if near.is_empty() || p.lid == 0 {
                    continue;
                }
                // CounterSelect: every PortCounters counter;
                // CounterSelect2 bit 0: PortXmitWait, where supported.
                let mut d = vec![0u8; 19];
                d[2..4].copy_from_slice(&0xFFFFu16.to_be_bytes());
                if ns
                    .cap_mask
                    .is_some_and(|c| c & pm_cap::PC_XMIT_WAIT_SUP != 0)
                {
                    d[18] = 1;
                }
                batch.push(PmaQuery {
                    lid: p.lid,
                    attr: AttributeId::PM_PORT_COUNTERS,
                    port: Some(p.port),
                    set: Some(d),
                });
                keys.push((n.guid(), p.port));
                names += near.len() as u64;
                inv.io.err(&format!(
                    "{}: resetting the counters of {:?} port {} (0x{:016x}): {} past half their range\n",
                    inv.prog,
                    snapshot::node_name(n, self.map.as_ref()),
                    p.port,
                    n.guid(),
                    near.join(", ")
                ));
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        let limits = self.limits;
        let (results, sent) = self.counted(|ex| run_batch(ex, limits, &batch));
        let results = results.map_err(|e| CliError::Failed(format!("exporter: {e}")))?;
        for (k, r) in keys.iter().zip(&results) {
            if r.is_ok() {
                self.state.forget(*k);
            }
        }
        self.state.resets_sent(&sent, names);
        Ok(())
    }

    /// One cycle: discovery when due, a sweep, the new snapshot. Returns
    /// the snapshot when a sweep was made.
    fn cycle(
        &mut self,
        inv: &mut Invocation<'_, '_>,
    ) -> Result<Option<Arc<state::Snapshot>>, CliError> {
        if !self.maybe_discover(inv)? {
            return Ok(None);
        }
        let Some(f) = self.fabric.take() else {
            return Ok(None);
        };
        let limits = self.limits;
        let (r, mads) = self.counted(|ex| counters::sweep(ex, &f, limits, &mut |_, _| {}));
        let out = match r {
            Ok(s) => {
                let snap = Arc::new(self.state.swept(&f, &s, &mads, self.map.as_ref()));
                if s.ports_failed() > 0 {
                    self.rediscover_now = true;
                }
                if self.settings.can_reset {
                    self.reset_counters(inv, &f, &s)?;
                }
                if self.verbose {
                    inv.io.err(&format!(
                        "{}: swept {} ports ({} failed) with {} PerfMgt MADs in {}\n",
                        inv.prog,
                        s.ports_read() + s.ports_failed(),
                        s.ports_failed(),
                        mads.sent,
                        ibdiag::human_duration(s.elapsed)
                    ));
                }
                *self.shared.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(Arc::clone(&snap));
                Some(snap)
            }
            Err(SweepError::NoLids) if !self.settings.once => {
                inv.io
                    .err(&format!("{}: {}\n", inv.prog, SweepError::NoLids));
                self.rediscover_now = true;
                None
            }
            Err(e) => return Err(CliError::Failed(format!("exporter: {e}"))),
        };
        self.fabric = Some(f);
        Ok(out)
    }
}

/// Runs `mad exporter`.
///
/// # Errors
/// Bad options, no port, an address that cannot be listened on, a
/// transport failure; with `--once`, a discovery failure or an
/// incomplete sweep (exit status 3).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let p = ibdiag::parse(inv, &SPEC)?;
    let settings = settings(&p.custom).map_err(CliError::Usage)?;
    if let Some(extra) = p.args.first() {
        return Err(CliError::Usage(format!(
            "exporter takes no argument ({extra:?})"
        )));
    }
    if p.common.json && !settings.once {
        return Err(CliError::Usage(
            "exporter: --json goes with --once (/metrics serves the Prometheus exposition format)"
                .into(),
        ));
    }
    let mut lim = limits(settings.window, p.common.timeout_ms);
    if let Some(n) = settings.per_node {
        lim.per_dest = n;
    }
    let map = open_name_map(inv, settings.name_map.as_deref());
    let shared = Shared::default();
    let server = if settings.once {
        None
    } else {
        let s = http::HttpServer::start(&settings.listen, Arc::clone(&shared), settings.lean)
            .map_err(|e| CliError::Failed(format!("exporter: {e}")))?;
        inv.io.err(&format!(
            "{}: serving http://{}/metrics\n",
            inv.prog,
            s.addr()
        ));
        Some(s)
    };
    let session = ibdiag::open_session(inv, &p.common)?;
    let ex = AgentExchange::new(session.runtime()).map_err(CliError::Failed)?;
    let mut run = Run {
        limits: lim,
        gather: GatherOptions {
            limits: lim,
            m_key: p.common.m_key,
            mlx_epi: true,
        },
        map,
        state: State::default(),
        fabric: None,
        last_discovery: None,
        rediscover_now: false,
        shared: Arc::clone(&shared),
        verbose: p.common.verbose > 0,
        settings,
        ex,
    };
    let mut swept = 0u64;
    let result = loop {
        let start = Instant::now();
        let snap = match run.cycle(inv) {
            Ok(s) => s,
            Err(e) => break Err(e),
        };
        swept += u64::from(snap.is_some());
        if run.settings.once {
            let Some(snap) = snap else {
                break Err(CliError::Failed("exporter: no sweep could be made".into()));
            };
            if p.common.json {
                ibdiag::print_json(inv, &json::to_json(&snap));
            } else {
                match encode::exposition(
                    Some(Arc::clone(&snap)),
                    run.settings.lean,
                    encode::Format::Text,
                ) {
                    Ok(text) => inv.io.out(&text),
                    Err(e) => break Err(CliError::Failed(format!("exporter: {e}"))),
                }
            }
            break if snap.ok {
                Ok(())
            } else {
                let unread: Vec<String> = snap
                    .ports
                    .iter()
                    .filter(|r| r.error.is_some())
                    .map(|r| format!("0x{:016x} port {}", r.key.0, r.key.1))
                    .collect();
                Err(ibdiag::incomplete(
                    inv,
                    "ports",
                    Some(snap.ports_failed),
                    unread,
                    format!(
                        "exporter: incomplete sweep: {} ports unread, {} discovery queries unanswered \
                         (infiniband_exporter_port_query_ok and the failure metrics say which)",
                        snap.ports_failed, snap.totals.discovery_failures
                    ),
                ))
            };
        }
        if run.settings.sweeps > 0 && swept >= run.settings.sweeps {
            break Ok(());
        }
        if let Some(rest) = run.settings.interval.checked_sub(start.elapsed()) {
            std::thread::sleep(rest);
        }
    };
    drop(run);
    drop(server);
    let _ = session.close();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[(i32, &str)]) -> Result<Settings, String> {
        let c: Vec<(i32, Option<String>)> =
            v.iter().map(|(k, s)| (*k, Some((*s).to_owned()))).collect();
        settings(&c)
    }

    #[test]
    fn options_are_checked_with_an_example() {
        let s = parse(&[
            (OPT_LISTEN, "127.0.0.1:0"),
            (OPT_INTERVAL, "0.5"),
            (OPT_SWEEPS, "3"),
        ])
        .unwrap_or_default();
        assert_eq!(s.listen, "127.0.0.1:0");
        assert_eq!(s.interval, Duration::from_millis(500));
        assert_eq!(s.sweeps, 3);
        for bad in [
            (OPT_LISTEN, "9683"),
            (OPT_LISTEN, "x:y"),
            (OPT_INTERVAL, "-1"),
            (OPT_INTERVAL, "nan"),
            (OPT_REDISCOVER, "0"),
            (OPT_SWEEPS, "0"),
            (OPT_PER_NODE, "-2"),
        ] {
            let e = parse(&[bad]).err().unwrap_or_default();
            assert!(e.contains("e.g."), "{bad:?}: {e}");
        }
    }
}
