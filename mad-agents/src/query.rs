//! What the query clients return when a query fails, and the shared
//! response parsing.

use mad_core::wire::{MadStatus, MgmtClass, Repr};

use crate::types::{Completion, SendError, SendStatus};

/// Why a query gave no value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The request could not be sent.
    #[error("cannot send: {0}")]
    Send(#[from] SendError),
    /// No response within the timeout and retries.
    #[error("no response after {retries} retries (timeout)")]
    Timeout {
        /// Retries used.
        retries: u32,
    },
    /// The send ended otherwise (canceled, flushed, work-request error,
    /// RMPP abort).
    #[error("the request did not complete: {0}")]
    Failed(SendStatus),
    /// The responder answered with a non-zero MAD status.
    #[error("MAD status {status}")]
    Status {
        /// The status (for directed-route SMPs without the D bit).
        status: MadStatus,
        /// What it means.
        meaning: &'static str,
    },
    /// The answer is not what was asked for, or does not parse.
    #[error("malformed answer: {0}")]
    Malformed(String),
}

/// The response MAD of a completed query, checked for status and shape.
///
/// # Errors
/// See [`QueryError`].
pub fn response_bytes(c: &Completion, attr_id: u16) -> Result<&[u8], QueryError> {
    match c.status {
        SendStatus::Success => {}
        SendStatus::Timeout => return Err(QueryError::Timeout { retries: c.retries }),
        other => return Err(QueryError::Failed(other)),
    }
    let Some(r) = c.response.as_ref() else {
        return Err(QueryError::Malformed("no response MAD".into()));
    };
    let b = r.bytes();
    let m = r.mad();
    if m.raw_method() & 0x80 == 0 {
        return Err(QueryError::Malformed(format!(
            "method {:#04x} is not a response",
            m.raw_method()
        )));
    }
    let mut status = m.status();
    if m.mgmt_class() == MgmtClass::SUBN_DIRECTED_ROUTE {
        status = MadStatus(status.0 & mad_core::wire::smp::DR_STATUS_MASK);
    }
    if status != MadStatus::SUCCESS {
        return Err(QueryError::Status {
            status,
            meaning: status.describe(),
        });
    }
    if m.attr_id().0 != attr_id {
        return Err(QueryError::Malformed(format!(
            "attribute {:#06x} answered for {attr_id:#06x}",
            m.attr_id().0
        )));
    }
    Ok(b)
}

/// Parses the attribute at `offset` of a completed query's response.
///
/// # Errors
/// See [`QueryError`].
pub fn parse_at<R: Repr>(c: &Completion, attr_id: u16, offset: usize) -> Result<R, QueryError> {
    let b = response_bytes(c, attr_id)?;
    let data = b.get(offset..).ok_or_else(|| {
        QueryError::Malformed(format!("{} bytes end before the data at {offset}", b.len()))
    })?;
    R::parse(data).map_err(|e| QueryError::Malformed(e.to_string()))
}

/// `new` and `with_agent` of a blocking query client (a struct with
/// `agent`, `timeout` and `retries`, and the other fields given with the
/// value they start with): `new` registers a send-only agent named
/// `$name` on `$qp` (`$qp_name` in the docs).
macro_rules! blocking_client {
    ($client:ident, $name:literal, $qp:expr, $qp_name:literal $(, $field:ident: $value:expr)*) => {
        impl $client {
            #[doc = concat!("Registers a send-only ", $qp_name, " agent on `rt`.")]
            ///
            /// # Errors
            /// As [`Runtime::register_channel`].
            pub fn new(rt: &Runtime) -> Result<Self, RegisterError> {
                let (agent, _rx) = rt.register_channel(AgentSpec::send_only($name, $qp))?;
                Ok(Self::with_agent(agent))
            }

            #[doc = concat!("A client over an existing ", $qp_name, " agent.")]
            #[must_use]
            pub fn with_agent(agent: Agent) -> Self {
                Self {
                    agent,
                    timeout: DEFAULT_TIMEOUT,
                    retries: DEFAULT_RETRIES,
                    $($field: $value,)*
                }
            }

            /// The client's send-only agent, for requests the client has
            /// no method for (another GSI class, say): answers are
            /// matched to requests by TID, whatever their class.
            #[must_use]
            pub fn agent(&self) -> &Agent {
                &self.agent
            }
        }
    };
}
pub(crate) use blocking_client;
