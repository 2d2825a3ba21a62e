//! Runs a [`Runtime`] over one umad port and prints every device event its
//! agents are told about ([`AgentEvent::Async`]), with the port's GID after
//! it: the whole path from libibverbs' async-event fd through the umad
//! transport's descriptor, the runtime's mio loop and the port layer.
//!
//! `umad_runtime_events CA PORT [SECONDS]` (default 10 s). Prints the
//! runtime's wakeup mode and `READY`, one `ASYNC` line per event, then
//! `DONE n`. Exits 2 if the port has no device events. Meant for a VM with
//! soft-RoCE while the body toggles the link or changes the MAC.
//!
//! Its agent also owns vendor class 0x30 version 1 method Set with OUI
//! 00:14:05 (what the kernel VM harness's `rmpptest send-user` sends) and
//! prints a `RECV` line per MAD, so MADs are seen to wake the loop through
//! the same descriptor.

use mad_agents::{AgentEvent, AgentSpec, EngineConfig, Runtime};
use mad_core::transport::umad::UmadTransport;
use mad_core::wire::{Method, MgmtClass};
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let ca = args.get(1).map_or("rxe0", String::as_str).to_string();
    let port: u8 = args.get(2).map_or(Ok(1), |s| s.parse())?;
    let secs: u64 = args.get(3).map_or(Ok(10), |s| s.parse())?;
    let t = UmadTransport::open(Some(&ca), port)?;
    if let Some(why) = t.no_events_reason() {
        println!("no device events: {why}");
        std::process::exit(2);
    }
    let rt = Runtime::start(t, EngineConfig::default())?;
    println!("wakeup {:?}", rt.wakeup());
    let spec =
        AgentSpec::requests("events", MgmtClass(0x30), 1, &[Method::SET]).with_oui(0x00_14_05);
    let (_agent, rx) = rt.register_channel(spec)?;
    println!("READY");
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let mut n = 0u32;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        let Some(ev) = rx.recv_timeout(left) else {
            continue;
        };
        if let AgentEvent::Async(e) = ev {
            n += 1;
            let a = rt.port_attrs();
            let gid = a
                .gid()
                .chunks(2)
                .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
                .collect::<Vec<_>>()
                .join(":");
            println!(
                "ASYNC {n} t={:.3}s {e:?} state {} gid {gid}",
                start.elapsed().as_secs_f64(),
                a.state
            );
        } else if let AgentEvent::Received(m) = &ev {
            println!(
                "RECV t={:.3}s {} bytes from {:?}",
                start.elapsed().as_secs_f64(),
                m.bytes().len(),
                m.src()
            );
        } else {
            println!("other {ev:?}");
        }
    }
    println!("DONE {n} events");
    Ok(())
}
