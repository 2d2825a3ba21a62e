//! The shape of infiniband-diags' op tools (a `match_tbl` of ops with
//! aliases: ibccquery, ibccconfig): the `-c` CC_Key both take, the op
//! named by the first argument (name or alias, any case), the session to
//! the destination named by the second, and the run's end (the text, or
//! one JSON object; `IBEXIT "operation OP: ..."` on failure).

use mad_agents::QueryError;

use super::{
    dest_arg, dest_json, open_session, parse, print_json, warn_failed, Dest, Opt, ToolSpec,
};
use crate::command::{CliError, Invocation};
use crate::json::{Json, JsonExt};
use crate::session::Session;

/// The op whose name or alias is `name` (case insensitive), of the
/// `(name, alias, op)` rows of a tool's table.
pub fn match_op<'a, T: Copy + 'a>(
    rows: impl IntoIterator<Item = (&'a str, &'a str, T)>,
    name: &str,
) -> Option<T> {
    rows.into_iter()
        .find(|(n, a, _)| n.eq_ignore_ascii_case(name) || a.eq_ignore_ascii_case(name))
        .map(|(_, _, op)| op)
}

/// An op tool's usage arguments: `head`, a blank line, `Supported ops
/// (and aliases, case insensitive):` and a line per op of `rows` (name,
/// alias, what follows the destination `addr`).
pub fn ops_usage<'a>(
    head: &str,
    addr: &str,
    rows: impl IntoIterator<Item = (&'a str, &'a str, String)>,
) -> String {
    let mut s = format!("{head}\n\nSupported ops (and aliases, case insensitive):\n");
    for (name, alias, tail) in rows {
        s.push_str(&format!("  {name} ({alias}) {addr}{tail}\n"));
    }
    s
}

/// What follows an op's destination in an op tool's usage when a port
/// number may follow it.
#[must_use]
pub fn optional_port(port: bool) -> String {
    if port { " [<portnum>]" } else { "" }.to_owned()
}

/// An op tool's run once its op is known: the op's name as typed, the
/// session and the destination, the arguments after the destination.
pub struct OpRun {
    /// The op as the user typed it (what `IBEXIT` names).
    pub op_name: String,
    /// The session to the destination.
    pub session: Session,
    /// The destination.
    pub dest: Dest,
    /// The arguments after the destination.
    pub rest: Vec<String>,
    /// `-c`: the CC_Key (`strtoull`: whatever number the text starts
    /// with; 0 when absent).
    pub cc_key: u64,
    /// `--json`.
    pub json: bool,
    /// The first failed query (for libibmad's warning at the end).
    failed: Option<QueryError>,
}

const KEY_CCKEY: i32 = 'c' as i32;

/// The op tools' own option.
const OPTS: &[Opt] = &[Opt::new("cckey", 'c', true, Some("<key>"), "CC key")];

/// Parses the command line (the `-c` CC_Key; no `-D` or `-K`, with
/// `usage_args` and `examples` for the usage); `argc < 2`: the usage; an
/// unknown op: `operation 'OP' not supported` (before any port is
/// opened); else the session to the destination.
///
/// # Errors
/// Usage (exit 2) and `IBEXIT` failures.
pub fn start<'a, T: Copy + 'a>(
    inv: &mut Invocation<'_, '_>,
    (usage_args, examples): (&str, &[&str]),
    rows: impl IntoIterator<Item = (&'a str, &'a str, T)>,
) -> Result<(T, OpRun), CliError> {
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "DK",
        usage_args,
        examples,
    };
    let p = parse(inv, &spec)?;
    let cc_key = p.value(KEY_CCKEY).map_or(0, crate::cnum::c_strtoul);
    if p.args.len() < 2 {
        return Err(CliError::ToolUsage(super::usage_text(&inv.prog, &spec)));
    }
    let op_name = p.args[0].clone();
    let Some(op) = match_op(rows, &op_name) else {
        return Err(CliError::IbExit(format!(
            "operation '{op_name}' not supported"
        )));
    };
    let session = open_session(inv, &p.common)?;
    let (session, dest) = dest_arg(session, &p.common, &p.args[1])?;
    let rest = p.args.get(2..).unwrap_or_default().to_vec();
    Ok((
        op,
        OpRun {
            op_name,
            session,
            dest,
            rest,
            cc_key,
            json: p.common.json,
            failed: None,
        },
    ))
}

impl OpRun {
    /// The value of a query's result; its failure, the first one, is
    /// kept for libibmad's warning at the end.
    pub fn keep<T>(&mut self, r: Result<T, QueryError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.failed.get_or_insert(e);
                None
            }
        }
    }

    /// Ends the run of `command`: libibmad's warning for the first failed
    /// query ([`Self::keep`]), then `out` (or, with `--json`, `command`, `op`, `dest` and
    /// `fields`), then the op's failure as `IBEXIT "operation OP: ..."`.
    ///
    /// # Errors
    /// The op's failure (exit 255), a pcap that could not be written.
    pub fn finish(
        self,
        inv: &mut Invocation<'_, '_>,
        command: &str,
        (out, fields): (&str, Vec<(&str, Json)>),
        r: Result<(), &str>,
    ) -> Result<(), CliError> {
        if let Some(e) = &self.failed {
            warn_failed(inv, &self.dest.text, e);
        }
        let close = self.session.close();
        let op_name = self.op_name;
        let err = r.err().map(|m| format!("operation {op_name}: {m}"));
        if self.json {
            let mut j = Json::obj()
                .with("command", Json::String(command.into()))
                .with("op", Json::String(op_name))
                .with("dest", dest_json(&self.dest));
            for (k, v) in fields {
                j.push(k, v);
            }
            if let Some(e) = err {
                j.push("error", Json::String(e));
                print_json(inv, &j);
                return Err(CliError::Exit(255));
            }
            print_json(inv, &j);
        } else {
            inv.io.out(out);
            if let Some(e) = err {
                return Err(CliError::IbExit(e));
            }
        }
        close.map_err(|e| CliError::Failed(format!("pcap: {e}")))
    }
}
