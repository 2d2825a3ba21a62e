//! Subnet administration (SA, class 0x03) over the agent layer: a client
//! ([`client::SaClient`]) and a responder ([`responder::SaResponder`]).
//!
//! - The **client** asks the SA for records: `Get` (exactly one match) and
//!   `GetTable` (every match, over RMPP) of any record type with a template
//!   and a ComponentMask, convenience queries (paths between two LIDs or
//!   GIDs, a node by LID, ...), the SA's ClassPortInfo, and InformInfo
//!   subscriptions whose Reports (Notices) it acknowledges with ReportResp
//!   and hands to the caller. It finds the SA at the port's master SM LID
//!   and SL and follows them when the port reports a LID, SM or port
//!   change; it re-sends its subscriptions on SM change, client
//!   reregister and port active (AGENTS.md §8).
//! - The **responder** answers Get / GetTable / Set / Delete from a
//!   [`responder::RecordSource`] the way opensm's SA does (MAD.md §7):
//!   component-mask matching ([`components`]), `NO_RECORDS` /
//!   `TOO_MANY_RECORDS` for a Get, an empty GetTable as success with
//!   AttributeOffset 0, tables of any size over RMPP, SM_Key 0 in every
//!   response.
//!
//! Both run on a [`crate::Runtime`]; the SA status codes are mapped to
//! [`SaError`] variants by [`SaError::from_status`].
//!
//! ```
//! use std::sync::Arc;
//! use mad_agents::sa::{
//!     RecordQuery, RecordSource, SaClient, SaClientConfig, SaError, SaResponder,
//!     SaResponderConfig,
//! };
//! use mad_agents::{EngineConfig, Runtime};
//! use mad_core::transport::loopback::Loopback;
//! use mad_core::wire::sa_records::{NodeRecord, SaRecord};
//! use mad_core::wire::Repr;
//!
//! /// Serves a NodeRecord for each of LIDs 1..=4 and nothing else.
//! struct Nodes;
//! impl RecordSource for Nodes {
//!     fn records(&self, q: &RecordQuery<'_>) -> Option<Vec<Vec<u8>>> {
//!         if q.attr_id != NodeRecord::ATTR_ID {
//!             return Some(Vec::new());
//!         }
//!         let all = (1..=4u16).map(|lid| NodeRecord { lid, ..NodeRecord::default() });
//!         Some(all.filter_map(|r| r.to_vec().ok()).collect())
//!     }
//! }
//!
//! // An SM port at LID 1 and a client port at LID 2, back to back.
//! let (a, b) = Loopback::pair(Loopback::attrs("host", 1, 2), Loopback::attrs("sm", 1, 1), 64);
//! let sm = Runtime::start(b, EngineConfig::default())?;
//! let _sa = SaResponder::start(&sm, Arc::new(Nodes), SaResponderConfig::default())?;
//! let host = Runtime::start(a, EngineConfig::default())?;
//! let client = SaClient::new(&host, SaClientConfig::default())?;
//! assert_eq!(client.all::<NodeRecord>()?.records.len(), 4);
//! assert_eq!(client.node_record(3)?.lid, 3);
//! assert!(matches!(client.node_record(9), Err(SaError::NoRecords)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod client;
pub mod components;
mod multipath;
pub mod responder;
mod source;
pub mod subscriptions;
mod trace;

#[cfg(test)]
mod tests;

pub use client::{
    InformSubscription, Report, SaClient, SaClientConfig, SaClientStats, Table, TableMode,
};
pub use components::{component_layout, record_matches, ComponentLayout};
pub use responder::{
    inform_selects, RecordQuery, RecordSource, SaResponder, SaResponderConfig, SaResponderStats,
    StaticRecords,
};
pub use subscriptions::{Refused, Subscribed, Subscriber, SubscriptionLimits, Subscriptions};

use mad_core::wire::rmpp::RmppStatus;
use mad_core::wire::sa::{SaHeader, SA_CLASS_VERSION};
use mad_core::wire::{AttributeId, Mad, MadStatus, Method, MgmtClass, Repr, SA_DATA_OFFSET};

use crate::{RegisterError, SendError, SendStatus};

/// `m` locked; a poisoned lock is taken over (the SA state stays
/// consistent between statements, so a panicked holder left it usable).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The name of an SA status value (MAD.md §3): the common "invalid field"
/// codes and the SA class codes (`ERR_NO_RECORDS`, ...).
#[must_use]
pub fn status_name(status: u16) -> &'static str {
    match status >> 8 {
        1 => return "ERR_NO_RESOURCES",
        2 => return "ERR_REQ_INVALID",
        3 => return "ERR_NO_RECORDS",
        4 => return "ERR_TOO_MANY_RECORDS",
        5 => return "ERR_REQ_INVALID_GID",
        6 => return "ERR_REQ_INSUFFICIENT_COMPONENTS",
        7 => return "ERR_REQ_DENIED",
        8 => return "ERR_PRIORITY_SUGGESTED",
        0 => {}
        _ => return "unknown SA status",
    }
    MadStatus(status).describe()
}

/// Why an SA query, subscription or response failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaError {
    /// Get found nothing (status 0x0300, `ERR_NO_RECORDS`).
    #[error("the SA has no record matching the query (status 0x0300 ERR_NO_RECORDS)")]
    NoRecords,
    /// Get matched more than one record (status 0x0400,
    /// `ERR_TOO_MANY_RECORDS`): narrow the ComponentMask or use GetTable.
    #[error("more than one record matches a Get (status 0x0400 ERR_TOO_MANY_RECORDS); narrow the component mask or use GetTable")]
    TooManyRecords,
    /// The SA refused the request as invalid (0x0200, `ERR_REQ_INVALID`).
    #[error("the SA refused the request as invalid (status 0x0200 ERR_REQ_INVALID)")]
    RequestInvalid,
    /// The request lacks components the SA needs (0x0600).
    #[error("the request lacks components the SA requires (status 0x0600 ERR_REQ_INSUFFICIENT_COMPONENTS)")]
    InsufficientComponents,
    /// The SA denied the request (0x0700, e.g. a bad SM_Key).
    #[error("the SA denied the request (status 0x0700 ERR_REQ_DENIED)")]
    Denied,
    /// Any other non-zero status.
    #[error("the SA answered with status {status:#06x} ({name})")]
    Status {
        /// The MAD status word.
        status: u16,
        /// Its name ([`status_name`]).
        name: &'static str,
    },
    /// No answer within the timeout and retries.
    #[error("no answer from the SA at LID {lid} after {attempts} attempt(s)")]
    Timeout {
        /// Where the request went.
        lid: u16,
        /// Attempts made.
        attempts: u32,
    },
    /// The port has no SM (master SM LID 0): it is not configured yet.
    #[error("the port knows no SM (master SM LID is 0); is the subnet up?")]
    NoSm,
    /// The transfer failed (RMPP abort, work-request error, flush, ...).
    #[error("the SA transaction failed: {0}")]
    Transfer(SendStatus),
    /// The response is not a usable SA answer.
    #[error("malformed SA response: {0}")]
    Malformed(String),
    /// The answer's header fields do not fit together or do not fit the
    /// request: a method other than the one that answers the request, a
    /// NO_RECORDS status with records attached, an AttributeOffset of 0
    /// with data present, data that is not a whole number of records.
    #[error("inconsistent SA answer: {field}: {detail}")]
    Inconsistent {
        /// The header field at fault: `"Method"`, `"Status"`,
        /// `"AttributeOffset"` or `"PayloadLength"`.
        field: &'static str,
        /// What is wrong with it.
        detail: String,
    },
    /// The request could not be sent.
    #[error(transparent)]
    Send(#[from] SendError),
    /// An agent could not be registered.
    #[error(transparent)]
    Register(#[from] RegisterError),
    /// The port's device had a fatal error (or was removed): the client
    /// heard `DeviceFatal` and sends nothing more; open a new port.
    #[error("the port is dead after a device-fatal error (device removed?); no SA request can be sent, open the port again")]
    PortDead,
}

impl SaError {
    /// The error for a non-zero SA status word.
    #[must_use]
    pub fn from_status(status: u16) -> Self {
        match status {
            0x0200 => Self::RequestInvalid,
            0x0300 => Self::NoRecords,
            0x0400 => Self::TooManyRecords,
            0x0600 => Self::InsufficientComponents,
            0x0700 => Self::Denied,
            s => Self::Status {
                status: s,
                name: status_name(s),
            },
        }
    }

    /// The SA status behind this error, if it is one.
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::NoRecords => Some(0x0300),
            Self::TooManyRecords => Some(0x0400),
            Self::RequestInvalid => Some(0x0200),
            Self::InsufficientComponents => Some(0x0600),
            Self::Denied => Some(0x0700),
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for an RMPP abort with status `s`.
    #[must_use]
    pub fn is_rmpp_abort(&self, s: RmppStatus) -> bool {
        matches!(self, Self::Transfer(SendStatus::RmppAbort(x)) if *x == s)
    }
}

/// Builds a 256-byte SA MAD: version 2, `method` (request form),
/// `attr` / `attr_mod`, SM_Key 0, `comp_mask`, and `record` at byte 56
/// (truncated to the 200 data bytes of one MAD). The TID is left 0 for
/// the agent layer to fill in.
#[must_use]
pub fn build_request(
    method: Method,
    attr: AttributeId,
    attr_mod: u32,
    comp_mask: u64,
    record: &[u8],
) -> Vec<u8> {
    let mut mad = vec![0u8; mad_core::wire::MAD_LEN];
    {
        let mut m = Mad::new_unchecked(&mut mad[..]);
        m.set_request(
            MgmtClass::SUBN_ADM,
            SA_CLASS_VERSION,
            method,
            attr,
            attr_mod,
        );
    }
    let h = SaHeader {
        comp_mask,
        ..SaHeader::default()
    };
    // The header fits by construction.
    let _ = h.emit(&mut mad[mad_core::wire::sa::SA_HEADER_OFFSET..]);
    let n = record.len().min(mad.len() - SA_DATA_OFFSET);
    mad[SA_DATA_OFFSET..SA_DATA_OFFSET + n].copy_from_slice(&record[..n]);
    mad
}
