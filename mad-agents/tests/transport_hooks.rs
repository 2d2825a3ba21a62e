//! The engine asks its transport for the requests its agents register for
//! (the umad transport turns that into kernel agents), and refuses the
//! registration when the layer below refuses.
#![allow(clippy::unwrap_used)]

mod support;

use mad_agents::{AgentSpec, EngineConfig, RegisterError, Stack};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::Qp;
use mad_core::wire::{Method, MgmtClass};
use mad_testkit::{Recording, Wrapped};
use support::perf_requests;

/// A Loopback that records `register_requests` and can refuse it (the
/// kit's [`Recording`] hooks).
type Recorded = Wrapped<Loopback, Recording>;

fn engine(refuse: bool) -> (Stack<Recorded>, Recording) {
    let rec = Recording::new();
    if refuse {
        rec.record().refuse_register = Some("method 1 already in use".into());
    }
    let t = Wrapped::new(Loopback::new(Loopback::attrs("r", 1, 1), 64), rec.clone());
    (Stack::new(t, EngineConfig::default()), rec)
}

/// The registrations asked for, as (class, version, methods, OUI).
fn calls(rec: &Recording) -> Vec<(MgmtClass, u8, u128, Option<[u8; 3]>)> {
    rec.record()
        .registrations
        .iter()
        .map(|r| (r.class, r.class_version, r.methods, r.oui))
        .collect()
}

#[test]
fn registering_for_requests_asks_the_transport_for_them() {
    let (mut e, rec) = engine(false);
    e.register(AgentSpec::send_only("client", Qp::Qp1)).unwrap();
    assert!(calls(&rec).is_empty(), "send-only agents ask nothing");
    e.register(perf_requests("pma", &[Method::GET, Method::SET]))
        .unwrap();
    e.register(AgentSpec::requests("ping", MgmtClass(0x32), 1, &[Method::GET]).with_oui(0x00_1405))
        .unwrap();
    let got = calls(&rec);
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
    let (mut e, rec) = engine(true);
    let err = e
        .register(perf_requests("pma", &[Method::GET]))
        .unwrap_err();
    assert!(matches!(err, RegisterError::Transport(_)), "{err:?}");
    assert!(err.to_string().contains("already in use"), "{err}");
    assert_eq!(e.agent_count(), 0);
    rec.record().refuse_register = None;
    e.register(perf_requests("pma", &[Method::GET]))
        .expect("the methods were not left owned by the refused agent");
}

#[test]
fn a_registration_the_engine_refuses_never_reaches_the_transport() {
    let (mut e, rec) = engine(false);
    e.register(perf_requests("pma", &[Method::GET])).unwrap();
    assert_eq!(calls(&rec).len(), 1);
    let err = e
        .register(perf_requests("second pma", &[Method::GET]))
        .unwrap_err();
    assert!(matches!(err, RegisterError::MethodInUse { .. }), "{err:?}");
    assert_eq!(
        calls(&rec).len(),
        1,
        "the kernel was not asked to deliver a class the engine refused"
    );
}

#[test]
fn a_registration_undone_after_a_refusal_below_counts_as_refused() {
    let (mut e, _rec) = engine(true);
    let before = e.stats();
    e.register(perf_requests("pma", &[Method::GET]))
        .unwrap_err();
    let after = e.stats();
    assert_eq!(after.registrations, before.registrations);
    assert_eq!(after.refused, before.refused + 1);
    assert!(e.agent_ids().is_empty());
}
