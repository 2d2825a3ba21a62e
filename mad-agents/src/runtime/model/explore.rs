//! Running the model: every schedule of each scenario, and the proof
//! that it catches each deliberate deviation.

use std::time::Instant;

use super::{lock, Deviation, Scenario, World};

/// Runs every schedule of `sc`; returns how many and the first
/// violation.
fn explore(sc: Scenario, deviation: Deviation) -> (usize, Option<String>) {
    let mut stack: Vec<Vec<usize>> = vec![Vec::new()];
    let mut schedules = 0;
    while let Some(prefix) = stack.pop() {
        let mut w = World::new(sc, deviation);
        for &c in &prefix {
            w.step(c);
        }
        let mut path = prefix;
        loop {
            let en = w.enabled();
            let Some((&first, rest)) = en.split_first() else {
                w.finish();
                break;
            };
            for &alt in rest {
                let mut p = path.clone();
                p.push(alt);
                stack.push(p);
            }
            w.step(first);
            path.push(first);
            if path.len() > 300 {
                w.violation("a schedule does not end (livelock)".into());
                break;
            }
        }
        schedules += 1;
        let v = lock(&w.log).violations.first().cloned();
        if let Some(v) = v {
            return (schedules, Some(format!("{v}; schedule {path:?}")));
        }
    }
    (schedules, None)
}

const SCENARIOS: [Scenario; 8] = [
    Scenario::OtherThread,
    Scenario::OwnCallback,
    Scenario::OtherAgentFromCallback,
    Scenario::WaiterOwnCallback,
    Scenario::LoopDies,
    Scenario::ReceiverDrives,
    Scenario::WaiterDrives,
    Scenario::ReceiverKeepsBatch,
];

#[test]
fn in_every_interleaving_deregistration_waits_for_sends_and_callbacks_and_never_deadlocks() {
    for sc in SCENARIOS {
        let t = Instant::now();
        let (n, v) = explore(sc, Deviation::None);
        eprintln!("{sc:?}: {n} schedules in {:?}", t.elapsed());
        assert_eq!(v, None, "{sc:?} after {n} schedules");
        assert!(n > 20, "{sc:?}: only {n} schedules explored");
    }
}

/// Asserts that exploring `sc` under `deviation` finds a violation
/// whose message contains `needle`.
fn assert_finds(sc: Scenario, deviation: Deviation, needle: &str) {
    let (_, v) = explore(sc, deviation);
    assert!(
        v.as_deref().is_some_and(|v| v.contains(needle)),
        "{sc:?}: {v:?}"
    );
}

#[test]
fn the_model_finds_a_lost_wakeup() {
    assert_finds(Scenario::OtherThread, Deviation::NoNotify, "waits for ever");
}

#[test]
fn the_model_finds_a_deregistration_that_returns_early() {
    for sc in [
        Scenario::OtherThread,
        Scenario::ReceiverDrives,
        Scenario::WaiterDrives,
    ] {
        assert_finds(sc, Deviation::EarlyReturn, "returned");
    }
}

#[test]
fn the_model_finds_a_lost_wakeup_when_callers_drive() {
    for sc in [Scenario::ReceiverDrives, Scenario::WaiterDrives] {
        assert_finds(sc, Deviation::NoNotify, "waits for ever");
    }
}

#[test]
fn the_model_finds_a_deregistration_from_its_own_callback_that_waits_for_itself() {
    assert_finds(
        Scenario::OwnCallback,
        Deviation::InlineWaitsForReap,
        "spins for ever",
    );
}

#[test]
fn the_model_finds_a_waiter_whose_completion_a_callbacks_deregistration_takes() {
    assert_finds(
        Scenario::WaiterOwnCallback,
        Deviation::InlineIgnoresWaiters,
        "waits for ever in send_and_wait",
    );
}

#[test]
fn the_model_finds_waiters_left_behind_by_a_dead_loop() {
    assert_finds(Scenario::LoopDies, Deviation::DeathUnnoticed, "for ever");
}

/// The largest scenario (about 116,000 schedules), on its own so that it
/// runs beside the others.
#[test]
fn with_two_callers_driving_and_a_deregistration_events_keep_their_order_and_complete_once() {
    let (n, v) = explore(Scenario::TwoCallersDrive, Deviation::None);
    assert_eq!(v, None, "after {n} schedules");
    assert!(n > 20, "only {n} schedules explored");
}

#[test]
fn the_model_finds_a_caller_that_takes_events_while_the_loop_hands_one_over() {
    assert_finds(
        Scenario::TwoCallersDrive,
        Deviation::TakeOutOfTurn,
        "out of order",
    );
}

#[test]
fn the_model_finds_a_receiver_that_hands_out_newer_events_before_the_batch_it_holds() {
    assert_finds(
        Scenario::ReceiverKeepsBatch,
        Deviation::QueueBeforeTaken,
        "out of order",
    );
}

#[test]
fn the_model_finds_a_lost_wakeup_and_an_early_return_with_two_callers_driving() {
    assert_finds(
        Scenario::TwoCallersDrive,
        Deviation::NoNotify,
        "waits for ever",
    );
    assert_finds(
        Scenario::TwoCallersDrive,
        Deviation::EarlyReturn,
        "returned",
    );
}
