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
//!   deregistration. Sans-IO: it holds the port's state and no transport,
//!   never performs I/O of its own and never reads a clock; the calls
//!   that post or pump take the transport's side
//!   ([`mad_core::port::Io`]) and `now`.
//! - [`Stack`]: an engine and the driver of its transport together, for
//!   whoever drives one by hand.
//! - [`Runtime`]: the same engine driven by a mio event loop on its own
//!   thread, with agents usable from any thread, completions delivered by
//!   callback or channel, and blocking `send_and_wait`.
//! - [`smp`] and [`perf`]: SMP and PerfMgt query clients.
//! - [`tid`]: the transaction ID layout.
//!
//! # Choices worth knowing
//!
//! - **TIDs** ([`tid`]): bits 47..32 carry the agent's id on the port and
//!   bits 31..0 the caller's or an allocated value; bits 63..48 are left
//!   zero and ignored when matching, because ibsim overwrites them (and
//!   does not restore them) and the kernel under umad overwrites 63..32
//!   (the umad transport restores those). A response matches a send by
//!   the low 48 bits and the class.
//! - **Completions**: exactly one [`AgentEvent::SendDone`] per accepted
//!   send, with one [`SendStatus`]; a send whose first work request the
//!   port refuses is an error of [`Engine::send`] and never completes.
//! - **Flow control** ([`engine`](engine#flow-control)): requests awaiting
//!   a response beyond [`EngineConfig::max_unanswered_per_agent`] /
//!   [`EngineConfig::max_unanswered_per_port`] (256 per port by default
//!   over a transport with a file descriptor) wait in a backlog and go out
//!   as earlier ones are answered, like the 2025 kernel's solicited flow
//!   control.
//! - **Response matching** ([`engine`](engine#response-matching)): TID,
//!   class and source (the LID the request went to, or the GID with a
//!   GRH; directed-route SMPs exempt); a response from elsewhere is
//!   counted and dropped.
//! - **Deregistration** from inside a callback: see
//!   [`runtime`](runtime#deregistration) — it drives the engine itself and,
//!   for the agent whose callback is running, returns the remaining
//!   completions instead of calling the callback again.
//!
//! # Example (poll-style, virtual clock)
//!
//! ```
//! use mad_agents::{AgentEvent, AgentSpec, EngineConfig, SendRequest, SendStatus, Stack};
//! use mad_core::transport::loopback::Loopback;
//! use mad_core::transport::{Address, Qp, Received};
//! use std::time::{Duration, Instant};
//!
//! // A far side that answers every request with GetResp.
//! let lb = Loopback::new(Loopback::attrs("lb", 1, 5), 64).with_responder(Box::new(
//!     |qp, mad: &[u8], _dest: &Address| {
//!         let mut r = mad.to_vec();
//!         r[3] = 0x81;
//!         vec![Received { qp, src: Address::gsi(7), mad: r.into() }]
//!     },
//! ));
//! let mut engine = Stack::new(lb, EngineConfig::default());
//! let agent = engine.register(AgentSpec::send_only("perf", Qp::Qp1)).unwrap();
//! let mut get = vec![0u8; 256];
//! get[..4].copy_from_slice(&[1, 0x04, 1, 0x01]); // PerfMgt Get
//! let now = Instant::now();
//! let send = engine
//!     .send(agent, SendRequest::new(get, Address::gsi(7)).expect_response(Duration::from_millis(100), 3), now)
//!     .unwrap();
//! engine.poll(now);
//! match engine.poll_event() {
//!     Some((a, AgentEvent::SendDone(c))) => {
//!         assert_eq!((a, c.send, c.status), (agent, send, SendStatus::Success));
//!         assert_eq!(c.response.unwrap().tid(), c.tid);
//!     }
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(engine.outstanding(), 0);
//! ```
#![forbid(unsafe_code)]

pub mod engine;
pub mod perf;
pub mod query;
pub mod runtime;
pub mod sa;
pub mod smp;
pub mod spec;
pub mod stack;
pub mod tid;
mod timers;
mod types;

pub use engine::{AgentState, Engine};
/// The cause of a refused send ([`SendError::BadSend`]), from mad-core.
pub use mad_core::transport::Unsendable;
pub use query::QueryError;
pub use runtime::{
    Agent, AgentReceiver, AgentRef, PortAgent, PortWatch, ResetHold, ResetHoldStats, ResetPhase,
    ResetWork, Runtime, RuntimeStats, SendHandle, SharedPort, Wakeup,
};
pub use spec::{AgentSpec, MethodMask, RequestFilter};
pub use stack::Stack;
pub use types::{
    AgentEvent, AgentId, AgentStats, Completion, EngineConfig, EngineStats, FlowLimit, Message,
    RegisterError, SendError, SendId, SendRequest, SendStatus, TidChoice, DEFAULT_PORT_UNANSWERED,
};
