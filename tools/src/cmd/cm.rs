//! `mad cm`: make or take one InfiniBand connection with madstack's
//! connection manager (`mad_cm`) and print its events as rdma_cm names
//! them, for trying the CM by hand on any transport (what `ucmatose` /
//! `rping` are for librdmacm, without data transfer).
//!
//! ```text
//! mad [--sim|--ibsim|-C CA -P PORT] cm listen [-S SID] [--reject REASON] [--qpn N] [-n COUNT] [-w SECS]
//! mad [--sim|--ibsim|-C CA -P PORT] cm connect DLID [-S SID] [--qpn N] [--hold MS] [-w SECS]
//! ```
//! `-S`: the service ID (default: rdma_cm's TCP port space, port 7471 —
//! `0x0000000001061d2f`, what `rping` uses). `listen` accepts every REQ
//! (or rejects it with `--reject`, a REJ reason number) and stops after
//! `-n` connections have ended (default 1); `connect` resolves the route
//! through the SA (a bare subnet-local path when no SA answers), connects,
//! holds the connection `--hold` ms, disconnects and waits out timewait.
//! The CM is madstack's own: no QP is created, so the QPN announced is
//! the one given with `--qpn` (default 1); the events print what a verbs
//! user would move its QP with. Exit status 0 when the connection was
//! made and ended cleanly, 1 when it was rejected, unreachable or failed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mad_agents::{EngineConfig, Runtime};

use mad_cm::service::{resolve_route, CmService};
use mad_cm::{AcceptParams, CmConfig, CmEvent, CmPath, ConnId, ConnInfo, ConnectParams};
use mad_core::wire::cm::cma::{self, PortSpace};
use mad_core::wire::cm::RejectReason;

use crate::cnum::c_strtoul_full;
use crate::command::{CliError, Invocation};
use crate::ibdiag::{self, Opt, ToolSpec};
use crate::session::sim::SimFabric;
use crate::session::Backend;

const OPT_REJECT: i32 = 1;
const OPT_QPN: i32 = 2;
const OPT_HOLD: i32 = 3;

const OPTS: &[Opt] = &[
    Opt::new(
        "service-id",
        'S',
        true,
        Some("<sid>"),
        "service ID (default rdma_cm TCP port 7471)",
    ),
    Opt::long(
        "reject",
        OPT_REJECT,
        true,
        Some("<reason>"),
        "listen: reject with this REJ reason",
    ),
    Opt::long(
        "qpn",
        OPT_QPN,
        true,
        Some("<n>"),
        "QPN to announce (default 1)",
    ),
    Opt::long(
        "hold",
        OPT_HOLD,
        true,
        Some("<ms>"),
        "connect: stay connected this long",
    ),
    Opt::new(
        "count",
        'n',
        true,
        Some("<n>"),
        "listen: connections to take (default 1)",
    ),
    Opt::new(
        "wait",
        'w',
        true,
        Some("<secs>"),
        "give up after this long (default 30)",
    ),
];

const SPEC: ToolSpec<'static> = ToolSpec {
    opts: OPTS,
    exclude: "DGLKsS",
    usage_args: "listen | connect <dlid>",
    examples: &["listen", "connect 3 --hold 1000", "listen --reject 28"],
};

/// Runs `mad cm`.
///
/// # Errors
/// Usage errors, no port, and a connection that was not made and ended
/// cleanly.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let p = ibdiag::parse(inv, &SPEC)?;
    let mut sid = cma::service_id(PortSpace::Tcp, 7471);
    let (mut reject, mut qpn, mut hold, mut count, mut wait) = (None, 1u32, 0u64, 1u64, 30u64);
    for (k, v) in &p.custom {
        let text = v.as_deref().unwrap_or("");
        let n = c_strtoul_full(text)
            .ok_or_else(|| CliError::Usage(format!("cm: {text:?} is not a number")))?;
        match *k {
            k if k == i32::from(b'S') => sid = n,
            OPT_REJECT => reject = Some(RejectReason(u16::try_from(n).unwrap_or(u16::MAX))),
            OPT_QPN => qpn = u32::try_from(n).unwrap_or(u32::MAX),
            OPT_HOLD => hold = n,
            k if k == i32::from(b'n') => count = n.max(1),
            _ => wait = n,
        }
    }
    if p.common.json {
        return Err(CliError::Usage(
            "cm: prints events as text lines; --json is not supported".into(),
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(wait);
    let mut session = ibdiag::open_session(inv, &p.common)?;
    let cm = CmService::start(session.runtime(), CmConfig::default())
        .map_err(|e| CliError::Failed(format!("cm: {e}")))?;
    let r = match (p.args.first().map(String::as_str), p.args.get(1)) {
        (Some("listen"), None) => {
            let lid = session.port_attrs().lid;
            inv.io
                .out(&format!("listening on service {sid:#x} at LID {lid}\n"));
            listen(inv, &cm, sid, reject, qpn, count, deadline)
        }
        (Some("connect"), d) => {
            // On the built-in fabric with no LID: a peer listening in this
            // process, at the next free CA port.
            let peer = match (d, session.backend()) {
                (None, Backend::Sim(sim)) => Some(sim_peer(sim, sid, qpn)?),
                (None, _) => {
                    return Err(CliError::Usage(
                        "cm: connect needs a destination LID".into(),
                    ))
                }
                _ => None,
            };
            let dlid = match (d, &peer) {
                (_, Some(p)) => p.lid,
                (Some(d), None) => c_strtoul_full(d)
                    .and_then(|v| u16::try_from(v).ok())
                    .ok_or_else(|| CliError::Usage(format!("cm: bad destination LID {d:?}")))?,
                (None, None) => 0,
            };
            let slid = session.port_attrs().lid;
            let path = match session
                .sa()
                .map_err(|e| e.to_string())
                .and_then(|sa| resolve_route(sa, slid, dlid).map_err(|e| e.to_string()))
            {
                Ok(path) => path,
                Err(e) => {
                    inv.io.err(&format!(
                        "# no PathRecord ({e}); using a subnet-local path\n"
                    ));
                    CmPath {
                        local_lid: slid,
                        remote_lid: dlid,
                        subnet_local: true,
                        packet_life_time: 18,
                        mtu: 3,
                        pkey: 0xFFFF,
                        ..CmPath::default()
                    }
                }
            };
            let r = connect(
                inv,
                &cm,
                ConnectParams::new(sid, qpn, 0, path),
                hold,
                deadline,
            );
            if let Some(p) = peer {
                p.finish(inv);
            }
            r
        }
        _ => Err(CliError::Usage(
            "cm: usage: mad cm listen | mad cm connect <dlid>".into(),
        )),
    };
    drop(cm);
    let _ = session.close();
    r
}

/// A listener on another port of the built-in fabric, in this process,
/// accepting every REQ on a thread of its own; its events are printed
/// after the run, marked `peer`.
struct SimPeer {
    lid: u16,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(ConnId, CmEvent)>>,
    _rt: Runtime,
}

fn sim_peer(sim: &SimFabric, sid: u64, qpn: u32) -> Result<SimPeer, CliError> {
    let failed = |e: String| CliError::Failed(format!("cm: peer: {e}"));
    // The first CA port nobody uses (the session holds one already).
    let ep = sim
        .subnet
        .fabric()
        .nodes()
        .iter()
        .filter(|n| n.kind == mad_sim::topology::NodeKind::Ca)
        .find_map(|n| sim.attach((n.index, 1)).ok())
        .ok_or_else(|| failed("no free CA port".into()))?;
    let rt = Runtime::start(ep, EngineConfig::default()).map_err(|e| failed(e.to_string()))?;
    let lid = rt.port_attrs().lid;
    let cm = CmService::start(&rt, CmConfig::default()).map_err(|e| failed(e.to_string()))?;
    cm.listen(sid).map_err(|e| failed(e.to_string()))?;
    let stop = Arc::new(AtomicBool::new(false));
    let halt = stop.clone();
    let thread = std::thread::spawn(move || {
        let mut seen: Vec<(ConnId, CmEvent)> = Vec::new();
        // Once told to stop, the peer still waits (up to 5 s) for its
        // connections to end.
        let mut stop_by = None;
        loop {
            if halt.load(Ordering::Relaxed) {
                let by = *stop_by.get_or_insert_with(|| Instant::now() + Duration::from_secs(5));
                let busy = seen
                    .iter()
                    .any(|(_, e)| matches!(e, CmEvent::ConnectRequest { .. }))
                    && !seen.iter().any(|(_, e)| {
                        matches!(
                            e,
                            CmEvent::TimewaitExit
                                | CmEvent::Rejected { .. }
                                | CmEvent::ConnectError { .. }
                        )
                    });
                if !busy || Instant::now() > by {
                    break;
                }
            }
            if let Some((id, e)) = cm.next_event(Duration::from_millis(20)) {
                if matches!(e, CmEvent::ConnectRequest { .. }) {
                    let _ = cm.accept(
                        id,
                        AcceptParams {
                            qpn,
                            rnr_retry_count: 7,
                            ..AcceptParams::default()
                        },
                    );
                }
                seen.push((id, e));
            }
        }
        seen
    });
    Ok(SimPeer {
        lid,
        stop,
        thread,
        _rt: rt,
    })
}

impl SimPeer {
    /// Stops the peer (once its connection has ended) and prints its
    /// events.
    fn finish(self, inv: &mut Invocation<'_, '_>) {
        self.stop.store(true, Ordering::Relaxed);
        let seen = self.thread.join().unwrap_or_default();
        for (id, e) in &seen {
            inv.io.out("peer ");
            print(inv, *id, e);
        }
    }
}

fn describe(info: &ConnInfo) -> String {
    format!(
        "remote LID {} QPN {:#x} PSN {:#x} CA {:#018x}, MTU code {}, responder resources {}, initiator depth {}",
        info.path.remote_lid,
        info.remote_qpn,
        info.remote_psn,
        info.remote_ca_guid,
        info.path.mtu,
        info.responder_resources,
        info.initiator_depth,
    )
}

/// Prints one event as rdma_cm names it.
fn print(inv: &mut Invocation<'_, '_>, id: ConnId, e: &CmEvent) {
    let line = match e {
        CmEvent::ConnectRequest { listener, info } => {
            format!(
                "CONNECT_REQUEST service {:#x}: {}",
                listener.0,
                describe(info)
            )
        }
        CmEvent::ConnectResponse { info } => format!("CONNECT_RESPONSE {}", describe(info)),
        CmEvent::Established { info } => format!("ESTABLISHED {}", describe(info)),
        CmEvent::Rejected { reason, .. } => format!("REJECTED reason {} ({reason})", reason.0),
        CmEvent::Unreachable => "UNREACHABLE".to_owned(),
        CmEvent::ConnectError { why } => format!("CONNECT_ERROR {why}"),
        CmEvent::Disconnected { .. } => "DISCONNECTED".to_owned(),
        CmEvent::TimewaitExit => "TIMEWAIT_EXIT".to_owned(),
        CmEvent::DeviceRemoval => "DEVICE_REMOVAL".to_owned(),
    };
    inv.io.out(&format!("{:#010x} {line}\n", id.0));
}

/// The next event before `deadline`, printed.
fn next(
    inv: &mut Invocation<'_, '_>,
    cm: &CmService,
    deadline: Instant,
) -> Result<(ConnId, CmEvent), CliError> {
    let left = deadline.saturating_duration_since(Instant::now());
    let (id, e) = cm
        .next_event(left)
        .ok_or_else(|| CliError::Failed("cm: timed out waiting for an event".into()))?;
    print(inv, id, &e);
    Ok((id, e))
}

fn listen(
    inv: &mut Invocation<'_, '_>,
    cm: &CmService,
    sid: u64,
    reject: Option<RejectReason>,
    qpn: u32,
    count: u64,
    deadline: Instant,
) -> Result<(), CliError> {
    cm.listen(sid)
        .map_err(|e| CliError::Failed(format!("cm: {e}")))?;
    let mut ended = 0;
    while ended < count {
        let (id, e) = next(inv, cm, deadline)?;
        let r = match e {
            CmEvent::ConnectRequest { .. } => match reject {
                Some(reason) => cm.reject(id, reason, &[]).map(|()| ended += 1),
                None => cm.accept(
                    id,
                    AcceptParams {
                        qpn,
                        rnr_retry_count: 7,
                        ..AcceptParams::default()
                    },
                ),
            },
            CmEvent::TimewaitExit | CmEvent::ConnectError { .. } | CmEvent::Rejected { .. } => {
                ended += 1;
                Ok(())
            }
            _ => Ok(()),
        };
        r.map_err(|e| CliError::Failed(format!("cm: {e}")))?;
    }
    Ok(())
}

fn connect(
    inv: &mut Invocation<'_, '_>,
    cm: &CmService,
    params: ConnectParams,
    hold_ms: u64,
    deadline: Instant,
) -> Result<(), CliError> {
    let id = cm
        .connect(params)
        .map_err(|e| CliError::Failed(format!("cm: {e}")))?;
    loop {
        let (_, e) = next(inv, cm, deadline)?;
        match e {
            CmEvent::Established { .. } => break,
            CmEvent::Rejected { .. }
            | CmEvent::Unreachable
            | CmEvent::ConnectError { .. }
            | CmEvent::DeviceRemoval => {
                return Err(CliError::Exit(1));
            }
            _ => {}
        }
    }
    std::thread::sleep(Duration::from_millis(hold_ms));
    cm.disconnect(id, &[])
        .map_err(|e| CliError::Failed(format!("cm: {e}")))?;
    while !matches!(next(inv, cm, deadline)?.1, CmEvent::TimewaitExit) {}
    Ok(())
}
