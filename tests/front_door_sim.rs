//! The facade's front door (`madstack::open`, `Port`) on the built-in
//! fabric: the three ways to address an SMP reach the same node, a
//! batch answers in order with each target's own failure, SA tables
//! arrive whole, and errors keep their kind (timeout, MAD status).

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use madstack::{open, Input, Options, Target};

#[test]
fn lid_directed_route_and_guid_reach_the_same_node() {
    let p = open(&Options::sim()).unwrap();
    let lid = p.attrs().lid;
    let a = p.smp_get("NodeInfo", &Target::Lid(lid), 0).unwrap();
    let b = p.smp_get("NI", &Target::Dr(vec![]), 0).unwrap();
    let c = p
        .smp_get("NodeInfo", &Target::Guid(a.uint("port_guid").unwrap()), 0)
        .unwrap();
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a.to_json()["node_guid"], "0x0000000000100003");
    p.close().unwrap();
}

#[test]
fn a_batch_answers_in_order_with_each_targets_own_failure() {
    let mut o = Options::sim();
    o.timeout = Duration::from_millis(50);
    let p = open(&o).unwrap();
    let r = p
        .smp_get_many(
            "NodeInfo",
            &[Target::Lid(1), Target::Lid(999), Target::Dr(vec![1])],
            0,
        )
        .unwrap();
    let answers = r;
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0].as_ref().unwrap().uint("node_type"), Some(1));
    assert!(answers[1].as_ref().unwrap_err().is_timeout());
    assert_eq!(answers[2].as_ref().unwrap().uint("node_type"), Some(2));
}

#[test]
fn batches_one_after_another_and_from_several_threads_each_get_their_own_answers() {
    // The Port keeps one batch agent for batch after batch; a thread that
    // finds it busy sends through an agent of its own.
    let p = open(&Options::sim()).unwrap();
    let targets: Vec<Target> = (0..64)
        .map(|i| Target::Dr(if i % 3 == 0 { vec![] } else { vec![1] }))
        .collect();
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..20 {
                    let r = p.smp_get_batch("NodeInfo", &targets, 0).unwrap();
                    assert_eq!(r.len(), targets.len());
                    for (i, a) in r.iter().enumerate() {
                        let want = if i % 3 == 0 { 1 } else { 2 };
                        assert_eq!(
                            a.as_ref().unwrap().attribute().uint("node_type"),
                            Some(want)
                        );
                    }
                }
            });
        }
    });
}

#[test]
fn sa_tables_arrive_whole_on_the_built_in_fabric() {
    let p = open(&Options::sim()).unwrap();
    let t = p.sa_table("NodeRecord", &[]).unwrap();
    assert!(!t.truncated);
    assert_eq!(t.records.len(), 12);
    let one = p
        .sa_get("NodeRecord", &[("lid".to_owned(), Input::Uint(3))])
        .unwrap();
    assert_eq!(one.uint("node_guid"), Some(0x10_0003));
    let none = p
        .sa_get("NodeRecord", &[("lid".to_owned(), Input::Uint(999))])
        .unwrap_err();
    assert_eq!(none.status(), Some(0x0300));
}

#[test]
fn a_switch_attribute_asked_of_a_ca_is_a_status_error() {
    let p = open(&Options::sim()).unwrap();
    let e = p.smp_get("SwitchInfo", &Target::Lid(3), 0).unwrap_err();
    assert!(e.status().is_some_and(|s| s != 0), "{e}");
    assert!(!e.is_timeout());
}
