//! The `Transport` interface: one port's QP0 and QP1, as a verbs-like
//! device presents them.
//!
//! A transport posts sends (a MAD plus its destination address) and hands
//! back a [`WrId`]; later it reports one [`SendCompletion`] per posted work
//! request, receives with their source address, and asynchronous events.
//! It does **not** queue, retry or recover: that is the per-port layer's job
//! ([`crate::port`]). A transport that is a real device (umad) or ibsim
//! never fails in most of the ways listed in [`WcStatus`] and
//! [`AsyncEvent`]; the simulated fabric and the fault-injecting wrapper can
//! produce every one of them, so the port layer's recovery is testable.
//!
//! Implementations: `ibsim` (ibsim's socket protocol), `umad` (rdma-core's
//! libibumad, loaded at run time), and the simulated fabric in `mad-sim`.

use std::fmt;
use std::time::Duration;

/// Which of the port's two management QPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Qp {
    /// QP0, the SMI: SMP classes only, VL15, no P_Key check.
    Qp0,
    /// QP1, the GSI: every other class, Q_Key 0x80010000.
    Qp1,
}

impl Qp {
    /// The QP number.
    #[must_use]
    pub fn qpn(self) -> u32 {
        match self {
            Qp::Qp0 => 0,
            Qp::Qp1 => 1,
        }
    }
    /// Index (0 or 1), for per-QP tables.
    #[must_use]
    pub fn index(self) -> usize {
        self.qpn() as usize
    }
}

// The UD address types are wire data (a MAD's source and destination):
// they live in `mad-wire` and stay reachable here.
pub use mad_wire::addr::{Address, Grh, GSI_QKEY, PERMISSIVE_LID};

/// A work-request id, unique per transport instance while outstanding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WrId(pub u64);

/// What [`Transport::post`] gives back: the work request's id, or why
/// nothing was posted.
pub type Posted = Result<WrId, TransportError>;

/// Work-completion status, modelled on `enum ibv_wc_status` (same order and
/// values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WcStatus {
    /// `IBV_WC_SUCCESS`.
    Success = 0,
    /// `IBV_WC_LOC_LEN_ERR`.
    LocLenErr = 1,
    /// `IBV_WC_LOC_QP_OP_ERR`.
    LocQpOpErr = 2,
    /// `IBV_WC_LOC_EEC_OP_ERR`.
    LocEecOpErr = 3,
    /// `IBV_WC_LOC_PROT_ERR`.
    LocProtErr = 4,
    /// `IBV_WC_WR_FLUSH_ERR`: the QP was in error; the request was not sent.
    WrFlushErr = 5,
    /// `IBV_WC_MW_BIND_ERR`.
    MwBindErr = 6,
    /// `IBV_WC_BAD_RESP_ERR`.
    BadRespErr = 7,
    /// `IBV_WC_LOC_ACCESS_ERR`.
    LocAccessErr = 8,
    /// `IBV_WC_REM_INV_REQ_ERR`.
    RemInvReqErr = 9,
    /// `IBV_WC_REM_ACCESS_ERR`.
    RemAccessErr = 10,
    /// `IBV_WC_REM_OP_ERR`.
    RemOpErr = 11,
    /// `IBV_WC_RETRY_EXC_ERR`.
    RetryExcErr = 12,
    /// `IBV_WC_RNR_RETRY_EXC_ERR`.
    RnrRetryExcErr = 13,
    /// `IBV_WC_LOC_RDD_VIOL_ERR`.
    LocRddViolErr = 14,
    /// `IBV_WC_REM_INV_RD_REQ_ERR`.
    RemInvRdReqErr = 15,
    /// `IBV_WC_REM_ABORT_ERR`.
    RemAbortErr = 16,
    /// `IBV_WC_INV_EECN_ERR`.
    InvEecnErr = 17,
    /// `IBV_WC_INV_EEC_STATE_ERR`.
    InvEecStateErr = 18,
    /// `IBV_WC_FATAL_ERR`.
    FatalErr = 19,
    /// `IBV_WC_RESP_TIMEOUT_ERR`.
    RespTimeoutErr = 20,
    /// `IBV_WC_GENERAL_ERR`.
    GeneralErr = 21,
}

impl WcStatus {
    /// The `IBV_WC_*` name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Success => "IBV_WC_SUCCESS",
            Self::LocLenErr => "IBV_WC_LOC_LEN_ERR",
            Self::LocQpOpErr => "IBV_WC_LOC_QP_OP_ERR",
            Self::LocEecOpErr => "IBV_WC_LOC_EEC_OP_ERR",
            Self::LocProtErr => "IBV_WC_LOC_PROT_ERR",
            Self::WrFlushErr => "IBV_WC_WR_FLUSH_ERR",
            Self::MwBindErr => "IBV_WC_MW_BIND_ERR",
            Self::BadRespErr => "IBV_WC_BAD_RESP_ERR",
            Self::LocAccessErr => "IBV_WC_LOC_ACCESS_ERR",
            Self::RemInvReqErr => "IBV_WC_REM_INV_REQ_ERR",
            Self::RemAccessErr => "IBV_WC_REM_ACCESS_ERR",
            Self::RemOpErr => "IBV_WC_REM_OP_ERR",
            Self::RetryExcErr => "IBV_WC_RETRY_EXC_ERR",
            Self::RnrRetryExcErr => "IBV_WC_RNR_RETRY_EXC_ERR",
            Self::LocRddViolErr => "IBV_WC_LOC_RDD_VIOL_ERR",
            Self::RemInvRdReqErr => "IBV_WC_REM_INV_RD_REQ_ERR",
            Self::RemAbortErr => "IBV_WC_REM_ABORT_ERR",
            Self::InvEecnErr => "IBV_WC_INV_EECN_ERR",
            Self::InvEecStateErr => "IBV_WC_INV_EEC_STATE_ERR",
            Self::FatalErr => "IBV_WC_FATAL_ERR",
            Self::RespTimeoutErr => "IBV_WC_RESP_TIMEOUT_ERR",
            Self::GeneralErr => "IBV_WC_GENERAL_ERR",
        }
    }
}

impl fmt::Display for WcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The send queue of a transport whose sends complete as they are posted
/// (ibsim, umad): work request ids in posting order and the successful
/// completions not yet polled.
#[derive(Debug)]
pub(crate) struct PostedAtOnce {
    next_wr: u64,
    queue: std::collections::VecDeque<SendCompletion>,
}

impl Default for PostedAtOnce {
    fn default() -> Self {
        Self {
            next_wr: 1,
            queue: std::collections::VecDeque::new(),
        }
    }
}

impl PostedAtOnce {
    /// Gives the next work request id to a send on `qp` that has gone out
    /// and queues its successful completion.
    pub(crate) fn succeed(&mut self, qp: Qp) -> WrId {
        let wr_id = WrId(self.next_wr);
        self.next_wr += 1;
        self.queue.push_back(SendCompletion {
            wr_id,
            qp,
            status: WcStatus::Success,
            vendor_err: 0,
        });
        wr_id
    }

    /// [`Transport::poll_send_completions`]: moves every queued completion
    /// into `out`; returns how many.
    pub(crate) fn drain(&mut self, out: &mut Vec<SendCompletion>) -> usize {
        let n = self.queue.len();
        out.extend(self.queue.drain(..));
        n
    }

    /// Drops the completions not yet polled.
    pub(crate) fn clear(&mut self) {
        self.queue.clear();
    }
}

/// One send work completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendCompletion {
    /// The work request this completes.
    pub wr_id: WrId,
    /// Which QP it was posted on.
    pub qp: Qp,
    /// Outcome.
    pub status: WcStatus,
    /// Vendor error syndrome (0 when none).
    pub vendor_err: u32,
}

/// A received MAD with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The QP it arrived on.
    pub qp: Qp,
    /// Source address (LID, QP, SL, P_Key index, GRH).
    pub src: Address,
    /// The MAD bytes (256, or shorter if the transport truncated it), in a
    /// pooled fixed-size buffer: receiving allocates nothing for them.
    pub mad: crate::MadBuf,
}

/// Asynchronous events of a port or its device (`IBV_EVENT_*` that matter
/// to a MAD stack, plus the two-phase soft reset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AsyncEvent {
    /// `IBV_EVENT_PORT_ACTIVE`.
    PortActive,
    /// `IBV_EVENT_PORT_ERR`.
    PortError,
    /// `IBV_EVENT_LID_CHANGE`.
    LidChange,
    /// `IBV_EVENT_PKEY_CHANGE`.
    PkeyChange,
    /// `IBV_EVENT_GID_CHANGE`.
    GidChange,
    /// `IBV_EVENT_SM_CHANGE`.
    SmChange,
    /// `IBV_EVENT_CLIENT_REREGISTER`.
    ClientReregister,
    /// `IBV_EVENT_CQ_ERR` (e.g. overflow): every posted request is flushed
    /// and the QPs and CQ must be recreated.
    CqError,
    /// `IBV_EVENT_QP_FATAL` on one QP.
    QpFatal(Qp),
    /// `IBV_EVENT_DEVICE_FATAL`: the device is unusable.
    DeviceFatal,
    /// An HCA soft reset was requested (phase 1: clients must release).
    SoftResetRequest,
    /// The soft reset finished (phase 2: clients may resume).
    SoftResetEnd,
}

impl AsyncEvent {
    /// True for the events after which the port's attributes are read
    /// again ([`Transport::refresh_port_attrs`]): port active / error,
    /// LID, P_Key, GID and SM change.
    #[must_use]
    pub fn changes_attrs(self) -> bool {
        matches!(
            self,
            Self::PortActive
                | Self::PortError
                | Self::LidChange
                | Self::PkeyChange
                | Self::GidChange
                | Self::SmChange
        )
    }
}

/// QP states (`IBV_QPS_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpState {
    /// Reset.
    Reset,
    /// Initialized.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue error.
    Sqe,
    /// Error.
    Err,
}

/// Cached attributes of the port a transport is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PortAttrs {
    /// Device (CA) name, e.g. `mlx5_0` or the ibsim node name.
    pub ca_name: String,
    /// Port number on the CA (1-based; 0 is a switch's management port).
    pub port_num: u8,
    /// Node GUID.
    pub node_guid: u64,
    /// Port GUID.
    pub port_guid: u64,
    /// Subnet prefix.
    pub gid_prefix: u64,
    /// Base LID.
    pub lid: u16,
    /// LMC.
    pub lmc: u8,
    /// Master SM LID.
    pub sm_lid: u16,
    /// Master SM SL.
    pub sm_sl: u8,
    /// Port state (PortInfo encoding: 1 Down .. 4 Active).
    pub state: u8,
    /// Physical state (PortInfo encoding).
    pub phys_state: u8,
    /// PortInfo CapabilityMask.
    pub capability_mask: u32,
    /// P_Key table.
    pub pkeys: Vec<u16>,
    /// True if this port is a switch's port 0.
    pub is_switch: bool,
}

impl PortAttrs {
    /// The port's GID at index 0 in network byte order: [`gid_prefix`]
    /// followed by [`port_guid`].
    ///
    /// On InfiniBand that is the port's default GID. On RoCE, libibumad
    /// reads both halves from GID table entry 0 (sysfs
    /// `/sys/class/infiniband/<ca>/ports/<n>/gids/0`: `fe80::` plus the
    /// EUI-64 of the interface's MAC), so after a MAC change
    /// ([`AsyncEvent::GidChange`]) and [`Transport::refresh_port_attrs`]
    /// it is the new GID. The simulator and ibsim fill both halves too.
    ///
    /// [`gid_prefix`]: PortAttrs::gid_prefix
    /// [`port_guid`]: PortAttrs::port_guid
    #[must_use]
    pub fn gid(&self) -> [u8; 16] {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&self.gid_prefix.to_be_bytes());
        g[8..].copy_from_slice(&self.port_guid.to_be_bytes());
        g
    }
}

/// Why a transport call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The send queue is full (the port layer should have queued).
    #[error("{qp:?} send queue full ({depth} posted)")]
    QueueFull {
        /// The QP.
        qp: Qp,
        /// Its depth.
        depth: usize,
    },
    /// The QP is not in RTS.
    #[error("{qp:?} is in state {state:?}, cannot post")]
    QpNotReady {
        /// The QP.
        qp: Qp,
        /// Its state.
        state: QpState,
    },
    /// A QP state transition the verbs do not allow (e.g. ERR → INIT).
    #[error("{qp:?}: illegal state transition {from:?} -> {to:?}")]
    InvalidTransition {
        /// The QP.
        qp: Qp,
        /// Its current state.
        from: QpState,
        /// The state asked for.
        to: QpState,
    },
    /// The device had a fatal error; reopen the port explicitly.
    #[error("device {0} is dead after a fatal error; reopen the port")]
    DeviceDead(String),
    /// A MAD that cannot be sent (length, class on the wrong QP, ...):
    /// the cause.
    #[error("bad send: {0}")]
    BadSend(#[from] Unsendable),
    /// The named component could not be found or opened.
    #[error("{0}")]
    Open(String),
    /// An operating-system error.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// One port's QP0 and QP1.
///
/// All methods are non-blocking. `raw_fd` (if any) becomes readable when
/// `poll_recv`, `poll_send_completions` or `poll_event` may have something.
pub trait Transport: Send {
    /// The port's cached attributes.
    fn port_attrs(&self) -> &PortAttrs;

    /// Re-reads the port's attributes from the device (after a LID /
    /// P_Key / SM change event).
    ///
    /// # Errors
    /// When the device cannot be queried.
    fn refresh_port_attrs(&mut self) -> Result<(), TransportError>;

    /// Send queue depth of each QP (the most work requests outstanding).
    fn send_queue_depth(&self) -> usize;

    /// Posts one checked MAD on its QP to `dest`; `wait` is how long the
    /// stack above waits for its answer (this attempt's timeout), zero for
    /// a MAD that awaits none.
    ///
    /// The MAD's own checks (length, class on the right QP) ran once, when
    /// the [`OutMad`] was made ([`Unsendable::check_post`]: at
    /// `Engine::send`, or in [`Transport::post_send`] for a caller holding
    /// bytes); an implementation does not repeat them. It refuses only
    /// what it alone cannot carry, with a carrier limit
    /// ([`Unsendable::is_carrier_limit`]: GRH on ibsim, a QP another
    /// endpoint owns, ...), and never panics on a MAD.
    ///
    /// A transport below which a MAD layer matches answers to requests and
    /// drops the unmatched ones (the kernel's, under umad) keeps a request
    /// on its wait list about `wait` long; the others ignore `wait`.
    /// Wrappers forward it unchanged.
    ///
    /// # Errors
    /// Queue full, QP not in RTS, device dead, or a MAD this carrier
    /// cannot carry.
    fn post(&mut self, mad: OutMad<'_>, dest: &Address, wait: Duration) -> Posted;

    /// Checks `mad` for `qp` ([`Unsendable::check_post`]) and posts it
    /// ([`Transport::post`]) awaiting no answer: for a caller holding
    /// bytes rather than an [`OutMad`] (discovery's port thread, the SM
    /// driver, tests). A bad MAD is refused with
    /// [`TransportError::BadSend`] and nothing is posted. Implementations
    /// and wrappers keep this default (a wrapper that forwarded it would
    /// check twice) and implement [`Transport::post`].
    ///
    /// # Errors
    /// [`TransportError::BadSend`], or as [`Transport::post`].
    fn post_send(&mut self, qp: Qp, mad: &[u8], dest: &Address) -> Posted {
        self.post(Unsendable::check_post(mad, qp)?, dest, Duration::ZERO)
    }

    /// Checks `mad` for `qp` and posts it as a request waiting `wait`
    /// ([`Transport::post`]); as [`Transport::post_send`],
    /// implementations keep this default.
    ///
    /// # Errors
    /// As [`Transport::post_send`].
    fn post_request(&mut self, qp: Qp, mad: &[u8], dest: &Address, wait: Duration) -> Posted {
        self.post(Unsendable::check_post(mad, qp)?, dest, wait)
    }

    /// Moves completed sends into `out`; returns how many.
    ///
    /// # Errors
    /// On an I/O failure of the underlying channel.
    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError>;

    /// Returns the next received MAD, if any.
    ///
    /// # Errors
    /// On an I/O failure of the underlying channel.
    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError>;

    /// Returns the next asynchronous event, if any.
    fn poll_event(&mut self) -> Option<AsyncEvent>;

    /// Current state of `qp`.
    fn qp_state(&self, qp: Qp) -> QpState;

    /// Requests a QP state transition (the port layer drives
    /// ERR → RESET → INIT → RTR → RTS after a work-request error).
    ///
    /// # Errors
    /// An illegal transition or a device failure.
    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError>;

    /// Destroys and recreates both QPs and the CQ (after a CQ error); both
    /// QPs come back in RTS with nothing posted.
    ///
    /// # Errors
    /// When the device cannot recreate them.
    fn recreate_queues(&mut self) -> Result<(), TransportError>;

    /// A file descriptor to register with mio, if the transport has one.
    fn raw_fd(&self) -> Option<std::os::fd::RawFd>;

    /// Whether the far side has finite queues, so that a stack above
    /// should cap the requests it keeps awaiting a response (solicited
    /// flow control): a device under umad, ibsim's socket, a simulated
    /// fabric. The default says so for a transport with a file descriptor
    /// and not for one without (an in-memory loopback whose far side is a
    /// closure); a transport whose descriptor is made on demand overrides
    /// it so that asking does not make one.
    fn bounded_far_side(&self) -> bool {
        self.raw_fd().is_some()
    }

    /// Says whether a thread is about to wait for [`Transport::raw_fd`] to
    /// become readable (`true`) or, for now, only polls (`false`). A
    /// transport whose descriptor costs system calls each time it is made
    /// readable (a simulated fabric's notification socket) may stop
    /// making it readable while it is not watched; watched again, it must
    /// make it readable at once if anything is queued, so that a waiter
    /// misses nothing. A transport starts watched. The default does
    /// nothing (the descriptor is always kept); wrappers forward it.
    fn watch_fd(&mut self, watched: bool) {
        let _ = watched;
    }

    /// Asks for unsolicited requests of `class` / `class_version` whose
    /// method bit is set in `methods` (bit n = method n), with `oui` for
    /// vendor range-2 classes, to be delivered to this port's receives.
    /// Only transports below which something filters receives need it (the
    /// kernel's MAD layer under umad); the others deliver everything and
    /// keep this default, which does nothing.
    ///
    /// # Errors
    /// The layer below refused (for example another process owns a method).
    fn register_requests(
        &mut self,
        class: crate::wire::MgmtClass,
        class_version: u8,
        methods: u128,
        oui: Option<[u8; 3]>,
    ) -> Result<(), TransportError> {
        let _ = (class, class_version, methods, oui);
        Ok(())
    }
}

mod dl;
pub mod fault;
pub mod ibsim;
mod layer;
pub mod loopback;
pub mod umad;
mod unsendable;
pub mod verbs;

pub use layer::TransportLayer;
pub use unsendable::{OutMad, OutMadBuf, Unsendable};
