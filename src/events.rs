//! The port's asynchronous events (port up / down, LID change, SM
//! change, client reregister, ...) as a stream: [`Port::events`]
//! registers an agent of its own, which the runtime tells of every event
//! of the port (coalesced: at most one of each kind waits).

use std::time::Duration;

use mad_agents::{AgentEvent, AgentReceiver, AgentSpec};
use mad_core::transport::{AsyncEvent, Qp};

use crate::{Error, Port};

/// A subscription to the port's events; dropping it deregisters.
#[derive(Debug)]
pub struct Events {
    _agent: mad_agents::Agent,
    rx: AgentReceiver,
}

/// The name of an event, as `ibv_event_type_str` spells the libibverbs
/// one in snake case (`port_active`, `lid_change`, `sm_change`, ...).
#[must_use]
pub fn event_name(e: &AsyncEvent) -> &'static str {
    match e {
        AsyncEvent::PortActive => "port_active",
        AsyncEvent::PortError => "port_error",
        AsyncEvent::LidChange => "lid_change",
        AsyncEvent::PkeyChange => "pkey_change",
        AsyncEvent::GidChange => "gid_change",
        AsyncEvent::SmChange => "sm_change",
        AsyncEvent::ClientReregister => "client_reregister",
        AsyncEvent::CqError => "cq_error",
        AsyncEvent::QpFatal(_) => "qp_fatal",
        AsyncEvent::DeviceFatal => "device_fatal",
        AsyncEvent::SoftResetRequest => "soft_reset_request",
        AsyncEvent::SoftResetEnd => "soft_reset_end",
        #[allow(unreachable_patterns)]
        _ => "other",
    }
}

impl Events {
    /// The next port event, waiting up to `timeout` (`None`: none came).
    #[must_use]
    pub fn next(&self, timeout: Duration) -> Option<AsyncEvent> {
        let end = std::time::Instant::now() + timeout;
        loop {
            let left = end.checked_duration_since(std::time::Instant::now())?;
            match self.rx.recv_timeout(left)? {
                AgentEvent::Async(e) => return Some(e),
                AgentEvent::DeviceFatal => return Some(AsyncEvent::DeviceFatal),
                _ => {}
            }
        }
    }
}

impl Port {
    /// Starts listening to the port's events.
    ///
    /// # Errors
    /// The agent cannot be registered.
    pub fn events(&self) -> Result<Events, Error> {
        let (agent, rx) = self
            .runtime()
            .register_channel(AgentSpec::send_only("events", Qp::Qp1))
            .map_err(|e| Error::Register(e.to_string()))?;
        Ok(Events { _agent: agent, rx })
    }
}
