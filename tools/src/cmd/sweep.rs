//! `mad sweep`: discover the fabric, then read PortCounters and
//! PortCountersExtended of every port in parallel, for monitoring
//! exporters (what people script around ibqueryerrors, or ibnetdiscover
//! plus perfquery). Text or `--json`; the shapes are documented in
//! [`crate::discover::counters`].
//!
//! ```text
//! mad [--sim|--ibsim|-C CA -P PORT] sweep [--json] [-o N] [--per-node N] [-t MS] [-v]
//! ```
//! `-o N`: MADs in flight on the port (default 256); `--per-node N`: in
//! flight per destination (a node for SMPs, a LID for PerfMgt; default
//! 4); `-t MS`: response timeout. `-v` adds a summary on stderr.
//!
//! Exit status: 0 when every port discovered was read; 3
//! ([`crate::command::EXIT_INCOMPLETE`]) when some port's counters or some
//! discovery query went unanswered (the output shows what was read;
//! stderr, and `missing` in JSON, say what was not); 1 or 255 when the
//! sweep could not run at all.

use crate::command::{CliError, Invocation};
use crate::discover::agent::AgentExchange;
use crate::discover::counters::{self, SweepError};
use crate::discover::progress::Progress;
use crate::ibdiag::{self, Opt, ToolSpec};
use crate::ibdiag::{limits, run_discovery};

use crate::ibdiag::OPT_PER_NODE;

/// The options of `mad sweep`: its sweep window.
pub const OPTS: &[Opt] = &ibdiag::SWEEP_WINDOW_OPTS;

/// The command line of `mad sweep`: no destination options, no `-s`
/// (no GUID to resolve), no `-e` (every port whose counters could not be
/// read is reported anyway, a line each).
pub const SPEC: ToolSpec<'static> = ToolSpec {
    opts: OPTS,
    exclude: "DGLKse",
    usage_args: "",
    examples: &["--json", "-o 64 --per-node 2"],
};

/// Runs `mad sweep`.
///
/// # Errors
/// Bad options, no port, discovery failure, an unconfigured fabric (no
/// LIDs), a transport failure.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let p = ibdiag::parse(inv, &SPEC)?;
    let mut window = None;
    let mut per_node = None;
    for (key, val) in &p.custom {
        let v = val.as_deref().unwrap_or("");
        let flag = if *key == OPT_PER_NODE {
            "--per-node"
        } else {
            "-o"
        };
        let n = crate::cnum::c_strtoul_full(v)
            .filter(|n| *n > 0 && !v.trim_start().starts_with('-'))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                CliError::Usage(format!(
                    "sweep: {flag} takes a positive number of MADs in flight, not {v:?} \
                     (e.g. {flag} 64)"
                ))
            })?;
        if *key == i32::from(b'o') {
            window = Some(n);
        } else if *key == OPT_PER_NODE {
            per_node = Some(n);
        }
    }
    if let Some(extra) = p.args.first() {
        return Err(CliError::Usage(format!(
            "sweep takes no argument ({extra:?})"
        )));
    }
    let mut lim = limits(window, p.common.timeout_ms);
    if let Some(n) = per_node {
        lim.per_dest = n;
    }
    let session = ibdiag::open_session(inv, &p.common)?;
    let d = run_discovery(inv, &session, lim, p.common.m_key, false)?;
    let mut ex = AgentExchange::new(session.runtime()).map_err(CliError::Failed)?;
    let mut bar = Progress::stderr("reading counters");
    let r = counters::sweep(&mut ex, &d.fabric, lim, &mut |done, total| {
        bar.update(done, Some(total), "ports");
    });
    bar.finish();
    drop(ex);
    let _ = session.close();
    let s = match r {
        Ok(s) => s,
        Err(SweepError::NoLids) => {
            return Err(CliError::Failed(format!(
                "sweep: discovered {} nodes, but {}",
                d.fabric.nodes.len(),
                SweepError::NoLids
            )))
        }
        Err(e) => return Err(CliError::Failed(format!("sweep: {e}"))),
    };
    if p.common.verbose > 0 {
        inv.io.err(&format!(
            "# {} nodes discovered with {} SMPs in {}; {} ports read ({} failed) with {} PerfMgt MADs in {}\n",
            d.fabric.nodes.len(),
            d.stats.sent,
            ibdiag::human_duration(d.elapsed),
            s.ports_read(),
            s.ports_failed(),
            s.stats.sent,
            ibdiag::human_duration(s.elapsed)
        ));
    }
    if p.common.json {
        ibdiag::print_json(inv, &counters::to_json(&d.fabric, &s));
    } else {
        inv.io.out(&counters::format_text(&d.fabric, &s));
    }
    if s.ports_failed() > 0 {
        let items: Vec<String> = s
            .nodes
            .iter()
            .flat_map(|n| &n.ports)
            .filter_map(|p| {
                p.error
                    .as_ref()
                    .map(|e| format!("lid {} port {}: {e}", p.lid, p.port))
            })
            .collect();
        let nports: usize = s.nodes.iter().map(|n| n.ports.len()).sum();
        let message = format!(
            "sweep incomplete: the counters of {} of {nports} ports could not be read \
             (their lines say why){}",
            s.ports_failed(),
            if d.failures.is_empty() {
                String::new()
            } else {
                format!(
                    "; discovery also went without {} answers, so ports may be missing",
                    d.failures.len()
                )
            }
        );
        return Err(ibdiag::incomplete(
            inv,
            "ports",
            Some(s.ports_failed() as u64),
            items,
            message,
        ));
    }
    crate::ibdiag::check_complete(inv, &d.failures)
}
