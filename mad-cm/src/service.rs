//! The CM on a live port, in the shape of librdmacm: [`CmService`] owns a
//! `mad_agents` agent for the CM class (0x07) on QP1 and a thread that
//! feeds it received MADs and deadlines; the user's calls
//! ([`CmService::connect`], [`CmService::accept`], ...) go straight to the
//! state machine; events come out of [`CmService::next_event`] like
//! `rdma_get_cm_event`. Routes come from the SA ([`resolve_route`]), as
//! `rdma_resolve_route` gets them on InfiniBand, or on RoCE from the GIDs
//! ([`CmPath::roce`](crate::CmPath::roce)). QP transitions stay with the user: the
//! events carry what they need ([`ConnInfo`](crate::ConnInfo)).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mad_agents::sa::{SaClient, SaError};
use mad_agents::{Agent, AgentEvent, AgentRef, AgentSpec, Runtime, SendRequest};
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

struct Shared {
    cm: Mutex<Cm>,
    agent: AgentRef,
    events: Mutex<mpsc::Sender<(ConnId, CmEvent)>>,
    stop: AtomicBool,
    send_errors: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Cm> {
        self.cm
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends what the CM queued and hands its events to the user.
    fn flush(&self, cm: &mut Cm) {
        while let Some(t) = cm.poll_transmit() {
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
        let r = f(&mut cm, Instant::now());
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
    /// and Get) and starts the thread that drives it. A `cfg.ca_guid` of 0
    /// is replaced by the port's node GUID.
    ///
    /// # Errors
    /// [`StartError`].
    pub fn start(rt: &Runtime, mut cfg: CmConfig) -> Result<Self, StartError> {
        if cfg.ca_guid == 0 {
            cfg.ca_guid = rt.port_attrs().node_guid;
        }
        let spec = AgentSpec::requests(
            "cm",
            MgmtClass::COM_MGT,
            CM_CLASS_VERSION,
            &[Method::SEND, Method::GET],
        );
        let (agent, rx) = rt.register_channel(spec)?;
        let (tx, events) = mpsc::channel();
        let shared = Arc::new(Shared {
            cm: Mutex::new(Cm::new(cfg)),
            agent: agent.handle(),
            events: Mutex::new(tx),
            stop: AtomicBool::new(false),
            send_errors: AtomicU64::new(0),
        });
        let s = shared.clone();
        let driver = std::thread::Builder::new()
            .name("mad-cm".to_owned())
            .spawn(move || {
                while !s.stop.load(Ordering::Relaxed) {
                    let wait = s.lock().poll_timeout().map_or(IDLE_TICK, |t| {
                        t.saturating_duration_since(Instant::now()).min(IDLE_TICK)
                    });
                    let ev = rx.recv_timeout(wait);
                    let mut cm = s.lock();
                    let now = Instant::now();
                    match ev {
                        Some(AgentEvent::Received(m)) => {
                            // A malformed MAD is counted by the CM and dropped.
                            let _ = cm.handle_recv(now, m.src(), m.bytes());
                        }
                        Some(AgentEvent::DeviceFatal) => cm.device_removed(),
                        _ => {}
                    }
                    cm.handle_timeout(now);
                    s.flush(&mut cm);
                }
            })?;
        Ok(Self {
            shared,
            events: Mutex::new(events),
            driver: Some(driver),
            agent: Some(agent),
        })
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

impl Drop for CmService {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(d) = self.driver.take() {
            let _ = d.join();
        }
        drop(self.agent.take());
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
