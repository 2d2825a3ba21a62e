//! The `mad sim` console (`mad_sim::console::run`) on the built-in
//! subnet: the summary after SM-lite, cables pulled and plugged back
//! (Trap 128, re-sweep), link drop rates that lose traffic, endpoint
//! faults reaching an endpoint, stats, quit.
#![allow(clippy::unwrap_used, reason = "tests")]

use mad_core::transport::{Address, AsyncEvent, Qp, Transport};
use mad_core::wire::{AttributeId, Method, MgmtClass};
use mad_sim::console::{self, End};
use mad_sim::{FaultyPort, Subnet};
use mad_testkit::{assert_contains_all, MadBuilder};

fn run(s: &Subnet, script: &str) -> (String, End) {
    let mut out = Vec::new();
    let end = console::run(s.fabric(), Some(s), script.as_bytes(), &mut out).unwrap();
    (String::from_utf8(out).unwrap(), end)
}

#[test]
fn the_summary_counts_the_built_in_fabric_after_sm_lite() {
    let s = Subnet::builtin().unwrap();
    let (out, end) = run(&s, "summary\nnodes\n");
    assert_eq!(end, End::Eof);
    assert_contains_all(
        &out,
        &[
            "fabric: built-in default",
            "nodes: 12 (4 switches, 8 CAs)",
            "links: 12 (12 up)",
            "LIDs: 12 assigned (1-12)",
            &format!("SM: node #0 port 1, LID {}", s.sm_lid()),
            "SM-lite: subnet up, 1 sweeps, 0 traps, 0 errors",
            "spine-2 madsim 8-port spine switch",
        ],
    );
}

#[test]
fn a_pulled_cable_traps_resweeps_and_comes_back_active() {
    let s = Subnet::builtin().unwrap();
    let (out, end) = run(
        &s,
        "link down host-3 1\nport host-3 1\nsummary\nlink up host-3 1\nport leaf-1 3\nquit\nsummary\n",
    );
    assert_eq!(end, End::Quit);
    assert_contains_all(
        &out,
        &[
            "ok: cable host-3[1] - leaf-1[3] pulled; host-3[1] now Down / Polling",
            "1 Trap 128 sent by the switch(es)",
            "SM-lite: 1 trap(s) received, 1 re-sweep(s), 11 LIDs, subnet up",
            "host-3[1]: Down / Polling",
            "cable to leaf-1[3] (pulled)",
            "links: 12 (11 up)",
            "plugged in; host-3[1] now Active / LinkUp",
            "leaf-1[3]: Active / LinkUp",
            "LinkDowned 1",
        ],
    );
    // Nothing after quit ran.
    assert!(out.ends_with("ok: bye\n"), "{out}");
}

fn vendor_mad(tid: u64) -> Vec<u8> {
    MadBuilder::new(MgmtClass(0x09), 1, Method::SEND, AttributeId(0))
        .tid(tid)
        .to_vec()
}

#[test]
fn a_drop_rate_set_at_the_console_loses_traffic_and_shows_in_stats() {
    let s = Subnet::builtin().unwrap();
    let f = s.fabric();
    let mut a = f.attach("host-2", 1).unwrap();
    let mut b = f.attach("host-7", 1).unwrap();
    let to = Address::gsi(f.port_info(f.find("host-7").unwrap(), 1).unwrap().lid);
    let (out, _) = run(&s, "seed 42\ndrop host-7 1 1\n");
    assert!(out.contains("ok: link at host-7[1]: drop 1"), "{out}");
    for t in 1..=4 {
        a.post_send(Qp::Qp1, &vendor_mad(t), &to).unwrap();
    }
    assert!(b.poll_recv().unwrap().is_none());
    let (out, _) = run(&s, "stats\nport host-7 1\nclear\n");
    assert_contains_all(
        &out,
        &[
            "dropped LinkFault: 4",
            "link out of leaf-2[3]: drop 1; 4 packets, 4 dropped",
            "SA: ",
            "ok: every link fault removed",
        ],
    );
    a.post_send(Qp::Qp1, &vendor_mad(5), &to).unwrap();
    assert!(b.poll_recv().unwrap().is_some());
}

#[test]
fn endpoint_faults_from_the_console_reach_the_endpoint() {
    let s = Subnet::builtin().unwrap();
    let f = s.fabric();
    let mut p = FaultyPort::new(f.attach("host-4", 1).unwrap(), 3);
    let (out, _) = run(
        &s,
        "event host-4 1 lid_change\nreset host-4 1\nfatal host-4 1\nfatal host-5 1\n",
    );
    assert_contains_all(
        &out,
        &[
            "ok: event LidChange at host-4[1]",
            "ok: soft reset at host-4[1]",
            "ok: device fatal at host-4[1]",
            "error: \"host-5\" port 1 has no endpoint attached",
        ],
    );
    let evs: Vec<_> = std::iter::from_fn(|| p.poll_event()).collect();
    assert_eq!(
        evs,
        vec![
            AsyncEvent::LidChange,
            AsyncEvent::SoftResetRequest,
            AsyncEvent::DeviceFatal
        ]
    );
    assert!(p
        .post_send(Qp::Qp1, &vendor_mad(1), &Address::gsi(1))
        .is_err());
}

#[test]
fn an_endless_line_ends_the_session_with_an_error_instead_of_filling_memory() {
    let s = Subnet::builtin().unwrap();
    let mut out = Vec::new();
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let e = console::run(
        s.fabric(),
        Some(&s),
        std::io::BufReader::new(zero),
        &mut out,
    )
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
    assert!(
        e.to_string()
            .contains(&console::MAX_COMMAND_LINE.to_string()),
        "{e}"
    );
    // A line of exactly the limit is still a (bad) command, answered.
    let long = "x".repeat(console::MAX_COMMAND_LINE) + "\nquit\n";
    let (out, end) = run(&s, &long);
    assert_eq!(end, End::Quit);
    assert!(out.starts_with("error: "), "{out}");
}
