//! The CM on a live port, in the shape of librdmacm: [`CmService`] owns a
//! `mad_agents` agent for the CM class (0x07) on QP1 and a thread that
//! feeds it received MADs and deadlines; the user's calls
//! ([`CmService::connect`], [`CmService::accept`], ...) go straight to the
//! state machine; events come out of [`CmService::next_event`] like
//! `rdma_get_cm_event`. Routes come from the SA ([`resolve_route`]), as
//! `rdma_resolve_route` gets them on InfiniBand, or on RoCE from the GIDs
//! ([`CmPath::roce`](crate::CmPath::roce)). QP transitions stay with the user: the
//! events carry what they need ([`ConnInfo`](crate::ConnInfo)).
//!
//! A program with its own event loop (and a test or fuzz target on a
//! virtual clock) starts the service with [`CmService::start_driven`]
//! instead: no thread, and the caller pumps it with [`CmPump::pump`].
//!
//! [`CmService::open`] starts it on a [`SharedPort`] and keeps a handle:
//! the port lives while the service does, whoever created it (seed 004).
//! On any port the CM's agent holds the two-phase soft reset (seed 001,
//! [`ResetHold`]): on ResetPending what the CM would send stays queued in
//! it while the sends already posted complete, then the service
//! acknowledges; on ResetEnd the queued MADs go out. DeviceFatal gives
//! every ID DEVICE_REMOVAL.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mad_agents::sa::{SaClient, SaError};
use mad_agents::{
    Agent, AgentEvent, AgentReceiver, AgentRef, AgentSpec, ResetHold, ResetHoldStats, Runtime,
    SendRequest, SharedPort,
};
use mad_core::wire::cm::{RejectReason, CM_CLASS_VERSION};
use mad_core::wire::{Method, MgmtClass};

use crate::{
    AcceptParams, Cm, CmConfig, CmError, CmEvent, CmPath, CmStats, CmTables, ConnId, ConnectParams,
    ListenId, State,
};

/// Longest the driver thread sleeps when no deadline is due sooner.
const IDLE_TICK: Duration = Duration::from_millis(20);

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The CM agent could not be registered (another CM owns the class).
    #[error("registering the CM agent: {0}")]
    Register(#[from] mad_agents::RegisterError),
    /// The driver thread could not be started.
    #[error("starting the CM thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// Where the service reads the time: the real clock, or the caller's
/// (a virtual clock in tests and fuzzing, see [`CmService::start_driven`]).
pub type CmClock = Arc<dyn Fn() -> Instant + Send + Sync>;

struct Shared {
    cm: Mutex<Cm>,
    agent: AgentRef,
    events: Mutex<mpsc::Sender<(ConnId, CmEvent)>>,
    stop: AtomicBool,
    send_errors: AtomicU64,
    clock: CmClock,
    /// The CM's part in the port's soft reset.
    reset: ResetHold,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Cm> {
        self.cm
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends what the CM queued and hands its events to the user.
    fn flush(&self, cm: &mut Cm) {
        // During a soft reset the CM's MADs wait in it (its deadlines may
        // resend them anyway) until the port is back.
        while let Some(t) = (!self.reset.is_held())
            .then(|| cm.poll_transmit())
            .flatten()
        {
            if self
                .agent
                .send(SendRequest::new(t.mad.to_vec(), t.to))
                .is_err()
            {
                // The CM's own retries cover a lost send.
                self.send_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        let tx = self
            .events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while let Some(e) = cm.poll_event() {
            let _ = tx.send(e);
        }
    }

    /// Runs `f` on the CM, then flushes.
    fn with<R>(&self, f: impl FnOnce(&mut Cm, Instant) -> R) -> R {
        let mut cm = self.lock();
        let r = f(&mut cm, (self.clock)());
        self.flush(&mut cm);
        r
    }
}

/// A connection manager on one port (an `rdma_event_channel` with its
/// IDs).
pub struct CmService {
    shared: Arc<Shared>,
    events: Mutex<mpsc::Receiver<(ConnId, CmEvent)>>,
    driver: Option<JoinHandle<()>>,
    agent: Option<Agent>,
    /// The shared port this service keeps alive ([`CmService::open`]);
    /// dropped after the agent.
    port: Option<SharedPort>,
}

impl std::fmt::Debug for CmService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmService")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl CmService {
    /// Registers the CM agent on `rt`'s port (class 0x07 version 2, Send
    /// and Get) and starts the thread that drives it on the real clock. A
    /// `cfg.ca_guid` of 0 is replaced by the port's node GUID.
    ///
    /// # Errors
    /// [`StartError`].
    pub fn start(rt: &Runtime, cfg: CmConfig) -> Result<Self, StartError> {
        let (mut service, pump) = Self::start_driven(rt, cfg, Arc::new(Instant::now))?;
        let shared = service.shared.clone();
        let driver = std::thread::Builder::new()
            .name("mad-cm".to_owned())
            .spawn(move || {
                while !shared.stop.load(Ordering::Relaxed) {
                    let wait = pump.poll_timeout().map_or(IDLE_TICK, |t| {
                        t.saturating_duration_since(Instant::now()).min(IDLE_TICK)
                    });
                    pump.pump(wait);
                }
            })?;
        service.driver = Some(driver);
        Ok(service)
    }

    /// [`CmService::start`] on a shared port, keeping a handle on it: the
    /// port lives while the service does.
    ///
    /// # Errors
    /// As [`CmService::start`].
    pub fn open(port: &SharedPort, cfg: CmConfig) -> Result<Self, StartError> {
        let mut service = Self::start(port.runtime(), cfg)?;
        service.port = Some(port.clone());
        Ok(service)
    }

    /// The shared port this service holds, if it was opened with
    /// [`CmService::open`].
    #[must_use]
    pub fn port(&self) -> Option<&SharedPort> {
        self.port.as_ref()
    }

    /// The CM's part in soft resets so far (held, acknowledged, resumed;
    /// device-fatal errors heard).
    #[must_use]
    pub fn reset_stats(&self) -> ResetHoldStats {
        self.shared.reset.stats()
    }

    /// Registers the CM agent like [`CmService::start`], but starts no
    /// thread: the caller drives the service with the returned
    /// [`CmPump`], and the service reads the time from `clock` (for the
    /// user's calls and for the pump). This is how a program with its own
    /// event loop runs the CM, and how tests and fuzzing run it on a
    /// virtual clock.
    ///
    /// # Errors
    /// [`StartError::Register`].
    pub fn start_driven(
        rt: &Runtime,
        mut cfg: CmConfig,
        clock: CmClock,
    ) -> Result<(Self, CmPump), StartError> {
        if cfg.ca_guid == 0 {
            cfg.ca_guid = rt.port_attrs().node_guid;
        }
        let spec = AgentSpec::requests(
            "cm",
            MgmtClass::COM_MGT,
            CM_CLASS_VERSION,
            &[Method::SEND, Method::GET],
        )
        .holding_reset();
        let (agent, rx) = rt.register_channel(spec)?;
        let (tx, events) = mpsc::channel();
        let shared = Arc::new(Shared {
            cm: Mutex::new(Cm::new(cfg)),
            agent: agent.handle(),
            events: Mutex::new(tx),
            stop: AtomicBool::new(false),
            send_errors: AtomicU64::new(0),
            clock,
            reset: ResetHold::new(),
        });
        shared.reset.attach(agent.handle());
        let pump = CmPump {
            shared: shared.clone(),
            rx,
        };
        Ok((
            Self {
                shared,
                events: Mutex::new(events),
                driver: None,
                agent: Some(agent),
                port: None,
            },
            pump,
        ))
    }

    /// `rdma_listen`: takes REQs to `service_id`.
    ///
    /// # Errors
    /// [`CmError::AlreadyListening`].
    pub fn listen(&self, service_id: u64) -> Result<ListenId, CmError> {
        self.shared.with(|cm, _| cm.listen(service_id))
    }

    /// `rdma_connect`: sends a REQ.
    ///
    /// # Errors
    /// As [`Cm::connect`].
    pub fn connect(&self, params: ConnectParams) -> Result<ConnId, CmError> {
        self.shared.with(|cm, now| cm.connect(now, params))
    }

    /// `rdma_accept` on the passive side: sends the REP.
    ///
    /// # Errors
    /// As [`Cm::accept`].
    pub fn accept(&self, id: ConnId, params: AcceptParams) -> Result<(), CmError> {
        self.shared.with(|cm, now| cm.accept(now, id, params))
    }

    /// `rdma_reject`.
    ///
    /// # Errors
    /// As [`Cm::reject`].
    pub fn reject(
        &self,
        id: ConnId,
        reason: RejectReason,
        private_data: &[u8],
    ) -> Result<(), CmError> {
        self.shared
            .with(|cm, now| cm.reject(now, id, reason, private_data))
    }

    /// Sends an MRA (the kernel's `ib_send_cm_mra`).
    ///
    /// # Errors
    /// As [`Cm::delay`].
    pub fn delay(&self, id: ConnId, service_timeout: u8) -> Result<(), CmError> {
        self.shared
            .with(|cm, now| cm.delay(now, id, service_timeout))
    }

    /// `rdma_establish` (active side) or COMM_EST (passive side).
    ///
    /// # Errors
    /// As [`Cm::establish`].
    pub fn establish(&self, id: ConnId) -> Result<(), CmError> {
        self.shared.with(|cm, now| cm.establish(now, id))
    }

    /// `rdma_disconnect`.
    ///
    /// # Errors
    /// As [`Cm::disconnect`].
    pub fn disconnect(&self, id: ConnId, private_data: &[u8]) -> Result<(), CmError> {
        self.shared
            .with(|cm, now| cm.disconnect(now, id, private_data))
    }

    /// `rdma_get_cm_event` with a timeout.
    pub fn next_event(&self, timeout: Duration) -> Option<(ConnId, CmEvent)> {
        let rx = self
            .events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        rx.recv_timeout(timeout).ok()
    }

    /// The state of connection `id`.
    #[must_use]
    pub fn state(&self, id: ConnId) -> Option<State> {
        self.shared.lock().state(id)
    }

    /// The CM's counters.
    #[must_use]
    pub fn stats(&self) -> CmStats {
        self.shared.lock().stats()
    }

    /// The sizes of the CM's tables (each bounded, whatever peers send).
    #[must_use]
    pub fn tables(&self) -> CmTables {
        self.shared.lock().tables()
    }

    /// Sends the port refused (the CM's retries resend them).
    #[must_use]
    pub fn send_errors(&self) -> u64 {
        self.shared.send_errors.load(Ordering::Relaxed)
    }

    /// The port went away (`RDMA_CM_EVENT_DEVICE_REMOVAL` for every ID).
    pub fn device_removed(&self) {
        self.shared.with(|cm, _| cm.device_removed());
    }
}

/// What drives a [`CmService`] started with [`CmService::start_driven`]:
/// feeds it the MADs its agent received and fires its deadlines. The
/// thread of [`CmService::start`] is a loop over [`CmPump::pump`].
pub struct CmPump {
    shared: Arc<Shared>,
    rx: AgentReceiver,
}

impl std::fmt::Debug for CmPump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmPump").finish_non_exhaustive()
    }
}

impl CmPump {
    /// Most MADs one [`CmPump::pump`] takes before it returns, so that a
    /// flood cannot keep the caller's loop (or the deadlines) waiting.
    pub const BATCH: usize = 256;

    /// The CM's next deadline, on the service's clock.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.shared.lock().poll_timeout()
    }

    /// Waits up to `wait` for a MAD, takes it and those already queued
    /// (at most [`CmPump::BATCH`]), fires the deadlines due on the
    /// service's clock, sends what the CM queued and hands its events to
    /// [`CmService::next_event`]. Returns how many MADs it took.
    pub fn pump(&self, wait: Duration) -> usize {
        let mut taken = 0;
        let mut next = if wait.is_zero() {
            self.rx.try_recv()
        } else {
            self.rx.recv_timeout(wait)
        };
        let mut cm = self.shared.lock();
        while let Some(ev) = next {
            let now = (self.shared.clock)();
            self.shared.reset.on_event(&ev);
            match ev {
                AgentEvent::Received(m) => {
                    taken += 1;
                    // A malformed MAD is counted by the CM and dropped.
                    let _ = cm.handle_recv(now, m.src(), m.bytes());
                }
                AgentEvent::DeviceFatal => cm.device_removed(),
                _ => {}
            }
            if taken >= Self::BATCH {
                break;
            }
            next = self.rx.try_recv();
        }
        cm.handle_timeout((self.shared.clock)());
        self.shared.flush(&mut cm);
        drop(cm);
        // The drain may have ended (the sends posted before the reset
        // completed): acknowledge.
        self.shared.reset.check();
        taken
    }
}

impl Drop for CmService {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(d) = self.driver.take() {
            let _ = d.join();
        }
        drop(self.agent.take());
        drop(self.port.take());
    }
}

/// `rdma_resolve_route` on IB: the path from this port (`slid`) to
/// `dlid`, from the SA's PathRecord.
///
/// # Errors
/// The SA's error (no path, timeout, ...).
pub fn resolve_route(sa: &SaClient, slid: u16, dlid: u16) -> Result<CmPath, SaError> {
    sa.path_record(slid, dlid)
        .map(|p| CmPath::from_path_record(&p))
}
