//! `ibcacheedit` (infiniband-diags `ibcacheedit.c`): rewrites GUIDs in
//! an ibnetdiscover cache file ([`crate::discover::cache`]) and writes
//! the result to a new one, for fabrics whose hardware was replaced.
//!
//! Options as infiniband-diags 44: `--switchguid BEFORE:AFTER` (a
//! switch's node GUID and so its ports'), `--caguid BEFORE:AFTER` (a
//! CA's node GUID), `--sysimgguid BEFORE:AFTER` (every node's with that
//! system image GUID), `--portguid NODEGUID:BEFORE:AFTER` (a port GUID
//! of that node; on a switch, its node GUID), the common `-h`, `-V` and
//! config-file ones, then `<orig.cache> <new.cache>`. An edit whose
//! GUID is not in the cache fails (`IBEXIT`, nothing written).
//!
//! # `--json` (stable shape)
//! ```json
//! {"command": "ibcacheedit", "version": "0.1.0", "complete": true,
//!  "orig": "fabric.cache", "new": "edited.cache", "edits": 2}
//! ```
//! `edits` counts the GUIDs replaced.

use mad_core::wire::attr::NodeType;

use crate::command::{CliError, Invocation};
use crate::discover::cache;
use crate::discover::model::Fabric;
use crate::ibdiag::{self, load_cache, Opt, ToolSpec};
use crate::json::{Json, JsonExt};

const OPT_SWITCHGUID: i32 = 1;
const OPT_CAGUID: i32 = 2;
const OPT_SYSIMGGUID: i32 = 3;
const OPT_PORTGUID: i32 = 4;

/// ibcacheedit's own options, in its order.
pub const OPTS: &[Opt] = &[
    Opt::long(
        "switchguid",
        OPT_SWITCHGUID,
        true,
        Some("BEFOREGUID:AFTERGUID"),
        "Specify before and after switchguid to edit",
    ),
    Opt::long(
        "caguid",
        OPT_CAGUID,
        true,
        Some("BEFOREGUID:AFTERGUID"),
        "Specify before and after caguid to edit",
    ),
    Opt::long(
        "sysimgguid",
        OPT_SYSIMGGUID,
        true,
        Some("BEFOREGUID:AFTERGUID"),
        "Specify before and after sysimgguid to edit",
    ),
    Opt::long(
        "portguid",
        OPT_PORTGUID,
        true,
        Some("NODEGUID:BEFOREGUID:AFTERGUID"),
        "Specify before and after port guid to edit",
    ),
];

/// The command line of ibcacheedit.
pub const SPEC: ToolSpec<'static> = ToolSpec {
    opts: OPTS,
    exclude: "CDdeGKLPstvy",
    usage_args: "<orig.cache> <new.cache>",
    examples: &[],
};

/// `BEFORE:AFTER` (`parse_beforeafter`): both parts as `strtoull(.., 0)`;
/// None when there is no `:` or nothing after it.
fn before_after(arg: &str) -> Option<(u64, u64)> {
    let (b, a) = arg.split_once(':')?;
    (!a.is_empty()).then(|| (crate::cnum::c_strtoul(b), crate::cnum::c_strtoul(a)))
}

/// `NODEGUID:BEFORE:AFTER` (`parse_guidbeforeafter`).
fn guid_before_after(arg: &str) -> Option<(u64, u64, u64)> {
    let (g, rest) = arg.split_once(':')?;
    if rest.is_empty() {
        return None;
    }
    let (b, a) = before_after(rest)?;
    Some((crate::cnum::c_strtoul(g), b, a))
}

/// The edits asked for, each at most once (the last one given counts).
#[derive(Default)]
struct Edits {
    switch: Option<(u64, u64)>,
    ca: Option<(u64, u64)>,
    sysimg: Option<(u64, u64)>,
    port: Option<(u64, u64, u64)>,
}

/// Gives node `i` GUID `after`; a switch's ports share its GUID.
fn set_node_guid(f: &mut Fabric, i: usize, after: u64) {
    let n = &mut f.nodes[i];
    n.info.node_guid = after;
    if n.is_switch() {
        for p in n.ports.iter_mut().flatten() {
            p.guid = after;
        }
    }
}

/// `replace_node_guid` over the nodes of type `t`: how many matched.
fn replace_node_guid(f: &mut Fabric, t: NodeType, before: u64, after: u64) -> usize {
    let hits: Vec<usize> = f
        .listed_of(t)
        .filter(|&i| f.nodes[i].guid() == before)
        .collect();
    for &i in &hits {
        set_node_guid(f, i, after);
    }
    hits.len()
}

/// Applies the edits in ibcacheedit's order; the number of GUIDs replaced.
fn apply(f: &mut Fabric, e: &Edits) -> Result<usize, CliError> {
    let mut edits = 0;
    if let Some((before, after)) = e.switch {
        let n = replace_node_guid(f, NodeType::SWITCH, before, after);
        if n == 0 {
            return Err(CliError::IbExit(format!(
                "switchguid = {before:x} not found"
            )));
        }
        edits += n;
    }
    if let Some((before, after)) = e.ca {
        let n = replace_node_guid(f, NodeType::CA, before, after);
        if n == 0 {
            return Err(CliError::IbExit(format!("caguid = {before:x} not found")));
        }
        edits += n;
    }
    if let Some((before, after)) = e.sysimg {
        let mut n = 0;
        for node in &mut f.nodes {
            if node.info.system_image_guid == before {
                node.info.system_image_guid = after;
                n += 1;
            }
        }
        if n == 0 {
            return Err(CliError::IbExit(format!(
                "sysimgguid = {before:x} not found"
            )));
        }
        edits += n;
    }
    if let Some((node_guid, before, after)) = e.port {
        let mut searched = 0;
        let mut n = 0;
        let order: Vec<usize> = f.listed().collect();
        for i in order {
            if f.nodes[i].guid() != node_guid {
                continue;
            }
            searched += 1;
            if f.nodes[i].is_switch() {
                if f.nodes[i].guid() == before {
                    set_node_guid(f, i, after);
                    n += 1;
                }
            } else if let Some(p) = f.nodes[i]
                .ports
                .iter_mut()
                .skip(1)
                .flatten()
                .find(|p| p.guid == before)
            {
                p.guid = after;
                n += 1;
            }
        }
        if searched == 0 {
            return Err(CliError::IbExit(format!(
                "nodeguid = {node_guid:x} not found"
            )));
        }
        if n == 0 {
            return Err(CliError::IbExit(format!("portguid = {before:x} not found")));
        }
        edits += n;
    }
    Ok(edits)
}

/// Runs `ibcacheedit`.
///
/// # Errors
/// A malformed GUID argument (usage), a missing file argument, a cache
/// that cannot be read or written, an edit whose GUID is not there
/// (`IBEXIT`).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let p = ibdiag::parse(inv, &SPEC)?;
    let mut e = Edits::default();
    for (key, val) in &p.custom {
        let arg = val.as_deref().unwrap_or("");
        let parsed = match *key {
            OPT_SWITCHGUID => before_after(arg).map(|v| e.switch = Some(v)),
            OPT_CAGUID => before_after(arg).map(|v| e.ca = Some(v)),
            OPT_SYSIMGGUID => before_after(arg).map(|v| e.sysimg = Some(v)),
            OPT_PORTGUID => guid_before_after(arg).map(|v| e.port = Some(v)),
            _ => Some(()),
        };
        if parsed.is_none() {
            return Err(CliError::ToolUsage(format!(
                "invalid input '{arg}'\n{}",
                ibdiag::usage_text(&inv.prog, &SPEC)
            )));
        }
    }
    let Some(orig) = p.args.first() else {
        return Err(CliError::IbExit("original cache file not specified".into()));
    };
    let Some(new) = p.args.get(1) else {
        return Err(CliError::IbExit("new cache file not specified".into()));
    };
    let mut f = load_cache(inv, orig, "loading original cached fabric failed")?.fabric;
    let edits = apply(&mut f, &e)?;
    if let Err(err) = cache::store(&f, new) {
        inv.io.err(&format!("{}: {err}\n", inv.prog));
        return Err(CliError::IbExit("caching new cache data failed".into()));
    }
    if p.common.json {
        ibdiag::print_json(
            inv,
            &Json::obj()
                .with("orig", Json::from(orig.as_str()))
                .with("new", Json::from(new.as_str()))
                .with("edits", Json::from(edits as u64)),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_arguments_parse_as_strtoull_and_need_every_part() {
        assert_eq!(before_after("0x10:0x20"), Some((0x10, 0x20)));
        assert_eq!(before_after("16:0"), Some((16, 0)));
        assert_eq!(before_after("0x10:"), None);
        assert_eq!(before_after("0x10"), None);
        assert_eq!(guid_before_after("1:2:3"), Some((1, 2, 3)));
        assert_eq!(guid_before_after("1:2:"), None);
        assert_eq!(guid_before_after("1:2"), None);
        assert_eq!(guid_before_after("1:"), None);
    }
}
