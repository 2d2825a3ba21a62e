//! Discovery and the counter sweep of a [`Port`](crate::Port): the
//! parallel directed-route discovery of `mad ibnetdiscover` (the model
//! libibnetdisc builds, so the same nodes, ports and links
//! `ibnetdiscover` prints) and the parallel PortCounters /
//! PortCountersExtended reads of `mad sweep`, with their bounds.
//!
//! Both can be interrupted: the `cancel` function given to
//! [`discover_with`] / [`sweep_with`] is asked between waits (at least
//! every 50 ms) and ends the run with [`Error::Interrupted`] when it says
//! so (the Python package checks for Ctrl-C there).

use std::time::Duration;

use mad_tools::discover::agent::AgentExchange;
use mad_tools::discover::pipeline::{Exchange, Outcome, Outgoing, StartError};
use mad_tools::discover::{self as disc, GatherOptions};

pub use mad_tools::discover::counters::{NodeSample, PortSample, Sweep};
pub use mad_tools::discover::model::{type_word, Fabric, Node, Port, PortRef};
pub use mad_tools::discover::{Discovery, Limits, QueryFailure};

use crate::Error;

/// The bounds of a discovery or sweep: those of `mad sweep -o N
/// --per-node N -t MS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// MADs in flight on the port (default 256).
    pub window: usize,
    /// MADs in flight per destination (default 4).
    pub per_node: usize,
    /// Response timeout (default 1 s; two resends after it).
    pub timeout: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        let l = mad_tools::ibdiag::limits(None, None);
        Self {
            window: l.window,
            per_node: l.per_dest,
            timeout: l.timeout,
        }
    }
}

impl Bounds {
    fn limits(self) -> Limits {
        let ms = u32::try_from(self.timeout.as_millis()).unwrap_or(u32::MAX);
        let mut l = mad_tools::ibdiag::limits(Some(self.window), Some(ms.max(1)));
        l.per_dest = self.per_node.max(1);
        l
    }
}

/// An exchange that asks `cancel` before every wait.
struct Cancellable<'a, 'c> {
    inner: AgentExchange<'a>,
    cancel: &'c mut dyn FnMut() -> bool,
    interrupted: bool,
}

/// What an interrupted exchange reports.
const INTERRUPTED: &str = "interrupted";

impl Exchange for Cancellable<'_, '_> {
    fn start(&mut self, id: u64, req: Outgoing<'_>) -> Result<(), StartError> {
        self.inner.start(id, req)
    }
    fn flush(&mut self) -> Result<(), String> {
        self.inner.flush()
    }
    fn poll(&mut self, max: Duration, out: &mut Vec<(u64, Outcome)>) -> Result<(), String> {
        if (self.cancel)() {
            self.interrupted = true;
            return Err(INTERRUPTED.to_owned());
        }
        self.inner.poll(max.min(Duration::from_millis(50)), out)
    }
    fn sent(&self) -> u64 {
        self.inner.sent()
    }
    fn resent(&self) -> u64 {
        self.inner.resent()
    }
}

/// Discovers the fabric from `port` within `bounds`.
///
/// # Errors
/// The local node did not answer, the transport failed.
pub fn discover(port: &crate::Port, bounds: Bounds) -> Result<Discovery, Error> {
    discover_with(port, bounds, &mut || false)
}

/// [`discover`], asking `cancel` between waits.
///
/// # Errors
/// As [`discover`]; [`Error::Interrupted`] when `cancel` said so.
pub fn discover_with(
    port: &crate::Port,
    bounds: Bounds,
    cancel: &mut dyn FnMut() -> bool,
) -> Result<Discovery, Error> {
    let inner = AgentExchange::new(port.runtime()).map_err(Error::Register)?;
    let mut ex = Cancellable {
        inner,
        cancel,
        interrupted: false,
    };
    let opts = GatherOptions {
        limits: bounds.limits(),
        m_key: port.smp().m_key,
        mlx_epi: true,
    };
    let r = disc::discover(&mut ex, &opts, false, &mut |_| {});
    if ex.interrupted {
        return Err(Error::Interrupted);
    }
    r.map_err(|e| Error::Discover(e.to_string()))
}

/// Reads the counters of every port of `fabric` (from [`discover`])
/// within `bounds`.
///
/// # Errors
/// The fabric has no LIDs yet, the transport failed.
pub fn sweep(port: &crate::Port, fabric: &Fabric, bounds: Bounds) -> Result<Sweep, Error> {
    sweep_with(port, fabric, bounds, &mut || false)
}

/// [`sweep`], asking `cancel` between waits.
///
/// # Errors
/// As [`sweep`]; [`Error::Interrupted`] when `cancel` said so.
pub fn sweep_with(
    port: &crate::Port,
    fabric: &Fabric,
    bounds: Bounds,
    cancel: &mut dyn FnMut() -> bool,
) -> Result<Sweep, Error> {
    let inner = AgentExchange::new(port.runtime()).map_err(Error::Register)?;
    let mut ex = Cancellable {
        inner,
        cancel,
        interrupted: false,
    };
    let r = mad_tools::discover::counters::sweep(&mut ex, fabric, bounds.limits(), &mut |_, _| {});
    if ex.interrupted {
        return Err(Error::Interrupted);
    }
    r.map_err(|e| Error::Discover(e.to_string()))
}

/// The `mad sweep --json` object of a sweep.
#[must_use]
pub fn sweep_json(fabric: &Fabric, sweep: &Sweep) -> serde_json::Value {
    mad_tools::discover::counters::to_json(fabric, sweep)
}

/// The `mad ibnetdiscover --json` object of a discovery (nodes in the
/// topology output's order, their ports and remote ends, a summary).
#[must_use]
pub fn discovery_json(d: &Discovery) -> serde_json::Value {
    mad_tools::cmd::ibnetdiscover::fabric_json(&d.fabric, None, d)
}

/// The indices into `d.fabric.nodes` of [`discovery_json`]'s `nodes`, in
/// its order (switches, CAs, routers, each as `ibnetdiscover` lists
/// them): for reading the model a node at a time.
#[must_use]
pub fn json_order(d: &Discovery) -> Vec<usize> {
    mad_tools::cmd::ibnetdiscover::json_order(&d.fabric)
}

/// Node `i` of `d.fabric.nodes` as [`discovery_json`] writes it (its
/// ports and their remote ends).
#[must_use]
pub fn node_json(d: &Discovery, i: usize) -> serde_json::Value {
    mad_tools::cmd::ibnetdiscover::node_json(&d.fabric, None, i)
}

/// Node `i`'s description as [`discovery_json`] writes it (non-printable
/// bytes as spaces).
#[must_use]
pub fn node_name(d: &Discovery, i: usize) -> String {
    mad_tools::cmd::ibnetdiscover::json_name(&d.fabric, None, i)
}

/// [`discovery_json`]'s `summary` object (node and link counts, SMPs
/// sent, the time the discovery took).
#[must_use]
pub fn summary_json(d: &Discovery) -> serde_json::Value {
    mad_tools::cmd::ibnetdiscover::summary_json(&d.fabric, d)
}

/// [`discovery_json`]'s `from` object (where the discovery started).
#[must_use]
pub fn from_json(d: &Discovery) -> serde_json::Value {
    mad_tools::cmd::ibnetdiscover::from_json(&d.fabric)
}
