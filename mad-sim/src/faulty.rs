//! [`FaultyPort`]: a [`SimPort`] inside mad-core's
//! [`FaultInjector`], so that the device-level failures of an endpoint
//! (work-request errors, CQ overflow, QP or device fatal, soft reset,
//! any async event, and the injector's own seeded send/receive drops,
//! duplicates and delays) reach the stack exactly as the port layer
//! specifies them (`mad_core::port`, `mad_core::transport::fault`).
//!
//! Faults come from two places:
//! - the owner of the `FaultyPort` (its [`FaultyPort::injector_mut`], or
//!   [`FaultyPort::apply`]);
//! - anyone holding the [`Fabric`](crate::Fabric) —
//!   [`Fabric::inject`](crate::Fabric::inject), the `mad sim` console —
//!   even while the port's stack runs on another thread: the fault is
//!   queued at the endpoint, its fd turns readable, and the next call the
//!   stack makes on the port (it polls when the fd is readable) applies
//!   it first.
//!
//! Soft reset is both phases of the device's part: the fault raises
//! `SoftResetRequest`; when the stack then recreates its queues (the
//! port layer's reset), the device reports `SoftResetEnd`.

use mad_core::transport::fault::{FaultConfig, FaultInjector, FaultStats};
use mad_core::transport::{
    Address, AsyncEvent, OutMad, PortAttrs, Posted, Qp, QpState, Received, SendCompletion,
    Transport, TransportError, WcStatus,
};
use std::time::Duration;

use crate::fabric::endpoint::SimPort;

/// A fault for an endpoint ([`crate::Fabric::inject`],
/// [`FaultyPort::apply`]).
#[derive(Debug, Clone, PartialEq)]
pub enum EndpointFault {
    /// The next send (not flushed anyway) completes with this work
    /// completion status, the QP goes to ERR and everything behind it is
    /// flushed.
    WrError(WcStatus),
    /// CQ overflow: `IBV_EVENT_CQ_ERR`, then `IBV_EVENT_QP_FATAL` on both
    /// QPs; no outstanding send ever completes; the queues must be
    /// recreated.
    CqOverflow,
    /// `IBV_EVENT_QP_FATAL` on one QP.
    QpFatal(Qp),
    /// `IBV_EVENT_DEVICE_FATAL`: the device is dead for good.
    DeviceFatal,
    /// An HCA soft reset: `SoftResetRequest` now, `SoftResetEnd` once the
    /// stack has recreated its queues.
    SoftReset,
    /// Any asynchronous event, with its effect (see
    /// [`FaultInjector::inject_event`]).
    Event(AsyncEvent),
    /// Replaces the injector's configuration (seeded send / receive
    /// drops, duplicates, delays, probabilistic triggers).
    Config(FaultConfig),
}

impl std::fmt::Display for EndpointFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::WrError(s) => write!(f, "work-request error {s:?}"),
            Self::CqOverflow => f.write_str("CQ overflow"),
            Self::QpFatal(q) => write!(f, "QP fatal on {q:?}"),
            Self::DeviceFatal => f.write_str("device fatal"),
            Self::SoftReset => f.write_str("soft reset"),
            Self::Event(e) => write!(f, "event {e:?}"),
            Self::Config(_) => f.write_str("fault configuration"),
        }
    }
}

/// A [`SimPort`] wrapped in a seeded [`FaultInjector`]; see the [module
/// documentation](self).
pub struct FaultyPort {
    inj: FaultInjector<SimPort>,
    reset_pending: bool,
}

impl std::fmt::Debug for FaultyPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyPort")
            .field("port", self.inj.inner())
            .field("stats", &self.inj.stats())
            .finish_non_exhaustive()
    }
}

impl FaultyPort {
    /// Wraps `port`; the injector's RNG is seeded with `seed` and injects
    /// nothing until told.
    #[must_use]
    pub fn new(port: SimPort, seed: u64) -> Self {
        Self::with_config(port, seed, FaultConfig::default())
    }

    /// Wraps `port` with an injector configuration.
    #[must_use]
    pub fn with_config(port: SimPort, seed: u64, cfg: FaultConfig) -> Self {
        {
            let mut c = port.fabric().lock();
            if let Some(Some(e)) = c.endpoints.get_mut(port.endpoint_index()) {
                e.fault_capable = true;
            }
        }
        Self {
            inj: FaultInjector::with_config(port, seed, cfg),
            reset_pending: false,
        }
    }

    /// The injector.
    #[must_use]
    pub fn injector(&self) -> &FaultInjector<SimPort> {
        &self.inj
    }

    /// The injector, to inject from the owner's side.
    pub fn injector_mut(&mut self) -> &mut FaultInjector<SimPort> {
        &mut self.inj
    }

    /// The endpoint inside.
    #[must_use]
    pub fn sim_port(&self) -> &SimPort {
        self.inj.inner()
    }

    /// What the injector did.
    #[must_use]
    pub fn stats(&self) -> FaultStats {
        self.inj.stats()
    }

    /// Applies `fault` now.
    pub fn apply(&mut self, fault: EndpointFault) {
        match fault {
            EndpointFault::WrError(s) => self.inj.fail_next_send(s),
            EndpointFault::CqOverflow => self.inj.inject_cq_error(),
            EndpointFault::QpFatal(q) => self.inj.inject_event(AsyncEvent::QpFatal(q)),
            EndpointFault::DeviceFatal => self.inj.inject_device_fatal(),
            EndpointFault::SoftReset => {
                self.reset_pending = true;
                self.inj.request_soft_reset();
            }
            EndpointFault::Event(ev) => {
                if ev == AsyncEvent::SoftResetRequest {
                    self.reset_pending = true;
                }
                self.inj.inject_event(ev);
            }
            EndpointFault::Config(cfg) => *self.inj.config_mut() = cfg,
        }
    }

    /// Applies the faults queued at the endpoint by the fabric.
    fn take_queued(&mut self) {
        let queued: Vec<EndpointFault> = {
            let port = self.inj.inner();
            let mut c = port.fabric().lock();
            match c.endpoints.get_mut(port.endpoint_index()) {
                Some(Some(e)) if !e.faults.is_empty() => {
                    let taken = e.faults.drain(..).collect();
                    e.unsignal_if_idle();
                    taken
                }
                _ => return,
            }
        };
        for f in queued {
            self.apply(f);
        }
    }
}

impl Transport for FaultyPort {
    fn port_attrs(&self) -> &PortAttrs {
        self.inj.port_attrs()
    }

    fn refresh_port_attrs(&mut self) -> Result<(), TransportError> {
        self.take_queued();
        self.inj.refresh_port_attrs()
    }

    fn send_queue_depth(&self) -> usize {
        self.inj.send_queue_depth()
    }

    fn post(&mut self, mad: OutMad<'_>, dest: &Address, wait: Duration) -> Posted {
        self.take_queued();
        self.inj.post(mad, dest, wait)
    }

    fn poll_send_completions(
        &mut self,
        out: &mut Vec<SendCompletion>,
    ) -> Result<usize, TransportError> {
        self.take_queued();
        self.inj.poll_send_completions(out)
    }

    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        self.take_queued();
        self.inj.poll_recv()
    }

    fn poll_event(&mut self) -> Option<AsyncEvent> {
        self.take_queued();
        self.inj.poll_event()
    }

    fn qp_state(&self, qp: Qp) -> QpState {
        self.inj.qp_state(qp)
    }

    fn modify_qp(&mut self, qp: Qp, to: QpState) -> Result<(), TransportError> {
        self.take_queued();
        self.inj.modify_qp(qp, to)
    }

    fn recreate_queues(&mut self) -> Result<(), TransportError> {
        self.take_queued();
        self.inj.recreate_queues()?;
        if self.reset_pending {
            // The device finished its reset.
            self.reset_pending = false;
            self.inj.inject_event(AsyncEvent::SoftResetEnd);
        }
        Ok(())
    }

    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.inj.raw_fd()
    }

    fn watch_fd(&mut self, watched: bool) {
        self.inj.watch_fd(watched);
    }

    fn bounded_far_side(&self) -> bool {
        self.inj.bounded_far_side()
    }
}
