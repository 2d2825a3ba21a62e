//! The port's overflow bound reaches agents (issue 13): a send the port
//! refuses for a full overflow queue is an error at once, naming the
//! limit, and nothing of it stays behind.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use mad_agents::{AgentSpec, EngineConfig, SendError, SendRequest, Stack};
use mad_core::port::{PortConfig, PortError};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Address, Qp, Transport};

#[test]
fn a_send_past_the_overflow_limit_fails_with_overflow_full_and_leaves_nothing_outstanding() {
    let mut lb = Loopback::new(Loopback::attrs("lb0", 1, 5), 2);
    lb.set_stalled(true);
    let port = PortConfig {
        overflow_limit: 3,
        ..PortConfig::default()
    };
    let mut e = Stack::with_port_config(
        Box::new(lb) as Box<dyn Transport>,
        port,
        EngineConfig::default(),
    );
    let a = e.register(AgentSpec::send_only("a", Qp::Qp1)).unwrap();
    let mut mad = vec![0u8; 256];
    mad_testkit::header::edit(&mut mad, |h| {
        h.base_version = 1;
        h.mgmt_class = mad_core::wire::MgmtClass::PERF_MGT;
        h.class_version = 1;
        h.method = mad_core::wire::Method::GET;
    });
    let now = Instant::now();
    for _ in 0..5 {
        e.send(a, SendRequest::new(mad.clone(), Address::gsi(7)), now)
            .unwrap();
    }
    let err = e
        .send(a, SendRequest::new(mad, Address::gsi(7)), now)
        .unwrap_err();
    assert!(
        matches!(
            err,
            SendError::Port(PortError::OverflowFull {
                qp: Qp::Qp1,
                limit: 3
            })
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("overflow queue"), "{err}");
    assert_eq!(e.agent_outstanding(a), 5);
    assert_eq!(e.port().stats().overflow_refused, 1);
}
