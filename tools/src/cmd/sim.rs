//! `mad sim`: runs the built-in simulated fabric — a topology file, or
//! the default fat tree — brought up by SM-lite with the SA at the SM's
//! port, prints a summary (nodes, switches, CAs, links, LIDs), then takes
//! fault commands on standard input (`mad_sim::console`: link down / up,
//! drop rates and other link faults, device fatal / soft reset / events
//! at an endpoint, stats, quit).
//!
//! ```text
//! mad sim [TOPOLOGY] [--seed N] [--no-sa] [--no-sm] [--serve NAME] [--script FILE] [-q] [--json]
//! ```
//! `--no-sm` leaves the fabric without an SM (no SM-lite, no SA): every
//! port waits in Initialize, without a LID, for an SM another process
//! runs over `--serve` (OpenSM under libumad2sim, `mad --ibsim sm`).
//! `TOPOLOGY` may also come as the global `--sim=TOPOLOGY`. `--seed`
//! seeds the link-fault RNGs (default 0); `--serve NAME` also serves the
//! fabric in ibsim's socket protocol under `IBSIM_SOCKNAME=NAME`
//! (`mad_sim::serve`), so `mad --ibsim`, libumad2sim tools and other
//! stacks in other processes attach to it while the console runs;
//! `--script FILE` reads the commands from a file instead of standard
//! input; `-q` prints no summary. With `--json` the summary is one JSON
//! object on stdout (the envelope of [`crate::json`]; `sm_smps` counts
//! SM-lite's bring-up SMPs) and the console's replies go to stderr.

use std::io::BufReader;
use std::path::PathBuf;

use mad_sim::console::{self, End};
use mad_sim::serve::{IbSimServer, ServeConfig};
use mad_sim::{Subnet, SubnetOptions, UpError};

use crate::command::{CliError, Invocation};
use crate::getopt::{getopt_long, HasArg, LongOpt};
use crate::session::TransportChoice;

const USAGE: &str = "\
usage: mad sim [TOPOLOGY] [--seed N] [--no-sa] [--no-sm] [-R LIST [-a FILE]] [-l LMC] [--Pconfig FILE] [--serve NAME] [--script FILE] [-q] [--json]
  TOPOLOGY       topology file (ibnetdiscover / ibsim format); default: the built-in fat tree
  -R, --routing_engine LIST  SM-lite's routing engines, tried in order: minhop,
                 updn, ftree (as mad sm -R; default minhop)
  -a, --root_guid_file FILE  updn's root switch GUIDs, one a line
  -l, --lmc N    SM-lite gives every CA port 2^N LIDs, 0-7 (as mad sm -l; default 0)
  --Pconfig FILE SM-lite's partitions (OpenSM's partitions.conf, as mad sm
                 --Pconfig): P_Key tables and switch partition enforcement
  --seed N       seed of the link-fault RNGs (default 0)
  --no-sa        do not run the SA at the SM's port
  --no-sm        no SM at all (ports wait in Initialize for OpenSM or mad sm over --serve)
  --serve NAME   serve the fabric as ibsim does, under IBSIM_SOCKNAME=NAME
  --script FILE  read console commands from FILE instead of standard input
  -q, --quiet    no summary
  --json         the summary as one JSON object (console replies on stderr)
Then commands on standard input (type help).
";

#[derive(Debug, Default)]
struct Args {
    topology: Option<PathBuf>,
    seed: u64,
    no_sa: bool,
    no_sm: bool,
    script: Option<PathBuf>,
    serve: Option<String>,
    quiet: bool,
    help: bool,
    json: bool,
    routing: mad_sm::routing::engines::RoutingConfig,
    lmc: Option<u8>,
    partitions: Option<mad_sm::partitions::PartitionConfig>,
}

const K_NO_SA: i32 = 1;
const K_SEED: i32 = 2;
const K_SCRIPT: i32 = 3;
const K_SERVE: i32 = 4;
const K_JSON: i32 = 5;
const K_NO_SM: i32 = 6;
const K_PCONFIG: i32 = 7;

/// `mad sim`'s options, for [`crate::getopt`].
const LONG: &[LongOpt<'static>] = &[
    LongOpt::new("help", HasArg::No, 'h' as i32),
    LongOpt::new("quiet", HasArg::No, 'q' as i32),
    LongOpt::new("no-sa", HasArg::No, K_NO_SA),
    LongOpt::new("no-sm", HasArg::No, K_NO_SM),
    LongOpt::new("json", HasArg::No, K_JSON),
    LongOpt::new("seed", HasArg::Required, K_SEED),
    LongOpt::new("script", HasArg::Required, K_SCRIPT),
    LongOpt::new("serve", HasArg::Required, K_SERVE),
    LongOpt::new("routing_engine", HasArg::Required, 'R' as i32),
    LongOpt::new("root_guid_file", HasArg::Required, 'a' as i32),
    LongOpt::new("lmc", HasArg::Required, 'l' as i32),
    LongOpt::new("Pconfig", HasArg::Required, K_PCONFIG),
];

/// Parses `mad sim`'s arguments (getopt_long rules).
fn parse(args: &[String]) -> Result<Args, String> {
    let m = getopt_long("sim", args, "hqR:a:l:", LONG)?;
    let mut a = Args::default();
    for (key, v) in m.opts {
        let v = v.unwrap_or_default();
        match key {
            K_SEED => {
                let parsed = match v.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => v.parse(),
                };
                a.seed = parsed.map_err(|_| format!("sim: bad seed {v:?}\n"))?;
            }
            K_SCRIPT => a.script = Some(PathBuf::from(v)),
            K_SERVE => a.serve = Some(v),
            K_NO_SA => a.no_sa = true,
            K_NO_SM => a.no_sm = true,
            K_JSON => a.json = true,
            K_PCONFIG => {
                let text = std::fs::read_to_string(&v)
                    .map_err(|e| format!("sim: cannot read partitions file {v}: {e}\n"))?;
                let c = mad_sm::partitions::PartitionConfig::parse(&text)
                    .map_err(|e| format!("sim: partitions file {v}: {e}\n"))?;
                a.partitions = Some(c);
            }
            k if k == 'q' as i32 => a.quiet = true,
            k if k == 'R' as i32 => {
                a.routing.engines = mad_sm::routing::engines::Engine::parse_list(&v)
                    .map_err(|e| format!("sim: -R: {e}\n"))?;
            }
            k if k == 'l' as i32 => {
                a.lmc = Some(mad_sm::parse_lmc(&v).map_err(|e| format!("sim: --lmc: {e}\n"))?);
            }
            k if k == 'a' as i32 => {
                let text = std::fs::read_to_string(&v)
                    .map_err(|e| format!("sim: cannot read root_guid_file {v}: {e}\n"))?;
                a.routing.root_guids = mad_sm::routing::engines::parse_guid_file(&text)
                    .map_err(|e| format!("sim: root_guid_file {v}: {e}\n"))?;
                if a.routing.engines.is_empty() {
                    a.routing.engines = vec![mad_sm::routing::engines::Engine::UpDown];
                }
            }
            _ => a.help = true,
        }
    }
    let mut operands = m.operands.into_iter();
    a.topology = operands.next().map(PathBuf::from);
    if let Some(extra) = operands.next() {
        return Err(format!("sim: more than one topology ({extra:?})\n"));
    }
    Ok(a)
}

/// Runs `mad sim`.
///
/// # Errors
/// Bad arguments (usage), an unreadable or malformed topology (input), a
/// fabric SM-lite cannot bring up, or failed I/O on the console streams.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let a = parse(&inv.args).map_err(|e| CliError::Usage(format!("{e}{USAGE}")))?;
    if a.help {
        inv.io.out(USAGE);
        return Ok(());
    }
    let topology = match (&a.topology, &inv.session.transport) {
        (Some(t), _) => Some(t.clone()),
        (None, TransportChoice::Sim(Some(t))) => Some(PathBuf::from(t)),
        _ => None,
    };
    let mut opts = SubnetOptions {
        sa: !a.no_sa,
        ..SubnetOptions::default()
    };
    opts.sm.routing = a.routing.clone();
    opts.sm.lmc = a.lmc.unwrap_or(0);
    opts.sm.partitions = a.partitions.clone();
    if let Some(t) = &topology {
        let warnings = crate::session::sim::check_topology_file(t)
            .map_err(|e| CliError::Input(format!("sim: {e}")))?;
        for w in warnings {
            inv.io.err(&format!("mad sim: warning: {w}\n"));
        }
    }
    if a.no_sm || inv.session.no_sm {
        if a.routing != mad_sm::routing::engines::RoutingConfig::default() || a.lmc.is_some() {
            return Err(CliError::Usage(format!(
                "sim: -R / -a / -l choose how SM-lite routes; with --no-sm there is none\n{USAGE}"
            )));
        }
        if a.partitions.is_some() {
            return Err(CliError::Usage(format!(
                "sim: --Pconfig gives SM-lite's partitions; with --no-sm there is none \
                 (give it to the SM you run: mad sm --Pconfig, opensm -P)\n{USAGE}"
            )));
        }
        return run_without_sm(inv, &a, topology.as_deref());
    }
    let spinner = crate::discover::progress::Spinner::start(&format!(
        "SM-lite: bringing up {}",
        topology.as_ref().map_or_else(
            || mad_sim::DEFAULT_TOPOLOGY_NAME.to_owned(),
            |p| p.display().to_string()
        )
    ));
    let subnet = Subnet::load(topology.as_deref(), opts);
    drop(spinner);
    let subnet = subnet.map_err(|e| match e {
        UpError::Topology(t) => CliError::Input(format!("sim: {t}")),
        other => CliError::Failed(format!(
            "sim: {}: {other}",
            topology.as_ref().map_or_else(
                || mad_sim::DEFAULT_TOPOLOGY_NAME.to_owned(),
                |p| p.display().to_string()
            )
        )),
    })?;
    if a.routing != mad_sm::routing::engines::RoutingConfig::default() {
        // What the routing engines said (a fallback, the root updn chose).
        for e in subnet.take_sm_events() {
            if let mad_sm::SmEvent::Routed { engine, notes } = e {
                for n in notes {
                    inv.io.err(&format!("mad sim: {n}\n"));
                }
                inv.io.err(&format!(
                    "mad sim: routing engine {} routed the fabric\n",
                    engine.name()
                ));
            }
        }
    }
    subnet.fabric().set_fault_seed(a.seed);
    let _server = match &a.serve {
        Some(name) => {
            let cfg = ServeConfig {
                default_at: subnet.free_endpoint(),
                ..ServeConfig::new(name.clone())
            };
            let h = IbSimServer::bind(subnet.fabric(), cfg)
                .and_then(IbSimServer::spawn)
                .map_err(|e| CliError::Failed(format!("sim: cannot serve as {name:?}: {e}")))?;
            Some(h)
        }
        None => None,
    };
    let json = inv.session.json || a.json;
    if json {
        // One JSON object on stdout, printed before the console starts
        // (its replies then go to stderr).
        let sum = subnet.summary();
        let st = subnet.sm_status();
        let mut body = fabric_json(&sum, a.serve.as_deref());
        body["sm_lid"] = sum.sm_lid.into();
        body["sm_smps"] = st.smps_sent.into();
        body["sa"] = (!a.no_sa).into();
        print_json(inv, body);
        // Printed: failures from here on are text on stderr.
        inv.session.json = false;
    }
    if !a.quiet && !json {
        let mut s = subnet.summary().to_string();
        let st = subnet.sm_status();
        s.push_str(&format!(
            "SM-lite: subnet up after {} SMPs{}\n",
            st.smps_sent,
            if a.no_sa { "" } else { "; SA at the SM's port" }
        ));
        if let Some(name) = &a.serve {
            s.push_str(&format!(
                "serving as ibsim: IBSIM_SOCKNAME={name} (clients naming no node attach at {})\n",
                subnet
                    .free_endpoint()
                    .and_then(|(n, _)| subnet.fabric().node(n))
                    .map_or_else(|| "-".to_owned(), |n| n.id)
            ));
        }
        s.push_str("type help for the console commands, quit to end\n");
        inv.io.out(&s);
    }
    let io_err = |e: std::io::Error| CliError::Failed(format!("sim: {e}"));
    let _end: End = match &a.script {
        Some(f) => {
            let file = std::fs::File::open(f)
                .map_err(|e| CliError::Input(format!("sim: {}: {e}", f.display())))?;
            let out: &mut dyn std::io::Write = if json {
                &mut *inv.io.stderr
            } else {
                &mut *inv.io.stdout
            };
            console::run(subnet.fabric(), Some(&subnet), BufReader::new(file), out)
                .map_err(io_err)?
        }
        None => {
            let out: &mut dyn std::io::Write = if json {
                &mut *inv.io.stderr
            } else {
                &mut *inv.io.stdout
            };
            console::run(
                subnet.fabric(),
                Some(&subnet),
                BufReader::new(&mut *inv.io.stdin),
                out,
            )
            .map_err(io_err)?
        }
    };
    Ok(())
}

/// The summary's counts as JSON (and where the fabric is served).
fn fabric_json(sum: &mad_sim::Summary, serve: Option<&str>) -> serde_json::Value {
    let mut body = serde_json::json!({
        "fabric": sum.name, "nodes": sum.nodes, "switches": sum.switches, "cas": sum.cas,
        "routers": sum.routers, "links": sum.links, "links_up": sum.links_up,
        "lids": sum.lids, "max_lid": sum.max_lid,
    });
    if let Some(n) = serve {
        body["serving_as"] = serde_json::Value::String(n.to_owned());
    }
    body
}

/// Prints the summary in the JSON envelope.
fn print_json(inv: &mut Invocation<'_, '_>, body: serde_json::Value) {
    let mut t = crate::json::Envelope::new(inv.command, body).to_text();
    t.push('\n');
    inv.io.out(&t);
}

/// `mad sim --no-sm`: the fabric as loaded, every port in Initialize,
/// served and driven by the console like the fabric with its SM.
fn run_without_sm(
    inv: &mut Invocation<'_, '_>,
    a: &Args,
    topology: Option<&std::path::Path>,
) -> Result<(), CliError> {
    let (topo, name) = match topology {
        Some(t) => (
            mad_sim::Topology::load(t).map_err(|e| CliError::Input(format!("sim: {e}")))?,
            t.display().to_string(),
        ),
        None => (
            mad_sim::default_topology(),
            mad_sim::DEFAULT_TOPOLOGY_NAME.to_owned(),
        ),
    };
    let fabric = mad_sim::Fabric::with_config(&topo, mad_sim::FabricConfig::default());
    fabric.set_fault_seed(a.seed);
    let _server = match &a.serve {
        Some(n) => Some(
            IbSimServer::bind(&fabric, ServeConfig::new(n.clone()))
                .and_then(IbSimServer::spawn)
                .map_err(|e| CliError::Failed(format!("sim: cannot serve as {n:?}: {e}")))?,
        ),
        None => None,
    };
    let mut sum = mad_sim::Summary::of(&fabric);
    sum.name = name;
    let json = inv.session.json || a.json;
    if json {
        let mut body = fabric_json(&sum, a.serve.as_deref());
        body["sm"] = false.into();
        body["sa"] = false.into();
        print_json(inv, body);
        inv.session.json = false;
    } else if !a.quiet {
        let mut s = sum.to_string();
        s.push_str("no SM: every port waits in Initialize for an SM\n");
        if let Some(n) = &a.serve {
            s.push_str(&format!("serving as ibsim: IBSIM_SOCKNAME={n}\n"));
        }
        s.push_str("type help for the console commands, quit to end\n");
        inv.io.out(&s);
    }
    let io_err = |e: std::io::Error| CliError::Failed(format!("sim: {e}"));
    let out: &mut dyn std::io::Write = if json {
        &mut *inv.io.stderr
    } else {
        &mut *inv.io.stdout
    };
    match &a.script {
        Some(f) => {
            let file = std::fs::File::open(f)
                .map_err(|e| CliError::Input(format!("sim: {}: {e}", f.display())))?;
            console::run(&fabric, None, BufReader::new(file), out).map_err(io_err)?;
        }
        None => {
            console::run(&fabric, None, BufReader::new(&mut *inv.io.stdin), out).map_err(io_err)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn parses_topology_seed_script_and_flags() {
        let a = parse(&args(&[
            "net.medium",
            "--seed",
            "0x10",
            "--script=cmds",
            "-q",
            "--no-sa",
            "--serve",
            "x",
        ]))
        .unwrap();
        assert_eq!(a.serve.as_deref(), Some("x"));
        assert_eq!(a.topology, Some(PathBuf::from("net.medium")));
        assert_eq!(a.seed, 16);
        assert_eq!(a.script, Some(PathBuf::from("cmds")));
        assert!(a.quiet && a.no_sa && !a.help);
        assert!(parse(&args(&["a", "b"]))
            .unwrap_err()
            .contains("more than one"));
        assert_eq!(
            parse(&args(&["--seed"])).unwrap_err(),
            "sim: option '--seed' requires an argument\n"
        );
        assert_eq!(
            parse(&args(&["--bogus"])).unwrap_err(),
            "sim: unrecognized option '--bogus'\n"
        );
        assert!(parse(&args(&["--sc=f", "--no-sa", "-qh"])).is_ok_and(|a| a.no_sa && a.help));
        assert!(parse(&args(&["--no-sm"])).is_ok_and(|a| a.no_sm && !a.no_sa));
        assert!(parse(&args(&["--no"])).unwrap_err().contains("ambiguous"));
    }
}
