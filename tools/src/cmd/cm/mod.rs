//! `mad cm`: make or take one InfiniBand connection with madstack's
//! connection manager (`mad_cm`) and print its events as rdma_cm names
//! them, for trying the CM by hand on any transport (what `ucmatose` /
//! `rping` are for librdmacm, without data transfer).
//!
//! ```text
//! mad [--sim|--ibsim|-C CA -P PORT] cm listen [-S SID] [--reject REASON] [--delay MS] [--hold MS] [--qpn N] [-n COUNT] [-w SECS]
//! mad [--sim|--ibsim|-C CA -P PORT] cm connect DLID|DGID [-S SID] [--qpn N] [-n COUNT] [--cma SRC,DST] [--no-qp] [--hold MS] [--retries N] [--response-timeout EXP] [-w SECS]
//! ```
//! `-S`: the service ID (default: rdma_cm's TCP port space, port 7471 —
//! `0x0000000001061d2f`, what `rping` uses). `listen` accepts every REQ
//! (or rejects it with `--reject`, a REJ reason number; or MRAs it and
//! accepts `--delay` ms later), disconnects `--hold` ms after a connection
//! is established (if given), and stops after `-n` connections have ended
//! (default 1). `connect` makes `-n` connections in turn from the one QP
//! (the next as soon as the last is disconnected; one rejected as stale is
//! asked again after this side's timewaits). It resolves the route through the SA (a bare
//! subnet-local path when no SA answers) for a LID, or builds a RoCE path
//! for a GID (no LIDs, no SA: the port's GID, the MTU of its Ethernet
//! device), connects, holds the connection `--hold` ms (ending early if
//! the peer disconnects), disconnects and waits out timewait.
//! `--retries` / `--response-timeout` are the REQ's Max CM Retries and CM
//! response timeout (4.096 µs × 2^EXP, announced and expected; defaults
//! 15 and 20, as rdma_cm). `--cma` puts rdma_cm's private-data header
//! (IP version, the two addresses, the source port) in the REQ, which a
//! kernel rdma_cm listener needs. `--no-qp` behaves as an rdma_cm ID
//! without a QP: the REP is reported as CONNECT_RESPONSE and the RTU
//! follows it (`rdma_establish`). Each `disconnect` this side starts prints
//! `disconnecting`. The CM is madstack's own: no QP is created, so the
//! QPN announced is the one given with `--qpn` (default 1); the events
//! print what a verbs user would move its QP with. With `-v` each
//! DISCONNECTED names its cause (`DREQ received in state DREQ sent` when
//! the two sides' DREQs crossed). When the device goes away (`rdma link
//! del`) every connection and the listener print DEVICE_REMOVAL and the
//! command closes the device and exits. Exit status 0 when the
//! connection was made and ended cleanly, 1 when it was rejected,
//! unreachable or failed, or the device was removed. `-w`, `--hold` and
//! `--delay` take up to ten years (`MAX_SECS`); more, or a negative
//! number, is a usage error (status 2). `--json` collects the events for
//! one JSON object at the end (its shape in `report`).

mod report;

use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mad_agents::{EngineConfig, Runtime};

use mad_cm::service::{resolve_route, CmService};
use mad_cm::{AcceptParams, CmConfig, CmEvent, CmPath, ConnId, ConnectParams};
use mad_core::wire::cm::cma::{self, CmaHeader, PortSpace};
use mad_core::wire::cm::RejectReason;
use mad_core::wire::Repr;

use crate::cnum::c_strtoul_full;
use crate::command::{CliError, Invocation};
use crate::ibdiag::{self, Opt, ToolSpec};
use crate::json::{u64_hex, Json, JsonExt};
use crate::session::sim::SimFabric;
use crate::session::Backend;
use report::Report;

const OPT_REJECT: i32 = 1;
const OPT_QPN: i32 = 2;
const OPT_HOLD: i32 = 3;
const OPT_DELAY: i32 = 4;
const OPT_RETRIES: i32 = 5;
const OPT_RESPONSE_TIMEOUT: i32 = 6;
const OPT_CMA: i32 = 7;
const OPT_NO_QP: i32 = 8;

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
        "disconnect this long after the connection is established",
    ),
    Opt::long(
        "delay",
        OPT_DELAY,
        true,
        Some("<ms>"),
        "listen: MRA each REQ and accept it this much later",
    ),
    Opt::long(
        "retries",
        OPT_RETRIES,
        true,
        Some("<n>"),
        "connect: REQ / DREQ resends (default 15)",
    ),
    Opt::long(
        "response-timeout",
        OPT_RESPONSE_TIMEOUT,
        true,
        Some("<exp>"),
        "CM response timeout, 4.096 us x 2^exp (default 20)",
    ),
    Opt::long(
        "cma",
        OPT_CMA,
        true,
        Some("<src-ip>,<dst-ip>"),
        "connect: carry rdma_cm's header (these addresses) in the REQ",
    ),
    Opt::long(
        "no-qp",
        OPT_NO_QP,
        false,
        None,
        "connect: as an rdma_cm ID without a QP: CONNECT_RESPONSE, then the RTU",
    ),
    Opt::new(
        "count",
        'n',
        true,
        Some("<n>"),
        "connections to take / make (default 1)",
    ),
    Opt::new(
        "wait",
        'w',
        true,
        Some("<secs>"),
        "give up after this long (default 30)",
    ),
];

/// No `-e`: the CM's errors are its events, printed anyway.
const SPEC: ToolSpec<'static> = ToolSpec {
    opts: OPTS,
    exclude: "DGLKsSe",
    usage_args: "listen | connect <dlid|dgid>",
    examples: &[
        "listen",
        "connect 3 --hold 1000",
        "listen --reject 28",
        "connect fe80::2 --retries 2",
    ],
};

/// What the command line asks of either side.
struct Settings {
    sid: u64,
    reject: Option<RejectReason>,
    qpn: u32,
    hold: Option<Duration>,
    delay: Option<Duration>,
    count: u64,
    retries: u8,
    response_timeout: u8,
    deadline: Instant,
    /// Where the events go (text lines or `--json`).
    report: Report,
}

/// The longest `-w`, `--hold` or `--delay`: ten years, in seconds.
const MAX_SECS: u64 = 10 * 365 * 24 * 3600;

/// `text` as a number from 0 to `max` (a minus sign refused: strtoul
/// would wrap it), else a usage error naming the option.
fn bounded(text: &str, option: &str, max: u64) -> Result<u64, CliError> {
    bounded_unit(text, option, "a number", max)
}

fn bounded_unit(text: &str, option: &str, unit: &str, max: u64) -> Result<u64, CliError> {
    c_strtoul_full(text)
        .filter(|n| *n <= max && !text.trim_start().starts_with('-'))
        .ok_or_else(|| {
            CliError::Usage(format!(
                "cm: {option} {text:?}: want {unit} from 0 to {max}"
            ))
        })
}

/// `text` as a duration in milliseconds (`millis`) or seconds, up to
/// [`MAX_SECS`], else a usage error naming the option.
fn duration(text: &str, option: &str, millis: bool) -> Result<Duration, CliError> {
    if millis {
        bounded_unit(text, option, "milliseconds", MAX_SECS * 1000).map(Duration::from_millis)
    } else {
        bounded_unit(text, option, "seconds", MAX_SECS).map(Duration::from_secs)
    }
}

/// Runs `mad cm`.
///
/// # Errors
/// Usage errors, no port, and a connection that was not made and ended
/// cleanly.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let p = ibdiag::parse(inv, &SPEC)?;
    let mut s = Settings {
        sid: cma::service_id(PortSpace::Tcp, 7471),
        reject: None,
        qpn: 1,
        hold: None,
        delay: None,
        count: 1,
        retries: 15,
        response_timeout: 20,
        deadline: Instant::now(),
        report: Report::new(p.common.verbose > 0, p.common.json),
    };
    let mut wait = Duration::from_secs(30);
    let mut cma_addrs = None;
    let mut auto_rtu = true;
    for (k, v) in &p.custom {
        let text = v.as_deref().unwrap_or("");
        if *k == OPT_CMA {
            cma_addrs = Some(text);
            continue;
        }
        if *k == OPT_NO_QP {
            auto_rtu = false;
            continue;
        }
        let n = c_strtoul_full(text)
            .ok_or_else(|| CliError::Usage(format!("cm: {text:?} is not a number")))?;
        match *k {
            k if k == i32::from(b'S') => s.sid = n,
            OPT_REJECT => s.reject = Some(RejectReason(bounded(text, "--reject", 0xFFFF)? as u16)),
            OPT_QPN => s.qpn = bounded(text, "--qpn", 0xFF_FFFF)? as u32,
            OPT_HOLD => s.hold = Some(duration(text, "--hold", true)?),
            OPT_DELAY => s.delay = Some(duration(text, "--delay", true)?),
            OPT_RETRIES => s.retries = bounded(text, "--retries", 15)? as u8,
            OPT_RESPONSE_TIMEOUT => {
                s.response_timeout = bounded(text, "--response-timeout", 31)? as u8;
            }
            k if k == i32::from(b'n') => s.count = n.max(1),
            _ => wait = duration(text, "-w", false)?,
        }
    }
    let private_data = match cma_addrs {
        Some(text) => cma_header(text, s.sid)?,
        None => Vec::new(),
    };
    s.deadline = Instant::now() + wait;
    let mut session = ibdiag::open_session(inv, &p.common)?;
    let defaults = CmConfig::default();
    let cfg = CmConfig {
        response_timeout: s.response_timeout,
        // A request MRAed for --delay is kept that long (and a little
        // more) for this side's own accept.
        max_user_wait: defaults
            .max_user_wait
            .max(s.delay.unwrap_or_default() + Duration::from_secs(10)),
        ..defaults
    };
    let cm = CmService::start(session.runtime(), cfg)
        .map_err(|e| CliError::Failed(format!("cm: {e}")))?;
    let mode = p.args.first().cloned().unwrap_or_default();
    let a = session.port_attrs();
    let local = Json::obj()
        .with("lid", Json::from(a.lid))
        .with("gid", Json::String(Ipv6Addr::from(a.gid()).to_string()));
    let r = match (p.args.first().map(String::as_str), p.args.get(1)) {
        (Some("listen"), None) => {
            cm.listen(s.sid)
                .map_err(|e| CliError::Failed(format!("cm: {e}")))?;
            if !p.common.json {
                inv.io.out(&format!(
                    "listening on service {:#x} at LID {} GID {}\n",
                    s.sid,
                    a.lid,
                    Ipv6Addr::from(a.gid())
                ));
            }
            listen(inv, &cm, &s)
        }
        (Some("connect"), d) => {
            // On the built-in fabric with no LID: a peer listening in this
            // process, at the next free CA port.
            let peer = match (d, session.backend()) {
                (None, Backend::Sim(sim)) => Some(sim_peer(sim, s.sid, s.qpn)?),
                _ => None,
            };
            let path = match (d, &peer) {
                (_, Some(p)) => lid_path(inv, &mut session, p.lid),
                (Some(d), None) if d.contains(':') => roce_path(inv, &session, d)?,
                (Some(d), None) => {
                    let dlid = c_strtoul_full(d)
                        .and_then(|v| u16::try_from(v).ok())
                        .ok_or_else(|| CliError::Usage(format!("cm: bad destination LID {d:?}")))?;
                    lid_path(inv, &mut session, dlid)
                }
                (None, None) => {
                    return Err(CliError::Usage(
                        "cm: connect needs a destination LID or GID".into(),
                    ))
                }
            };
            let params = ConnectParams {
                max_cm_retries: s.retries,
                remote_cm_response_timeout: s.response_timeout,
                private_data,
                auto_rtu,
                ..ConnectParams::new(s.sid, s.qpn, 0, path)
            };
            let r = connect(inv, &cm, params, &s);
            if let Some(p) = peer {
                p.finish(inv, &s.report);
            }
            r
        }
        _ => Err(CliError::Usage(
            "cm: usage: mad cm listen | mad cm connect <dlid|dgid>".into(),
        )),
    };
    drop(cm);
    let _ = session.close();
    if p.common.json && matches!(mode.as_str(), "listen" | "connect") {
        let body = Json::obj()
            .with("command", Json::String("cm".into()))
            .with("mode", Json::String(mode))
            .with("service_id", u64_hex(s.sid))
            .with("local", local)
            .with("events", Json::Array(s.report.take_json()));
        ibdiag::print_json(inv, &body);
    }
    r
}

/// rdma_cm's private-data header for `--cma SRC,DST` (both IPv4 or both
/// IPv6); the source port is the service ID's port, as a client bound to
/// it would send.
fn cma_header(text: &str, sid: u64) -> Result<Vec<u8>, CliError> {
    use std::net::IpAddr;
    let bad = |why: String| CliError::Usage(format!("cm: --cma {text:?}: {why}"));
    let (src, dst) = text
        .split_once(',')
        .ok_or_else(|| bad("want <src-ip>,<dst-ip>".into()))?;
    let ip = |a: &str| {
        a.trim()
            .parse::<IpAddr>()
            .map_err(|e| bad(format!("{a:?}: {e}")))
    };
    let port = cma::split_service_id(sid).map_or(0, |(_, p)| p);
    let h = match (ip(src)?, ip(dst)?) {
        (IpAddr::V4(s), IpAddr::V4(d)) => CmaHeader::ipv4(s, d, port),
        (IpAddr::V6(s), IpAddr::V6(d)) => CmaHeader::ipv6(s, d, port),
        _ => return Err(bad("the two addresses are of different IP versions".into())),
    };
    let mut out = vec![0u8; CmaHeader::LEN];
    h.emit(&mut out).map_err(|e| bad(e.to_string()))?;
    Ok(out)
}

/// The route to `dlid` from the SA's PathRecord, else a bare subnet-local
/// path (said on stderr).
fn lid_path(
    inv: &mut Invocation<'_, '_>,
    session: &mut crate::session::Session,
    dlid: u16,
) -> CmPath {
    let slid = session.port_attrs().lid;
    match session
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
    }
}

/// A RoCE path to the port whose GID is `dgid`: no LID, no SA; this
/// port's GID and the MTU of its Ethernet device (from sysfs).
fn roce_path(
    inv: &mut Invocation<'_, '_>,
    session: &crate::session::Session,
    dgid: &str,
) -> Result<CmPath, CliError> {
    let gid: Ipv6Addr = dgid
        .parse()
        .map_err(|e| CliError::Usage(format!("cm: bad destination GID {dgid:?}: {e}")))?;
    let a = session.port_attrs();
    if a.lid != 0 {
        return Err(CliError::Usage(format!(
            "cm: {} port {} has LID {}: a GID destination is for RoCE ports (no LIDs); name the peer by LID",
            a.ca_name, a.port_num, a.lid
        )));
    }
    let mtu = match netdev_mtu(&a.ca_name, a.port_num) {
        Ok(m) => m,
        Err(e) => {
            inv.io
                .err(&format!("# {e}; assuming an Ethernet MTU of 1500\n"));
            1500
        }
    };
    Ok(CmPath::roce(a.gid(), gid.octets(), mtu))
}

/// The MTU of the Ethernet device under RoCE port `port` of `ca`.
fn netdev_mtu(ca: &str, port: u8) -> Result<u32, String> {
    let ndev = format!("/sys/class/infiniband/{ca}/ports/{port}/gid_attrs/ndevs/0");
    let name = std::fs::read_to_string(&ndev).map_err(|e| format!("cannot read {ndev}: {e}"))?;
    let mtu = format!("/sys/class/net/{}/mtu", name.trim());
    std::fs::read_to_string(&mtu)
        .map_err(|e| format!("cannot read {mtu}: {e}"))?
        .trim()
        .parse()
        .map_err(|e| format!("{mtu}: {e}"))
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
        .fabric
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
                    let _ = cm.accept(id, accept_params(qpn));
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
    fn finish(self, inv: &mut Invocation<'_, '_>, report: &Report) {
        self.stop.store(true, Ordering::Relaxed);
        let seen = self.thread.join().unwrap_or_default();
        for (id, e) in &seen {
            report.event(inv, "peer", *id, e);
        }
    }
}

/// The next event before the command's deadline, printed.
fn next(
    inv: &mut Invocation<'_, '_>,
    cm: &CmService,
    s: &Settings,
) -> Result<(ConnId, CmEvent), CliError> {
    next_by(inv, cm, s.deadline, s)?
        .ok_or_else(|| CliError::Failed("cm: timed out waiting for an event".into()))
}

/// The next event before `until` (printed), or `None` when `until` comes
/// first; an error when the command's `deadline` passes.
fn next_by(
    inv: &mut Invocation<'_, '_>,
    cm: &CmService,
    until: Instant,
    s: &Settings,
) -> Result<Option<(ConnId, CmEvent)>, CliError> {
    let deadline = s.deadline;
    let now = Instant::now();
    if now >= deadline {
        return Err(CliError::Failed(
            "cm: timed out waiting for an event".into(),
        ));
    }
    let left = until.min(deadline).saturating_duration_since(now);
    let Some((id, e)) = cm.next_event(left) else {
        return if Instant::now() >= deadline {
            Err(CliError::Failed(
                "cm: timed out waiting for an event".into(),
            ))
        } else {
            Ok(None)
        };
    };
    s.report.event(inv, "local", id, &e);
    Ok(Some((id, e)))
}

/// Disconnects `id` unless the peer already has.
fn disconnect(
    inv: &mut Invocation<'_, '_>,
    cm: &CmService,
    id: ConnId,
    s: &Settings,
) -> Result<(), CliError> {
    if cm.state(id) != Some(mad_cm::State::Established) {
        return Ok(());
    }
    s.report
        .step(inv, id, "disconnecting", "disconnecting", Json::obj());
    match cm.disconnect(id, &[]) {
        // The peer's DREQ got in between: nothing left to end.
        Ok(()) | Err(mad_cm::CmError::InvalidState { .. }) => Ok(()),
        Err(e) => Err(CliError::Failed(format!("cm: {e}"))),
    }
}

/// The accept every listener and the built-in peer answer with.
fn accept_params(qpn: u32) -> AcceptParams {
    AcceptParams {
        qpn,
        rnr_retry_count: 7,
        ..AcceptParams::default()
    }
}

/// The MRA service timeout exponent that covers `d` (4.096 µs × 2^exp).
fn service_timeout(d: Duration) -> u8 {
    (0..31u8)
        .find(|e| mad_core::wire::cm::timeout_duration(*e) >= d)
        .unwrap_or(31)
}

/// Takes the connections of `list` whose time has come by `now`.
fn due(list: &mut Vec<(Instant, ConnId)>, now: Instant) -> Vec<ConnId> {
    let (ready, later): (Vec<_>, Vec<_>) = list.drain(..).partition(|(at, _)| *at <= now);
    *list = later;
    ready.into_iter().map(|(_, id)| id).collect()
}

fn listen(inv: &mut Invocation<'_, '_>, cm: &CmService, s: &Settings) -> Result<(), CliError> {
    let failed = |e: mad_cm::CmError| CliError::Failed(format!("cm: {e}"));
    let mut ended = 0;
    // (when, connection): accepts after an MRA, disconnects after --hold.
    let mut accepts: Vec<(Instant, ConnId)> = Vec::new();
    let mut hangups: Vec<(Instant, ConnId)> = Vec::new();
    while ended < s.count {
        let now = Instant::now();
        for id in due(&mut accepts, now) {
            cm.accept(id, accept_params(s.qpn)).map_err(failed)?;
        }
        for id in due(&mut hangups, now) {
            disconnect(inv, cm, id, s)?;
        }
        let until = accepts
            .iter()
            .chain(&hangups)
            .map(|(at, _)| *at)
            .min()
            .unwrap_or(s.deadline);
        let Some((id, e)) = next_by(inv, cm, until, s)? else {
            continue;
        };
        match e {
            CmEvent::ConnectRequest { .. } => match (s.reject, s.delay) {
                (Some(reason), _) => {
                    cm.reject(id, reason, &[]).map_err(failed)?;
                    ended += 1;
                }
                (None, Some(d)) => {
                    let exp = service_timeout(d);
                    cm.delay(id, exp).map_err(failed)?;
                    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
                    let text = format!("MRA sent: service timeout {exp}, accepting in {ms} ms");
                    let fields = Json::obj()
                        .with("service_timeout", Json::from(exp))
                        .with("accept_in_ms", Json::from(ms));
                    s.report.step(inv, id, "MRA", &text, fields);
                    accepts.push((Instant::now() + d, id));
                }
                (None, None) => cm.accept(id, accept_params(s.qpn)).map_err(failed)?,
            },
            CmEvent::Established { .. } => {
                if let Some(h) = s.hold {
                    hangups.push((Instant::now() + h, id));
                }
            }
            CmEvent::TimewaitExit | CmEvent::ConnectError { .. } | CmEvent::Rejected { .. } => {
                // A request the peer gave up on is not accepted later.
                accepts.retain(|(_, a)| *a != id);
                ended += 1;
            }
            // The device is gone: every connection's removal is printed
            // (they come first), then the listener's; the work is cut short.
            CmEvent::ListenerRemoved { .. } => return Err(CliError::Exit(1)),
            _ => {}
        }
    }
    Ok(())
}

/// What `connect` keeps track of while it waits: timewaits ending,
/// connection `id` disconnected, the device gone (an error).
fn track(
    eid: ConnId,
    e: &CmEvent,
    id: ConnId,
    timewait: &mut Vec<ConnId>,
    disconnected: &mut bool,
) -> Result<(), CliError> {
    match e {
        CmEvent::TimewaitExit => timewait.retain(|t| *t != eid),
        CmEvent::Disconnected { .. } if eid == id => *disconnected = true,
        CmEvent::DeviceRemoval => return Err(CliError::Exit(1)),
        _ => {}
    }
    Ok(())
}

/// Makes `s.count` connections in turn from one QP (each starting as
/// soon as the one before is disconnected, as a user reusing its QP at
/// once would), holds each `--hold` ms (or until the peer disconnects),
/// then waits out every timewait. A REQ of a later connection rejected as
/// stale (the peer still holds the QP in timewait) is sent again once this
/// side's timewaits are over.
fn connect(
    inv: &mut Invocation<'_, '_>,
    cm: &CmService,
    params: ConnectParams,
    s: &Settings,
) -> Result<(), CliError> {
    let failed = |e: mad_cm::CmError| CliError::Failed(format!("cm: {e}"));
    // Connections of this run not yet out of timewait.
    let mut timewait: Vec<ConnId> = Vec::new();
    let mut made = 0;
    while made < s.count {
        let id = cm.connect(params.clone()).map_err(failed)?;
        let stale = loop {
            let (eid, e) = next(inv, cm, s)?;
            match e {
                CmEvent::TimewaitExit => timewait.retain(|t| *t != eid),
                CmEvent::Established { .. } if eid == id => break false,
                // --no-qp: the user would move its QP now (rdma_establish).
                CmEvent::ConnectResponse { .. } if eid == id => cm.establish(id).map_err(failed)?,
                CmEvent::Rejected { reason, .. }
                    if eid == id && made > 0 && reason == RejectReason::STALE_CONN =>
                {
                    break true
                }
                CmEvent::Rejected { .. }
                | CmEvent::Unreachable
                | CmEvent::ConnectError { .. }
                | CmEvent::DeviceRemoval => return Err(CliError::Exit(1)),
                _ => {}
            }
        };
        timewait.push(id);
        let mut disconnected = false;
        if stale {
            // Wait the old connection out, then ask again.
            while !timewait.is_empty() {
                let (eid, e) = next(inv, cm, s)?;
                track(eid, &e, id, &mut timewait, &mut disconnected)?;
            }
            continue;
        }
        // Hold the connection, unless the peer ends it first.
        let until = Instant::now() + s.hold.unwrap_or_default();
        while let Some((eid, e)) = next_by(inv, cm, until, s)? {
            track(eid, &e, id, &mut timewait, &mut disconnected)?;
        }
        if !disconnected {
            disconnect(inv, cm, id, s)?;
        }
        while !disconnected {
            let (eid, e) = next(inv, cm, s)?;
            track(eid, &e, id, &mut timewait, &mut disconnected)?;
        }
        made += 1;
    }
    let mut ended = true;
    while !timewait.is_empty() {
        let (eid, e) = next(inv, cm, s)?;
        track(eid, &e, ConnId(0), &mut timewait, &mut ended)?;
    }
    Ok(())
}
