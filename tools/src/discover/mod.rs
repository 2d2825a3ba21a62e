//! Fabric discovery and counter sweeps: what `ibnetdiscover`, `ibhosts`,
//! `ibswitches` and `mad sweep` are built on.
//!
//! # Design
//! Discovery runs in two phases over any
//! [`Transport`]:
//! 1. [`gather`]: a directed-route sweep with many SMPs in flight,
//!    bounded per destination node and per port ([`pipeline`]), that reads
//!    every answer libibnetdisc's algorithm would look at (NodeInfo beyond
//!    every LinkUp switch port, NodeDescription, SwitchInfo, PortInfo,
//!    Mellanox ExtendedPortInfo where infiniband-diags reads it).
//! 2. [`model::replay`]: libibnetdisc's own algorithm (a FIFO of SMPs whose
//!    callbacks create nodes, link ports and queue more SMPs) replayed in
//!    memory over those answers. The model, and so the output order of
//!    ibnetdiscover (newest node first), is the one infiniband-diags
//!    builds, although the fabric was read in parallel.
//!
//! [`mod@format`] prints the model byte for byte as ibnetdiscover, ibhosts and
//! ibswitches do; [`counters`] reads PortCounters / PortCountersExtended of
//! every port of a discovered fabric in parallel.
//!
//! Nothing here picks a transport or blocks on one by itself: callers pass
//! a `wait` function that blocks until the transport may have something.

pub mod agent;
pub mod answer;
pub mod cache;
pub mod counters;
pub mod ctime;
pub mod diff;
pub mod format;
pub mod gather;
pub mod model;
pub mod pipeline;
pub mod pma;
pub mod progress;
pub mod transport;

use std::time::{Duration, Instant};

use mad_core::transport::Transport;

pub use gather::{GatherOptions, GatherProgress, Gathered, QueryFailure};
pub use model::{Fabric, Node, Port, PortRef};
pub use pipeline::{Exchange, Limits, PipelineError, Stats};
pub use transport::TransportExchange;

/// A finished discovery.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The fabric as libibnetdisc models it.
    pub fabric: Fabric,
    /// Queries that failed (ibnetdiscover reports them and goes on).
    pub failures: Vec<QueryFailure>,
    /// SMPs actually sent, answered, retried; most in flight.
    pub stats: Stats,
    /// Wall time of the sweep.
    pub elapsed: Duration,
}

/// Why discovery failed as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoverError {
    /// The transport or the wait failed.
    Transport(String),
    /// Not even the local node answered NodeInfo.
    NoLocalNode(Vec<QueryFailure>),
}

impl std::fmt::Display for DiscoverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(m) => f.write_str(m),
            Self::NoLocalNode(fails) => {
                f.write_str("the local node did not answer NodeInfo")?;
                if let Some(q) = fails.first() {
                    write!(f, " ({})", q.reason)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for DiscoverError {}

/// Discovers the fabric from the exchange's port: [`gather::gather`]
/// then [`model::replay`]. `show` records ibnetdiscover's `--show` lines;
/// `progress` gets updates as answers arrive.
///
/// # Errors
/// See [`DiscoverError`].
pub fn discover(
    ex: &mut dyn Exchange,
    opts: &GatherOptions,
    show: bool,
    progress: &mut dyn FnMut(&GatherProgress),
) -> Result<Discovery, DiscoverError> {
    discover_scan(ex, opts, show, None, &mut |_| None, progress).map(|(d, _)| d)
}

/// [`discover`] of a partial scan: the fabric is read (in parallel;
/// with `max_depth`, what lies within that many hops:
/// [`gather::gather_within`]), then libibnetdisc's scan is replayed from
/// where `pick` says (it sees what was read; `None`: the whole fabric).
/// Also returns the lines libibnetdisc would print on stderr while
/// scanning.
///
/// # Errors
/// See [`DiscoverError`] (`NoLocalNode` also when the scan's start did
/// not answer).
pub fn discover_scan(
    ex: &mut dyn Exchange,
    opts: &GatherOptions,
    show: bool,
    max_depth: Option<usize>,
    pick: &mut dyn FnMut(&Gathered) -> Option<model::Scan>,
    progress: &mut dyn FnMut(&GatherProgress),
) -> Result<(Discovery, Vec<String>), DiscoverError> {
    let start = Instant::now();
    let depth = max_depth.unwrap_or(usize::MAX);
    let g = gather::gather_within(ex, opts, depth, progress)
        .map_err(|e| DiscoverError::Transport(e.to_string()))?;
    let scan = pick(&g).unwrap_or_default();
    let Some(s) = model::replay_scan(&g, show, &scan) else {
        return Err(DiscoverError::NoLocalNode(g.failures));
    };
    Ok((
        Discovery {
            fabric: s.fabric,
            failures: g.failures,
            stats: g.stats,
            elapsed: start.elapsed(),
        },
        s.errors,
    ))
}

/// [`discover`] over a bare transport; `wait(t, max)` blocks until the
/// transport may have something (at most `max`).
///
/// # Errors
/// See [`DiscoverError`].
pub fn discover_transport<T, W>(
    t: &mut T,
    opts: &GatherOptions,
    show: bool,
    wait: W,
    progress: &mut dyn FnMut(&GatherProgress),
) -> Result<Discovery, DiscoverError>
where
    T: Transport + ?Sized,
    W: FnMut(&mut T, Duration) -> Result<(), String>,
{
    let mut ex = TransportExchange::new(t, wait);
    discover(&mut ex, opts, show, progress)
}
