//! [`Subnet`]: a fabric brought up in one call — SM-lite at the SM's
//! port, run as an in-fabric service until SubnetUp and kept running
//! (traps, re-sweeps), and the SA ([`mad_sm::sa::FabricSa`] behind
//! [`mad_agents::sa::SaResponder`]) answering at the same port.
//!
//! ```
//! use mad_core::transport::Transport;
//! let subnet = mad_sim::Subnet::builtin()?;
//! let (node, port) = subnet.free_endpoint().expect("a CA");
//! let ep = subnet.fabric().attach(node, port)?;
//! assert_ne!(ep.port_attrs().lid, 0);
//! assert_eq!(ep.port_attrs().sm_lid, subnet.sm_lid());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # How it runs
//! - **SM-lite** lives at the fabric as a service ([`Fabric::add_service`]):
//!   no thread of its own, it runs whenever packets moved (after any
//!   endpoint's `post_send`, a link change, [`Fabric::advance`]), in
//!   virtual time. A link pulled or plugged back makes the switch send
//!   Trap 128; SM-lite represses it and re-sweeps before the call that
//!   changed the link returns. SMPs lost to link faults are resent when
//!   virtual time passes SM-lite's timeout ([`Fabric::advance`]).
//! - **SM port**: SM-lite owns QP0 of the SM's port (an `issm` endpoint:
//!   SMInfo, traps and reports for the node go to it); the SA owns QP1
//!   ([`Fabric::attach_qp`]), on a [`Runtime`] thread.
//! - **SA**: after every sweep the SA serves the new
//!   [`SubnetView`]; a join or leave through the SA hands SM-lite the
//!   new groups on its next round, and it rewrites the switches' MFTs
//!   then (asynchronously: the SA answers first, as OpenSM does); traps
//!   reaching SM-lite are
//!   forwarded to InformInfo subscribers as Reports (from a small thread,
//!   so that no agent call happens inside the fabric's pump).
//!
//! Dropping the `Subnet` stops the SA and SM-lite and detaches both
//! endpoints; the [`Fabric`] (and any clone of it) lives on.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mad_agents::sa::{SaResponder, SaResponderConfig, SaResponderStats};
use mad_agents::{EngineConfig, Runtime};
use mad_core::transport::{Qp, Transport};
use mad_core::wire::attr::{Notice, PhysPortState};

use crate::fabric::{Fabric, FabricConfig, NodeSel, PortAddr, ServiceId, SimError};
use crate::topology::{NodeKind, Topology, TopologyError};
use crate::SimPort;
use mad_sm::sa::{FabricSa, SubnetView};
use mad_sm::{SmConfig, SmDriver, SmError, SmEvent, SubnetManager};

/// How a [`Subnet`] is brought up.
#[derive(Debug, Clone)]
pub struct SubnetOptions {
    /// SM-lite's settings.
    pub sm: SmConfig,
    /// Where SM-lite and the SA run: a node and an end port (port 0 of a
    /// switch). `None`: where ibsim attaches a client naming no node, the
    /// first node's first end port.
    pub sm_at: Option<(NodeSel, u8)>,
    /// Run the SA at the SM's port (default true).
    pub sa: bool,
    /// The fabric's configuration (for [`Subnet::up_with`]).
    pub fabric: FabricConfig,
    /// SM pump rounds allowed for the bring-up before giving up (each
    /// round moves at least one MAD or one timeout).
    pub max_rounds: usize,
}

impl Default for SubnetOptions {
    fn default() -> Self {
        Self {
            sm: SmConfig::default(),
            sm_at: None,
            sa: true,
            fabric: FabricConfig::default(),
            max_rounds: 1_000_000,
        }
    }
}

/// Why a subnet did not come up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpError {
    /// The topology file.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The SM's port could not be attached.
    #[error("cannot attach the SM: {0}")]
    Attach(#[from] SimError),
    /// SM-lite could not bring the subnet up.
    #[error("SM-lite did not bring the subnet up{}", fmt_errors(.errors))]
    NotUp {
        /// What SM-lite reported.
        errors: Vec<SmError>,
    },
    /// SM-lite's endpoint failed.
    #[error("SM-lite's transport failed: {0}")]
    SmTransport(String),
    /// The SA's runtime or agent could not start.
    #[error("cannot start the SA: {0}")]
    Sa(String),
}

fn fmt_errors(errors: &[SmError]) -> String {
    if errors.is_empty() {
        String::new()
    } else {
        let v: Vec<String> = errors.iter().take(5).map(ToString::to_string).collect();
        format!(
            ": {}{}",
            v.join("; "),
            if errors.len() > 5 { "; ..." } else { "" }
        )
    }
}

/// What SM-lite has done so far ([`Subnet::sm_status`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SmStatus {
    /// The SM's LID.
    pub sm_lid: u16,
    /// True once a sweep brought every port up (and during re-sweeps).
    pub up: bool,
    /// A sweep is running.
    pub sweeping: bool,
    /// Sweeps finished.
    pub sweeps: u64,
    /// Sweeps that ended with SubnetUp.
    pub subnet_ups: u64,
    /// Traps received (and repressed).
    pub traps: u64,
    /// Errors reported in all.
    pub errors: u64,
    /// Nodes, switches and LIDs of the last sweep.
    pub nodes: usize,
    /// Switches of the last sweep.
    pub switches: usize,
    /// LIDs in use.
    pub lids: usize,
    /// SMPs SM-lite posted in all.
    pub smps_sent: u64,
    /// The transport error that stopped SM-lite, if one did.
    pub failed: Option<String>,
}

/// How many SM events [`Subnet::take_sm_events`] keeps.
const EVENT_LOG: usize = 4096;

/// SM-lite and its endpoint, shared by the service and the [`Subnet`].
struct SmShared {
    sm: SubnetManager,
    driver: SmDriver,
    port: SimPort,
    base: Instant,
    log: VecDeque<SmEvent>,
    status: SmStatus,
    last_errors: Vec<SmError>,
    sa: Option<Arc<FabricSa>>,
    notices: Option<mpsc::Sender<Notice>>,
    prefix: u64,
    /// The SA's multicast generation SM-lite last programmed.
    mc_gen: u64,
}

impl SmShared {
    /// One pump round at virtual time `now`; true if anything moved.
    fn pump(&mut self, now: Duration) -> bool {
        if self.status.failed.is_some() {
            return false;
        }
        let t = self.base + now;
        if let Some(sa) = &self.sa {
            // A join or leave through the SA: SM-lite rewrites the MFTs.
            let g = sa.mc_generation();
            if g != self.mc_gen {
                self.mc_gen = g;
                self.sm.set_mcast_groups(sa.mc_groups());
            }
        }
        let busy = match self.driver.pump(&mut self.sm, &mut self.port, t) {
            Ok(b) => b,
            Err(e) => {
                self.status.failed = Some(e.to_string());
                false
            }
        };
        while let Some(ev) = self.sm.poll_event() {
            self.on_event(&ev);
            if self.log.len() == EVENT_LOG {
                self.log.pop_front();
            }
            self.log.push_back(ev);
        }
        self.status.smps_sent = self.driver.sent();
        self.status.sm_lid = self.sm.sm_lid();
        self.status.up = self.sm.is_subnet_up();
        self.status.sweeping = self.sm.is_sweeping();
        busy
    }

    fn on_event(&mut self, ev: &SmEvent) {
        match ev {
            SmEvent::SweepDone {
                nodes,
                switches,
                lids,
                ..
            } => {
                self.status.sweeps += 1;
                self.status.nodes = *nodes;
                self.status.switches = *switches;
                self.status.lids = *lids;
                if let Some(sa) = &self.sa {
                    sa.update(SubnetView::from_sm(&self.sm));
                }
            }
            SmEvent::SubnetUp => {
                self.status.subnet_ups += 1;
                self.last_errors.clear();
            }
            SmEvent::Trap { number, issuer_lid } => {
                self.status.traps += 1;
                if let (Some(tx), Some(n)) = (&self.notices, number) {
                    let mut notice =
                        Notice::generic(Notice::TYPE_URGENT, Notice::PRODUCER_SWITCH, *n);
                    notice.issuer_lid = *issuer_lid;
                    let sub = self.sm.subnet();
                    if let Some(p) = sub
                        .port_by_lid(*issuer_lid)
                        .and_then(|(i, p)| sub.nodes().get(i)?.port(p))
                    {
                        notice.issuer_gid[..8].copy_from_slice(&self.prefix.to_be_bytes());
                        notice.issuer_gid[8..].copy_from_slice(&p.guid.to_be_bytes());
                    }
                    let _ = tx.send(notice);
                }
            }
            SmEvent::Error(e) => {
                self.status.errors += 1;
                if self.last_errors.len() < 64 {
                    self.last_errors.push(e.clone());
                }
            }
            // Other events (the SM's own state) change nothing kept here.
            _ => {}
        }
    }
}

/// The SA at the SM's port.
struct SaPart {
    responder: Arc<SaResponder>,
    reporter: Option<JoinHandle<()>>,
    runtime: Option<Runtime>,
}

/// A fabric with SM-lite and the SA running; see the [module
/// documentation](self).
pub struct Subnet {
    fabric: Fabric,
    name: String,
    sm_at: PortAddr,
    shared: Arc<Mutex<SmShared>>,
    service: Option<ServiceId>,
    source: Option<Arc<FabricSa>>,
    sa: Option<SaPart>,
}

impl std::fmt::Debug for Subnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subnet")
            .field("name", &self.name)
            .field("sm_at", &self.sm_at)
            .field("sa", &self.sa.is_some())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Subnet {
    /// Builds the fabric of `topo` and brings it up with the default
    /// options (SM-lite and the SA at the first node).
    ///
    /// # Errors
    /// See [`UpError`].
    pub fn up(topo: &Topology) -> Result<Self, UpError> {
        Self::up_with(topo, SubnetOptions::default())
    }

    /// [`Subnet::up`] with options.
    ///
    /// # Errors
    /// See [`UpError`].
    pub fn up_with(topo: &Topology, opts: SubnetOptions) -> Result<Self, UpError> {
        let fabric = Fabric::with_config(topo, opts.fabric.clone());
        Self::on_fabric(fabric, "topology", opts)
    }

    /// The built-in default topology ([`crate::default_topology`]), up.
    ///
    /// # Errors
    /// See [`UpError`].
    pub fn builtin() -> Result<Self, UpError> {
        let fabric = Fabric::builtin();
        Self::on_fabric(
            fabric,
            crate::DEFAULT_TOPOLOGY_NAME,
            SubnetOptions::default(),
        )
    }

    /// Loads the topology file at `path` (`None`: the built-in default)
    /// and brings it up.
    ///
    /// # Errors
    /// See [`UpError`].
    pub fn load(path: Option<&std::path::Path>, opts: SubnetOptions) -> Result<Self, UpError> {
        match path {
            None => {
                let fabric = Fabric::with_config(&crate::default_topology(), opts.fabric.clone());
                Self::on_fabric(fabric, crate::DEFAULT_TOPOLOGY_NAME, opts)
            }
            Some(p) => {
                let topo = Topology::load(p)?;
                let fabric = Fabric::with_config(&topo, opts.fabric.clone());
                Self::on_fabric(fabric, &p.display().to_string(), opts)
            }
        }
    }

    /// Brings up an existing fabric (`name` is how summaries call it).
    /// `opts.fabric` is not used.
    ///
    /// # Errors
    /// See [`UpError`].
    pub fn on_fabric(fabric: Fabric, name: &str, opts: SubnetOptions) -> Result<Self, UpError> {
        let mut port = match &opts.sm_at {
            Some((node, p)) => fabric.attach_qp(node.clone(), *p, Qp::Qp0)?,
            None => {
                let (n, p) =
                    default_port(&fabric).ok_or(SimError::NoSuchNode(NodeSel::Index(0)))?;
                fabric.attach_qp(n, p, Qp::Qp0)?
            }
        };
        port.set_is_sm(true);
        let sm_at = PortAddr {
            node: port.node(),
            port: port.port(),
        };
        let sm = SubnetManager::new(opts.sm.clone(), port.port_attrs());
        let source = opts
            .sa
            .then(|| Arc::new(FabricSa::new(SubnetView::default())));
        let (tx, rx) = mpsc::channel();
        let base = Instant::now();
        let shared = Arc::new(Mutex::new(SmShared {
            sm,
            driver: SmDriver::new(),
            port,
            base,
            log: VecDeque::new(),
            status: SmStatus::default(),
            last_errors: Vec::new(),
            sa: source.clone(),
            notices: opts.sa.then_some(tx),
            prefix: opts.sm.subnet_prefix,
            mc_gen: 0,
        }));
        let mut subnet = Self {
            fabric: fabric.clone(),
            name: name.to_owned(),
            sm_at,
            shared: shared.clone(),
            service: None,
            source: source.clone(),
            sa: None,
        };
        {
            let mut g = lock(&shared);
            let now = base + fabric.now();
            g.sm.start(now);
        }
        let svc = shared.clone();
        subnet.service = Some(fabric.add_service(Box::new(move |now| lock(&svc).pump(now))));
        subnet.run_until_up(opts.max_rounds)?;
        if let Some(source) = source {
            subnet.start_sa(source, &opts, rx)?;
        }
        Ok(subnet)
    }

    /// Pumps (advancing virtual time to SM-lite's timers when it waits)
    /// until SubnetUp.
    fn run_until_up(&self, max_rounds: usize) -> Result<(), UpError> {
        for _ in 0..max_rounds {
            self.fabric.pump();
            let (up, next, failed) = {
                let g = lock(&self.shared);
                (
                    g.status.subnet_ups > 0,
                    g.sm.poll_timeout()
                        .map(|t| t.saturating_duration_since(g.base)),
                    g.status.failed.is_some(),
                )
            };
            if up {
                return Ok(());
            }
            let now = self.fabric.now();
            match next {
                Some(t) if !failed => self
                    .fabric
                    .advance(t.saturating_sub(now).max(Duration::from_micros(1))),
                _ => break,
            }
        }
        let g = lock(&self.shared);
        if let Some(f) = &g.status.failed {
            return Err(UpError::SmTransport(f.clone()));
        }
        Err(UpError::NotUp {
            errors: g.last_errors.clone(),
        })
    }

    fn start_sa(
        &mut self,
        source: Arc<FabricSa>,
        opts: &SubnetOptions,
        rx: mpsc::Receiver<Notice>,
    ) -> Result<(), UpError> {
        let port = self
            .fabric
            .attach_qp(self.sm_at.node, self.sm_at.port, Qp::Qp1)?;
        let rt = Runtime::start(port, EngineConfig::default())
            .map_err(|e| UpError::Sa(e.to_string()))?;
        let cfg = SaResponderConfig {
            name: "mad-sim-sa".to_owned(),
            gid_prefix: opts.sm.subnet_prefix,
            ..SaResponderConfig::default()
        };
        let responder =
            Arc::new(SaResponder::start(&rt, source, cfg).map_err(|e| UpError::Sa(e.to_string()))?);
        let r2 = responder.clone();
        let reporter = std::thread::Builder::new()
            .name("mad-sim-sa-reports".to_owned())
            .spawn(move || {
                while let Ok(n) = rx.recv() {
                    r2.report(&n);
                }
            })
            .map_err(|e| UpError::Sa(e.to_string()))?;
        self.sa = Some(SaPart {
            responder,
            reporter: Some(reporter),
            runtime: Some(rt),
        });
        Ok(())
    }

    /// The fabric.
    #[must_use]
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// The topology's name (file, or [`crate::DEFAULT_TOPOLOGY_NAME`]).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where SM-lite and the SA run.
    #[must_use]
    pub fn sm_port(&self) -> PortAddr {
        self.sm_at
    }

    /// The SM's LID.
    #[must_use]
    pub fn sm_lid(&self) -> u16 {
        lock(&self.shared).sm.sm_lid()
    }

    /// What SM-lite has done so far.
    #[must_use]
    pub fn sm_status(&self) -> SmStatus {
        lock(&self.shared).status.clone()
    }

    /// The SM events since the last call (at most the last 4096).
    #[must_use]
    pub fn take_sm_events(&self) -> Vec<SmEvent> {
        lock(&self.shared).log.drain(..).collect()
    }

    /// Runs `f` on SM-lite (its subnet view, LIDs, SMInfo). Do not call
    /// the fabric from inside `f`.
    pub fn with_sm<R>(&self, f: impl FnOnce(&SubnetManager) -> R) -> R {
        f(&lock(&self.shared).sm)
    }

    /// Asks SM-lite for a sweep now (it runs before this returns unless
    /// SMPs are lost).
    pub fn resweep(&self) {
        let now = self.fabric.now();
        {
            let mut g = lock(&self.shared);
            let t = g.base + now;
            g.sm.resweep(t);
        }
        self.fabric.pump();
    }

    /// The SA's record source (None when the SA is off).
    #[must_use]
    pub fn sa(&self) -> Option<&Arc<FabricSa>> {
        self.source.as_ref()
    }

    /// The SA responder's counters.
    #[must_use]
    pub fn sa_stats(&self) -> Option<SaResponderStats> {
        self.sa.as_ref().map(|s| s.responder.stats())
    }

    /// The SA responder (InformInfo subscribers, Reports).
    #[must_use]
    pub fn sa_responder(&self) -> Option<&SaResponder> {
        self.sa.as_ref().map(|s| &*s.responder)
    }

    /// The first CA port with its link up that is not the SM's: where a
    /// tool attaches by default.
    #[must_use]
    pub fn free_endpoint(&self) -> Option<(usize, u8)> {
        // Read in place under one lock (no summary of every node: the
        // first CA port is near the start).
        let c = self.fabric.lock();
        c.nodes.iter().enumerate().find_map(|(i, n)| {
            if n.is_switch() {
                return None;
            }
            (1..=n.num_ports()).find_map(|p| {
                let up = n
                    .port(p)
                    .is_some_and(|x| x.info.port_phys_state == PhysPortState::LINK_UP);
                let sm = self.sm_at.node == i && self.sm_at.port == p;
                (up && !sm).then_some((i, p))
            })
        })
    }

    /// Attaches an endpoint (see [`Fabric::attach`]).
    ///
    /// # Errors
    /// As [`Fabric::attach`].
    pub fn attach(&self, node: impl Into<NodeSel>, port: u8) -> Result<SimPort, SimError> {
        self.fabric.attach(node, port)
    }

    /// Counts of the fabric as it stands.
    #[must_use]
    pub fn summary(&self) -> Summary {
        let mut s = Summary::of(&self.fabric);
        s.name = self.name.clone();
        s.sm_at = Some(self.sm_at);
        s.sm_lid = self.sm_lid();
        s
    }
}

impl Drop for Subnet {
    fn drop(&mut self) {
        if let Some(id) = self.service.take() {
            self.fabric.remove_service(id);
        }
        // The service held the last sender of the report channel.
        lock(&self.shared).notices = None;
        if let Some(mut sa) = self.sa.take() {
            if let Some(h) = sa.reporter.take() {
                let _ = h.join();
            }
            drop(sa.responder);
            if let Some(rt) = sa.runtime.take() {
                rt.shutdown();
            }
        }
    }
}

/// The default SM / client location: the first node's first end port.
fn default_port(f: &Fabric) -> Option<(usize, u8)> {
    let n = f.node(0)?;
    Some((0, u8::from(n.kind != NodeKind::Switch)))
}

/// Counts of a fabric ([`Subnet::summary`], `mad sim`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// The topology's name.
    pub name: String,
    /// Nodes.
    pub nodes: usize,
    /// Switches.
    pub switches: usize,
    /// Channel adapters.
    pub cas: usize,
    /// Routers.
    pub routers: usize,
    /// Cabled links.
    pub links: usize,
    /// Links whose ends are physically up.
    pub links_up: usize,
    /// Ports with a LID (switch port 0, CA ports).
    pub lids: usize,
    /// Highest LID.
    pub max_lid: u16,
    /// Where the SM runs.
    pub sm_at: Option<PortAddr>,
    /// The SM's LID.
    pub sm_lid: u16,
}

impl Summary {
    /// Counts `fabric`.
    #[must_use]
    pub fn of(fabric: &Fabric) -> Self {
        let mut s = Self::default();
        for n in fabric.nodes() {
            s.nodes += 1;
            match n.kind {
                NodeKind::Switch => s.switches += 1,
                NodeKind::Ca => s.cas += 1,
                NodeKind::Router => s.routers += 1,
            }
            let first = u8::from(n.kind != NodeKind::Switch);
            for p in first..=n.num_ports {
                let Some(pi) = fabric.port_info(n.index, p) else {
                    continue;
                };
                let lid_bearing = (n.kind == NodeKind::Switch) == (p == 0);
                if lid_bearing && pi.lid != 0 {
                    s.lids += 1;
                    s.max_lid = s.max_lid.max(pi.lid);
                }
                if p == 0 {
                    continue;
                }
                if let Some(r) = fabric.remote(n.index, p) {
                    if (n.index, p) < (r.node, r.port) {
                        s.links += 1;
                        if pi.port_phys_state == PhysPortState::LINK_UP {
                            s.links_up += 1;
                        }
                    }
                }
            }
        }
        s
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "fabric: {}", self.name)?;
        writeln!(
            f,
            "nodes: {} ({} switches, {} CAs{})",
            self.nodes,
            self.switches,
            self.cas,
            if self.routers > 0 {
                format!(", {} routers", self.routers)
            } else {
                String::new()
            }
        )?;
        writeln!(f, "links: {} ({} up)", self.links, self.links_up)?;
        write!(f, "LIDs: {} assigned", self.lids)?;
        if self.lids > 0 {
            write!(f, " (1-{})", self.max_lid)?;
        }
        writeln!(f)?;
        if let Some(at) = self.sm_at {
            writeln!(
                f,
                "SM: node #{} port {}, LID {}",
                at.node, at.port, self.sm_lid
            )?;
        }
        Ok(())
    }
}
