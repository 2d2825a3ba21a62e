//! Runs a [`Runtime`] over one umad port and prints every device event its
//! agents are told about ([`AgentEvent::Async`]), with the port's GID after
//! it: the whole path from libibverbs' async-event fd through the umad
//! transport's descriptor, the runtime's mio loop and the port layer.
//!
//! `umad_runtime_events CA PORT [SECONDS]` (default 10 s). Prints the
//! runtime's wakeup mode and `READY`, one `ASYNC` line per event, then
//! `DONE n`. Exits 2 if the port has no device events. Meant for a VM with
//! soft-RoCE while the body toggles the link or changes the MAC.

use mad_agents::{AgentEvent, AgentSpec, EngineConfig, Runtime};
use mad_core::transport::umad::UmadTransport;
use mad_core::transport::Qp;
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
    let (_agent, rx) = rt.register_channel(AgentSpec::send_only("events", Qp::Qp1))?;
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
        } else {
            println!("other {ev:?}");
        }
    }
    println!("DONE {n} events");
    Ok(())
}
