//! Command dispatch of the `mad` multi-call binary.
//!
//! `mad [GLOBAL OPTIONS] COMMAND [ARGS]` runs a subcommand; the same
//! binary started under another name (a symlink called `smpquery`, say)
//! runs the command of that name when the [`COMMANDS`] table marks it as a
//! program. Adding a command is one line in [`COMMANDS`].
//!
//! # Global options
//! Before the command, and — so that the infiniband-diags forms keep
//! working — anywhere among the arguments of a command (up to a `--`):
//!
//! - `--sim[=TOPOLOGY]`: the built-in simulated fabric (a topology file in
//!   the ibnetdiscover / ibsim format; without one, the default topology
//!   built into the binary), brought up by SM-lite before the command runs;
//! - `--sim-node NAME`: where the command's port is attached on that
//!   fabric (default: the first CA);
//! - `--no-sm`: that fabric without an SM or SA of its own (every port in
//!   Initialize, LID 0), for `mad --sim --no-sm sm` to bring up, or to
//!   see a fabric before its SM has swept it;
//! - `--ibsim`: a running ibsim, reached through its environment
//!   (`IBSIM_SOCKNAME`, `IBSIM_SERVER_NAME`, `IBSIM_SERVER_PORT`,
//!   `SIM_HOST`);
//! - `--pcap FILE`: record every MAD the command sends and receives.
//!
//! Before the command only: `-C CA`, `-P PORT` (a real port through
//! libibumad; the infiniband-diags tools take these as their own options
//! too) and `--json`.

pub use crate::global_opts::extract_session_opts;
use crate::global_opts::global_opts;
use crate::session::SessionOpts;

pub use crate::command::{CliError, CommandFn, Invocation, Io, EXIT_INCOMPLETE};

/// One command of the binary.
#[derive(Clone, Copy)]
pub struct Command {
    /// Its name: `mad NAME`, and the program name when `program` is set.
    pub name: &'static str,
    /// One-line summary for `mad --help`.
    pub summary: &'static str,
    /// Entry point.
    pub run: CommandFn,
    /// True if the binary runs it when started under this name (a
    /// symlink named like an infiniband-diags tool).
    pub program: bool,
    /// True if the transport options are taken out of its arguments
    /// (false: it gets them untouched, as `decode` with its own `--pcap`).
    pub session_args: bool,
}

impl Command {
    /// A subcommand of `mad` only.
    #[must_use]
    pub const fn sub(name: &'static str, summary: &'static str, run: CommandFn) -> Self {
        Self {
            name,
            summary,
            run,
            program: false,
            session_args: true,
        }
    }

    /// A subcommand of `mad` that gets its arguments untouched (global
    /// options only before its name).
    #[must_use]
    pub const fn raw(name: &'static str, summary: &'static str, run: CommandFn) -> Self {
        Self {
            name,
            summary,
            run,
            program: false,
            session_args: false,
        }
    }

    /// A command that also runs as a program of its own name (`argv[0]`).
    #[must_use]
    pub const fn tool(name: &'static str, summary: &'static str, run: CommandFn) -> Self {
        Self {
            name,
            summary,
            run,
            program: true,
            session_args: true,
        }
    }
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Command")
            .field("name", &self.name)
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

fn decode(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let mut args = inv.args.clone();
    if inv.session.json && !args.iter().any(|a| a == "--json") {
        args.insert(0, "--json".to_owned());
    }
    inv.session.json = args.iter().any(|a| a == "--json");
    let mut doc = None;
    let r = crate::decode_cmd::run_doc(&args, inv.io, &mut doc);
    inv.json_body = doc;
    r
}

/// Every command, one line each.
pub const COMMANDS: &[Command] = &[
    Command::raw(
        "decode",
        "print every field of MADs from hex text or a pcap file",
        decode,
    ),
    Command::tool(
        "smpquery",
        "query SMP attributes of a node (infiniband-diags smpquery)",
        crate::cmd::smpquery::run,
    ),
    Command::tool(
        "saquery",
        "query the SA's records (infiniband-diags saquery)",
        crate::cmd::saquery::run,
    ),
    Command::tool(
        "perfquery",
        "read or reset port counters (infiniband-diags perfquery)",
        crate::cmd::perfquery::run,
    ),
    Command::tool(
        "ibccquery",
        "query Congestion Control attributes (infiniband-diags ibccquery)",
        crate::cmd::ibccquery::run,
    ),
    Command::tool(
        "ibccconfig",
        "set Congestion Control attributes (infiniband-diags ibccconfig)",
        crate::cmd::ibccconfig::run,
    ),
    Command::tool(
        "ibping",
        "ping a port with the OpenIB vendor class, or serve it (infiniband-diags ibping)",
        crate::cmd::ibping::run,
    ),
    Command::tool(
        "ibsysstat",
        "ask a port's sysstat server for ping, host or cpu, or serve it (infiniband-diags ibsysstat)",
        crate::cmd::ibsysstat::run,
    ),
    Command::tool(
        "vendstat",
        "query Mellanox vendor-specific attributes (infiniband-diags vendstat)",
        crate::cmd::vendstat::run,
    ),
    Command::tool(
        "sminfo",
        "query the SM's SMInfo (infiniband-diags sminfo)",
        crate::cmd::sminfo::run,
    ),
    Command::tool(
        "ibaddr",
        "show the LID range and GID of a port (infiniband-diags ibaddr)",
        crate::cmd::ibaddr::run,
    ),
    Command::tool(
        "ibportstate",
        "query, enable, disable or reset a port (infiniband-diags ibportstate)",
        crate::cmd::ibportstate::run,
    ),
    Command::tool(
        "ibstat",
        "show the local CA and its ports (infiniband-diags ibstat)",
        crate::cmd::ibstat::run,
    ),
    Command::tool(
        "ibstatus",
        "show the local ports' status (infiniband-diags ibstatus)",
        crate::cmd::ibstat::run_ibstatus,
    ),
    Command::tool(
        "ibroute",
        "dump a switch's forwarding table (infiniband-diags ibroute)",
        crate::cmd::ibroute::run,
    ),
    Command::tool(
        "ibtracert",
        "trace the route between two LIDs (infiniband-diags ibtracert)",
        crate::cmd::ibtracert::run,
    ),
    Command::tool(
        "ibnetdiscover",
        "discover the fabric's topology (infiniband-diags ibnetdiscover)",
        crate::cmd::ibnetdiscover::run,
    ),
    Command::tool(
        "ibhosts",
        "list the fabric's CAs (infiniband-diags ibhosts)",
        crate::cmd::ibhosts::run,
    ),
    Command::tool(
        "ibswitches",
        "list the fabric's switches (infiniband-diags ibswitches)",
        crate::cmd::ibhosts::run_ibswitches,
    ),
    Command::tool(
        "iblinkinfo",
        "show every link of the fabric (infiniband-diags iblinkinfo)",
        crate::cmd::iblinkinfo::run,
    ),
    Command::tool(
        "ibqueryerrors",
        "report ports whose error counters exceed thresholds (infiniband-diags ibqueryerrors)",
        crate::cmd::ibqueryerrors::run,
    ),
    Command::tool(
        "ibrouters",
        "list the fabric's routers (infiniband-diags ibrouters)",
        crate::cmd::ibhosts::run_ibrouters,
    ),
    Command::tool(
        "ibnodes",
        "list the fabric's CAs and switches (infiniband-diags ibnodes)",
        crate::cmd::ibhosts::run_ibnodes,
    ),
    Command::tool(
        "smpdump",
        "dump the data of one raw SMP Get as hex (infiniband-diags smpdump)",
        crate::cmd::smpdump::run,
    ),
    Command::tool(
        "ibcacheedit",
        "edit GUIDs in an ibnetdiscover cache file (infiniband-diags ibcacheedit)",
        crate::cmd::ibcacheedit::run,
    ),
    Command::tool(
        "ibidsverify",
        "check the fabric's LIDs and GUIDs for zeros and duplicates (infiniband-diags ibidsverify)",
        crate::cmd::ibidsverify::run,
    ),
    Command::tool(
        "dump_fts",
        "dump every switch's unicast or multicast forwarding table (infiniband-diags dump_fts)",
        crate::cmd::dump_fts::run,
    ),
    Command::tool(
        "dump_lfts",
        "dump_fts, then its replaced-by warning (infiniband-diags dump_lfts.sh)",
        crate::cmd::dump_fts::run_dump_lfts,
    ),
    Command::tool(
        "dump_mfts",
        "dump_fts -M, then its replaced-by warning (infiniband-diags dump_mfts.sh)",
        crate::cmd::dump_fts::run_dump_mfts,
    ),
    Command::tool(
        "check_lft_balance",
        "check that the switches' routes are spread evenly over their ports (infiniband-diags check_lft_balance)",
        crate::cmd::check_lft_balance::run,
    ),
    Command::tool(
        "ibfindnodesusing",
        "list the hosts routed through a switch port (infiniband-diags ibfindnodesusing)",
        crate::cmd::ibfindnodesusing::run,
    ),
    Command::sub(
        "check-routes",
        "can the unicast routes deadlock? cycles of the channel dependency graph, unreachable pairs, balance",
        crate::cmd::check_routes::run,
    ),
    Command::sub(
        "sweep",
        "read PortCounters/PortCountersExtended of every port, in parallel",
        crate::cmd::sweep::run,
    ),
    Command::sub(
        "exporter",
        "serve every port's counters to Prometheus (/metrics), swept in parallel",
        crate::cmd::exporter::run,
    ),
    Command::sub(
        "bench",
        "SMP round trips/s, latency and SA GetTable throughput",
        crate::cmd::bench::run,
    ),
    Command::sub(
        "cm",
        "make or take a connection with madstack's CM, printing its events",
        crate::cmd::cm::run,
    ),
    Command::sub(
        "sim",
        "run the simulated fabric, take fault commands",
        crate::cmd::sim::run,
    ),
    Command::sub(
        "sm",
        "run SM-lite as the subnet manager (and SA) on ibsim, a umad port or --sim --no-sm",
        crate::cmd::sm::run,
    ),
];

/// Programs the binary runs when started under their own name.
pub fn programs() -> impl Iterator<Item = &'static Command> {
    COMMANDS.iter().filter(|c| c.program)
}

const GLOBAL_HELP: &str = "\
Global options (before the command; the transport options also anywhere
among the command's arguments):
  --sim[=TOPOLOGY]   the built-in simulated fabric (default topology built in),
                     brought up by SM-lite before the command runs
  --sim-node NAME    attach the command's port at node NAME of that fabric
                     (default: the first CA port that is not the SM's)
  --no-sm            that fabric with no SM or SA of its own: every port in
                     Initialize with LID 0 (`mad --sim --no-sm sm` runs the SM
                     on it; directed-route commands work, LID-routed fail)
  --ibsim            a running ibsim (IBSIM_SOCKNAME, IBSIM_SERVER_NAME,
                     IBSIM_SERVER_PORT, SIM_HOST)
  -C CA -P PORT      a real port through libibumad (the default when
                     libibumad lists a device)
  --pcap FILE        record every MAD sent and received (ERF pcap for tshark)
  --json             JSON output: one object on stdout, errors included
                     (schemas in tools/schemas/; see tools/README.md)
  --version          madstack's version and the infiniband-diags release
                     the commands match

Exit status: 0 done; 1 a command of mad's own failed; 2 bad command line;
3 incomplete result (printed, with what is missing on stderr); 255 an
infiniband-diags failure (IBEXIT). A progress display is drawn on stderr
during long work when it is a terminal (never in a pipe, never with --json).
";

fn usage() -> String {
    let mut s = String::from("Usage: mad [GLOBAL OPTIONS] COMMAND [ARGS...]\n\nCommands:\n");
    for c in COMMANDS {
        s.push_str(&format!("  {:<14} {}\n", c.name, c.summary));
    }
    s.push('\n');
    s.push_str(GLOBAL_HELP);
    s.push_str(
        "\nRun `mad COMMAND --help` for the options of a command. The infiniband-diags\n\
         commands also run under their own name (a symlink to this binary).\n",
    );
    s
}

fn program_name(argv0: &str) -> &str {
    argv0.rsplit('/').next().unwrap_or(argv0)
}

/// Runs `c`; an `IBEXIT` is printed under the command's own name. Under
/// `--json` the result goes out in its envelope instead ([`finish_json`]).
/// Said after a command fails on the built-in fabric without an SM.
const NO_SM_NOTE: &str = "mad: note: the built-in fabric runs without an SM (--no-sm): every \
port is in Initialize with LID 0, so nothing answers at a LID and there is no SA; directed \
routes work (-D, ibnetdiscover); `mad --sim --no-sm sm` brings it up\n";

fn call(c: &Command, inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    if inv.session.json
        || inv
            .args
            .iter()
            .take_while(|a| *a != "--")
            .any(|a| a == "--json")
    {
        // No progress display with JSON output, even on a terminal.
        crate::discover::progress::set_enabled(false);
    }
    let r = (c.run)(inv);
    if r.is_err()
        && inv.session.no_sm
        && matches!(
            inv.session.transport,
            crate::session::TransportChoice::Sim(_)
        )
        && !matches!(c.name, "sim" | "sm")
    {
        inv.io.err(NO_SM_NOTE);
    }
    if inv.session.json || inv.json_body.is_some() {
        return finish_json(inv, r);
    }
    match r {
        Err(CliError::IbExit(m)) => {
            inv.io.out(&crate::ibdiag::ibdebug::iberror_line(
                &inv.mad_diag,
                &inv.prog,
                &m,
            ));
            Err(CliError::Exit(255))
        }
        Err(CliError::Incomplete(m)) => {
            inv.io.err(&format!("{}: {m}\n", inv.prog));
            Err(CliError::Exit(EXIT_INCOMPLETE))
        }
        r => r,
    }
}

/// The message of an error as a person reads it (one text, no usage).
fn error_message(e: &CliError) -> Option<String> {
    match e {
        CliError::Usage(m)
        | CliError::Input(m)
        | CliError::Failed(m)
        | CliError::IbExit(m)
        | CliError::Incomplete(m) => Some(m.clone()),
        CliError::ToolUsage(t) => Some(
            t.lines()
                .find(|l| !l.trim().is_empty())
                .filter(|l| !l.starts_with("Usage:"))
                .map_or_else(|| "usage requested (-h)".to_owned(), str::to_owned),
        ),
        CliError::Stderr(t, _) => Some(t.trim_end().to_owned()),
        CliError::Exit(_) => None,
    }
}

/// Under `--json`: prints the command's result on stdout as one JSON
/// object ([`crate::json::Envelope`]), a failure included (its message
/// also on stderr, where the text goes without `--json`). Returns the
/// exit status as an already-reported error.
fn finish_json(inv: &mut Invocation<'_, '_>, r: Result<(), CliError>) -> Result<(), CliError> {
    use crate::json::{Envelope, ErrorInfo, Json};
    if let Err(CliError::Stderr(text, 0)) = &r {
        // -V: not a failure.
        inv.io.err(text);
        return Ok(());
    }
    let body = inv.json_body.take().unwrap_or(Json::Null);
    let mut env = Envelope::new(inv.command, body);
    let status = match &r {
        Ok(()) => 0,
        Err(e) => e.exit_code(),
    };
    if let Err(e) = &r {
        env.complete = false;
        let message = error_message(e);
        match (&mut env.error, message) {
            (Some(err), _) => err.status = status,
            (None, Some(m)) => {
                env.error = Some(ErrorInfo { message: m, status });
            }
            (None, None) => {
                env.error = Some(ErrorInfo {
                    message: format!(
                        "{} failed (exit status {status}); the messages on standard error say why",
                        inv.command
                    ),
                    status,
                });
            }
        }
        match e {
            CliError::ToolUsage(text) | CliError::Stderr(text, _) => inv.io.err(text),
            CliError::Exit(_) => {}
            _ => {
                if let Some(err) = &env.error {
                    // Commands that name themselves in their messages
                    // ("exporter: --listen takes ...") are not named twice.
                    let prefix = format!("{}: ", inv.prog);
                    if err.message.starts_with(&prefix) {
                        inv.io.err(&format!("{}\n", err.message));
                    } else {
                        inv.io.err(&format!("{prefix}{}\n", err.message));
                    }
                }
            }
        }
    }
    let mut text = env.to_text();
    text.push('\n');
    inv.io.out(&text);
    if status == 0 {
        Ok(())
    } else {
        Err(CliError::Exit(status))
    }
}

fn dispatch(argv: &[String], io: &mut Io<'_>) -> Result<(), CliError> {
    let argv0 = argv.first().map_or("mad", String::as_str);
    let prog = program_name(argv0);
    let rest = argv.get(1..).unwrap_or(&[]);
    let mut session = SessionOpts::default();
    if let Some(c) = programs().find(|c| c.name == prog) {
        let args = extract_session_opts(rest, &mut session)?;
        let mut inv = Invocation {
            prog: argv0.to_owned(),
            args,
            session,
            io,
            command: c.name,
            json_body: None,
            mad_diag: crate::ibdiag::ibdebug::MadDiag::default(),
        };
        return call(c, &mut inv);
    }
    if !prog.starts_with("mad") {
        return Err(CliError::Usage(format!(
            "started as {prog:?}, which is not a program of this binary; run it as `mad COMMAND`"
        )));
    }
    let at = global_opts(rest, &mut session)?;
    let Some(cmd) = rest.get(at) else {
        return Err(CliError::Usage("no command given".into()));
    };
    match cmd.as_str() {
        "-h" | "--help" | "help" => {
            io.out(&usage());
            Ok(())
        }
        "-V" | "--version" | "version" => {
            if session.json {
                let body = crate::json::Json::Object(
                    [(
                        "infiniband_diags".to_owned(),
                        crate::json::Json::String(crate::ibdiag::DIAGS_VERSION.into()),
                    )]
                    .into_iter()
                    .collect(),
                );
                let mut t = crate::json::Envelope::new("mad", body).to_text();
                t.push('\n');
                io.out(&t);
            } else {
                io.out(&format!(
                    "mad (madstack) {}; its infiniband-diags commands match infiniband-diags {}\n",
                    crate::json::VERSION,
                    crate::ibdiag::DIAGS_VERSION
                ));
            }
            Ok(())
        }
        name => match COMMANDS.iter().find(|c| c.name == name) {
            Some(c) => {
                let tail = rest.get(at + 1..).unwrap_or(&[]);
                let args = if c.session_args {
                    extract_session_opts(tail, &mut session)?
                } else {
                    tail.to_vec()
                };
                let mut inv = Invocation {
                    prog: c.name.to_owned(),
                    args,
                    session,
                    io,
                    command: c.name,
                    json_body: None,
                    mad_diag: crate::ibdiag::ibdebug::MadDiag::default(),
                };
                call(c, &mut inv)
            }
            None if name.starts_with('-') => Err(CliError::Usage(format!(
                "unknown global option {name:?}; run `mad --help` for the global options"
            ))),
            None => {
                let after_sim = at > 0 && rest.get(at - 1).is_some_and(|p| p == "--sim");
                let next_is_command = rest
                    .get(at + 1)
                    .is_some_and(|n| COMMANDS.iter().any(|c| c.name == n));
                if after_sim && (next_is_command || std::path::Path::new(name).exists()) {
                    return Err(CliError::Usage(format!(
                        "unknown command {name:?}; did you mean --sim={name}? (--sim takes a \
                         topology file only after '=': `mad --sim={name} {}`)",
                        rest.get(at + 1).map_or("COMMAND", String::as_str)
                    )));
                }
                Err(CliError::Usage(format!(
                    "unknown command {name:?}; the commands are: {}",
                    COMMANDS
                        .iter()
                        .map(|c| c.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        },
    }
}

/// Runs the binary with `argv` (`argv[0]` included) and returns the exit status.
/// Errors are written to `io.stderr` (an `IBEXIT` line to `io.stdout`, as
/// infiniband-diags does); usage errors add the usage text.
pub fn run(argv: &[String], io: &mut Io<'_>) -> i32 {
    let argv0 = argv.first().map_or("mad", String::as_str).to_owned();
    let prog_is_tool = programs().any(|c| c.name == program_name(&argv0));
    match dispatch(argv, io) {
        Ok(()) => 0,
        Err(e) => {
            let code = e.exit_code();
            let json = argv
                .iter()
                .skip(1)
                .take_while(|a| *a != "--")
                .any(|a| a == "--json");
            if json && !matches!(e, CliError::Exit(_)) {
                // Failed before a command ran (`mad --json frobnicate`):
                // still one JSON object on stdout.
                let name = if prog_is_tool {
                    program_name(&argv0)
                } else {
                    "mad"
                };
                if let Some(m) = error_message(&e) {
                    let mut t = crate::json::Envelope::error(name, &m, code).to_text();
                    t.push('\n');
                    io.out(&t);
                    io.err(&format!("{name}: {m}\n"));
                    return code;
                }
            }
            match e {
                CliError::Usage(m) if prog_is_tool => io.err(&format!("{argv0}: {m}\n")),
                CliError::Usage(m) if m == "no command given" => {
                    io.err(&format!("mad: {m}\n\n{}", usage()));
                }
                CliError::Usage(m) => io.err(&format!(
                    "mad: {m}\nRun `mad --help` for the commands and global options.\n"
                )),
                CliError::Input(m) | CliError::Failed(m) => io.err(&format!("mad: {m}\n")),
                CliError::ToolUsage(text) => io.err(&text),
                CliError::IbExit(m) => {
                    // Only reached for errors raised before a command
                    // knew its name; commands print their own.
                    io.out(&crate::diags::format_iberror(&argv0, &m));
                }
                CliError::Stderr(text, _) => io.err(&text),
                CliError::Incomplete(m) => {
                    let name = if prog_is_tool {
                        program_name(&argv0)
                    } else {
                        "mad"
                    };
                    io.err(&format!("{name}: {m}\n"));
                }
                CliError::Exit(_) => {}
            }
            code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::TransportChoice;
    use std::path::PathBuf;

    fn run_with(argv: &[&str], stdin: &str) -> (i32, String, String) {
        let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
        let mut input = stdin.as_bytes();
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = run(
            &argv,
            &mut Io {
                stdin: &mut input,
                stdout: &mut out,
                stderr: &mut err,
            },
        );
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn no_command_and_unknown_command_are_usage_errors() {
        let (code, _, err) = run_with(&["mad"], "");
        assert_eq!(code, 2);
        assert!(err.contains("no command given") && err.contains("Usage: mad"));
        let (code, _, err) = run_with(&["/usr/bin/mad", "frobnicate"], "");
        assert_eq!(code, 2);
        assert!(err.contains("unknown command \"frobnicate\""), "{err}");
        assert!(
            err.lines().count() <= 3,
            "a short hint, not the usage: {err}"
        );
        let (code, _, err) = run_with(&["mad", "--frob", "smpquery"], "");
        assert_eq!(code, 2);
        assert!(err.contains("unknown global option \"--frob\""), "{err}");
    }

    #[test]
    fn unknown_program_name_is_a_usage_error() {
        let (code, _, err) = run_with(&["/usr/local/bin/notatool", "decode"], "");
        assert_eq!(code, 2);
        assert!(err.contains("\"notatool\""), "{err}");
    }

    #[test]
    fn help_lists_the_commands_and_global_options() {
        let (code, out, _) = run_with(&["mad", "--help"], "");
        assert_eq!(code, 0);
        for c in COMMANDS {
            assert!(out.contains(c.name), "{} missing from {out}", c.name);
        }
        assert!(out.contains("--sim[=TOPOLOGY]") && out.contains("--ibsim"));
    }

    #[test]
    fn every_command_name_is_unique() {
        let mut names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
    }

    #[test]
    fn transport_options_are_taken_from_anywhere_before_a_double_dash() {
        let args: Vec<String> = [
            "nodeinfo",
            "--sim=x.net",
            "1",
            "--pcap",
            "f.pcap",
            "--",
            "--ibsim",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let mut o = SessionOpts::default();
        let rest = extract_session_opts(&args, &mut o).unwrap();
        assert_eq!(rest, ["nodeinfo", "1", "--", "--ibsim"]);
        assert_eq!(o.transport, TransportChoice::Sim(Some("x.net".into())));
        assert_eq!(o.pcap, Some(PathBuf::from("f.pcap")));
        let mut o = SessionOpts::default();
        let two: Vec<String> = vec!["--sim".into(), "--ibsim".into()];
        assert!(matches!(
            extract_session_opts(&two, &mut o),
            Err(CliError::Usage(_))
        ));
    }

    #[test]
    fn global_options_before_the_command() {
        let args: Vec<String> = ["-C", "mlx5_0", "-P2", "--json", "--ibsim", "sminfo", "1"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let mut o = SessionOpts::default();
        assert_eq!(global_opts(&args, &mut o).unwrap(), 5);
        assert_eq!(o.ca.as_deref(), Some("mlx5_0"));
        assert_eq!(o.port, Some(2));
        assert!(o.json);
        assert_eq!(o.transport, TransportChoice::IbSim);
    }

    #[test]
    fn decode_reads_hex_from_stdin() {
        let mut mad = vec![0u8; 256];
        mad_testkit::header::edit(&mut mad, |h| {
            h.base_version = 1;
            h.mgmt_class = mad_core::wire::MgmtClass::COM_MGT;
        });
        let hex: String = mad.iter().map(|b| format!("{b:02x} ")).collect();
        let (code, out, err) = run_with(&["mad", "decode"], &hex);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("MgmtClass:.......................ComMgt"),
            "{out}"
        );
    }

    #[test]
    fn decode_rejects_unknown_options_and_bad_hex() {
        let (code, _, err) = run_with(&["mad", "decode", "--bogus"], "");
        assert_eq!(code, 2);
        assert!(
            err.contains("mad: decode: unrecognized option '--bogus'\n"),
            "{err}"
        );
        let (code, _, err) = run_with(&["mad", "decode"], "01 0g");
        assert_eq!(code, 1);
        assert!(
            err.contains("stdin: line 1, column 5: 'g' is not a hex digit"),
            "{err}"
        );
        let (code, _, err) = run_with(&["mad", "decode"], "01 02 03");
        assert_eq!(code, 1);
        assert!(
            err.contains("stdin line 1: MadHeader: truncated: 3 bytes"),
            "{err}"
        );
    }
}
