//! `ibroute` (infiniband-diags `ibroute.c`): a switch's unicast linear
//! forwarding table, each LID with the node behind it, or its multicast
//! forwarding table (`-M`).
//!
//! `--json` prints `{"command":"ibroute","switch":{"dest":{...},
//! "node_guid":"0x...","node_description":"..."},"unicast":[{"lid":N,
//! "port":N,"valid":B,"dest":{"type":"Switch","port_guid":"0x...",
//! "node_description":"..."}|null}]}` (or `"multicast":[{"mlid":N,
//! "ports":[...]}]` with `-M`).

use crate::command::{CliError, Invocation};
use crate::ibdiag;
use crate::ibdiag::fts::{
    self, check_switch, lookup, FtOpts, FtOut, FtSwitch, OnFailure, KEY_NODE_NAME_MAP,
};
use crate::json::{Json, JsonExt};

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

/// Runs `ibroute`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = fts::spec("K", EXAMPLES);
    let p = ibdiag::parse(inv, &spec)?;
    if p.args.is_empty() {
        return Err(CliError::ToolUsage(ibdiag::usage_text(&inv.prog, &spec)));
    }
    let lids = (fts::lid_arg(&p.args, 1), fts::lid_arg(&p.args, 2));
    let map_file = p.value(KEY_NODE_NAME_MAP).map(str::to_owned);
    let names = ibdiag::open_name_map(inv, map_file.as_deref()).unwrap_or_default();
    let o = FtOpts::of(&p);
    let session = ibdiag::open_session(inv, &p.common)?;
    let (session, dest) = ibdiag::dest_arg(session, &p.common, &p.args[0])?;
    // dump_lid asks with a 100 ms timeout.
    let fast = match fts::lookup_client(&session, p.common.m_key) {
        Ok(c) => c,
        Err(e) => {
            let _ = session.close();
            return Err(CliError::Failed(e));
        }
    };
    let mut out = FtOut::default();
    let mut sw_json = Json::Null;
    let r = check_switch(&session, &dest.target).map(|(ni, nd, si)| {
        let sw = FtSwitch {
            target: dest.target.clone(),
            text: dest.text.to_string(),
            guid: ni.node_guid,
            name: names.remap(ni.node_guid, &nd),
            nports: u32::from(ni.num_ports),
            si,
            lid: 0,
        };
        sw_json = Json::obj()
            .with("dest", ibdiag::dest_json(&dest))
            .with("node_guid", ibdiag::hex(ni.node_guid, 16))
            .with("node_description", Json::String(sw.name.clone()));
        let mut resolve = |lid| lookup(&fast, &names, lid);
        fts::table(
            &session,
            &sw,
            o,
            lids,
            OnFailure::Stop,
            &mut resolve,
            ": (unknown node and type)",
            &mut out,
        );
    });
    drop(fast);
    let close = session.close();
    if let Err((m, Some(e))) = &r {
        ibdiag::warn_failed(inv, &dest.text, e);
        if m.starts_with("node info failed") {
            // checkswitch's xdump of its NodeInfo buffer, still zero.
            inv.io.err("nodeinfo\n");
            for _ in 0..4 {
                inv.io.err(&format!("{}\n", ["0000"; 8].join(" ")));
            }
        }
    }
    inv.io.err(&out.err);
    if p.common.json {
        let mut j = Json::obj()
            .with("command", Json::String("ibroute".into()))
            .with("switch", sw_json)
            .with(o.table_key(), Json::Array(out.rows));
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
