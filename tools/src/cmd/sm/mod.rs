//! `mad [TRANSPORT] sm [OPTIONS]`: SM-lite as a long-running subnet
//! manager on ibsim or a umad port, with the SA answering at its port.
//!
//! One transport, split by QP ([`split`]): this thread pumps the
//! SM's driver over the QP0 half; a shared port (an agent runtime) runs
//! the SA responder (fed from the SM's model after every sweep) over the
//! QP1 half, and both hold the port's soft reset ([`server::SmServer`]).
//! The log's key lines read like OpenSM's
//! ("Entering MASTER state", "SUBNET UP"); `--json` prints one JSON
//! object per event on stdout instead of the log on stderr.

pub mod conf;
pub mod guid2lid;
mod log;
pub mod server;
pub mod split;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mad_agents::sa::SaResponderConfig;
use mad_agents::EngineConfig;
use mad_core::transport::ibsim::{IbSimConfig, IbSimTransport};
use mad_core::transport::umad::{self, UmadTransport};
use mad_core::transport::Transport;
use mad_core::wire::{Method, MgmtClass};
use mad_sm::SmEvent;

use crate::command::{CliError, Invocation};
use crate::session::TransportChoice;
use conf::SmOpts;
use log::Log;
use serde_json::json;

/// Runs `mad sm`.
///
/// # Errors
/// Bad options (usage), a transport that cannot be opened, a failing
/// transport, or (with `-o`) a sweep that did not reach SUBNET UP.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let mut o = conf::parse(&inv.args).map_err(|e| CliError::Usage(format!("{e}\n")))?;
    if o.help {
        inv.io.out(conf::USAGE);
        return Ok(());
    }
    if let Some(path) = &o.create_config {
        std::fs::write(path, conf::default_config())
            .map_err(|e| CliError::Failed(format!("sm: cannot write {}: {e}", path.display())))?;
        return Ok(());
    }
    o.json |= inv.session.json;
    o.ca = o.ca.take().or_else(|| inv.session.ca.clone());
    o.port = o.port.or(inv.session.port);
    let stop = Arc::new(AtomicBool::new(false));
    let mut sig = Vec::new();
    for s in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let id = signal_hook::flag::register(s, stop.clone())
            .map_err(|e| CliError::Failed(format!("sm: cannot catch signal {s}: {e}")))?;
        sig.push(id);
    }
    let mut log = Log::open(&o, inv.io)?;
    if o.honor_guid2lid {
        honor_guid2lid(&mut o, &mut log)?;
    }
    if let Some((path, c)) = &o.partitions {
        let shown = path.display().to_string();
        for w in &c.warnings {
            log.line(
                &format!("Partitions file {shown}: {w}"),
                json!({"event": "partition_warning", "path": shown, "warning": w}),
            );
        }
        log.line(
            &format!("Partitions from {shown}: {} partitions", c.partitions.len()),
            json!({"event": "partitions", "path": shown, "partitions": c.partitions.len()}),
        );
    }
    let r = match &inv.session.transport {
        TransportChoice::IbSim => {
            let mut cfg = IbSimConfig::from_env();
            cfg.issm = true;
            let at = cfg.location();
            let t = IbSimTransport::attach(cfg).map_err(|e| {
                CliError::Failed(format!("sm: cannot attach to ibsim at {at}: {e}"))
            })?;
            if o.guid != 0 && t.port_attrs().port_guid != o.guid {
                return Err(CliError::Failed(format!(
                    "sm: ibsim attached at {} (port GUID {:#018x}), not GUID {:#018x}: ibsim picks \
                     the node by SIM_HOST",
                    t.port_attrs().ca_name,
                    t.port_attrs().port_guid,
                    o.guid
                )));
            }
            serve(t, true, &o, &mut log, &stop)
        }
        TransportChoice::Sim(topo) if inv.session.no_sm => {
            let t = sim_port(topo.as_deref(), inv.session.sim_node.as_deref(), &o)?;
            serve(t, false, &o, &mut log, &stop)
        }
        TransportChoice::Sim(_) => Err(CliError::Usage(
            "sm: the built-in fabric runs SM-lite already; add --no-sm (mad --sim --no-sm sm) \
             for a fabric with no SM of its own, or run mad sm with --ibsim or on a umad port \
             (-C CA -P PORT)\n"
                .to_owned(),
        )),
        TransportChoice::Umad | TransportChoice::Auto => {
            let (ca, port) = umad_port(&o)?;
            let mut t = UmadTransport::open(ca.as_deref(), port)
                .map_err(|e| CliError::Failed(format!("sm: {e}")))?;
            claim_sm_port(&mut t)?;
            serve(t, false, &o, &mut log, &stop)
        }
    };
    for id in sig {
        signal_hook::low_level::unregister(id);
    }
    r
}

/// `-x`: reads OpenSM's guid2lid file into `o.guid2lid`.
fn honor_guid2lid(o: &mut SmOpts, log: &mut Log<'_, '_>) -> Result<(), CliError> {
    let path = guid2lid::default_path();
    let shown = path.display().to_string();
    match guid2lid::read(&path).map_err(|e| CliError::Input(format!("sm: {e}")))? {
        Some(entries) => {
            log.line(
                &format!("Honoring guid2lid file {shown}: {} LIDs", entries.len()),
                json!({"event": "guid2lid", "path": shown, "lids": entries.len()}),
            );
            o.guid2lid = entries;
        }
        None => log.line(
            &format!("No guid2lid file at {shown}: LIDs are given as without -x"),
            json!({"event": "guid2lid", "path": shown, "lids": serde_json::Value::Null}),
        ),
    }
    Ok(())
}

/// Makes the umad port an SM's: IsSM set (the issm device held open
/// until the transport is dropped) and the SMP requests other managers
/// send the SM (SMInfo Get/Set, traps) delivered to it: the kernel's MAD
/// layer passes on only the methods an agent registered for.
fn claim_sm_port(t: &mut UmadTransport) -> Result<(), CliError> {
    t.set_issm()
        .map_err(|e| CliError::Failed(format!("sm: cannot set IsSM: {e}")))?;
    let methods: u128 = [Method::GET, Method::SET, Method::TRAP]
        .iter()
        .fold(0, |m, x| m | 1u128 << x.0);
    for class in [MgmtClass::SUBN_LID_ROUTED, MgmtClass::SUBN_DIRECTED_ROUTE] {
        t.register_requests(class, 1, methods, None).map_err(|e| {
            CliError::Failed(format!(
                "sm: cannot register for {class} requests: {e} (is another SM running on \
                 this port?)"
            ))
        })?;
    }
    Ok(())
}

/// The SM's port on the built-in fabric without an SM (`mad --sim
/// --no-sm sm`): at `--sim-node`, else the first node's first end port
/// (where SM-lite runs otherwise); IsSM set there.
fn sim_port(
    topo: Option<&str>,
    node: Option<&str>,
    o: &SmOpts,
) -> Result<mad_sim::SimPort, CliError> {
    let failed = |e: String| CliError::Failed(format!("sm: {e}"));
    let f = crate::session::sim::load_bare(topo).map_err(failed)?;
    let at = f.sm_endpoint(node).map_err(failed)?;
    let mut t = f.attach(at).map_err(failed)?;
    if o.guid != 0 && t.port_attrs().port_guid != o.guid {
        return Err(failed(format!(
            "{} port {} has port GUID {:#018x}, not {:#018x}: on the built-in fabric \
             --sim-node NAME picks the SM's node",
            t.port_attrs().ca_name,
            t.port_attrs().port_num,
            t.port_attrs().port_guid,
            o.guid
        )));
    }
    t.set_is_sm(true);
    Ok(t)
}

/// The umad port to open: `-C/-P`, or the port whose GUID `-g` names.
fn umad_port(o: &SmOpts) -> Result<(Option<String>, u8), CliError> {
    let port = u8::try_from(o.port.unwrap_or(0)).unwrap_or(0);
    if o.guid == 0 || o.ca.is_some() {
        return Ok((o.ca.clone(), port));
    }
    let cas = umad::list_cas().map_err(|e| CliError::Failed(format!("sm: {e}")))?;
    cas.iter()
        .flat_map(|c| c.ports.iter().map(move |p| (c, p)))
        .find(|(_, p)| p.port_guid == o.guid)
        .map(|(c, p)| (Some(c.name.clone()), p.port_num))
        .ok_or_else(|| CliError::Failed(format!("sm: no local port has GUID {:#018x}", o.guid)))
}

/// Runs the SM and the SA on `t` until stopped (or one sweep with
/// `-o`); `ibsim` when `t` is on ibsim (see `end_unacknowledged_answers`).
fn serve<T: split::Waitable + 'static>(
    t: T,
    ibsim: bool,
    o: &SmOpts,
    log: &mut Log<'_, '_>,
    stop: &AtomicBool,
) -> Result<(), CliError> {
    let attrs = t.port_attrs().clone();
    // On ibsim the SA's clients are programs under libumad2sim, which do
    // no RMPP (osmtest takes a table's first segment and never ACKs): an
    // answer nobody acknowledges ends at its first ACK timeout rather
    // than being resent to the next program at that port.
    let engine = EngineConfig {
        end_unacknowledged_answers: ibsim,
        ..EngineConfig::default()
    };
    let cfg = SaResponderConfig {
        name: "mad-sm-sa".to_owned(),
        gid_prefix: o.subnet_prefix,
        // OpenSM's sa_key defaults to its sm_key (1): the requests that
        // carry the SM_Key are the trusted ones.
        trusted_key: Some(o.sm_key),
        ..SaResponderConfig::default()
    };
    let start = Instant::now();
    let mut srv = server::SmServer::start(
        t,
        (mad_core::port::PortConfig::default(), engine),
        o.sm_config(),
        cfg,
        start,
    )
    .map_err(|e| CliError::Failed(format!("sm: {e}")))?;
    log.line(
        &format!(
            "mad sm: SM port GUID {:#018x} on {} port {}, priority {}",
            attrs.port_guid, attrs.ca_name, attrs.port_num, o.priority
        ),
        json!({"event": "start", "port_guid": format!("{:#018x}", attrs.port_guid), "ca": attrs.ca_name.clone(), "port": u64::from(attrs.port_num)}),
    );
    let mut outcome = None;
    while !stop.load(Ordering::Relaxed) && outcome.is_none() {
        let busy = srv
            .pump(Instant::now())
            .map_err(|e| CliError::Failed(format!("sm: transport failed: {e}")))?;
        while let Some(ev) = srv.poll_event() {
            match &ev {
                SmEvent::SweepDone { errors, .. } => {
                    log.sweep_done(&ev, start.elapsed());
                    if o.once && *errors > 0 {
                        outcome = Some(false);
                    }
                }
                SmEvent::SubnetUp => {
                    log.line(
                        "SUBNET UP",
                        json!({"event": "subnet_up", "seconds": start.elapsed().as_secs_f64(), "smps": srv.driver().sent()}),
                    );
                    if o.once {
                        outcome = Some(true);
                    }
                }
                other => log.event(other),
            }
        }
        if !busy {
            srv.wait();
        }
    }
    let (sent, received) = (srv.driver().sent(), srv.driver().received());
    // IsSM goes with the attachment: ibsim clears it when its SM client
    // detaches, the kernel when the issm device is closed.
    let sa_stats = srv.shutdown();
    log.line(
        &format!(
            "mad sm: exiting after {sent} SMPs sent, {received} received; the SA answered {} queries",
            sa_stats.requests
        ),
        json!({"event": "exit", "smps_sent": sent, "smps_received": received, "sa_queries": sa_stats.requests}),
    );
    match outcome {
        Some(false) => Err(CliError::Failed(
            "sm: the sweep did not reach SUBNET UP".to_owned(),
        )),
        _ => Ok(()),
    }
}
