//! # mad-agents
//!
//! The agent layer of madstack: what the Linux kernel's `ib_mad` does for
//! its clients, in user space.
//!
//! - [`Engine`]: one port's agents — registration with the kernel's
//!   checks and conflict rules, dispatch of requests by class / version /
//!   method (and OUI) and of responses by TID, reference-counted send
//!   tracking with exactly-once completion, per-agent timeout lists with
//!   retries and backoff, RMPP for agents that ask for it, synchronous
//!   deregistration. Sans-IO: it never performs I/O of its own and never
//!   reads a clock; you pass `now` in.
//! - [`Runtime`]: the same engine driven by a mio event loop on its own
//!   thread, with agents usable from any thread, completions delivered by
//!   callback or channel, and blocking `send_and_wait`.
//! - [`smp`] and [`perf`]: SMP and PerfMgt query clients.
//! - [`tid`]: the transaction ID layout.
#![forbid(unsafe_code)]

pub mod engine;
pub mod perf;
pub mod query;
pub mod runtime;
pub mod sa;
pub mod smp;
pub mod spec;
pub mod tid;
mod types;

pub use engine::{AgentState, Engine};
pub use query::QueryError;
pub use runtime::{Agent, AgentReceiver, AgentRef, Runtime, RuntimeStats, SendHandle};
pub use spec::{AgentSpec, MethodMask, RequestFilter};
pub use types::{
    AgentEvent, AgentId, AgentStats, Completion, EngineConfig, EngineStats, Message, RegisterError,
    SendError, SendId, SendRequest, SendStatus, TidChoice,
};
