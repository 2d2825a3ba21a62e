//! `ibhosts`, `ibswitches` and `ibrouters`: infiniband-diags' shell
//! scripts, which run `ibnetdiscover` (or read a topology file) and
//! reshape its `Ca` / `Switch` / `Rt` lines with awk; and `ibnodes`,
//! which runs ibhosts then ibswitches with the same arguments (with
//! `--json`: their two arrays, one per line). Same options (`-h`, `-y MKEY`, `-C CA`,
//! `-P PORT`, `-t MS`, a topology file), same output, same usage line
//! (on stdout, exit status 255).
//!
//! # `--json` (stable shape)
//! ```json
//! {"command": "ibhosts", "version": "0.1.0", "complete": true,
//!  "hosts": [{"guid": "0x0000000000100000", "type": "Ca", "num_ports": 2,
//!             "description": "Hca1"}]}
//! ```
//! ibswitches has `"switches"` instead of `"hosts"` and adds `"lid"`,
//! `"lmc"` and `"enhanced_port0"` to each entry.
//! Entries come in the order of the text output.

use mad_core::wire::attr::NodeType;

use crate::command::{CliError, Invocation};
use crate::discover::format::{self, TopologyOptions};
use crate::ibdiag::{self, Common};
use crate::ibdiag::{check_complete, limits, open_name_map, run_discovery};
use crate::json::{Json, JsonExt};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Hosts,
    Switches,
    Routers,
}

fn usage(inv: &mut Invocation<'_, '_>, which: Which) -> CliError {
    let base = match (which, inv.prog.rsplit('/').next().unwrap_or(&inv.prog)) {
        // ibnodes runs the other two scripts, which complain by their name.
        (Which::Hosts, "ibnodes") => "ibhosts".to_owned(),
        (Which::Switches, "ibnodes") => "ibswitches".to_owned(),
        (_, b) => b.to_owned(),
    };
    inv.io.out(&format!(
        "Usage: {base} [-h] [<topology-file> | -y mkey -C ca_name -P ca_port -t timeout_ms]\n"
    ));
    CliError::Exit(255)
}

fn run_which(inv: &mut Invocation<'_, '_>, which: Which) -> Result<(), CliError> {
    let mut c = Common::default();
    let mut topofile: Option<String> = None;
    let mut json = inv.session.json;
    let args = inv.args.clone();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => return Err(usage(inv, which)),
            "--json" => json = true,
            "-y" | "--m_key" | "-P" | "--Port" | "-C" | "--Ca" | "-t" | "--timeout" => {
                let Some(v) = it.next().filter(|v| !v.starts_with('-') && !v.is_empty()) else {
                    return Err(usage(inv, which));
                };
                match a.as_str() {
                    "-y" | "--m_key" => c.m_key = crate::cnum::c_strtoul(v),
                    "-P" | "--Port" => c.port = Some(crate::cnum::parse_port_arg(v)),
                    "-C" | "--Ca" => c.ca = Some(v.clone()),
                    _ => {
                        let ms = crate::cnum::c_strtoul(v);
                        c.timeout_ms = u32::try_from(ms).ok().filter(|&m| m > 0);
                    }
                }
            }
            s if s.starts_with('-') => return Err(usage(inv, which)),
            s => {
                if topofile.is_some() {
                    return Err(usage(inv, which));
                }
                topofile = Some(s.to_owned());
            }
        }
    }
    // The scripts feed ibnetdiscover's default topology (or the file)
    // through awk.
    let map = open_name_map(inv, None);
    let mut discovery = None;
    let (text, fabric) = match &topofile {
        Some(path) => {
            let t =
                crate::limits::read_file(path, mad_sim::topology::MAX_TOPOLOGY_BYTES, "a topology")
                    .map_err(|e| {
                        // cat's message: strerror, without Rust's "(os error N)".
                        let msg = e.to_string();
                        let msg = msg.split(" (os error").next().unwrap_or(&msg);
                        inv.io.err(&format!("cat: {path}: {msg}\n"));
                        CliError::Exit(1)
                    })?;
            (String::from_utf8_lossy(&t).into_owned(), None)
        }
        None => {
            let session = ibdiag::open_session(inv, &c).map_err(|e| through_awk(inv, e))?;
            let d = run_discovery(inv, &session, limits(None, c.timeout_ms), c.m_key, false)
                .map_err(|e| through_awk(inv, e))?;
            let _ = session.close();
            discovery = Some(d.failures.clone());
            let text = format::topology(
                &d.fabric,
                &TopologyOptions {
                    name_map: map.as_ref(),
                    ctime: crate::discover::ctime::ctime_now(),
                    ..TopologyOptions::default()
                },
            );
            (text, Some(d.fabric))
        }
    };
    if json {
        let mut arr = Vec::new();
        match &fabric {
            Some(f) => {
                let t = match which {
                    Which::Hosts => NodeType::CA,
                    Which::Switches => NodeType::SWITCH,
                    Which::Routers => NodeType::ROUTER,
                };
                for i in f.listed_of(t) {
                    let n = &f.nodes[i];
                    let desc = match which {
                        // ibhosts shows the description, ibswitches the
                        // mapped name (as the topology lines do).
                        Which::Hosts | Which::Routers => n.clean_desc(),
                        Which::Switches => map
                            .as_ref()
                            .and_then(|m| m.get(n.guid()))
                            .map_or_else(|| n.clean_desc(), str::to_owned),
                    };
                    let mut j = Json::obj()
                        .with("guid", ibdiag::hex(n.guid(), 16))
                        .with(
                            "type",
                            Json::String(
                                match which {
                                    Which::Hosts => "Ca",
                                    Which::Switches => "Switch",
                                    Which::Routers => "Rt",
                                }
                                .into(),
                            ),
                        )
                        .with("num_ports", Json::from(u64::from(n.num_ports())))
                        .with("description", Json::String(desc));
                    if which == Which::Switches {
                        j.push("lid", Json::from(u64::from(n.smalid)));
                        j.push("lmc", Json::from(u64::from(n.smalmc)));
                        j.push("enhanced_port0", Json::Bool(n.enhanced_port0));
                    }
                    arr.push(j);
                }
            }
            None => {
                // From a topology file: what the text lines carry.
                let lines = match which {
                    Which::Hosts => format::ibhosts(&text),
                    Which::Switches => format::ibswitches(&text),
                    Which::Routers => format::ibrouters(&text),
                };
                for l in lines.lines() {
                    let Some((kind, rest)) = l.split_once("\t: 0x") else {
                        continue;
                    };
                    let guid = rest.get(..16).and_then(|h| u64::from_str_radix(h, 16).ok());
                    let nports = rest
                        .split(" ports ")
                        .nth(1)
                        .and_then(|r| r.split(' ').next())
                        .and_then(|n| n.parse::<u64>().ok());
                    let desc = rest
                        .split_once('"')
                        .and_then(|(_, r)| r.split_once('"'))
                        .map(|(d, _)| d.to_owned());
                    arr.push(
                        Json::obj()
                            .with("guid", guid.map_or(Json::Null, |g| ibdiag::hex(g, 16)))
                            .with("type", Json::String(kind.to_owned()))
                            .with("num_ports", nports.map_or(Json::Null, Json::from))
                            .with("description", Json::opt_str(desc.as_deref())),
                    );
                }
            }
        }
        let key = match which {
            Which::Hosts => "hosts",
            Which::Switches => "switches",
            Which::Routers => "routers",
        };
        ibdiag::print_json(inv, &Json::obj().with(key, Json::Array(arr)));
        return check_complete(inv, discovery.as_deref().unwrap_or(&[]));
    }
    let out = match which {
        Which::Hosts => format::ibhosts(&text),
        Which::Switches => format::ibswitches(&text),
        Which::Routers => format::ibrouters(&text),
    };
    inv.io.out(&out);
    check_complete(inv, discovery.as_deref().unwrap_or(&[]))
}

/// Runs `ibhosts`.
///
/// # Errors
/// Usage (exit 255, usage on stdout), an unreadable topology file,
/// discovery failure.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    run_which(inv, Which::Hosts)
}

/// Runs `ibswitches`.
///
/// # Errors
/// As [`run`].
pub fn run_ibswitches(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    run_which(inv, Which::Switches)
}

/// Runs `ibrouters`.
///
/// # Errors
/// As [`run`].
pub fn run_ibrouters(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    run_which(inv, Which::Routers)
}

/// Runs `ibnodes`: ibhosts, then ibswitches with the same arguments;
/// the exit status is ibswitches'.
///
/// # Errors
/// As [`run`] (ibswitches' error; ibhosts' has been reported).
pub fn run_ibnodes(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    match run_which(inv, Which::Hosts) {
        Ok(()) | Err(CliError::Exit(_)) => {}
        Err(CliError::Stderr(t, _)) => inv.io.err(&t),
        Err(e) => return Err(e),
    }
    // Under --json each half sets the whole body: keep the hosts' list in
    // the one object ibnodes prints.
    let hosts = inv.json_body.as_ref().and_then(|b| b.get("hosts")).cloned();
    let r = run_which(inv, Which::Switches);
    if let (Some(hosts), Some(Json::Object(body))) = (hosts, inv.json_body.as_mut()) {
        body.insert("hosts".into(), hosts);
    }
    r
}

/// An error of the ibnetdiscover run the script pipes through awk: its
/// `IBEXIT` line is on ibnetdiscover's stdout, which the awk program
/// passes through (`iberror:`), and the script exits 255; other errors as
/// they are.
fn through_awk(inv: &mut Invocation<'_, '_>, e: CliError) -> CliError {
    match e {
        CliError::IbExit(m) => {
            inv.io
                .out(&crate::diags::format_iberror("ibnetdiscover", &m));
            CliError::Exit(255)
        }
        e => e,
    }
}
