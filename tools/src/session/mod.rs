//! Transport selection and stack setup for the commands.
//!
//! A [`Session`] is one port of the management stack, opened the way the
//! command line asks ([`SessionOpts`]):
//!
//! - `--sim[=TOPOLOGY]`: the built-in fabric ([`sim`]): the topology is
//!   loaded (the default one built into the binary without a file),
//!   SM-lite brings it up in virtual time, and the command's port is an
//!   endpoint at the first CA (or `--sim-node NAME`);
//! - `--ibsim`: a running ibsim, through its environment variables;
//! - a real port through libibumad (`-C CA -P PORT`, or the first device
//!   libibumad lists — which is libumad2sim's when it is preloaded).
//!
//! Whatever the transport, the command runs through the whole stack: a
//! [`Runtime`] (agents, send tracking, timeouts) over the port, and the
//! SMP / PerfMgt / SA clients of mad-agents on top. `--pcap FILE` wraps
//! the transport in a [`pcap::PcapTap`].

pub mod debug;
pub mod pcap;
pub mod sim;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mad_agents::perf::PerfClient;
use mad_agents::sa::{SaClient, SaClientConfig};
use mad_agents::smp::SmpClient;
use mad_agents::QueryError;
use mad_agents::{EngineConfig, Runtime, SharedPort};
use mad_core::transport::ibsim::{IbSimConfig, IbSimTransport};
use mad_core::transport::umad::{self, UmadTransport};
use mad_core::transport::{PortAttrs, Transport};

/// Which transport to use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TransportChoice {
    /// A real port if libibumad lists one, else an error naming the
    /// other choices.
    #[default]
    Auto,
    /// The built-in fabric, from this topology file (`None`: the default
    /// topology).
    Sim(Option<String>),
    /// A running ibsim (its environment variables).
    IbSim,
    /// A real port through libibumad.
    Umad,
}

/// The transport and output options of a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOpts {
    /// Which transport.
    pub transport: TransportChoice,
    /// `--sim-node`: where to attach on the built-in fabric.
    pub sim_node: Option<String>,
    /// `--no-sm`: the built-in fabric without an SM or SA of its own
    /// (every port in Initialize, LID 0).
    pub no_sm: bool,
    /// `-C`: the CA (umad).
    pub ca: Option<String>,
    /// `-P`: the CA port (umad; 0 or none: the first active one).
    pub port: Option<u32>,
    /// `--pcap`: capture file.
    pub pcap: Option<PathBuf>,
    /// `--json` given globally.
    pub json: bool,
    /// `-d` count: libibmad's debug line for each SMP and PerfMgt
    /// request sent ([`debug::DebugTap`]).
    pub debug: u32,
    /// `-s`: where SA queries go instead of the port's SM LID.
    pub sm_lid: Option<u16>,
    /// How the built-in fabric's SM-lite routes (`mad check-routes -R`);
    /// default min-hop.
    pub sim_routing: mad_sm::routing::engines::RoutingConfig,
    /// The LMC the built-in fabric's SM-lite gives CA ports (`mad
    /// check-routes -l`); default 0.
    pub sim_lmc: u8,
}

/// Why a session could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenError {
    /// What went wrong, for stderr.
    pub message: String,
    /// True when no transport was asked for and no device exists.
    pub no_device: bool,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn open_err(message: impl Into<String>) -> OpenError {
    OpenError {
        message: message.into(),
        no_device: false,
    }
}

/// The message when there is nothing to talk to.
pub const NO_DEVICE: &str = "no InfiniBand device found (libibumad lists none, or is not \
installed); use --sim[=TOPOLOGY] for the built-in simulated fabric, or --ibsim to reach a \
running ibsim (IBSIM_SOCKNAME); -C CA -P PORT names a real port";

/// The message when `--no-sm` is given without `--sim`.
pub const NO_SM_WITHOUT_SIM: &str = "--no-sm is for the built-in fabric: use it with \
--sim[=TOPOLOGY] (on ibsim or a real port the SM is whatever runs there)";

/// Set by [`exit_after_command`].
static EXITS_AFTER_COMMAND: AtomicBool = AtomicBool::new(false);

/// Says that the process exits as soon as its command returns (the `mad`
/// binary, once its output is flushed): what [`drop_or_leave`] is given
/// is then left for the OS to free instead of being dropped piece by
/// piece (the built-in fabric of a large topology: hundreds of MB in
/// millions of allocations). A caller that goes on after a command (a
/// test, a library user) never calls it.
pub fn exit_after_command() {
    EXITS_AFTER_COMMAND.store(true, Ordering::Relaxed);
}

/// Drops `value`, or leaves it for the OS to free when the process exits
/// after this command ([`exit_after_command`]). Only for values whose
/// drop does nothing the OS does not do at exit (no file to flush, no
/// thread to stop).
pub fn drop_or_leave<T>(value: T) {
    if EXITS_AFTER_COMMAND.load(Ordering::Relaxed) {
        std::mem::forget(value);
    } else {
        drop(value);
    }
}

/// What the session runs on.
#[derive(Debug)]
pub enum Backend {
    /// The built-in fabric.
    Sim(Box<sim::SimFabric>),
    /// ibsim.
    IbSim,
    /// A libibumad port.
    Umad {
        /// The CA name.
        ca: String,
    },
}

/// One open port with the stack running over it.
pub struct Session {
    /// This session's handle on the port, shared with the services opened
    /// on it ([`Session::shared_port`]).
    rt: Option<SharedPort>,
    backend: Backend,
    capture: Option<pcap::Capture>,
    smp: SmpClient,
    perf: PerfClient,
    sa: Option<SaClient>,
    sm_lid: Option<u16>,
    debug: Option<debug::WalkNames>,
    timeout: Duration,
    retries: u32,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl Drop for Session {
    /// As [`Session::close`] without the capture file's last error.
    fn drop(&mut self) {
        self.release();
    }
}

/// A discovery under way ([`Session::discovering`]).
#[derive(Debug)]
pub struct Discovering<'a>(&'a Session);

impl Drop for Discovering<'_> {
    fn drop(&mut self) {
        if let Some(w) = &self.0.debug {
            w.as_given();
        }
    }
}

/// libibmad's default response timeout (`MAD_DEF_TIMEOUT_MS`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1000);
/// Resends after the first try: libibmad tries `MAD_DEF_RETRIES` (3)
/// times in all.
pub const DEFAULT_RETRIES: u32 = 2;

fn start<T: Transport + 'static>(
    t: T,
    capture: Option<&pcap::Capture>,
    debug: Option<&debug::WalkNames>,
) -> Result<Runtime, OpenError> {
    let cfg = EngineConfig::default();
    let r = match (capture, debug) {
        (Some(c), Some(w)) => Runtime::start(
            debug::DebugTap::new(pcap::PcapTap::new(t, c.clone()), w.clone()),
            cfg,
        ),
        (Some(c), None) => Runtime::start(pcap::PcapTap::new(t, c.clone()), cfg),
        (None, Some(w)) => Runtime::start(debug::DebugTap::new(t, w.clone()), cfg),
        (None, None) => Runtime::start(t, cfg),
    };
    r.map_err(|e| open_err(format!("cannot start the agent runtime: {e}")))
}

impl Session {
    /// Opens the port `opts` asks for and starts the stack on it.
    ///
    /// # Errors
    /// No device (with no transport asked for), or the transport's own
    /// failure to open.
    pub fn open(opts: &SessionOpts) -> Result<Session, OpenError> {
        let capture = match &opts.pcap {
            Some(p) => Some(pcap::Capture::create(p).map_err(open_err)?),
            None => None,
        };
        let debug = (opts.debug > 0).then(debug::WalkNames::default);
        if opts.no_sm && !matches!(opts.transport, TransportChoice::Sim(_)) {
            return Err(open_err(NO_SM_WITHOUT_SIM));
        }
        let choice = match &opts.transport {
            TransportChoice::Auto if opts.ca.is_some() || opts.port.is_some() => {
                TransportChoice::Umad
            }
            TransportChoice::Auto => {
                let any = umad::is_available() && umad::list_cas().is_ok_and(|c| !c.is_empty());
                if !any {
                    return Err(OpenError {
                        message: NO_DEVICE.to_owned(),
                        no_device: true,
                    });
                }
                TransportChoice::Umad
            }
            c => c.clone(),
        };
        let (rt, backend) = match choice {
            TransportChoice::Sim(topo) => {
                let f = if opts.no_sm {
                    sim::load_bare(topo.as_deref())
                } else {
                    sim::bring_up_routed(topo.as_deref(), &opts.sim_routing, opts.sim_lmc)
                }
                .map_err(open_err)?;
                let at = f.endpoint_at(opts.sim_node.as_deref()).map_err(open_err)?;
                let port = f.attach(at).map_err(open_err)?;
                (
                    start(port, capture.as_ref(), debug.as_ref())?,
                    Backend::Sim(Box::new(f)),
                )
            }
            TransportChoice::IbSim => {
                let cfg = IbSimConfig::from_env();
                let where_ = cfg.location();
                let t = IbSimTransport::attach(cfg)
                    .map_err(|e| open_err(format!("cannot attach to ibsim at {where_}: {e}")))?;
                (start(t, capture.as_ref(), debug.as_ref())?, Backend::IbSim)
            }
            TransportChoice::Umad | TransportChoice::Auto => {
                let port = opts.port.unwrap_or(0);
                let port = u8::try_from(port).map_err(|_| {
                    open_err(format!("port {port} does not exist (ports are 0-255)"))
                })?;
                let t = UmadTransport::open(opts.ca.as_deref(), port)
                    .map_err(|e| open_err(e.to_string()))?;
                let ca = t.port_attrs().ca_name.clone();
                (
                    start(t, capture.as_ref(), debug.as_ref())?,
                    Backend::Umad { ca },
                )
            }
        };
        let smp = SmpClient::new(&rt).map_err(|e| open_err(format!("SMP agent: {e}")))?;
        let perf = PerfClient::new(&rt).map_err(|e| open_err(format!("PerfMgt agent: {e}")))?;
        let mut s = Session {
            rt: Some(SharedPort::from_runtime(rt)),
            backend,
            capture,
            smp,
            perf,
            sa: None,
            sm_lid: opts.sm_lid,
            debug,
            timeout: DEFAULT_TIMEOUT,
            retries: DEFAULT_RETRIES,
        };
        s.set_timeout(DEFAULT_TIMEOUT);
        Ok(s)
    }

    /// Sets the response timeout of every query (`-t`).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
        self.smp.timeout = timeout;
        self.smp.retries = self.retries;
        self.perf.timeout = timeout;
        self.perf.retries = self.retries;
    }

    /// The response timeout of every query.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sets the M_Key put into every SMP (`-y`).
    pub fn set_m_key(&mut self, m_key: u64) {
        self.smp.m_key = m_key;
    }

    /// The runtime (to register more agents).
    ///
    /// # Panics
    /// Never: the runtime lives until [`Session::close`].
    #[must_use]
    #[allow(clippy::missing_panics_doc)]
    pub fn runtime(&self) -> &Runtime {
        self.shared_port().runtime()
    }

    /// The port as a [`SharedPort`]: services opened on it
    /// (`SaClient::open`, `CmService::open`, `AgentExchange::open`,
    /// [`SharedPort::register`]) keep it running after this session is
    /// closed or dropped; the last of them to go stops it.
    ///
    /// # Panics
    /// Never: the port is taken only when the session goes.
    #[must_use]
    #[allow(clippy::missing_panics_doc)]
    pub fn shared_port(&self) -> &SharedPort {
        // Taken only by `release`, when the session goes.
        match &self.rt {
            Some(rt) => rt,
            None => unreachable!("port taken before the session went"),
        }
    }

    /// Lets go of the session's handle on the port: the last holder stops
    /// the stack; while other services hold the port, the built-in fabric
    /// stays with the port (its SM and SA keep answering) and goes with
    /// it.
    fn release(&mut self) {
        self.sa = None;
        let backend = std::mem::replace(&mut self.backend, Backend::IbSim);
        match self.rt.take() {
            Some(rt) if rt.holders() > 1 => {
                if matches!(backend, Backend::Sim(_)) {
                    rt.keep_alive(backend);
                }
            }
            Some(rt) => {
                drop(rt);
                drop_or_leave(backend);
            }
            None => drop_or_leave(backend),
        }
    }

    /// The port's attributes as they stand.
    #[must_use]
    pub fn port_attrs(&self) -> PortAttrs {
        self.runtime().port_attrs()
    }

    /// The SMP client.
    #[must_use]
    pub fn smp(&self) -> &SmpClient {
        &self.smp
    }

    /// The PerfMgt client.
    #[must_use]
    pub fn perf(&self) -> &PerfClient {
        &self.perf
    }

    /// A GSI request to `lid` over QP1: `mad` is the whole request (the
    /// common header set by the caller), sent with the session's timeout
    /// and retries; the answer's bytes once its status is 0 and its
    /// attribute is `mad`'s.
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn gsi_rpc(&self, lid: u16, mad: [u8; 256]) -> Result<Vec<u8>, QueryError> {
        let attr = mad_core::wire::Mad::new_unchecked(&mad[..]).attr_id().0;
        let req = mad_agents::SendRequest::new(mad, mad_core::transport::Address::gsi(lid))
            .expect_response(self.timeout, self.retries);
        let c = self.perf.agent().send_and_wait(req)?;
        mad_agents::query::response_bytes(&c, attr).map(<[u8]>::to_vec)
    }

    /// Says that the command walks the fabric now: with `-d`, the
    /// directed routes it sends are named as ibtracert names its own
    /// ([`debug::WalkNames::walk`]).
    pub fn walking(&self) {
        if let Some(w) = &self.debug {
            w.walk();
        }
    }

    /// Says that the command discovers the fabric until the guard is
    /// dropped: with `-d`, its SMPs print no line, as libibnetdisc's do
    /// not ([`debug::WalkNames::discover`]); afterwards the requests print
    /// their lines again.
    #[must_use = "the discovery ends when the guard drops"]
    pub fn discovering(&self) -> Discovering<'_> {
        if let Some(w) = &self.debug {
            w.discover();
        }
        Discovering(self)
    }

    /// The LID SA queries go to: `-s`, else the port's SM LID (0: none).
    #[must_use]
    pub fn sa_lid(&self) -> u16 {
        self.sm_lid.unwrap_or_else(|| self.port_attrs().sm_lid)
    }

    /// The SA client (created on first use): its queries go to QP1 at
    /// [`Self::sa_lid`].
    ///
    /// # Errors
    /// The SA agent cannot be registered.
    pub fn sa(&mut self) -> Result<&SaClient, String> {
        if self.sa.is_none() {
            let cfg = SaClientConfig {
                timeout: self.timeout,
                retries: self.retries,
                receive_reports: false,
                sa_address: self.sm_lid.map(mad_core::transport::Address::gsi),
                ..SaClientConfig::default()
            };
            let c = SaClient::new(self.runtime(), cfg).map_err(|e| format!("SA client: {e}"))?;
            self.sa = Some(c);
        }
        match &self.sa {
            Some(c) => Ok(c),
            None => Err("SA client missing".to_owned()),
        }
    }

    /// How SA tables travel on this session: RMPP, except where the
    /// SA's answers come cut to one MAD: under libumad2sim (no RMPP
    /// there), and on ibsim (its SMs run under libumad2sim).
    #[must_use]
    pub fn sa_table_mode(&self) -> mad_agents::sa::TableMode {
        use mad_agents::sa::TableMode;
        let umad2sim = std::env::var("LD_PRELOAD").is_ok_and(|v| v.contains("umad2sim"));
        match self.backend() {
            Backend::IbSim => TableMode::SingleMad,
            Backend::Umad { .. } if umad2sim => TableMode::SingleMad,
            Backend::Sim(_) | Backend::Umad { .. } => TableMode::Rmpp,
        }
    }

    /// What the session runs on.
    #[must_use]
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// One line saying where the command runs (for `-v` and errors).
    #[must_use]
    pub fn describe(&self) -> String {
        let a = self.port_attrs();
        match &self.backend {
            Backend::Sim(f) => match &f.subnet {
                Some(sub) => {
                    let st = sub.sm_status();
                    format!(
                        "built-in fabric {} ({} nodes, SM-lite at LID {} after {} SMPs), port {} port {} LID {}",
                        f.name(),
                        f.fabric.node_count(),
                        st.sm_lid,
                        st.smps_sent,
                        a.ca_name,
                        a.port_num,
                        a.lid
                    )
                }
                None => format!(
                    "built-in fabric {} ({} nodes, no SM: ports in Initialize), port {} port {} LID {}",
                    f.name(),
                    f.fabric.node_count(),
                    a.ca_name,
                    a.port_num,
                    a.lid
                ),
            },
            Backend::IbSim => format!("ibsim node {} port {} LID {}", a.ca_name, a.port_num, a.lid),
            Backend::Umad { ca } => format!("{ca} port {} LID {}", a.port_num, a.lid),
        }
    }

    /// Lets go of the session's handle on the port and closes the capture
    /// file: the stack stops unless services opened on
    /// [`Session::shared_port`] still hold it (then the last of them stops
    /// it, and the built-in fabric goes with it); the built-in fabric
    /// goes through [`drop_or_leave`].
    ///
    /// # Errors
    /// The capture file could not be written completely.
    pub fn close(mut self) -> Result<(), String> {
        self.release();
        match self.capture.take() {
            Some(c) => c.finish().map(|_| ()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_session_reaches_its_own_port_through_the_agent_layer() {
        let opts = SessionOpts {
            transport: TransportChoice::Sim(None),
            ..SessionOpts::default()
        };
        let s = Session::open(&opts).unwrap();
        let a = s.port_attrs();
        assert_eq!(a.ca_name, "host-2");
        assert_ne!(a.lid, 0);
        let ni = s
            .smp()
            .node_info(&mad_agents::smp::SmpTarget::Lid(a.lid))
            .unwrap();
        assert_eq!(ni.node_guid, a.node_guid);
        assert!(s.describe().contains("built-in fabric"));
        s.close().unwrap();
    }
}
