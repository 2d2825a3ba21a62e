//! A madstack RMPP peer on a real port (umad): the program madstack's
//! real-kernel tests run inside their VM, and a way to try RMPP between two
//! ports by hand.
//!
//! It speaks vendor range-2 class 0x30, class version 1, OUI 00:14:05,
//! attribute 0xff10: requests are Set (0x02) and answers GetResp (0x81).
//! Data byte `i` of every message is [`pattern`]`(i)`, the pattern of the
//! C peer that drives the kernel's own RMPP (`tests/kvm/kpeer.c`).
//!
//! ```text
//! rmpp-peer recv    CA LEN COUNT SECS [REPLY_LEN]  receive COUNT messages of LEN data bytes;
//!                                                  answer each with one GetResp MAD (verdict
//!                                                  byte 0x4f = good), or with an RMPP GetResp
//!                                                  of REPLY_LEN pattern bytes
//! rmpp-peer send    CA DGID LEN COUNT TIMEOUT_MS [REPLY_LEN]
//!                                                  send COUNT RMPP Sets to DGID and wait for
//!                                                  each answer (a verdict MAD, or REPLY_LEN
//!                                                  pattern bytes)
//! rmpp-peer sa-serve CA RECORDS SECS              an SA responder serving RECORDS NodeRecords
//! rmpp-peer sa-get  CA DGID RECORDS               madstack's SA client: every NodeRecord of the SA at DGID
//! rmpp-peer events  CA AGENTS STOPFILE            AGENTS agents print every port event until
//!                                                  STOPFILE exists, then the port's GID
//! rmpp-peer claim   CA                           try to own class 0x30 / Set
//! rmpp-peer shared-fatal CA SINK_CA SINK_GID N    services on one shared port of CA (an SA
//!                                                  client, the CM, a user agent) with N user
//!                                                  sends and an SA request pending at a sink
//!                                                  on SINK_CA that never answers; prints
//!                                                  `SHARED pending`, then, once CA is removed
//!                                                  (`rdma link del`), how each ended
//! ```
//!
//! Every fact goes to stdout as one line starting with `PEER`; the exit
//! status is 0 only when everything asked for checked out.

use std::net::Ipv6Addr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mad_agents::sa::{SaClient, SaClientConfig, SaResponder, SaResponderConfig, StaticRecords};
use mad_agents::{AgentEvent, AgentSpec, EngineConfig, Runtime, SendRequest, SendStatus};
use mad_core::transport::umad::UmadTransport;
use mad_core::transport::{Address, Grh, Qp, GSI_QKEY};
use mad_core::wire::sa_records::NodeRecord;
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass, VENDOR_DATA_OFFSET};

const CLASS: MgmtClass = MgmtClass(0x30);
const OUI: u32 = 0x00_1405;
const GOOD: u8 = 0x4f;
const BAD: u8 = 0xee;

/// Data byte `i` of every test message.
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(13).wrapping_add(5).wrapping_add(i >> 9)) as u8
}

/// The first index where `data` differs from the pattern, if any.
fn pattern_mismatch(data: &[u8]) -> Option<usize> {
    data.iter()
        .enumerate()
        .find(|(i, b)| **b != pattern(*i))
        .map(|(i, _)| i)
}

/// A vendor message: the 40-byte header, then `data`.
fn vendor_message(method: Method, response: bool, tid: u64, data: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; VENDOR_DATA_OFFSET];
    let mut head = Mad::new_unchecked(&mut m[..]);
    head.set_request(CLASS, 1, method, AttributeId(0xff10), 0);
    head.set_response_bit(response);
    head.set_tid(tid);
    m[37..40].copy_from_slice(&OUI.to_be_bytes()[1..]);
    m.extend_from_slice(data);
    if m.len() < 256 {
        m.resize(256, 0);
    }
    m
}

/// QP1 of the port whose GID is `gid`, through a GRH (RoCE needs one).
fn gid_address(gid: &str) -> Result<Address, String> {
    let ip: Ipv6Addr = gid.parse().map_err(|e| format!("bad GID {gid:?}: {e}"))?;
    Ok(Address {
        grh: Some(Grh {
            gid: ip.octets(),
            hop_limit: 64,
            ..Grh::default()
        }),
        ..Address::gsi(0)
    })
}

fn open(ca: &str) -> Result<Runtime, String> {
    let t = UmadTransport::open(Some(ca), 1).map_err(|e| e.to_string())?;
    Runtime::start(t, EngineConfig::default()).map_err(|e| format!("runtime: {e}"))
}

/// The engine's and the port's counters and the port's last error, on one line.
fn stats(rt: &Runtime) -> String {
    let (port, last) =
        rt.with_engine(|e| (e.port().stats(), e.port().last_error().map(str::to_owned)));
    format!(
        "engine {:?}; port {port:?}; last port error {last:?}",
        rt.engine_stats()
    )
}

fn num<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T, String> {
    let s = args.get(i).ok_or_else(|| format!("missing {what}"))?;
    s.parse()
        .map_err(|_| format!("{what} must be a number, not {s:?}"))
}

fn arg<'a>(args: &'a [String], i: usize, what: &str) -> Result<&'a str, String> {
    args.get(i)
        .map(String::as_str)
        .ok_or_else(|| format!("missing {what}"))
}

fn recv(args: &[String]) -> Result<bool, String> {
    let rt = open(arg(args, 0, "CA")?)?;
    let len: usize = num(args, 1, "LEN")?;
    let count: usize = num(args, 2, "COUNT")?;
    let secs: u64 = num(args, 3, "SECS")?;
    let reply_len: usize = if args.len() > 4 {
        num(args, 4, "REPLY_LEN")?
    } else {
        0
    };
    // Get too: a double-sided transfer's request is a Get, so that the
    // requester's ACKs of the GetResp segments (the response's method with
    // the response bit cleared) reach this agent through the kernel.
    let spec = AgentSpec::requests("kernel-peer-recv", CLASS, 1, &[Method::GET, Method::SET])
        .with_oui(OUI)
        .with_rmpp();
    let (agent, rx) = rt.register_channel(spec).map_err(|e| e.to_string())?;
    println!("PEER ready");
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut good = 0;
    let mut seen = 0;
    while seen < count {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(ev) = rx.recv_timeout(left) else {
            println!("PEER timeout after {seen} of {count} messages");
            break;
        };
        match ev {
            AgentEvent::Received(msg) => {
                let bytes = msg.bytes();
                let data = bytes.get(VENDOR_DATA_OFFSET..).unwrap_or(&[]);
                let ok = data.len() == len && pattern_mismatch(data).is_none();
                let src = msg.src();
                println!(
                    "PEER {} message {seen}: {} data bytes (want {len}), first mismatch {:?}, from lid {} grh {}",
                    if ok { "ok" } else { "bad" },
                    data.len(),
                    pattern_mismatch(&data[..data.len().min(len)]),
                    src.lid,
                    src.grh.map_or("none".to_owned(), |g| Ipv6Addr::from(g.gid).to_string()),
                );
                seen += 1;
                good += usize::from(ok);
                let body: Vec<u8> = if ok && reply_len > 0 {
                    (0..reply_len).map(pattern).collect()
                } else {
                    vec![if ok { GOOD } else { BAD }]
                };
                let resp = vendor_message(Method::GET, true, msg.tid(), &body);
                let dest = Address {
                    qkey: GSI_QKEY,
                    ..*src
                };
                let done = agent
                    .handle()
                    .send_and_wait(SendRequest::new(resp, dest))
                    .map_err(|e| e.to_string())?;
                println!("PEER reply {}: {}", seen - 1, done.status);
            }
            AgentEvent::SendDone(_) => {}
            other => println!("PEER event {other:?}"),
        }
    }
    println!("PEER done {good} of {count}; {}", stats(&rt));
    Ok(good == count)
}

fn send(args: &[String]) -> Result<bool, String> {
    let rt = open(arg(args, 0, "CA")?)?;
    let dest = gid_address(arg(args, 1, "DGID")?)?;
    let len: usize = num(args, 2, "LEN")?;
    let count: usize = num(args, 3, "COUNT")?;
    let timeout = Duration::from_millis(num(args, 4, "TIMEOUT_MS")?);
    let reply_len: usize = if args.len() > 5 {
        num(args, 5, "REPLY_LEN")?
    } else {
        0
    };
    let spec = AgentSpec::send_only("kernel-peer-send", Qp::Qp1).with_rmpp();
    let (agent, _rx) = rt.register_channel(spec).map_err(|e| e.to_string())?;
    println!("PEER ready");
    let data: Vec<u8> = (0..len).map(pattern).collect();
    let mut good = 0;
    for n in 0..count {
        let started = Instant::now();
        // A request answered by a multi-segment response is a Get: the
        // kernel routes the responder's ACK-bearing requests by method.
        let method = if reply_len > 0 {
            Method::GET
        } else {
            Method::SET
        };
        // The absolute deadline covers the transfer too: a minute, for a
        // 1 MiB transfer on an emulated CPU.
        let req = SendRequest::new(vendor_message(method, false, 0, &data), dest)
            .expect_response(timeout, 2)
            .total_timeout(Duration::from_secs(60));
        let done = match agent.handle().send_and_wait(req) {
            Ok(done) => done,
            Err(e) => {
                // The kernel refused the write itself: the send never
                // existed and nothing completes, as with ib_post_send_mad.
                println!(
                    "PEER bad send {n}: refused after {} ms: {e}; {}",
                    started.elapsed().as_millis(),
                    stats(&rt)
                );
                continue;
            }
        };
        let took = started.elapsed().as_millis();
        let answer = done
            .response
            .as_ref()
            .map(|m| m.bytes().get(VENDOR_DATA_OFFSET..).unwrap_or(&[]).to_vec());
        let ok = done.status == SendStatus::Success
            && match &answer {
                Some(a) if reply_len == 0 => a.first() == Some(&GOOD),
                Some(a) => a.len() == reply_len && pattern_mismatch(a).is_none(),
                None => false,
            };
        println!(
            "PEER {} send {n}: status {} ({:?}) after {took} ms, answer {} data bytes",
            if ok { "ok" } else { "bad" },
            done.status,
            done.status,
            answer.as_ref().map_or(0, Vec::len),
        );
        good += usize::from(ok);
    }
    println!(
        "PEER done {good} of {count}; engine {:?}",
        rt.engine_stats()
    );
    Ok(good == count)
}

fn node_record(i: usize) -> NodeRecord {
    let mut r = NodeRecord {
        lid: u16::try_from(i + 1).unwrap_or(u16::MAX),
        ..NodeRecord::default()
    };
    r.node_info.node_guid = 0x0002_c903_0000_0000 | i as u64;
    r.node_info.port_guid = r.node_info.node_guid;
    r
}

fn sa_serve(args: &[String]) -> Result<bool, String> {
    let rt = open(arg(args, 0, "CA")?)?;
    let n: usize = num(args, 1, "RECORDS")?;
    let secs: u64 = num(args, 2, "SECS")?;
    let source = Arc::new(StaticRecords::new());
    let records: Vec<NodeRecord> = (0..n).map(node_record).collect();
    source.set_records(&records).map_err(|e| e.to_string())?;
    let sa =
        SaResponder::start(&rt, source, SaResponderConfig::default()).map_err(|e| e.to_string())?;
    println!("PEER ready");
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline && sa.stats().requests == 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the answer's transfer finish (its ACKs) before the port closes:
    // the request is counted before its answer is sent.
    let answered = || sa.agent().stats().is_some_and(|a| a.completed >= 1);
    while Instant::now() < deadline && !(answered() && sa.agent().outstanding() == 0) {
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("PEER served {:?}; {}", sa.stats(), stats(&rt));
    Ok(answered())
}

fn sa_get(args: &[String]) -> Result<bool, String> {
    let rt = open(arg(args, 0, "CA")?)?;
    let dest = gid_address(arg(args, 1, "DGID")?)?;
    let n: usize = num(args, 2, "RECORDS")?;
    // madstack's SA client, told where the SA is: on RoCE there is no SM
    // LID. The attempt timeout covers a 1 MB table on an emulated CPU.
    let sa = SaClient::new(
        &rt,
        SaClientConfig {
            sa_address: Some(dest),
            timeout: Duration::from_secs(15),
            retries: 2,
            receive_reports: false,
            ..SaClientConfig::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let table = match sa.all::<NodeRecord>() {
        Ok(t) => t,
        Err(e) => {
            println!(
                "PEER bad GetTable: {e} after {} ms; {}",
                started.elapsed().as_millis(),
                stats(&rt)
            );
            return Ok(false);
        }
    };
    let took = started.elapsed().as_millis();
    let wrong = table
        .records
        .iter()
        .enumerate()
        .find(|(i, r)| **r != node_record(*i))
        .map(|(i, _)| i);
    let ok = table.records.len() == n && wrong.is_none() && !table.truncated;
    println!(
        "PEER {} GetTable: {} records (want {n}), {} bytes, first wrong record {wrong:?}, {took} ms",
        if ok { "ok" } else { "bad" },
        table.records.len(),
        table.records.len() * usize::from(table.attr_offset) * 8,
    );
    Ok(ok)
}

fn events(args: &[String]) -> Result<bool, String> {
    let rt = open(arg(args, 0, "CA")?)?;
    let n: usize = num(args, 1, "AGENTS")?;
    let stop = arg(args, 2, "STOPFILE")?;
    let mut agents = Vec::new();
    for i in 0..n {
        let spec = AgentSpec::send_only(&format!("kernel-peer-events-{i}"), Qp::Qp1);
        agents.push(rt.register_channel(spec).map_err(|e| e.to_string())?);
    }
    println!("PEER ready");
    while !std::path::Path::new(stop).exists() {
        for (i, (_, rx)) in agents.iter().enumerate() {
            while let Some(ev) = rx.try_recv() {
                println!("PEER event agent {i} {ev:?}");
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for (i, (_, rx)) in agents.iter().enumerate() {
        while let Some(ev) = rx.try_recv() {
            println!("PEER event agent {i} {ev:?}");
        }
    }
    let a = rt.port_attrs();
    println!("PEER gid {}", Ipv6Addr::from(a.gid()));
    println!("PEER state {} lid {}", a.state, a.lid);
    Ok(true)
}

fn claim(args: &[String]) -> Result<bool, String> {
    let rt = open(arg(args, 0, "CA")?)?;
    let spec = AgentSpec::requests("kernel-peer-claim", CLASS, 1, &[Method::SET]).with_oui(OUI);
    match rt.register_channel(spec) {
        Ok(_) => {
            println!("PEER registered");
            Ok(true)
        }
        Err(e) => {
            println!("PEER refused: {e}");
            Ok(false)
        }
    }
}

/// Seed 002's device-fatal row on a shared port (seed 004): see the
/// module documentation. Prints `SHARED` lines; true when every pending
/// send ended in error exactly once, later posts failed at once, and
/// every service heard of the removal.
fn shared_fatal(args: &[String]) -> Result<bool, String> {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use mad_agents::SharedPort;
    use mad_cm::service::CmService;
    use mad_cm::{CmConfig, CmEvent};

    let ca = arg(args, 0, "CA")?;
    let sink_rt = open(arg(args, 1, "SINK_CA")?)?;
    let sink_addr = gid_address(arg(args, 2, "SINK_GID")?)?;
    let n: usize = num(args, 3, "N")?;
    // The sink takes the user's requests and the SA's and answers none.
    let (_sink, _sink_rx) = sink_rt
        .register_channel(AgentSpec::requests("sink", CLASS, 1, &[Method::SET]).with_oui(OUI))
        .map_err(|e| e.to_string())?;
    let sa_spec = AgentSpec::requests(
        "sink-sa",
        MgmtClass::SUBN_ADM,
        mad_core::wire::sa::SA_CLASS_VERSION,
        &[Method::GET, Method::GET_TABLE],
    );
    let (_sink_sa, _sink_sa_rx) = sink_rt
        .register_channel(sa_spec)
        .map_err(|e| e.to_string())?;

    let port = SharedPort::from_runtime(open(ca)?);
    let sa = Arc::new(
        SaClient::open(
            &port,
            SaClientConfig {
                sa_address: Some(sink_addr),
                timeout: Duration::from_millis(1500),
                retries: 3,
                ..SaClientConfig::default()
            },
        )
        .map_err(|e| e.to_string())?,
    );
    let cm = CmService::open(&port, CmConfig::default()).map_err(|e| e.to_string())?;
    cm.listen(0x1000).map_err(|e| e.to_string())?;
    // The user's agent counts every completion by send and every
    // DeviceFatal it hears.
    /// Each send's completions, and the DeviceFatal events heard.
    type Heard = (HashMap<u64, Vec<SendStatus>>, usize);
    let done: Arc<Mutex<Heard>> = Arc::default();
    let d2 = done.clone();
    let user = port
        .register(AgentSpec::send_only("shared-user", Qp::Qp1), move |ev| {
            let mut d = d2.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match ev {
                AgentEvent::SendDone(c) => d.0.entry(c.send.as_u64()).or_default().push(c.status),
                AgentEvent::DeviceFatal => d.1 += 1,
                _ => {}
            }
        })
        .map_err(|e| e.to_string())?;
    let mut sends = Vec::new();
    for i in 0..n {
        let req = SendRequest::new(vendor_message(Method::SET, false, 0, &[]), sink_addr)
            .expect_response(Duration::from_millis(1500), 3);
        let h = user.send(req).map_err(|e| format!("send {i}: {e}"))?;
        sends.push(h.id().as_u64());
    }
    let sa2 = sa.clone();
    let sa_request = std::thread::spawn(move || sa2.all::<NodeRecord>().map(|t| t.records.len()));
    let sa_busy = || sa.agent().outstanding() > 0;
    let until = |what: &str, cond: &dyn Fn() -> bool, secs: u64| {
        let end = Instant::now() + Duration::from_secs(secs);
        while !cond() {
            if Instant::now() > end {
                println!("SHARED gave up waiting: {what}");
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    };
    until("the SA request in flight", &sa_busy, 10);
    println!(
        "SHARED pending {} user sends, SA request in flight {}",
        user.outstanding(),
        sa_busy()
    );

    let heard_so_far = || {
        done.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    // Every user send completed exactly once (so far).
    let each_once = |d: &Heard| {
        sends
            .iter()
            .all(|s| d.0.get(s).is_some_and(|v| v.len() == 1))
    };
    let heard = || {
        let d = heard_so_far();
        d.1 > 0 && sa.is_port_dead() && cm.reset_stats().device_fatal > 0
    };
    let mut ok = until("DeviceFatal at every service", &heard, 120);
    // A send stops being outstanding when the engine completes it; its
    // completion reaches the callback a moment later, on the loop thread.
    ok &= until(
        "every user send completed and its completion delivered",
        &|| {
            user.outstanding() == 0 && {
                let d = heard_so_far();
                sends.iter().all(|s| d.0.contains_key(s))
            }
        },
        60,
    );
    let sa_result = sa_request
        .join()
        .map_err(|_| "the SA thread panicked".to_owned())?;
    println!("SHARED sa in flight ended: {sa_result:?}");
    let after = sa.all::<NodeRecord>();
    println!("SHARED sa after: {after:?}");
    ok &= matches!(after, Err(mad_agents::sa::SaError::PortDead)) && sa_result.is_err();
    let post = user.send(SendRequest::new(
        vendor_message(Method::SET, false, 0, &[]),
        sink_addr,
    ));
    match &post {
        Ok(h) => println!(
            "SHARED user post after: accepted as send {}",
            h.id().as_u64()
        ),
        Err(e) => println!("SHARED user post after: refused: {e}"),
    }
    ok &= post.is_err();
    {
        let d = heard_so_far();
        let once = each_once(&d);
        let failed = sends
            .iter()
            .filter_map(|s| d.0.get(s).and_then(|v| v.first()))
            .filter(|st| **st != SendStatus::Success)
            .count();
        let statuses: Vec<String> = sends
            .iter()
            .map(|s| d.0.get(s).map_or("none".into(), |v| format!("{v:?}")))
            .collect();
        println!(
            "SHARED user completions {} of {n}, each once {once}, in error {failed}: {}",
            d.0.len(),
            statuses.join(" ")
        );
        ok &= once && failed == n && d.0.len() == n;
        println!(
            "SHARED heard: user DeviceFatal {}, sa dead {}, cm device_fatal {}",
            d.1,
            sa.is_port_dead(),
            cm.reset_stats().device_fatal
        );
    }
    let mut removal = Vec::new();
    while let Some((_, e)) = cm.next_event(Duration::from_millis(200)) {
        removal.push(format!("{e:?}"));
        ok &= matches!(e, CmEvent::DeviceRemoval | CmEvent::ListenerRemoved { .. });
    }
    println!("SHARED cm events: {}", removal.join(", "));
    ok &= !removal.is_empty();
    println!("SHARED {}", stats(&port));
    // Every holder goes: the last closes the device, which lets the
    // removal finish.
    let watch = port.watch();
    drop((user, cm, port));
    drop(sa);
    println!(
        "SHARED closed: holders {}, joined {}",
        watch.holders(),
        watch.joined()
    );
    ok &= watch.joined();
    // Deregistration is synchronous: nothing reaches the callback now, so
    // a completion delivered twice, however late, is counted here.
    let once_at_close = each_once(&heard_so_far());
    println!("SHARED each once after close {once_at_close}");
    ok &= once_at_close;
    println!("SHARED done ok {ok}");
    Ok(ok)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or(&[]);
    let result = match args.first().map(String::as_str) {
        Some("recv") => recv(rest),
        Some("send") => send(rest),
        Some("sa-serve") => sa_serve(rest),
        Some("sa-get") => sa_get(rest),
        Some("events") => events(rest),
        Some("claim") => claim(rest),
        Some("shared-fatal") => shared_fatal(rest),
        _ => Err(
            "usage: rmpp-peer recv|send|sa-serve|sa-get|events|claim|shared-fatal ... \
                  (see the example's documentation)"
                .to_owned(),
        ),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            println!("PEER error: {e}");
            ExitCode::from(2)
        }
    }
}
