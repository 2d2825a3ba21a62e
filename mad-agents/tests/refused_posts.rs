//! Posts the port refuses after a send was accepted (issue 28 item 1:
//! every post of the engine goes through its queue of work requests and
//! every refusal through one place): the send completes exactly once with
//! the port's error, and each refusal is counted.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mad_agents::{AgentEvent, AgentSpec, EngineConfig, SendRequest, SendStatus, Stack};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, TransportError, WcStatus, WrId};
use mad_core::wire::{AttributeId, Method, MgmtClass};
use mad_testkit::{Hooks, MadBuilder, Wrapped};

/// Refuses every post (an I/O error, not a lack of room) while set.
struct Refuse(Arc<AtomicBool>);

impl Hooks for Refuse {
    fn send(&mut self, _: Qp, _: &[u8], _: &Address) -> Option<Result<WrId, TransportError>> {
        self.0.load(Ordering::SeqCst).then(|| {
            Err(TransportError::Io {
                context: "umad_send on lb0:1".into(),
                source: std::io::Error::from_raw_os_error(5), // EIO
            })
        })
    }
}

#[test]
fn a_retry_the_port_refuses_fails_the_send_once_with_the_ports_error() {
    let refuse = Arc::new(AtomicBool::new(false));
    let t = Wrapped::new(
        Loopback::new(Loopback::attrs("lb0", 1, 5), 16),
        Refuse(refuse.clone()),
    );
    let mut e = Stack::new(t, EngineConfig::default());
    let a = e.register(AgentSpec::send_only("a", Qp::Qp1)).unwrap();
    let get = MadBuilder::new(MgmtClass::PERF_MGT, 1, Method::GET, AttributeId(0x12)).to_vec();
    let timeout = Duration::from_millis(10);
    let t0 = Instant::now();
    let s = e
        .send(
            a,
            SendRequest::new(get, Address::gsi(7)).expect_response(timeout, 2),
            t0,
        )
        .unwrap();
    // The first post goes out; nobody answers.
    e.poll(t0);
    assert_eq!(e.stats().posted, 1);
    refuse.store(true, Ordering::SeqCst);
    let mut done = Vec::new();
    for i in 1..=10u32 {
        e.poll(t0 + i * timeout);
        while let Some((_, ev)) = e.poll_event() {
            if let AgentEvent::SendDone(c) = ev {
                done.push(c);
            }
        }
    }
    assert_eq!(done.len(), 1, "completes exactly once: {done:?}");
    assert_eq!(done[0].send, s);
    assert_eq!(done[0].status, SendStatus::WcError(WcStatus::LocQpOpErr));
    assert_eq!(done[0].retries, 1, "the refused retry was its last");
    assert_eq!(e.stats().post_failures, 1);
    assert_eq!(e.agent_stats(a).unwrap().post_failures, 1);
    assert_eq!(e.stats().posted, 1);
    assert_eq!(e.stats().refused_moves, 0);
    assert_eq!(e.outstanding(), 0);
}
