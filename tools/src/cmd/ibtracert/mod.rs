//! `ibtracert` (infiniband-diags `ibtracert.c`): the unicast route from
//! one LID (or GUID) to another, hop by hop, found the way ibtracert
//! finds it: a directed-route walk from the local port to the source by
//! the switches' forwarding tables, then from the source to the
//! destination, printing each hop. `--ports-file` reads many pairs.
//! `-m MLID` traces the multicast tree of MLID from the source to the
//! destination instead (`mcast`).
//!
//! `--json` prints `{"command":"ibtracert","routes":[{"from":{...},
//! "hops":[{"out_port":N,"type":"switch","port_guid":"0x...","port":N,
//! "lid":N,"lid_end":N,"node_description":"..."}],"to":{...}}]}`.

mod mcast;

use crate::command::{CliError, Invocation};
use crate::ibdiag::trace::{PortId, Tracer};
use crate::ibdiag::{self, Dest, DestType, Opt, ToolSpec};
use crate::json::{Json, JsonExt};
use crate::session::Session;

const KEY_NODE_NAME_MAP: i32 = 1;
const KEY_PORTS_FILE: i32 = 2;

const OPTS: &[Opt] = &[
    Opt::new("force", 'f', false, None, "force"),
    Opt::new("no_info", 'n', false, None, "simple format"),
    Opt::new(
        "mlid",
        'm',
        true,
        Some("<mlid>"),
        "multicast trace of the mlid",
    ),
    ibdiag::node_name_map_opt(KEY_NODE_NAME_MAP),
    Opt::long(
        "ports-file",
        KEY_PORTS_FILE,
        true,
        Some("<file>"),
        "port pairs file",
    ),
];

const EXAMPLES: &[&str] = &[
    "- Unicast examples:",
    "4 16\t\t\t# show path between lids 4 and 16",
    "-n 4 16\t\t# same, but using simple output format",
    "-G 0x8f1040396522d 0x002c9000100d051\t# use guid addresses",
    " - Multicast examples:",
    "-m 0xc000 4 16\t# show multicast path of mlid 0xc000 between lids 4 and 16",
];

fn resolve(s: &mut Session, c: &ibdiag::Common, addr: &str) -> Option<PortId> {
    match ibdiag::resolve_dest(s, c, addr, c.dest_type)? {
        Dest { lid, .. } if lid > 0 => Some(PortId::lid(lid)),
        _ => None,
    }
}

/// Runs `ibtracert`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "DK",
        usage_args: "<src-addr> <dest-addr>",
        examples: EXAMPLES,
    };
    let p = ibdiag::parse(inv, &spec)?;
    let val = |k: i32| p.value(k).map(str::to_owned);
    let ports_file = val(KEY_PORTS_FILE);
    if p.args.len() < 2 && ports_file.is_none() {
        return Err(CliError::ToolUsage(ibdiag::usage_text(&inv.prog, &spec)));
    }
    let names = ibdiag::open_name_map(inv, val(KEY_NODE_NAME_MAP).as_deref()).unwrap_or_default();
    let dumplevel = if p.has('n' as i32) { 1 } else { 2 };
    // `mlid = strtoul(optarg, NULL, 0)` into an int.
    let multicast = p
        .has('m' as i32)
        .then(|| crate::cnum::c_strtoul(p.value('m' as i32).unwrap_or("")) as u32);
    let mut c = p.common.clone();
    if c.dest_type == DestType::DrPath {
        c.dest_type = DestType::Lid;
    }
    let mut session = ibdiag::open_session(inv, &c)?;
    session.walking();
    let pairs: Vec<(String, String, usize)> = match &ports_file {
        None => vec![(p.args[0].clone(), p.args[1].clone(), 0)],
        Some(f) => match read_pairs(f) {
            Ok(v) => v,
            Err(e) => {
                let _ = session.close();
                return Err(e);
            }
        },
    };
    // GUIDs resolve through the SA (which needs the session mutably):
    // resolve every pair before tracing.
    let resolved: Vec<(Option<u16>, Option<u16>)> = pairs
        .iter()
        .map(|(a, b, _)| {
            (
                resolve(&mut session, &c, a).map(|x| x.lid),
                resolve(&mut session, &c, b).map(|x| x.lid),
            )
        })
        .collect();
    let mut routes = Vec::new();
    let mut result: Result<(), CliError> = Ok(());
    let mut text = String::new();
    let mut warn_text = String::new();
    for ((src, dst, line), ids) in pairs.iter().zip(resolved) {
        let mut t = Tracer {
            s: &session,
            names: &names,
            force: p.has('f' as i32),
            text: String::new(),
            warn: String::new(),
            diag: inv.mad_diag,
            hops: Vec::new(),
            ends: Vec::new(),
        };
        let ok = match ids {
            (Some(a), Some(b)) => trace_lids(&mut t, a, b, dumplevel, multicast),
            (None, _) => {
                t.warn("get_route", &format!("can't resolve source port {src}"));
                false
            }
            (_, None) => {
                t.warn(
                    "get_route",
                    &format!("can't resolve destination port {dst}"),
                );
                false
            }
        };
        text.push_str(&t.text);
        warn_text.push_str(&t.warn);
        let mut r = Json::obj();
        for (k, v) in t.ends.iter().filter(|(k, _)| *k == "from").take(1) {
            r.push(k, v.clone());
        }
        r.push("hops", Json::Array(t.hops.clone()));
        for (k, v) in t.ends.iter().filter(|(k, _)| *k == "to").take(1) {
            r.push(k, v.clone());
        }
        routes.push(r);
        if !ok {
            result = Err(CliError::IbExit(if ports_file.is_some() {
                format!("Failed to get route information at line {line}")
            } else {
                "Failed to get route information".into()
            }));
            break;
        }
    }
    if result.is_ok() {
        if let Some(f) = &ports_file {
            text.push_str(&format!(
                "{} lid/guid pairs processed from {f}\n",
                pairs.len()
            ));
        }
    }
    let close = session.close();
    inv.io.err(&warn_text);
    if c.json {
        let mut j = Json::obj()
            .with("command", Json::String("ibtracert".into()))
            .with("routes", Json::Array(routes));
        if let Err(CliError::IbExit(m)) = &result {
            j.push("error", Json::String(m.clone()));
            ibdiag::print_json(inv, &j);
            return Err(CliError::Exit(255));
        }
        ibdiag::print_json(inv, &j);
    } else {
        inv.io.out(&text);
        result?;
    }
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))
}

/// `get_route` for two resolved LIDs (`multicast`: the MLID of `-m`).
fn trace_lids(t: &mut Tracer<'_>, s: u16, d: u16, dumplevel: u8, multicast: Option<u32>) -> bool {
    const F: &str = "get_route";
    let mut my = PortId::local();
    if !t.find_route(&mut my, &PortId::lid(s), 0) {
        t.warn(F, "can't find a route to the src port");
        return false;
    }
    if let Some(mlid) = multicast {
        return mcast::trace(t, &my, d, mlid, dumplevel);
    }
    if !t.find_route(&mut my, &PortId::lid(d), dumplevel) {
        t.warn(F, "can't find a route from src to dest");
        return false;
    }
    true
}

/// The pairs of a `--ports-file`: (src, dst, line number).
fn read_pairs(path: &str) -> Result<Vec<(String, String, usize)>, CliError> {
    let text = crate::limits::read_text(path, crate::limits::MAX_PORTS_FILE_LEN, "a ports file")
        .map_err(|_| CliError::IbExit(format!("cannot open ports-file {path}")))?;
    let mut v = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let mut w = line.split_whitespace();
        match (w.next(), w.next()) {
            (Some(a), Some(b)) => v.push((
                a.chars().take(20).collect(),
                b.chars().take(20).collect(),
                i + 1,
            )),
            _ => {
                return Err(CliError::IbExit(format!(
                    "ports-file, {path}, at line {} contains bad data",
                    i + 1
                )))
            }
        }
    }
    Ok(v)
}
