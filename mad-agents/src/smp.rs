//! SMP queries: Get and Set of SMP attributes, LID-routed or directed
//! route, returning the parsed attribute.
//!
//! [`request`] builds the send and [`parse`] reads the completion, for
//! poll-style use of an [`crate::Engine`]; [`SmpClient`] does both over a
//! [`crate::Runtime`] agent, blocking.

use std::time::Duration;

use mad_core::transport::{Address, Qp, PERMISSIVE_LID};
use mad_core::wire::attr::{NodeDescription, NodeInfo, PortInfo, SwitchInfo};
use mad_core::wire::smp::DrPath;
use mad_core::wire::{
    AttributeId, Mad, Method, MgmtClass, Repr, MAD_LEN, SMP_DATA_LEN, SMP_DATA_OFFSET,
};

use crate::query::{blocking_client, parse_at, QueryError};
use crate::runtime::{Agent, Runtime};
use crate::spec::AgentSpec;
use crate::types::{Completion, RegisterError, SendRequest};

/// Where an SMP goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmpTarget {
    /// LID-routed (class 0x01) to this LID.
    Lid(u16),
    /// Directed route (class 0x81) along this path.
    Dr(DrPath),
}

impl SmpTarget {
    /// Directed route through the egress ports `hops` (empty: the local
    /// port).
    ///
    /// # Errors
    /// More than 63 hops.
    pub fn dr(hops: &[u8]) -> Result<Self, mad_core::wire::Error> {
        DrPath::from_hops(hops).map(Self::Dr)
    }
}

/// Default response timeout of SMP queries.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1000);
/// Default retries of SMP queries.
pub const DEFAULT_RETRIES: u32 = 3;

/// The send for an SMP `method` (Get or Set) of `attr` / `attr_mod` to
/// `target`, with `data` (at most 64 bytes) as the attribute of a Set and
/// `m_key`. The TID is filled in by the agent layer.
#[must_use]
pub fn request(
    target: &SmpTarget,
    method: Method,
    attr: AttributeId,
    attr_mod: u32,
    data: &[u8],
    m_key: u64,
) -> SendRequest {
    let (mut mad, dest) = match target {
        SmpTarget::Dr(path) => {
            let dest = if path.dr_slid == PERMISSIVE_LID {
                Address::smi(PERMISSIVE_LID)
            } else {
                Address::smi(path.dr_slid)
            };
            (path.build_request(method, attr, attr_mod, 0, m_key), dest)
        }
        SmpTarget::Lid(lid) => {
            let mut mad = [0u8; MAD_LEN];
            {
                let mut m = Mad::new_unchecked(&mut mad[..]);
                m.set_request(MgmtClass::SUBN_LID_ROUTED, 1, method, attr, attr_mod);
            }
            mad[24..32].copy_from_slice(&m_key.to_be_bytes());
            (mad, Address::smi(*lid))
        }
    };
    let n = data.len().min(SMP_DATA_LEN);
    mad[SMP_DATA_OFFSET..SMP_DATA_OFFSET + n].copy_from_slice(&data[..n]);
    SendRequest::new(mad, dest).expect_response(DEFAULT_TIMEOUT, DEFAULT_RETRIES)
}

/// The attribute a completed SMP query returned.
///
/// # Errors
/// Timeout, another failure, a non-zero status (with its meaning), or an
/// answer that is not a response for `attr` or does not parse.
pub fn parse<R: Repr>(c: &Completion, attr: AttributeId) -> Result<R, QueryError> {
    parse_at(c, attr.0, SMP_DATA_OFFSET)
}

/// Blocking SMP queries through a send-only QP0 agent.
#[derive(Debug)]
pub struct SmpClient {
    agent: Agent,
    /// Response timeout.
    pub timeout: Duration,
    /// Retries.
    pub retries: u32,
    /// M_Key to put in every SMP.
    pub m_key: u64,
}

blocking_client!(SmpClient, "smp-client", Qp::Qp0, "QP0", m_key: 0);

impl SmpClient {
    fn run<R: Repr>(
        &self,
        target: &SmpTarget,
        method: Method,
        attr: AttributeId,
        attr_mod: u32,
        data: &[u8],
    ) -> Result<R, QueryError> {
        let req = request(target, method, attr, attr_mod, data, self.m_key)
            .expect_response(self.timeout, self.retries);
        let c = self.agent.send_and_wait(req)?;
        parse(&c, attr)
    }

    /// Get of any SMP attribute.
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn get<R: Repr>(
        &self,
        target: &SmpTarget,
        attr: AttributeId,
        attr_mod: u32,
    ) -> Result<R, QueryError> {
        self.run(target, Method::GET, attr, attr_mod, &[])
    }

    /// Set of any SMP attribute; returns what the node answered.
    ///
    /// # Errors
    /// See [`QueryError`]; also when `value` cannot be emitted.
    pub fn set<R: Repr>(
        &self,
        target: &SmpTarget,
        attr: AttributeId,
        attr_mod: u32,
        value: &R,
    ) -> Result<R, QueryError> {
        let mut data = [0u8; SMP_DATA_LEN];
        value
            .emit(&mut data)
            .map_err(|e| QueryError::Malformed(format!("cannot emit the value: {e}")))?;
        self.run(target, Method::SET, attr, attr_mod, &data)
    }

    /// NodeInfo.
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn node_info(&self, target: &SmpTarget) -> Result<NodeInfo, QueryError> {
        self.get(target, AttributeId::NODE_INFO, 0)
    }

    /// NodeDescription.
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn node_description(&self, target: &SmpTarget) -> Result<NodeDescription, QueryError> {
        self.get(target, AttributeId::NODE_DESC, 0)
    }

    /// PortInfo of `port` (0: the port the SMP arrived on, or a switch's
    /// management port).
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn port_info(&self, target: &SmpTarget, port: u8) -> Result<PortInfo, QueryError> {
        self.get(target, AttributeId::PORT_INFO, u32::from(port))
    }

    /// SwitchInfo (switches only; a CA answers with status 0x001C or
    /// 0x000C).
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn switch_info(&self, target: &SmpTarget) -> Result<SwitchInfo, QueryError> {
        self.get(target, AttributeId::SWITCH_INFO, 0)
    }
}
