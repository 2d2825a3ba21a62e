//! The stack on the simulated fabric: mad-agents' runtime (its mio loop on
//! the SimPort's notification fd, the port layer, agents, TIDs, timeouts)
//! drives SMP and PerfMgt queries through a `SimPort` as it would through
//! umad or ibsim.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::*;
use mad_agents::perf::PerfClient;
use mad_agents::smp::{SmpClient, SmpTarget};
use mad_agents::{EngineConfig, QueryError, Runtime};
use mad_core::transport::Transport;
use mad_core::wire::attr::{NodeType, SmInfo};
use mad_core::wire::AttributeId;

#[test]
fn the_agent_runtime_queries_smas_and_pmas_through_a_simport() {
    let (fabric, mut t) = net();
    configure_net(&mut t);
    let _ = drain(&mut t);
    completions_ok(&mut t);
    assert!(t.raw_fd().is_some());
    let rt = Runtime::start(t, EngineConfig::default()).unwrap();
    let smp = SmpClient::new(&rt).unwrap();
    let ni = smp.node_info(&SmpTarget::dr(TO_S2).unwrap()).unwrap();
    assert_eq!(
        (ni.node_guid, ni.node_type, ni.num_ports),
        (0x20_0001, NodeType::SWITCH, 8)
    );
    let nd = smp.node_description(&SmpTarget::Lid(2)).unwrap();
    assert_eq!(nd.text(), "Hca2");
    let pi = smp.port_info(&SmpTarget::Lid(4), 3).unwrap();
    // LID 4 is Switch2, reached through Switch1's port 3 into its port 3.
    assert_eq!((pi.local_port_num, pi.port_state.0), (3, 4));
    let perf = PerfClient::new(&rt).unwrap();
    let c = perf.port_counters(3, 3).unwrap();
    assert!(c.port_xmit_pkts > 0);
    // A path nobody answers times out through the agent layer.
    let mut lost = SmpClient::new(&rt).unwrap();
    lost.timeout = Duration::from_millis(20);
    lost.retries = 1;
    let r = lost.node_info(&SmpTarget::dr(&[1, 7]).unwrap());
    assert!(matches!(r, Err(QueryError::Timeout { .. })), "{r:?}");
    // SMInfo where no SM runs: the "unsupported" status reaches the caller.
    let r = smp.get::<SmInfo>(&SmpTarget::Lid(4), AttributeId::SM_INFO, 0);
    assert!(
        matches!(&r, Err(QueryError::Status { status, .. }) if status.0 == 0x0C),
        "{r:?}"
    );
    drop(rt);
    assert!(fabric.stats().to_sma > 20);
}
