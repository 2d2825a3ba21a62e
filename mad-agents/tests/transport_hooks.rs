//! The engine asks its transport for the requests its agents register for
//! (the umad transport turns that into kernel agents), and refuses the
//! registration when the layer below refuses.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use mad_agents::{AgentSpec, Engine, EngineConfig, RegisterError};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::{Qp, Transport, TransportError};
use mad_core::wire::{Method, MgmtClass};

type Calls = Arc<Mutex<Vec<(MgmtClass, u8, u128, Option<[u8; 3]>)>>>;

/// A Loopback that records `register_requests` and can refuse it.
struct Recording {
    inner: Loopback,
    calls: Calls,
    refuse: bool,
}

mad_core::transport_layer!(Recording, inner: Loopback);

impl Transport for Recording {
    fn register_requests(
        &mut self,
        class: MgmtClass,
        class_version: u8,
        methods: u128,
        oui: Option<[u8; 3]>,
    ) -> Result<(), TransportError> {
        if self.refuse {
            return Err(TransportError::Open("method 1 already in use".into()));
        }
        self.calls
            .lock()
            .unwrap()
            .push((class, class_version, methods, oui));
        Ok(())
    }
    mad_core::forward_transport!(
        port_attrs,
        refresh_port_attrs,
        send_queue_depth,
        post_send,
        poll_send_completions,
        poll_recv,
        poll_event,
        qp_state,
        modify_qp,
        recreate_queues,
        raw_fd
    );
}

fn engine(refuse: bool) -> (Engine<Recording>, Calls) {
    let calls = Calls::default();
    let t = Recording {
        inner: Loopback::new(Loopback::attrs("r", 1, 1), 64),
        calls: calls.clone(),
        refuse,
    };
    (Engine::new(t, EngineConfig::default()), calls)
}

#[test]
fn registering_for_requests_asks_the_transport_for_them() {
    let (mut e, calls) = engine(false);
    e.register(AgentSpec::send_only("client", Qp::Qp1)).unwrap();
    assert!(
        calls.lock().unwrap().is_empty(),
        "send-only agents ask nothing"
    );
    e.register(AgentSpec::requests(
        "pma",
        MgmtClass::PERF_MGT,
        1,
        &[Method::GET, Method::SET],
    ))
    .unwrap();
    e.register(AgentSpec::requests("ping", MgmtClass(0x32), 1, &[Method::GET]).with_oui(0x00_1405))
        .unwrap();
    let got = calls.lock().unwrap().clone();
    assert_eq!(
        got,
        vec![
            (MgmtClass::PERF_MGT, 1, (1 << 1) | (1 << 2), None),
            (MgmtClass(0x32), 1, 1 << 1, Some([0x00, 0x14, 0x05])),
        ]
    );
}

#[test]
fn a_refusal_below_refuses_the_registration_and_frees_the_methods() {
    let (mut e, _calls) = engine(true);
    let err = e
        .register(AgentSpec::requests(
            "pma",
            MgmtClass::PERF_MGT,
            1,
            &[Method::GET],
        ))
        .unwrap_err();
    assert!(matches!(err, RegisterError::Transport(_)), "{err:?}");
    assert!(err.to_string().contains("already in use"), "{err}");
    assert_eq!(e.agent_count(), 0);
    e.port_mut().transport_mut().refuse = false;
    e.register(AgentSpec::requests(
        "pma",
        MgmtClass::PERF_MGT,
        1,
        &[Method::GET],
    ))
    .expect("the methods were not left owned by the refused agent");
}
