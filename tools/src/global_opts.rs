//! `mad`'s global options: the transport choice (`--sim[=TOPOLOGY]`,
//! `--sim-node`, `--no-sm`, `--ibsim`, `-C`/`-P`), `--pcap` and `--json`, taken before
//! the command and (the transport ones) from among a command's arguments.
//! [`crate::cli`] documents them for users.

use std::path::PathBuf;

use crate::command::CliError;
use crate::session::{SessionOpts, TransportChoice};

/// Takes the value of an option that needs one: `--opt=V` or `--opt V`.
fn take_value(
    name: &str,
    arg: &str,
    rest: &mut std::slice::Iter<'_, String>,
) -> Result<Option<String>, CliError> {
    if arg == name {
        return match rest.next() {
            Some(v) => Ok(Some(v.clone())),
            None => Err(CliError::Usage(format!("option {name} needs a value"))),
        };
    }
    if let Some(v) = arg.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
        return Ok(Some(v.to_owned()));
    }
    Ok(None)
}

/// Takes the transport options out of `args` (up to a `--`), into `opts`.
///
/// # Errors
/// A transport option without its value, or two transports.
pub fn extract_session_opts(
    args: &[String],
    opts: &mut SessionOpts,
) -> Result<Vec<String>, CliError> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a.clone());
            out.extend(it.by_ref().cloned());
            break;
        }
        if !try_session_opt(a, &mut it, opts)? {
            out.push(a.clone());
        }
    }
    Ok(out)
}

fn set_transport(opts: &mut SessionOpts, t: TransportChoice) -> Result<(), CliError> {
    if opts.transport != TransportChoice::Auto && opts.transport != t {
        return Err(CliError::Usage(
            "choose one transport: --sim, --ibsim or a real port (-C/-P)".into(),
        ));
    }
    opts.transport = t;
    Ok(())
}

fn try_session_opt(
    a: &str,
    it: &mut std::slice::Iter<'_, String>,
    opts: &mut SessionOpts,
) -> Result<bool, CliError> {
    if a == "--sim" {
        set_transport(opts, TransportChoice::Sim(None))?;
        return Ok(true);
    }
    if let Some(t) = a.strip_prefix("--sim=") {
        if t.is_empty() {
            return Err(CliError::Usage("--sim= needs a topology file".into()));
        }
        set_transport(opts, TransportChoice::Sim(Some(t.to_owned())))?;
        return Ok(true);
    }
    if a == "--ibsim" {
        set_transport(opts, TransportChoice::IbSim)?;
        return Ok(true);
    }
    if a == "--no-sm" {
        opts.no_sm = true;
        return Ok(true);
    }
    if a == "--sim-node" || a.starts_with("--sim-node=") {
        opts.sim_node = take_value("--sim-node", a, it)?;
        return Ok(true);
    }
    if a == "--pcap" || a.starts_with("--pcap=") {
        opts.pcap = take_value("--pcap", a, it)?.map(PathBuf::from);
        return Ok(true);
    }
    Ok(false)
}

/// Parses `mad`'s global options up to the command name; returns the
/// index of the command in `args`.
pub fn global_opts(args: &[String], opts: &mut SessionOpts) -> Result<usize, CliError> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let mut it = args[i + 1..].iter();
        let before = it.len();
        if try_session_opt(a, &mut it, opts)? {
            i += 1 + (before - it.len());
            continue;
        }
        match a.as_str() {
            "--json" => opts.json = true,
            "-C" | "-P" => {
                let v = args
                    .get(i + 1)
                    .ok_or_else(|| CliError::Usage(format!("option {a} needs a value")))?;
                if a == "-C" {
                    opts.ca = Some(v.clone());
                } else {
                    opts.port = Some(crate::cnum::parse_port_arg(v));
                }
                i += 1;
            }
            _ if a.starts_with("-C") && a.len() > 2 => opts.ca = Some(a[2..].to_owned()),
            _ if a.starts_with("-P") && a.len() > 2 => {
                opts.port = Some(crate::cnum::parse_port_arg(&a[2..]));
            }
            _ => return Ok(i),
        }
        i += 1;
    }
    Ok(i)
}
