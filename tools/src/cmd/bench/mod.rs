//! `mad bench`: SMP Get round trips per second with W outstanding, SA
//! GetTable (RMPP) time and throughput per table, latency percentiles, and
//! — with `--vs-libibmad` — the libibmad anchor (bench-anchor/anchor.c)
//! measured over the same ibsim in the same run.
//!
//! ```text
//! mad [--sim[=TOPO] | --ibsim | -C CA -P PORT] bench [--w 1,16,256]
//!     [--seconds S | --queries N] [--targets "0;0,1"] [--rmpp]
//!     [--json FILE] [--plot FILE.svg] [--vs-libibmad]
//! ```
//!
//! # What is measured
//! - `runtime`: directed-route SMP Get NodeInfo through the session's
//!   [`mad_agents::Runtime`] (its event loop thread, an agent registered
//!   with a channel): W requests go out, each completion sends the next
//!   request of its slot (closed loop), round-robin over the targets.
//! - `engine` (`--sim` only): the same queries from an
//!   [`mad_agents::Engine`] (a [`mad_agents::Stack`]) driven in poll mode on this thread over a
//!   second copy of the built-in fabric — the in-process rate of the agent
//!   layer, as benches/agent_round_trip.rs measures it. Each W runs
//!   through the runtime and then the engine back to back; `vs engine`
//!   (`ratio_vs_engine`) is the runtime's rate over the engine's at that
//!   W: what the runtime's threads cost.
//! - `libibmad` (`--vs-libibmad`): bench-anchor/anchor.c (`smp_query_via`,
//!   one query at a time, as infiniband-diags issues them) built with
//!   bench-anchor/build.sh into a temporary directory and run under
//!   libumad2sim against the same ibsim (`IBSIM_SOCKNAME`).
//! - `--rmpp`: SubnAdmGetTable of NodeRecord, PortInfoRecord and
//!   PathRecord (every record) through the session's SA client, repeated;
//!   time per table and bytes of the answer per second.
//!
//! Each W runs `--seconds S` (default 1) after a short warm-up, or
//! `--queries N` timed queries.
//!
//! # `--json`
//! The global `--json` (`mad --json bench ...`) prints this object on
//! stdout instead of the table; `--json FILE` writes it to FILE (the
//! table still printed). Both in the envelope of [`crate::json`]
//! (`command`, `version`, `complete` first):
//! ```text
//! { "transport": "sim" | "ibsim" | "umad", "where": "<session description>",
//!   "targets": ["0", "0,1"], "attribute": "NodeInfo",
//!   "smp": [ { "impl": "runtime" | "engine" | "libibmad", "outstanding": W,
//!              "queries": answered, "errors": n, "seconds": s, "qps": rate,
//!              "lat_us": { "p50": x, "p99": x, "p99.9": x, "max": x },
//!              "ratio_vs_libibmad": qps / libibmad qps, or null,
//!              "ratio_vs_engine": qps / engine qps at this W, or null } ],
//!   "rmpp": [ { "table": "NodeRecord", "records": n, "bytes": b,
//!               "repeats": k, "seconds_per_table": t,
//!               "bytes_per_sec": x } ] }
//! ```
//! `--plot FILE.svg` draws SMP rate against W (log scales, one line per
//! implementation, the libibmad rate as a dashed level) and, with
//! `--rmpp`, GetTable throughput against table size.

mod anchor;
mod measure;
mod opts;
mod report;

use std::path::Path;

use mad_agents::{EngineConfig, SendRequest, Stack};

use crate::command::{CliError, Invocation};
use crate::session::{Backend, Session, TransportChoice};

use self::anchor::{build_anchor, run_anchor};
use self::measure::{requests, rmpp, smp_engine, smp_runtime};
use self::opts::{usage_err, USAGE};
use self::report::{format_table, to_json};

pub use anchor::UMAD2SIM;
pub use opts::{parse_opts, Budget, Opts, RmppResult, SmpResult};
pub use report::plot_svg;

/// Runs `mad bench`.
///
/// # Errors
/// Bad options, no port, a measurement that gets no answer, the anchor
/// that cannot be built or run, an output file that cannot be written.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let Some(o) = parse_opts(&inv.args)? else {
        if inv.session.json {
            inv.session.json = false;
        }
        inv.io.out(USAGE);
        return Ok(());
    };
    if o.json_stdout {
        inv.session.json = true;
    }
    let reqs = requests(&o.targets).map_err(CliError::Failed)?;
    let under_umad2sim = std::env::var("LD_PRELOAD").is_ok_and(|p| p.contains("umad2sim"));
    let transport = match &inv.session.transport {
        TransportChoice::Sim(_) => "sim",
        TransportChoice::IbSim => "ibsim",
        _ => "umad",
    };
    if o.vs_libibmad && !(transport == "ibsim" || (transport == "umad" && under_umad2sim)) {
        return Err(usage_err(
            "--vs-libibmad needs --ibsim (or the umad transport under libumad2sim): \
             the anchor runs over the same ibsim",
        ));
    }
    // Build the anchor first: a missing package fails before measuring.
    let tmp = std::env::temp_dir().join(format!("mad-bench-{}", std::process::id()));
    let anchor = if o.vs_libibmad {
        std::fs::create_dir_all(&tmp)
            .map_err(|e| CliError::Failed(format!("{}: {e}", tmp.display())))?;
        match build_anchor(&tmp) {
            Ok(a) => Some(a),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(CliError::Failed(e));
            }
        }
    } else {
        None
    };
    let spinner = crate::discover::progress::Spinner::start("bench: measuring");
    let r = measure(inv, &o, &reqs, anchor.as_deref(), &tmp);
    drop(spinner);
    if anchor.is_some() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    let (place, smp, rm) = r?;
    let json = to_json(transport, &place, &o, &smp, &rm);
    if inv.session.json {
        crate::ibdiag::print_json(inv, &json);
    } else {
        inv.io.out(&format!(
            "# SMP Get NodeInfo, routes {}; {place}\n",
            o.targets.join(" ")
        ));
        inv.io.out(&format_table(&smp, &rm));
    }
    if let Some(path) = &o.json {
        let mut text = crate::json::Envelope::new(inv.command, json).to_text();
        text.push('\n');
        std::fs::write(path, text)
            .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
    }
    if let Some(path) = &o.plot {
        std::fs::write(path, plot_svg(&smp, &rm))
            .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

type Measured = (String, Vec<SmpResult>, Vec<RmppResult>);

fn measure(
    inv: &mut Invocation<'_, '_>,
    o: &Opts,
    reqs: &[SendRequest],
    anchor: Option<&Path>,
    tmp: &Path,
) -> Result<Measured, CliError> {
    let mut session = Session::open(&inv.session).map_err(|e| CliError::Failed(e.to_string()))?;
    let place = session.describe();
    // The engine's copy of the fabric (`--sim`): each W is measured
    // through the runtime and then the engine back to back, so that a
    // ratio compares the two under the same load.
    let mut engine = if let Backend::Sim(_) = session.backend() {
        let topo = match &inv.session.transport {
            TransportChoice::Sim(t) => t.clone(),
            _ => None,
        };
        let f = crate::session::sim::bring_up(topo.as_deref()).map_err(CliError::Failed)?;
        let at = f
            .endpoint_at(inv.session.sim_node.as_deref())
            .map_err(CliError::Failed)?;
        let port = f.attach(at).map_err(CliError::Failed)?;
        Some((f, Stack::new(port, EngineConfig::default())))
    } else {
        None
    };
    let mut smp = Vec::new();
    let mut engine_rows = Vec::new();
    for &w in &o.windows {
        smp.push(smp_runtime(&session, reqs, w, o.budget).map_err(CliError::Failed)?);
        if let Some((_, e)) = &mut engine {
            engine_rows.push(smp_engine(e, reqs, w, o.budget).map_err(CliError::Failed)?);
        }
    }
    smp.extend(engine_rows);
    // No SA (ibsim without an SM, say): the SMP numbers still count.
    let rm = if o.rmpp {
        rmpp(&mut session, o.budget).unwrap_or_else(|e| {
            inv.io.err(&format!("mad bench: --rmpp skipped: {e}\n"));
            Vec::new()
        })
    } else {
        Vec::new()
    };
    if let Some(a) = anchor {
        smp.push(run_anchor(a, tmp, o).map_err(CliError::Failed)?);
    }
    let _ = session.close();
    Ok((place, smp, rm))
}
