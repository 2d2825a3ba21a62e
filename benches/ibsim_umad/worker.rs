//! The measured side: SMP Get queries through `UmadTransport` with W
//! outstanding, run in a child process under libumad2sim.
//!
//! Each of the W slots holds one request; when its response arrives the
//! slot's next request goes out at once (closed loop). Requests are
//! directed-route SMP Gets built with `DrPath::build_request`, round-robin
//! over the targets and attributes, exactly the MADs the anchor's
//! `smp_query_via` sends. A response counts when its TID matches the slot,
//! it is a GetResp with status 0 and (NodeInfo) a non-zero node GUID. With
//! nothing to read, the worker blocks in poll(2) on the umad fd (as
//! libibmad's umad_recv does) unless `MADSTACK_BENCH_WAIT=spin`.
//!
//! Two stacks: [`run`] drives the transport directly (the worker keeps its
//! own TID table), [`run_agents`] goes through the agent layer
//! (`mad_agents::Engine` over the same transport: TID allocation, send
//! table, response timers, dispatch by TID, one completion per send).

use mad_agents::{AgentEvent, AgentSpec, EngineConfig, SendRequest, SendStatus, Stack};
use mad_core::transport::umad::UmadTransport;
use mad_core::transport::{Address, Qp, SendCompletion, Transport, PERMISSIVE_LID};
use mad_core::wire::smp::DrPath;
use mad_core::wire::{AttributeId, Mad, Method};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What a worker run is asked to do.
#[derive(Debug, Clone)]
pub struct Params {
    /// Outstanding requests.
    pub window: usize,
    /// Timed queries.
    pub queries: u64,
    /// Upper bound on the timed part.
    pub seconds: f64,
    /// Untimed queries first.
    pub warmup: u64,
    /// Directed routes ("0", "0,1").
    pub targets: Vec<String>,
    /// "nodeinfo", "portinfo" or "both".
    pub attrs: String,
    /// Busy-poll instead of blocking in poll(2).
    pub spin: bool,
}

#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}

extern "C" {
    // Resolved at run time, so libumad2sim's interposed poll() is the one
    // called for its emulated umad fd.
    fn poll(fds: *mut PollFd, nfds: u64, timeout: i32) -> i32;
}

fn wait_readable(fd: i32, ms: i32) {
    let mut p = PollFd {
        fd,
        events: 1, // POLLIN
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { poll(&mut p, 1, ms) };
}

fn routes_and_attrs(p: &Params) -> Result<(Vec<DrPath>, Vec<AttributeId>), String> {
    let routes: Vec<DrPath> = p
        .targets
        .iter()
        .map(|s| s.parse().map_err(|e| format!("bad route {s:?}: {e}")))
        .collect::<Result<_, _>>()?;
    let attrs: Vec<AttributeId> = match p.attrs.as_str() {
        "nodeinfo" => vec![AttributeId::NODE_INFO],
        "portinfo" => vec![AttributeId::PORT_INFO],
        "both" => vec![AttributeId::NODE_INFO, AttributeId::PORT_INFO],
        a => return Err(format!("unknown attrs {a:?}")),
    };
    if routes.is_empty() {
        return Err("no target".into());
    }
    Ok((routes, attrs))
}

/// The JSON line of a finished run.
#[allow(clippy::too_many_arguments)]
fn report(
    p: &Params,
    name: &str,
    api: &str,
    w: usize,
    mut lat_ns: Vec<u32>,
    answered: u64,
    errors: u64,
    timeouts: u64,
    stale: u64,
    elapsed: f64,
    last_guid: u64,
) -> Result<String, String> {
    if answered == 0 || lat_ns.is_empty() {
        return Err(format!(
            "no valid response (errors {errors}, timeouts {timeouts}, stale {stale})"
        ));
    }
    lat_ns.sort_unstable();
    let pct = |q: f64| -> f64 {
        let n = lat_ns.len();
        let rank = ((q / 100.0 * n as f64).ceil() as usize).clamp(1, n);
        f64::from(lat_ns[rank - 1]) / 1000.0
    };
    let targets = p
        .targets
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(",");
    Ok(format!(
        "{{\"impl\":\"{name}\",\"api\":\"{api}\",\"outstanding\":{w},\
         \"attrs\":\"{}\",\"targets\":[{targets}],\"queries\":{},\"errors\":{errors},\
         \"timeouts\":{timeouts},\"stale\":{stale},\"seconds\":{elapsed:.6},\"qps\":{:.1},\
         \"lat_us\":{{\"p50\":{:.2},\"p90\":{:.2},\"p99\":{:.2},\"p99.9\":{:.2},\"max\":{:.2}}},\
         \"wait\":\"{}\",\"last_node_guid\":\"{last_guid:#018x}\"}}",
        p.attrs,
        lat_ns.len(),
        answered as f64 / elapsed,
        pct(50.0),
        pct(90.0),
        pct(99.0),
        pct(99.9),
        pct(100.0),
        if p.spin { "spin" } else { "poll" },
    ))
}

/// Runs the measurement through the agent layer and returns its JSON line.
///
/// # Errors
/// The transport cannot be opened, the agent cannot register, a send is
/// refused, or no response comes back at all.
pub fn run_agents(p: &Params) -> Result<String, String> {
    let t = UmadTransport::open(None, 0).map_err(|e| format!("open umad: {e}"))?;
    let fd = t.raw_fd();
    let (routes, attrs) = routes_and_attrs(p)?;
    let mut e = Stack::new(t, EngineConfig::default());
    let agent = e
        .register(AgentSpec::send_only("bench", Qp::Qp0))
        .map_err(|e| format!("register: {e}"))?;
    let w = p.window.max(1);
    let dest = Address::smi(PERMISSIVE_LID);
    // One prepared request per (route, attribute); the engine writes TIDs.
    let reqs: Vec<SendRequest> = (0..routes.len() * attrs.len())
        .map(|i| {
            let mad = routes[i % routes.len()].build_request(
                Method::GET,
                attrs[(i / routes.len()) % attrs.len()],
                0,
                0,
                0,
            );
            SendRequest::new(mad.to_vec(), dest).expect_response(Duration::from_secs(1), 0)
        })
        .collect();
    let total = p.warmup + p.queries;
    let mut sent_at = vec![Instant::now(); w];
    let mut issued: u64 = 0;
    let mut done: u64 = 0;
    let (mut answered, mut errors, mut timeouts) = (0u64, 0u64, 0u64);
    let mut lat_ns: Vec<u32> = Vec::with_capacity(p.queries.min(10_000_000) as usize);
    let mut last_guid = 0u64;
    let mut t0 = Instant::now();
    let mut deadline: Option<Instant> = None;
    let now = Instant::now();
    let mut last_ok = now;
    let stall_limit = Duration::from_secs_f64(p.seconds.max(1.0) + 5.0);
    let first = w.min(total as usize);
    for (slot, at) in sent_at.iter_mut().enumerate().take(first) {
        let req = reqs[issued as usize % reqs.len()]
            .clone()
            .cookie(slot as u64);
        *at = now;
        e.send(agent, req, now).map_err(|e| format!("send: {e}"))?;
        issued += 1;
    }
    'run: while done < total {
        let now = Instant::now();
        let progressed = e.poll(now);
        let mut any = false;
        let mut any_ok = false;
        while let Some((_, ev)) = e.poll_event() {
            let AgentEvent::SendDone(c) = ev else {
                continue;
            };
            any = true;
            let now = Instant::now();
            let slot = c.cookie as usize;
            any_ok |= c.status == SendStatus::Success;
            if done >= p.warmup {
                lat_ns.push(
                    (now - sent_at[slot.min(w - 1)])
                        .as_nanos()
                        .min(u128::from(u32::MAX)) as u32,
                );
                match (&c.status, &c.response) {
                    (SendStatus::Success, Some(r)) => {
                        let m = r.mad();
                        if m.status().0 & 0x7FFF == 0 {
                            answered += 1;
                            if m.attr_id() == AttributeId::NODE_INFO && r.bytes().len() >= 84 {
                                let mut g = [0u8; 8];
                                g.copy_from_slice(&r.bytes()[76..84]);
                                last_guid = u64::from_be_bytes(g);
                            }
                        } else {
                            errors += 1;
                        }
                    }
                    (SendStatus::Timeout, _) => timeouts += 1,
                    _ => errors += 1,
                }
            }
            done += 1;
            if done == p.warmup {
                t0 = now;
                deadline = Some(t0 + Duration::from_secs_f64(p.seconds));
            }
            if deadline.is_some_and(|d| done & 63 == 0 && now >= d) {
                break 'run;
            }
            if issued < total {
                let req = reqs[issued as usize % reqs.len()]
                    .clone()
                    .cookie(slot as u64);
                sent_at[slot] = now;
                e.send(agent, req, now).map_err(|e| format!("send: {e}"))?;
                issued += 1;
            }
        }
        if any_ok {
            last_ok = Instant::now();
        }
        // The time limit holds even when nothing comes back.
        let t = Instant::now();
        if deadline.is_some_and(|d| t >= d) || t - last_ok > stall_limit {
            break 'run;
        }
        if !progressed && !any {
            match (p.spin, fd) {
                (false, Some(fd)) => {
                    let ms = e.poll_timeout().map_or(100, |d| {
                        d.saturating_duration_since(Instant::now())
                            .as_millis()
                            .clamp(0, 100) as i32
                    });
                    wait_readable(fd, ms);
                }
                _ => std::hint::spin_loop(),
            }
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    // Let the answers still in flight arrive before exiting: libumad2sim's
    // exit handler joins its receiver thread, which deadlocks if a packet
    // is being delivered at that moment.
    let quiet = Instant::now() + Duration::from_millis(500);
    while e.outstanding() > 0 && Instant::now() < quiet {
        if !e.poll(Instant::now()) {
            if let Some(fd) = fd {
                wait_readable(fd, 10);
            }
        }
        while e.poll_event().is_some() {}
    }
    report(
        p,
        "madstack-agents",
        "Stack<UmadTransport>",
        w,
        lat_ns,
        answered,
        errors,
        timeouts,
        0,
        elapsed,
        last_guid,
    )
}

#[derive(Clone, Copy)]
struct Slot {
    tid: u64,
    sent: Instant,
    busy: bool,
}

/// Runs the measurement and returns its JSON line.
///
/// # Errors
/// The transport cannot be opened, a send fails, or no response comes
/// back at all.
pub fn run(p: &Params) -> Result<String, String> {
    let mut t = UmadTransport::open(None, 0).map_err(|e| format!("open umad: {e}"))?;
    let fd = t.raw_fd();
    let (routes, attrs) = routes_and_attrs(p)?;
    let w = p.window.clamp(1, 65_535);
    let dest = Address::smi(PERMISSIVE_LID);
    let timeout = Duration::from_secs(1);
    let now = Instant::now();
    let mut slots = vec![
        Slot {
            tid: 0,
            sent: now,
            busy: false,
        };
        w
    ];
    let mut seq: u32 = 0;
    let mut completions: Vec<SendCompletion> = Vec::with_capacity(1024);
    let total = p.warmup + p.queries;
    let mut issued: u64 = 0;
    let mut answered: u64 = 0;
    let mut errors: u64 = 0;
    let mut timeouts: u64 = 0;
    let mut stale: u64 = 0;
    let mut lat_ns: Vec<u32> = Vec::with_capacity(p.queries.min(10_000_000) as usize);
    let mut last_guid = 0u64;
    let mut t0 = Instant::now();
    let mut deadline: Option<Instant> = None;

    // Low 32 TID bits -> slot. The low bits are unique (a 32-bit counter)
    // so they never repeat while a request could still be answered.
    let mut by_tid: HashMap<u32, usize> = HashMap::with_capacity(2 * w);
    let mut send = |t: &mut UmadTransport,
                    slot: usize,
                    slots: &mut [Slot],
                    by_tid: &mut HashMap<u32, usize>,
                    issued: &mut u64|
     -> Result<(), String> {
        let i = *issued as usize;
        let route = &routes[i % routes.len()];
        let attr = attrs[(i / routes.len()) % attrs.len()];
        seq = seq.wrapping_add(1);
        let tid = (0x6d61_6462u64 << 32) | u64::from(seq);
        if slots[slot].busy {
            by_tid.remove(&(slots[slot].tid as u32));
        }
        by_tid.insert(seq, slot);
        let mad = route.build_request(Method::GET, attr, 0, tid, 0);
        t.post_send(Qp::Qp0, &mad, &dest)
            .map_err(|e| format!("post_send: {e}"))?;
        slots[slot] = Slot {
            tid,
            sent: Instant::now(),
            busy: true,
        };
        *issued += 1;
        Ok(())
    };

    for s in 0..w.min(total as usize) {
        send(&mut t, s, &mut slots, &mut by_tid, &mut issued)?;
    }
    let mut done: u64 = 0;
    let mut idle_since: Option<Instant> = None;
    let mut last_progress = Instant::now();
    let stall_limit = Duration::from_secs_f64(p.seconds.max(1.0) + 5.0);
    while done < total {
        completions.clear();
        t.poll_send_completions(&mut completions)
            .map_err(|e| format!("send completions: {e}"))?;
        let r = t.poll_recv().map_err(|e| format!("poll_recv: {e}"))?;
        let Some(r) = r else {
            let now = Instant::now();
            // Expire slots that waited too long (ibsim dropped the MAD).
            if idle_since.is_none_or(|s| now - s > Duration::from_millis(50)) {
                idle_since = Some(now);
                for s in 0..w {
                    if slots[s].busy && now - slots[s].sent > timeout {
                        timeouts += 1;
                        done += 1;
                        slots[s].busy = false;
                        by_tid.remove(&(slots[s].tid as u32));
                        if done == p.warmup {
                            t0 = now;
                            deadline = Some(t0 + Duration::from_secs_f64(p.seconds));
                        }
                        if issued < total {
                            send(&mut t, s, &mut slots, &mut by_tid, &mut issued)?;
                        }
                    }
                }
                if slots.iter().all(|s| !s.busy) {
                    break;
                }
                // The time limit holds even when nothing comes back.
                if deadline.is_some_and(|d| now >= d) || now - last_progress > stall_limit {
                    break;
                }
            }
            match (p.spin, fd) {
                (false, Some(fd)) => wait_readable(fd, 100),
                _ => std::hint::spin_loop(),
            }
            continue;
        };
        idle_since = None;
        last_progress = Instant::now();
        let m = Mad::new_unchecked(&r.mad[..]);
        let tid = m.tid();
        let Some(slot) = by_tid.remove(&(tid as u32)) else {
            stale += 1;
            continue;
        };
        if !slots[slot].busy || slots[slot].tid != tid {
            // Low bits matched but the upper bits did not come back intact.
            stale += 1;
            continue;
        }
        let now = Instant::now();
        let ok = m.is_response()
            && m.method() == Method::GET
            && m.status().0 & 0x7FFF == 0
            && r.mad.len() >= 128;
        if ok && m.attr_id() == AttributeId::NODE_INFO {
            last_guid = u64::from_be_bytes(r.mad[76..84].try_into().unwrap_or([0; 8]));
        }
        let timed = done >= p.warmup;
        if timed {
            lat_ns.push(
                (now - slots[slot].sent)
                    .as_nanos()
                    .min(u128::from(u32::MAX)) as u32,
            );
            if ok {
                answered += 1;
            } else {
                errors += 1;
            }
        }
        slots[slot].busy = false;
        done += 1;
        if done == p.warmup {
            t0 = Instant::now();
            deadline = Some(t0 + Duration::from_secs_f64(p.seconds));
        }
        if let Some(d) = deadline {
            if done & 63 == 0 && now >= d {
                break;
            }
        }
        if issued < total {
            send(&mut t, slot, &mut slots, &mut by_tid, &mut issued)?;
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    // Drain the answers still in flight (see `run_agents`).
    let quiet = Instant::now() + Duration::from_millis(500);
    while slots.iter().any(|s| s.busy) && Instant::now() < quiet {
        match t.poll_recv() {
            Ok(Some(r)) => {
                let tid = Mad::new_unchecked(&r.mad[..]).tid();
                if let Some(slot) = by_tid.remove(&(tid as u32)) {
                    slots[slot].busy = false;
                }
            }
            Ok(None) => {
                if let Some(fd) = fd {
                    wait_readable(fd, 10);
                }
            }
            Err(_) => break,
        }
    }
    report(
        p,
        "madstack-umad",
        "UmadTransport",
        w,
        lat_ns,
        answered,
        errors,
        timeouts,
        stale,
        elapsed,
        last_guid,
    )
}
