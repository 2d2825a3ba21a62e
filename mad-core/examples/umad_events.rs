//! Opens one port through the umad transport and prints every device event
//! (`IBV_EVENT_*` through libibverbs) with the port's attributes after it,
//! waking on the transport's descriptor the way the runtime does.
//!
//! `umad_events CA PORT [SECONDS]` (default 10 s; CA `-` is the first one). It prints `READY` once the
//! port is open, then one `EVENT` line per event, then `DONE n` with the
//! number of events. Exits 2 if the port has no device events (the line
//! `no device events: <reason>` says why). Meant for a VM with soft-RoCE:
//! toggle the link (`ip link set veth0 down; ip link set veth0 up`) or change
//! its MAC while it runs.
//!
//! # What a VM guest needs for device events (Debian bookworm, rdma-core 44)
//! - kernel modules `ib_uverbs` (besides `ib_core`, `ib_umad`, `rdma_rxe`)
//!   and the nodes `/dev/infiniband/uverbs0`, `uverbs1` (devtmpfs makes
//!   them, mode 0666);
//! - `libibverbs.so.1` (+ `libnl-3.so.200`, `libnl-route-3.so.200`) where
//!   ld.so finds it, e.g. `/lib/x86_64-linux-gnu/`;
//! - the driver file `/etc/libibverbs.d/rxe.driver` (one line:
//!   `driver rxe`; without it libibverbs lists no device), and the
//!   provider `librxe-rdmav34.so` (from `ibverbs-providers`, + the libnl
//!   libraries) either in `/usr/lib/x86_64-linux-gnu/libibverbs/`
//!   (libibverbs' provider directory) or on ld.so's default path such as
//!   `/lib/x86_64-linux-gnu/` (it falls back to a bare `dlopen`); both
//!   were seen to work.
//!
//! Without them the port opens without events and this program prints
//! `no device events: <reason>` and exits 2.
#![allow(unsafe_code)]

use mad_core::transport::umad::UmadTransport;
use mad_core::transport::Transport;
use std::time::{Duration, Instant};

fn gid_str(g: &[u8; 16]) -> String {
    g.chunks(2)
        .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
        .collect::<Vec<_>>()
        .join(":")
}

fn sysfs_gid0(ca: &str, port: u8) -> String {
    std::fs::read_to_string(format!("/sys/class/infiniband/{ca}/ports/{port}/gids/0"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|e| format!("<{e}>"))
}

/// Waits until `fd` is readable or `ms` pass; true if readable.
fn wait_readable(fd: i32, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    n == 1
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let ca = args.get(1).map_or("rxe0", String::as_str).to_string();
    let port: u8 = args.get(2).map_or(Ok(1), |s| s.parse())?;
    let secs: u64 = args.get(3).map_or(Ok(10), |s| s.parse())?;
    // "-": the first CA libibumad lists (under libumad2sim: ibsim's).
    let mut t = UmadTransport::open((ca != "-").then_some(ca.as_str()), port)?;
    let start = Instant::now();
    let show = |t: &UmadTransport| {
        let a = t.port_attrs();
        format!(
            "state {} phys {} lid {} sm_lid {} pkeys {:?} gid {} sysfs_gid0 {}",
            a.state,
            a.phys_state,
            a.lid,
            a.sm_lid,
            a.pkeys,
            gid_str(&a.gid()),
            sysfs_gid0(&a.ca_name, a.port_num)
        )
    };
    if let Some(why) = t.no_events_reason() {
        println!("no device events: {why}");
        std::process::exit(2);
    }
    let fd = t.raw_fd().ok_or("no descriptor")?;
    println!("opened {ca}:{port} fd {fd} {}", show(&t));
    println!("READY");
    let mut n = 0u32;
    let mut wakes = 0u32;
    let end = start + Duration::from_secs(secs);
    while Instant::now() < end {
        let left = end.saturating_duration_since(Instant::now());
        let ms = i32::try_from(left.as_millis().min(1000)).unwrap_or(1000);
        if !wait_readable(fd, ms) {
            continue;
        }
        wakes += 1;
        while let Some(r) = t.poll_recv()? {
            println!("MAD {} bytes from {:?}", r.mad.len(), r.src);
        }
        while let Some(ev) = t.poll_event() {
            n += 1;
            println!(
                "EVENT {n} t={:.3}s {ev:?} {}",
                start.elapsed().as_secs_f64(),
                show(&t)
            );
        }
        if let Some(why) = t.no_events_reason() {
            println!("events stopped: {why}");
            break;
        }
    }
    // The descriptor must be quiet again once everything is drained.
    println!(
        "DONE {n} events, {wakes} wakes, readable after drain: {}",
        wait_readable(fd, 0)
    );
    Ok(())
}
