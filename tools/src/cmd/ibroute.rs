//! `ibroute` (infiniband-diags `ibroute.c`): a switch's unicast linear
//! forwarding table, each LID with the node behind it, or its multicast
//! forwarding table (`-M`).
//!
//! `--json` prints `{"command":"ibroute","switch":{"dest":{...},
//! "node_guid":"0x...","node_description":"..."},"unicast":[{"lid":N,
//! "port":N,"valid":B,"dest":{"type":"Switch","port_guid":"0x...",
//! "node_description":"..."}|null}]}` (or `"multicast":[{"mlid":N,
//! "ports":[...]}]` with `-M`).

use std::time::Duration;

use mad_agents::smp::{SmpClient, SmpTarget};
use mad_agents::QueryError;
use mad_core::wire::attr::{NodeDescription, NodeInfo, NodeType, PortInfo, SwitchInfo};
use mad_core::wire::AttributeId;

use crate::command::{CliError, Invocation};
use crate::diags::dump;
use crate::ibdiag::RawSmpData;
use crate::ibdiag::{self, Opt, ToolSpec};
use crate::json::{Json, JsonExt};
use crate::namemap::NameMap;
use crate::session::Session;

const KEY_NODE_NAME_MAP: i32 = 1;

const OPTS: &[Opt] = &[
    Opt::new(
        "all",
        'a',
        false,
        None,
        "show all lids, even invalid entries",
    ),
    Opt::new(
        "no_dests",
        'n',
        false,
        None,
        "do not try to resolve destinations",
    ),
    Opt::new(
        "Multicast",
        'M',
        false,
        None,
        "show multicast forwarding tables",
    ),
    ibdiag::node_name_map_opt(KEY_NODE_NAME_MAP),
];

const EXAMPLES: &[&str] = &[
    " -- Unicast examples:",
    "4\t# dump all lids with valid out ports of switch with lid 4",
    "-a 4\t# same, but dump all lids, even with invalid out ports",
    "-n 4\t# simple dump format - no destination resolving",
    "4 10\t# dump lids starting from 10",
    "4 0x10 0x20\t# dump lid range",
    "-G 0x08f1040023\t# resolve switch by GUID",
    "-D 0,1\t# resolve switch by direct path",
    " -- Multicast examples:",
    "-M 4\t# dump all non empty mlids of switch with lid 4",
    "-M 4 0xc010 0xc020\t# same, but with range",
    "-M -n 4\t# simple dump format",
];

const MIN_MCAST_LID: u32 = 0xC000;
const MAX_MCAST_LID: u32 = 0xFFFE;
const MAX_UCAST_LID: u32 = 0xBFFF;

struct Opts {
    brief: bool,
    dump_all: bool,
    names: NameMap,
}

/// `dump_lid`'s static state.
#[derive(Default)]
struct LidState {
    last_port_lid: u32,
    base_port_lid: u32,
    portguid: u64,
}

struct Out {
    text: String,
    err: String,
    rows: Vec<Json>,
    sw: Json,
}

/// `check_switch`: (NodeInfo, NodeDescription, SwitchInfo).
fn check_switch(
    s: &Session,
    t: &SmpTarget,
) -> Result<(NodeInfo, NodeDescription, SwitchInfo), (&'static str, Option<QueryError>)> {
    let ni = s
        .smp()
        .node_info(t)
        .map_err(|e| ("node info failed: valid addr?", Some(e)))?;
    let nd = s
        .smp()
        .node_description(t)
        .map_err(|e| ("node desc failed", Some(e)))?;
    if ni.node_type != NodeType::SWITCH {
        return Err(("not a switch", None));
    }
    let si = s
        .smp()
        .switch_info(t)
        .map_err(|e| ("switch info failed: is a switch node?", Some(e)))?;
    Ok((ni, nd, si))
}

fn status_of(e: &QueryError) -> u16 {
    match e {
        QueryError::Status { status, .. } => status.0,
        _ => 0,
    }
}

fn dump_lid(
    fast: &SmpClient,
    o: &Opts,
    st: &mut LidState,
    lid: u32,
    valid: bool,
) -> (String, Json) {
    if o.brief {
        return (String::new(), Json::Null);
    }
    if lid <= st.last_port_lid {
        let s = if !valid {
            format!(
                ": (path #{} - illegal port)",
                lid as i64 - i64::from(st.base_port_lid)
            )
        } else if st.portguid == 0 {
            format!(
                ": (path #{} out of {})",
                lid as i64 - i64::from(st.base_port_lid) + 1,
                st.last_port_lid - st.base_port_lid + 1
            )
        } else {
            format!(
                ": (path #{} out of {}: portguid {})",
                lid as i64 - i64::from(st.base_port_lid) + 1,
                st.last_port_lid - st.base_port_lid + 1,
                dump::hex(st.portguid, 8)
            )
        };
        return (s, Json::Null);
    }
    if !valid {
        return (": (illegal port)".into(), Json::Null);
    }
    st.portguid = 0;
    let t = SmpTarget::Lid(lid as u16);
    let nd = fast.node_description(&t);
    let pi = nd.as_ref().ok().map(|_| fast.port_info(&t, 0));
    let ni = match pi {
        Some(Ok(_)) => Some(fast.node_info(&t)),
        _ => None,
    };
    let (Ok(nd), Some(Ok(pi)), Some(Ok(ni))) = (nd, pi, ni) else {
        return (": (unknown node and type)".into(), Json::Null);
    };
    let pi: PortInfo = pi;
    st.portguid = ni.port_guid;
    if pi.lmc > 0 {
        st.base_port_lid = pi.lid.into();
        st.last_port_lid = u32::from(pi.lid) + (1u32 << pi.lmc) - 1;
    }
    let name = o.names.remap(ni.node_guid, &nd);
    let j = Json::obj()
        .with("type", Json::String(dump::node_type(ni.node_type.0)))
        .with("port_guid", ibdiag::hex(ni.port_guid, 16))
        .with("node_description", Json::String(name.clone()));
    (
        format!(
            ": ({} portguid {}: '{}')",
            dump::node_type(ni.node_type.0),
            dump::hex(ni.port_guid, 8),
            name
        ),
        j,
    )
}

fn unicast(
    s: &Session,
    fast: &SmpClient,
    dest: &ibdiag::Dest,
    o: &Opts,
    startlid: u32,
    mut endlid: u32,
    out: &mut Out,
) -> Result<(), (&'static str, Option<QueryError>)> {
    let (ni, nd, si) = check_switch(s, &dest.target)?;
    let nports = u32::from(ni.num_ports);
    let top = u32::from(si.linear_fdb_top);
    if endlid == 0 || endlid > top {
        endlid = top;
    }
    if endlid > MAX_UCAST_LID {
        out.err.push_str(&format!(
            "ibwarn: [{}] dump_unicast_tables: illegal lft top {endlid}, truncate to {MAX_UCAST_LID}\n",
            std::process::id()
        ));
        endlid = MAX_UCAST_LID;
    }
    let name = o.names.remap(ni.node_guid, &nd);
    out.text.push_str(&format!(
        "Unicast lids [0x{startlid:x}-0x{endlid:x}] of switch {} guid 0x{:016x} ({name}):\n",
        dest.text, ni.node_guid
    ));
    out.text
        .push_str("  Lid  Out   Destination\n       Port     Info \n");
    out.sw = Json::obj()
        .with("dest", ibdiag::dest_json(dest))
        .with("node_guid", ibdiag::hex(ni.node_guid, 16))
        .with("node_description", Json::String(name));
    let startblock = startlid / 64;
    let endblock = endlid.div_ceil(64);
    let mut st = LidState::default();
    let mut n = 0;
    for block in startblock..endblock {
        let lft =
            match s
                .smp()
                .get::<RawSmpData>(&dest.target, AttributeId::LINEAR_FWD_TABLE, block)
            {
                Ok(d) => d.0,
                Err(e) => {
                    out.err.push_str(&format!(
                        "SubnGet() failed; MAD status 0x{:x} AM 0x{block:x}\n",
                        status_of(&e)
                    ));
                    return Ok(());
                }
            };
        let mut i = (block * 64).max(startlid);
        let e = (block * 64 + 64).min(endlid + 1);
        while i < e {
            let outport = u32::from(lft[(i % 64) as usize]);
            let valid = outport <= nports;
            if valid || o.dump_all {
                let (text, j) = dump_lid(fast, o, &mut st, i, valid);
                out.text
                    .push_str(&format!("0x{i:04x} {:03} {text}\n", outport & 0xff));
                out.rows.push(
                    Json::obj()
                        .with("lid", Json::from(u64::from(i)))
                        .with("port", Json::from(u64::from(outport)))
                        .with("valid", Json::Bool(valid))
                        .with("dest", j),
                );
                n += 1;
            }
            i += 1;
        }
    }
    out.text.push_str(&format!(
        "{n} {}lids dumped \n",
        if o.dump_all { "" } else { "valid " }
    ));
    Ok(())
}

fn multicast(
    s: &Session,
    dest: &ibdiag::Dest,
    o: &Opts,
    mut startlid: u32,
    mut endlid: u32,
    out: &mut Out,
) -> Result<(), (&'static str, Option<QueryError>)> {
    let (ni, nd, si) = check_switch(s, &dest.target)?;
    let nports = u32::from(ni.num_ports);
    let cap = u32::from(si.multicast_fdb_cap);
    let top = u32::from(si.multicast_fdb_top);
    let pid = std::process::id();
    if endlid == 0 || endlid > (MIN_MCAST_LID + cap).wrapping_sub(1) {
        endlid = (MIN_MCAST_LID + cap).wrapping_sub(1);
    }
    if !o.dump_all && top != 0 && top < endlid {
        if top < MIN_MCAST_LID - 1 {
            out.err.push_str(&format!(
                "ibwarn: [{pid}] dump_multicast_tables: illegal top mlid {top:x}\n"
            ));
        } else {
            endlid = top;
        }
    }
    if startlid == 0 {
        startlid = MIN_MCAST_LID;
    } else if startlid < MIN_MCAST_LID {
        out.err.push_str(&format!(
            "ibwarn: [{pid}] dump_multicast_tables: illegal start mlid {startlid:x}, set to {MIN_MCAST_LID:x}\n"
        ));
        startlid = MIN_MCAST_LID;
    }
    if endlid > MAX_MCAST_LID {
        out.err.push_str(&format!(
            "ibwarn: [{pid}] dump_multicast_tables: illegal end mlid {endlid:x}, truncate to {MAX_MCAST_LID:x}\n"
        ));
        endlid = MAX_MCAST_LID;
    }
    let name = o.names.remap(ni.node_guid, &nd);
    out.text.push_str(&format!(
        "Multicast mlids [0x{startlid:x}-0x{endlid:x}] of switch {} guid 0x{:016x} ({name}):\n",
        dest.text, ni.node_guid
    ));
    out.sw = Json::obj()
        .with("dest", ibdiag::dest_json(dest))
        .with("node_guid", ibdiag::hex(ni.node_guid, 16))
        .with("node_description", Json::String(name));
    if o.brief {
        out.text.push_str(" MLid       Port Mask\n");
    } else {
        if nports > 9 {
            let mut s = String::new();
            for i in 0..=nports {
                s.push(if i % 10 != 0 {
                    ' '
                } else {
                    char::from(b'0' + (i / 10) as u8)
                });
                s.push(' ');
            }
            out.text.push_str(&format!("            {s}\n"));
        }
        let mut s = String::new();
        for i in 0..=nports {
            s.push_str(&format!("{} ", i % 10));
        }
        out.text.push_str(&format!("     Ports: {s}\n MLid\n"));
    }
    let chunks = (nports + 1).div_ceil(16);
    let startblock = startlid / 32;
    let lastblock = endlid / 32;
    let mut n = 0;
    for block in startblock..=lastblock {
        let mut mft: Vec<[u16; 32]> = Vec::new();
        for j in 0..chunks {
            let m = (block - MIN_MCAST_LID / 32) | (j << 28);
            match s
                .smp()
                .get::<RawSmpData>(&dest.target, AttributeId::MCAST_FWD_TABLE, m)
            {
                Ok(d) => {
                    let mut a = [0u16; 32];
                    for (k, v) in a.iter_mut().enumerate() {
                        *v = u16::from_be_bytes([d.0[2 * k], d.0[2 * k + 1]]);
                    }
                    mft.push(a);
                }
                Err(e) => {
                    out.err.push_str(&format!(
                        "SubnGet() failed; MAD status 0x{:x} AM 0x{m:x}\n",
                        status_of(&e)
                    ));
                    return Ok(());
                }
            }
        }
        let mut i = (block * 32).max(startlid);
        let e = (block * 32 + 32).min(endlid + 1);
        while i < e {
            let idx = (i % 32) as usize;
            let nonzero = mft.iter().any(|c| c[idx] != 0);
            if nonzero || o.dump_all {
                let mut s = String::new();
                if o.brief {
                    for c in &mft {
                        s.push_str(&format!("{:04x}", c[idx]));
                    }
                } else {
                    for p in 0..=nports {
                        let mask = mft[(p / 16) as usize][idx];
                        s.push(if mask & (1 << (p % 16)) != 0 {
                            'x'
                        } else {
                            ' '
                        });
                        s.push(' ');
                    }
                }
                out.text.push_str(&format!("0x{i:04x}      {s}\n"));
                let ports: Vec<Json> = (0..=nports)
                    .filter(|p| mft[(p / 16) as usize][idx] & (1 << (p % 16)) != 0)
                    .map(|p| Json::from(u64::from(p)))
                    .collect();
                out.rows.push(
                    Json::obj()
                        .with("mlid", Json::from(u64::from(i)))
                        .with("ports", Json::Array(ports)),
                );
                n += 1;
            }
            i += 1;
        }
    }
    out.text.push_str(&format!(
        "{n} {}mlids dumped \n",
        if o.dump_all { "" } else { "valid " }
    ));
    Ok(())
}

/// Runs `ibroute`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "K",
        usage_args: "[<dest dr_path|lid|guid> [<startlid> [<endlid>]]]",
        examples: EXAMPLES,
    };
    let p = ibdiag::parse(inv, &spec)?;
    if p.args.is_empty() {
        return Err(CliError::ToolUsage(ibdiag::usage_text(&inv.prog, &spec)));
    }
    let startlid = p
        .args
        .get(1)
        .map_or(0, |a| crate::cnum::c_strtoul(a) as u32);
    let endlid = p
        .args
        .get(2)
        .map_or(0, |a| crate::cnum::c_strtoul(a) as u32);
    let map_file = p.value(KEY_NODE_NAME_MAP).map(str::to_owned);
    let names = ibdiag::open_name_map(inv, map_file.as_deref()).unwrap_or_default();
    let o = Opts {
        brief: p.has('n' as i32),
        dump_all: p.has('a' as i32),
        names,
    };
    let mc = p.has('M' as i32);
    let session = ibdiag::open_session(inv, &p.common)?;
    let (session, dest) = ibdiag::dest_arg(session, &p.common, &p.args[0])?;
    // dump_lid asks with a 100 ms timeout.
    let mut fast = match SmpClient::new(session.runtime()) {
        Ok(c) => c,
        Err(e) => {
            let _ = session.close();
            return Err(CliError::Failed(format!("SMP agent: {e}")));
        }
    };
    fast.timeout = Duration::from_millis(100);
    fast.retries = crate::session::DEFAULT_RETRIES;
    fast.m_key = p.common.m_key;
    let mut out = Out {
        text: String::new(),
        err: String::new(),
        rows: Vec::new(),
        sw: Json::Null,
    };
    let r = if mc {
        multicast(&session, &dest, &o, startlid, endlid, &mut out)
    } else {
        unicast(&session, &fast, &dest, &o, startlid, endlid, &mut out)
    };
    drop(fast);
    let close = session.close();
    if let Err((_, Some(e))) = &r {
        ibdiag::warn_failed(inv, &dest.text, e);
    }
    inv.io.err(&out.err);
    if p.common.json {
        let mut j = Json::obj()
            .with("command", Json::String("ibroute".into()))
            .with("switch", out.sw)
            .with(
                if mc { "multicast" } else { "unicast" },
                Json::Array(out.rows),
            );
        if let Err((m, _)) = &r {
            j.push("error", Json::String(format!("dump tables: {m}")));
            ibdiag::print_json(inv, &j);
            return Err(CliError::Exit(255));
        }
        ibdiag::print_json(inv, &j);
    } else {
        inv.io.out(&out.text);
        if let Err((m, _)) = r {
            return Err(CliError::IbExit(format!("dump tables: {m}")));
        }
    }
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))
}
