//! Shared pieces of the mad-agents integration tests that are about the
//! engine and the runtime (draining events, a Loopback wrapper with a
//! chosen file descriptor, bounded waits); the far sides and MAD builders
//! are the kit's (`mad_testkit::far`, `MadBuilder`), re-exported here
//! under the names these tests use.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Mutex};

use mad_agents::runtime::Agent;
use mad_agents::{AgentEvent, AgentId, AgentSpec, Completion, Runtime, SendRequest, Stack};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Received, Transport};
use mad_core::wire::{AttributeId, Method, MgmtClass};
use mad_testkit::{MadBuilder, Wrapped};

/// What the far side saw: (QP, MAD, destination).
pub type Sent = mad_testkit::far::Sent;

/// A Loopback whose far side records every MAD it is sent and answers
/// nothing (tests answer with `push_recv`).
pub fn recording(lid: u16, depth: usize) -> (Loopback, Sent) {
    mad_testkit::far::recording("lb0", lid, depth)
}

/// A Loopback (LID 5) whose far side answers every request with a
/// GetResp (same TID) from the LID it was sent to, until `silent` is set.
pub fn answering(silent: Arc<AtomicBool>) -> Loopback {
    mad_testkit::far::answering("lb0", 5, 64, Some(silent))
}

/// A PerfMgt Get(PortCounters).
pub fn perf_get() -> Vec<u8> {
    MadBuilder::new(
        MgmtClass::PERF_MGT,
        1,
        Method::GET,
        AttributeId::PM_PORT_COUNTERS,
    )
    .to_vec()
}

/// A PerfMgt Get(PortCounters) to LID 7 that expects a response within
/// `timeout`, retried `retries` times.
pub fn perf_request(timeout: std::time::Duration, retries: u32) -> SendRequest {
    SendRequest::new(perf_get(), Address::gsi(7)).expect_response(timeout, retries)
}

/// An agent spec that receives PerfMgt (version 1) requests of `methods`.
pub fn perf_requests(name: &str, methods: &[Method]) -> AgentSpec {
    AgentSpec::requests(name, MgmtClass::PERF_MGT, 1, methods)
}

/// `mad` received on QP1 from LID `lid`'s QP1.
pub fn gsi_from(lid: u16, mad: impl Into<mad_core::MadBuf>) -> Received {
    mad_testkit::far::gsi_from(lid, mad)
}

/// The default engine configuration with `rmpp_receiver` as its RMPP
/// receiver's.
pub fn with_receiver(rmpp_receiver: mad_rmpp::ReceiverConfig) -> mad_agents::EngineConfig {
    mad_agents::EngineConfig {
        rmpp_receiver,
        ..mad_agents::EngineConfig::default()
    }
}

/// The TID of a MAD.
pub fn tid_of(mad: &[u8]) -> u64 {
    mad_testkit::header::of(mad).tid
}

/// The GetResp to `mad`, received on `qp` from `src`.
pub fn answer(qp: Qp, mad: &[u8], src: Address) -> Received {
    mad_testkit::far::answer(qp, mad, src)
}

/// Hands `r` to the engine at `now` and polls it then.
pub fn recv_and_poll<T: Transport>(e: &mut Stack<T>, now: std::time::Instant, r: Received) {
    e.handle_recv(now, r).unwrap();
    e.poll(now);
}

/// Every event handed out so far.
pub fn drain<T: Transport>(e: &mut Stack<T>) -> Vec<(AgentId, AgentEvent)> {
    std::iter::from_fn(|| e.poll_event()).collect()
}

/// The completions among `evs`.
pub fn completions(evs: &[(AgentId, AgentEvent)]) -> Vec<Completion> {
    evs.iter()
        .filter_map(|(_, e)| match e {
            AgentEvent::SendDone(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// Which file descriptor a [`WithFd`] hands out: none (the runtime
/// must tick), a socket a [`Doorbell`] makes readable (drained by
/// `poll_recv`), or a number that is no open descriptor (epoll refuses it
/// with EBADF, as it refuses libumad2sim's fake umad descriptors).
pub use mad_testkit::wrap::Fd;

/// The test's end of a [`Fd::Real`] descriptor.
pub struct Doorbell(UnixStream);

impl Doorbell {
    /// Makes the transport's descriptor readable.
    pub fn ring(&mut self) {
        self.0.write_all(&[1]).unwrap();
    }
}

/// A socket pair: the transport's end and the test's doorbell.
pub fn doorbell() -> (Fd, Doorbell) {
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    (Fd::Real(a), Doorbell(b))
}

/// A Loopback with a chosen file descriptor, and an inbox (`hooks.inbox`)
/// other threads fill with MADs to receive: the kit's one wrapper.
pub type WithFd = Wrapped<Loopback, mad_testkit::WithFd>;

/// `inner` with descriptor `fd`.
pub fn with_fd(inner: Loopback, fd: Fd) -> WithFd {
    Wrapped::new(inner, mad_testkit::WithFd::new(fd))
}

/// Registers a send-only agent "a" on `rt` whose first event deregisters
/// `b` from inside a's callback, and sends `first` from a to bring that
/// event. Returns a (keep it alive) and where the number of completions
/// `b.deregister()` returned arrives.
pub fn deregister_in_a_callback(
    rt: &Runtime,
    b: Agent,
    first: SendRequest,
) -> (Agent, mpsc::Receiver<usize>) {
    let slot = Mutex::new(Some(b));
    let (done_tx, done) = mpsc::channel();
    let a = rt
        .register(AgentSpec::send_only("a", Qp::Qp1), move |_ev| {
            if let Some(b) = slot.lock().unwrap().take() {
                // b's callback runs nested in here, for each of its
                // flushed sends.
                let left = b.deregister();
                done_tx.send(left.len()).unwrap();
            }
        })
        .unwrap();
    a.send(first).unwrap();
    (a, done)
}

/// How long a call that must return in bounded time may take in a test.
pub const BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `f` on its own thread; `None` if it has not returned within
/// [`BOUND`] (the thread is then left behind, blocked).
pub fn within<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(BOUND).ok()
}
