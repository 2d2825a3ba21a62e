//! `dump_fts` (infiniband-diags `dump_fts.c`): the unicast (or, with
//! `-M`, multicast) forwarding table of every switch of the fabric, as
//! `ibroute` prints one, after a discovery; and the `dump_lfts` /
//! `dump_mfts` scripts, which run `dump_fts` (`-M`) and then print a
//! warning that they were replaced by it.
//!
//! As in the C program the first argument is the start LID and the
//! second the end LID (its usage line names a destination first, which
//! it never reads). A destination LID is named from the discovery
//! (`node info not available fabric scan` when no port holds it). A
//! block that cannot be read is reported on stderr and the dump goes on.
//! The scripts exit 0 whatever `dump_fts` did (they end with `echo`),
//! its messages included.
//!
//! `--json` prints `{"command":"dump_fts","switches":[{"dest":"DR path
//! ...","node_guid":"0x...","node_description":"...","unicast":[...]}]}`
//! (`"multicast"` with `-M`), each table as `ibroute --json` has it.

use mad_agents::smp::SmpTarget;
use mad_core::wire::attr::NodeType;
use mad_core::wire::smp::DrPath;

use crate::command::{CliError, Invocation};
use crate::discover::model::{dr_path_str, Fabric};
use crate::ibdiag::fts::{self, FtOpts, FtOut, FtSwitch, LidInfo, OnFailure, KEY_NODE_NAME_MAP};
use crate::ibdiag::{self, check_complete, limits, open_name_map, run_discovery};
use crate::json::{Json, JsonExt};
use crate::namemap::NameMap;

const EXAMPLES: &[&str] = &[
    " -- Unicast examples:",
    "-a\t# same, but dump all lids, even with invalid out ports",
    "-n\t# simple dump format - no destination resolving",
    "10\t# dump lids starting from 10",
    "0x10 0x20\t# dump lid range",
    " -- Multicast examples:",
    "-M\t# dump all non empty mlids of switch with lid 4",
    "-M 0xc010 0xc020\t# same, but with range",
    "-M -n\t# simple dump format",
];

/// Where the scripts find `dump_fts` (`@IBSCRIPTPATH@`): the name its
/// messages carry when run through them.
const SCRIPT_DUMP_FTS: &str = "/usr/sbin/dump_fts";

/// `ibnd_find_port_lid`: the port whose LID range holds `lid` (a
/// switch's port 0, a CA's or router's port).
fn find_port_lid(f: &Fabric, names: Option<&NameMap>, lid: u16) -> Option<LidInfo> {
    let holds = |base: u16, lmc: u8| {
        base != 0
            && u32::from(lid) >= u32::from(base)
            && u32::from(lid) < u32::from(base) + (1u32 << lmc.min(7))
    };
    for n in &f.nodes {
        let name = || ibdiag::remap(n, names);
        if n.is_switch() {
            if holds(n.smalid, n.smalmc) {
                return Some(LidInfo {
                    ntype: n.node_type().0,
                    port_guid: n.port(0).map_or(n.info.port_guid, |p| p.guid),
                    name: name(),
                    base_lid: n.smalid,
                    lmc: n.smalmc,
                });
            }
            continue;
        }
        if let Some(p) = n.ports.iter().flatten().find(|p| holds(p.base_lid, p.lmc)) {
            return Some(LidInfo {
                ntype: n.node_type().0,
                port_guid: p.guid,
                name: name(),
                base_lid: p.base_lid,
                lmc: p.lmc,
            });
        }
    }
    None
}

/// Runs `dump_fts`.
///
/// # Errors
/// Usage errors (exit 2); `Failed to discover fabric` (exit 255); a
/// discovery that missed nodes (exit 3, after the tables it could dump).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = fts::spec("KGDLs", EXAMPLES);
    let p = ibdiag::parse(inv, &spec)?;
    let lids = (fts::lid_arg(&p.args, 0), fts::lid_arg(&p.args, 1));
    let o = FtOpts::of(&p);
    let names = open_name_map(inv, p.value(KEY_NODE_NAME_MAP));
    let c = p.common.clone();
    let session = ibdiag::open_session(inv, &c)?;
    let d = match run_discovery(inv, &session, limits(None, c.timeout_ms), c.m_key, false) {
        Ok(d) => d,
        Err(_) => {
            let _ = session.close();
            return Err(CliError::Stderr("Failed to discover fabric\n".into(), 255));
        }
    };
    let f = &d.fabric;
    let mut out = FtOut::default();
    let mut switches = Vec::new();
    // ibnd_iter_nodes_type: the switches, newest first.
    for i in f.listed_of(NodeType::SWITCH) {
        let n = &f.nodes[i];
        let Ok(path) = DrPath::from_hops(&n.path) else {
            continue;
        };
        let target = SmpTarget::Dr(path);
        // libibnetdisc kept the SwitchInfo of its sweep; read it again.
        let Ok(si) = session.smp().switch_info(&target) else {
            out.err.push_str(&format!(
                "SubnGet(SwitchInfo) failed on switch '{}' {}\n",
                ibdiag::remap(n, names.as_ref()),
                dr_path_str(&n.path)
            ));
            continue;
        };
        let sw = FtSwitch {
            target,
            text: dr_path_str(&n.path),
            guid: n.guid(),
            name: ibdiag::remap(n, names.as_ref()),
            nports: u32::from(n.num_ports()),
            si,
            lid: n.smalid,
        };
        let rows_before = out.rows.len();
        let mut resolve = |lid| find_port_lid(f, names.as_ref(), lid);
        fts::table(
            &session,
            &sw,
            o,
            lids,
            OnFailure::Report,
            &mut resolve,
            ": (node info not available fabric scan)",
            &mut out,
        );
        let rows: Vec<Json> = out.rows.drain(rows_before..).collect();
        switches.push(
            Json::obj()
                .with("dest", Json::String(sw.text.clone()))
                .with("node_guid", ibdiag::hex(sw.guid, 16))
                .with("node_description", Json::String(sw.name.clone()))
                .with(o.table_key(), Json::Array(rows)),
        );
    }
    let close = session.close();
    inv.io.err(&out.err);
    if c.json {
        ibdiag::print_json(inv, &Json::obj().with("switches", Json::Array(switches)));
    } else {
        inv.io.out(&out.text);
    }
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))?;
    check_complete(inv, &d.failures)
}

/// `dump_lfts`: `dump_fts $@`, then the warning.
///
/// # Errors
/// None of its own: the script's status is its last `echo`'s.
pub fn run_dump_lfts(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    script(inv, false)
}

/// `dump_mfts`: `dump_fts -M $@`, then the warning.
///
/// # Errors
/// None of its own: the script's status is its last `echo`'s.
pub fn run_dump_mfts(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    script(inv, true)
}

fn script(inv: &mut Invocation<'_, '_>, mc: bool) -> Result<(), CliError> {
    // `$@` unquoted: each argument split at white space.
    let mut args: Vec<String> = Vec::new();
    if mc {
        args.push("-M".into());
    }
    args.extend(
        inv.args
            .iter()
            .flat_map(|a| a.split_whitespace().map(str::to_owned)),
    );
    let saved_prog = std::mem::replace(&mut inv.prog, SCRIPT_DUMP_FTS.to_owned());
    let saved_args = std::mem::replace(&mut inv.args, args);
    let r = run(inv);
    inv.prog = saved_prog;
    inv.args = saved_args;
    if let Err(e) = r {
        // What the dump_fts process would have printed before exiting.
        match e {
            CliError::ToolUsage(t) | CliError::Stderr(t, _) => inv.io.err(&t),
            CliError::IbExit(m) => inv
                .io
                .out(&crate::diags::format_iberror(SCRIPT_DUMP_FTS, &m)),
            CliError::Incomplete(m) => inv.io.err(&format!("dump_fts: {m}\n")),
            CliError::Usage(m) | CliError::Input(m) | CliError::Failed(m) => {
                inv.io.err(&format!("dump_fts: {m}\n"));
            }
            CliError::Exit(_) => {}
        }
    }
    if inv.session.json {
        return Ok(());
    }
    inv.io.out(&format!(
        "\n*** WARNING ***: this command has been replaced by dump_fts{}\n\n\n",
        if mc { " -M" } else { "" }
    ));
    Ok(())
}
