//! PerfMgt queries: PortCounters, PortCountersExtended, and their reset
//! (Set with CounterSelect).
//!
//! As in [`crate::smp`], [`request`] and [`parse`] serve poll-style use;
//! [`PerfClient`] blocks on a [`crate::Runtime`] agent.

use std::time::Duration;

use mad_core::transport::{Address, Qp};
use mad_core::wire::attr::{ClassPortInfo, PortCounters, PortCountersExt};
use mad_core::wire::perf::{PERF_CLASS_VERSION, PERF_DATA_LEN, PERF_DATA_OFFSET};
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass, Repr, MAD_LEN};

use crate::query::{blocking_client, parse_at, QueryError};
use crate::runtime::{Agent, Runtime};
use crate::spec::AgentSpec;
use crate::types::{Completion, RegisterError, SendRequest};

/// Default response timeout of PerfMgt queries.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1000);
/// Default retries of PerfMgt queries.
pub const DEFAULT_RETRIES: u32 = 3;

/// CounterSelect of PortCounters that clears every counter (perfquery
/// `-R`): the 16 select bits.
pub const SELECT_ALL: u16 = 0xFFFF;

/// The send for a PerfMgt `method` of `attr` to the PMA at `lid`, with
/// `data` as the attribute (PortSelect, CounterSelect, ...).
#[must_use]
pub fn request(
    lid: u16,
    method: Method,
    attr: AttributeId,
    attr_mod: u32,
    data: &[u8],
) -> SendRequest {
    let mut mad = [0u8; MAD_LEN];
    {
        let mut m = Mad::new_unchecked(&mut mad[..]);
        m.set_request(
            MgmtClass::PERF_MGT,
            PERF_CLASS_VERSION,
            method,
            attr,
            attr_mod,
        );
    }
    let n = data.len().min(PERF_DATA_LEN);
    mad[PERF_DATA_OFFSET..PERF_DATA_OFFSET + n].copy_from_slice(&data[..n]);
    SendRequest::new(mad, Address::gsi(lid)).expect_response(DEFAULT_TIMEOUT, DEFAULT_RETRIES)
}

/// A Get of PortCounters of `port` at `lid`.
#[must_use]
pub fn port_counters_request(lid: u16, port: u8) -> SendRequest {
    request(
        lid,
        Method::GET,
        AttributeId::PM_PORT_COUNTERS,
        0,
        &[0, port],
    )
}

/// The attribute a completed PerfMgt query returned.
///
/// # Errors
/// Timeout, another failure, a non-zero status, or a malformed answer.
pub fn parse<R: Repr>(c: &Completion, attr: AttributeId) -> Result<R, QueryError> {
    parse_at(c, attr.0, PERF_DATA_OFFSET)
}

/// A blocking PerfMgt request through `agent`: `method` of `attr` with
/// `data` as the attribute, to the PMA at `lid`, answered within
/// `timeout` with `retries` resends; the attribute of the answer.
///
/// # Errors
/// See [`QueryError`].
pub fn rpc<R: Repr>(
    agent: &Agent,
    lid: u16,
    method: Method,
    attr: AttributeId,
    data: &[u8],
    timeout: Duration,
    retries: u32,
) -> Result<R, QueryError> {
    let req = request(lid, method, attr, 0, data).expect_response(timeout, retries);
    let c = agent.send_and_wait(req)?;
    parse(&c, attr)
}

/// Blocking PerfMgt queries through a send-only QP1 agent.
#[derive(Debug)]
pub struct PerfClient {
    agent: Agent,
    /// Response timeout.
    pub timeout: Duration,
    /// Retries.
    pub retries: u32,
}

blocking_client!(PerfClient, "perf-client", Qp::Qp1, "QP1");

impl PerfClient {
    /// A PerfMgt request (`method` of `attr` with `data` as the
    /// attribute, to the PMA at `lid`) with the client's timeout and
    /// retries; the attribute of the answer.
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn rpc<R: Repr>(
        &self,
        lid: u16,
        method: Method,
        attr: AttributeId,
        data: &[u8],
    ) -> Result<R, QueryError> {
        rpc(
            &self.agent,
            lid,
            method,
            attr,
            data,
            self.timeout,
            self.retries,
        )
    }

    /// The PMA's ClassPortInfo (its CapabilityMask says which counters it
    /// supports).
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn class_port_info(&self, lid: u16) -> Result<ClassPortInfo, QueryError> {
        self.rpc(lid, Method::GET, AttributeId::CLASS_PORT_INFO, &[])
    }

    /// PortCounters of `port` (0xFF: all ports, if the PMA supports it).
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn port_counters(&self, lid: u16, port: u8) -> Result<PortCounters, QueryError> {
        self.rpc(lid, Method::GET, AttributeId::PM_PORT_COUNTERS, &[0, port])
    }

    /// PortCountersExtended of `port`.
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn port_counters_ext(&self, lid: u16, port: u8) -> Result<PortCountersExt, QueryError> {
        self.rpc(
            lid,
            Method::GET,
            AttributeId::PM_PORT_COUNTERS_EXT,
            &[0, port],
        )
    }

    /// Clears the PortCounters of `port` chosen by `counter_select` (Set
    /// with CounterSelect); returns the counters the PMA answered with.
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn reset_counters(
        &self,
        lid: u16,
        port: u8,
        counter_select: u16,
    ) -> Result<PortCounters, QueryError> {
        self.clear(lid, port, AttributeId::PM_PORT_COUNTERS, counter_select)
    }

    /// Clears the PortCountersExtended of `port` chosen by
    /// `counter_select` (bytes 2–3).
    ///
    /// # Errors
    /// See [`QueryError`].
    pub fn reset_counters_ext(
        &self,
        lid: u16,
        port: u8,
        counter_select: u16,
    ) -> Result<PortCountersExt, QueryError> {
        self.clear(lid, port, AttributeId::PM_PORT_COUNTERS_EXT, counter_select)
    }

    /// A Set of `attr` (PortCounters or PortCountersExtended) that clears
    /// the counters of `port` chosen by `counter_select` (bytes 2–3); the
    /// attribute the PMA answered with.
    fn clear<R: Repr>(
        &self,
        lid: u16,
        port: u8,
        attr: AttributeId,
        counter_select: u16,
    ) -> Result<R, QueryError> {
        let [hi, lo] = counter_select.to_be_bytes();
        self.rpc(lid, Method::SET, attr, &[0, port, hi, lo])
    }
}
