//! `ibfindnodesusing` (infiniband-diags' `ibfindnodesusing.pl`): the
//! hosts whose routes leave a switch port, and those whose routes come
//! back over the link from the other end. Reads the switch and its links
//! from the topology file the Perl scripts share (`-R` makes it again,
//! `-C` / `-P` pick the port), then each end's unicast forwarding table
//! as `ibroute -G` does, listing the Channel Adapters routed out of that
//! port as the script's compressed host list (`host1-3,host7`). Options
//! and messages as the script (Perl's `Getopt::Std`).
//!
//! # `--json` (stable shape)
//! ```json
//! {"command": "ibfindnodesusing", "version": "0.1.0", "complete": true,
//!  "switch": {"guid": "0x...", "port": "1", "desc": "..."},
//!  "remote": {"guid": "0x...", "port": "3", "desc": "..."},
//!  "out": ["host1-2"], "back": ["host3"]}
//! ```

use std::collections::{BTreeMap, HashMap};

use mad_agents::smp::SmpTarget;
use mad_core::wire::attr::NodeType;
use regex::Regex;

use crate::command::{CliError, Invocation};
use crate::ibdiag::fts::{self, FtOpts, FtOut, FtSwitch, LidInfo, OnFailure};
use crate::ibdiag::getopt_std::{script_options, Script};
use crate::ibdiag::perl_cache::topology_file;
use crate::ibdiag::{self, open_name_map, resolve_guid, Common};
use crate::json::{Json, JsonExt};
use crate::session::Session;

/// The script's usage text (on stdout, exit status 2).
fn usage(prog: &str) -> String {
    format!(
        "Usage: {prog} [-R -C <ca_name> -P <ca_port>] <switch_guid|switch_name> <port>\n   find a list of nodes which are routed through switch:port\n   -R Recalculate ibnetdiscover information\n   -C <ca_name> use selected Channel Adaptor name for queries\n   -P <ca_port> use selected channel adaptor port for queries\n"
    )
}

/// `format_guid`: lower case, the text after the first `0x`, zero-padded
/// to 16 (Perl pads strings with `%016s` too).
#[must_use]
pub fn format_guid(s: &str) -> String {
    let lower: String = s
        .chars()
        .map(|c| {
            if ('A'..='F').contains(&c) {
                c.to_ascii_lowercase()
            } else {
                c
            }
        })
        .collect();
    let body = lower.find("0x").map_or(lower.as_str(), |i| &lower[i + 2..]);
    format!("0x{body:0>16}")
}

/// The far end of a switch port, as `get_link_ends` records it (empty
/// strings where the port has no link).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LinkEnd {
    /// `0x` and the GUID text of the topology file.
    pub guid: String,
    /// The port number, as the file writes it.
    pub port: String,
    /// The description between the last quotes before ` lid`.
    pub desc: String,
}

/// A switch named in a topology file, and the far end of one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchPort {
    /// `0x` and the switch's GUID text.
    pub guid: String,
    /// The text between `# ` and the last ` port` of its line.
    pub desc: String,
    /// The far end of the port asked for.
    pub end: LinkEnd,
}

/// The switch `target` (as [`format_guid`] made it, or a pattern over
/// the descriptions) and the far end of its `port` in `topology` (what
/// `ibnetdiscover -g` prints), as the script finds them; `Ok(None)`
/// when no switch matches.
///
/// # Errors
/// A pattern of the script's that does not compile (none does).
pub fn switch_port(topology: &str, target: &str, port: &str) -> Result<Option<SwitchPort>, String> {
    let ends = link_ends(topology).map_err(|e| e.to_string())?;
    let Some((guid, desc)) = find_switch(topology, target).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let guid = format!("0x{guid}");
    let end = ends
        .get(&(guid.clone(), port.to_owned()))
        .cloned()
        .unwrap_or_default();
    Ok(Some(SwitchPort { guid, desc, end }))
}

/// `get_link_ends`: every switch port's far end, by ("0xGUID", port).
fn link_ends(text: &str) -> Result<HashMap<(String, String), LinkEnd>, regex::Error> {
    let switch = Regex::new(r#"^Switch.*"S-(.*)"\s+#.*"(.*)".* lid (\d+).*"#)?;
    let forms = [
        Regex::new(r#"^\[(\d+)\]\s+"[HSR]-(.+)"\[(\d+)\](\(.+\))?\s+#.*"(.*)"\.* lid (\d+).*"#)?,
        Regex::new(
            r#"^\[(\d+)\]\[ext (\d+)\]\s+"[HSR]-(.+)"\[(\d+)\](\(.+\))?\s+#.*"(.*)"\.* lid (\d+).*"#,
        )?,
        Regex::new(
            r#"^\[(\d+)\]\s+"[HSR]-(.+)"\[(\d+)\]\[ext (\d+)\](\(.+\))?\s+#.*"(.*)"\.* lid (\d+).*"#,
        )?,
        Regex::new(
            r#"^\[(\d+)\]\[ext (\d+)\]\s+"[HSR]-(.+)"\[(\d+)\]\[ext (\d+)\](\(.+\))?\s+#.*"(.*)"\.* lid (\d+).*"#,
        )?,
    ];
    // Which capture holds (remote guid, remote port, remote desc).
    let at = [(2, 3, 5), (3, 4, 6), (2, 3, 6), (3, 4, 7)];
    let mut ends = HashMap::new();
    let (mut in_switch, mut guid) = (false, String::new());
    for line in text.lines() {
        if let Some(c) = switch.captures(line) {
            guid = c[1].to_owned();
            in_switch = true;
        }
        if in_switch {
            let mut rec = None;
            for (re, (g, p, d)) in forms.iter().zip(at) {
                if let Some(c) = re.captures(line) {
                    rec = Some((
                        c[1].to_owned(),
                        LinkEnd {
                            guid: format!("0x{}", &c[g]),
                            port: c[p].to_owned(),
                            desc: c[d].to_owned(),
                        },
                    ));
                }
            }
            if let Some((port, end)) = rec {
                ends.insert((format!("0x{guid}"), port), end);
            }
        }
        if line.starts_with("Ca") || line.starts_with("Rt") {
            in_switch = false;
        }
    }
    Ok(ends)
}

/// The first `Switch` line that names the target: its GUID (without
/// `0x`) and the text between `# ` and the last ` port`.
fn find_switch(text: &str, target: &str) -> Result<Option<(String, String)>, regex::Error> {
    let line_re = Regex::new(r#"^Switch.*"S-(.*)"\s+# (.*) port.*"#)?;
    // The script puts the target into a pattern; one that is not a valid
    // pattern matches nothing here (Perl dies).
    let by_desc = Regex::new(&format!(r".*{target}\s+.*")).ok();
    for line in text.lines() {
        if let Some(c) = line_re.captures(line) {
            let (guid, desc) = (c[1].to_owned(), c[2].to_owned());
            if format!("0x{guid}") == target || by_desc.as_ref().is_some_and(|r| r.is_match(&desc))
            {
                return Ok(Some((guid, desc)));
            }
        }
    }
    Ok(None)
}

/// Perl's numeric value of the trailing digits (`""` is 0).
fn num(s: &str) -> u64 {
    s.parse().unwrap_or(0)
}

/// `compress_hostlist` then `split ","`: runs of names with the same
/// prefix and consecutive numeric suffixes become `prefixA-B`. `None`
/// stands for the script's undefined first element (an empty name).
#[must_use]
pub fn compress(hosts: &[Option<String>]) -> Vec<String> {
    let split = |h: &str| -> (String, String) {
        let digits = h.len() - h.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        (
            h[..h.len() - digits].to_owned(),
            h[h.len() - digits..].to_owned(),
        )
    };
    let mut sorted: Vec<(String, String)> = hosts
        .iter()
        .map(|h| split(h.as_deref().unwrap_or("")))
        .collect();
    sorted.sort_by_key(|(_, n)| num(n));
    // Per prefix: groups by index, group 0 used only when the first
    // number is 1 (Perl compares with an undefined last element).
    let mut groups: BTreeMap<String, (usize, BTreeMap<usize, Vec<String>>)> = BTreeMap::new();
    for (prefix, n) in sorted {
        let (i, g) = groups.entry(prefix).or_default();
        let last = g
            .get(i)
            .and_then(|v| v.last())
            .map_or(0, |l| num(l) as i128);
        if last != num(&n) as i128 - 1 {
            *i += 1;
        }
        g.entry(*i).or_default().push(n);
    }
    let mut list = Vec::new();
    for (prefix, (_, g)) in &groups {
        for v in g.values() {
            match v.as_slice() {
                [one] => list.push(format!("{prefix}{one}")),
                [first, .., last] => list.push(format!("{prefix}{first}-{last}")),
                [] => {}
            }
        }
    }
    let mut joined: Vec<String> = list.join(",").split(',').map(str::to_owned).collect();
    while joined.last().is_some_and(String::is_empty) {
        joined.pop();
    }
    joined
}

/// `get_hosts_routed`: the descriptions of the Channel Adapters whose
/// LIDs the switch `guid` routes out of `port`, as `ibroute -G` lists
/// them (its table walk, [`fts::unicast`]); `Err` holds what ibroute
/// would say on stderr.
fn hosts_routed(
    s: &mut Session,
    c: &Common,
    inv: &mut Invocation<'_, '_>,
    guid: &str,
    port: &str,
) -> Result<Vec<Option<String>>, String> {
    let mut hosts = vec![None];
    if guid.is_empty() {
        return Ok(hosts);
    }
    let Some(lid) = crate::cnum::c_strtoul_full(guid).and_then(|g| resolve_guid(s, c, g)) else {
        // What libibmad and ibroute say when the SA does not resolve it.
        let pid = std::process::id();
        let only_lid = if s.port_attrs().sm_lid == 0 {
            format!("ibwarn: [{pid}] sa_rpc_call: only lid routes are supported\n")
        } else {
            String::new()
        };
        return Err(format!(
            "{only_lid}ibwarn: [{pid}] ib_path_query_via: sa call path_query failed\nibroute: iberror: failed: can't resolve destination port {guid}"
        ));
    };
    let target = SmpTarget::Lid(lid);
    let (ni, nd, si) = fts::check_switch(s, &target)
        .map_err(|(m, _)| format!("ibroute: iberror: failed: dump tables: {m}"))?;
    let names = open_name_map(inv, None).unwrap_or_default();
    let sw = FtSwitch {
        target,
        text: format!("Lid {lid}"),
        guid: ni.node_guid,
        name: names.remap(ni.node_guid, &nd),
        nports: u32::from(ni.num_ports),
        si,
        lid,
    };
    let fast = fts::lookup_client(s, c.m_key)?;
    let mut found: HashMap<u16, LidInfo> = HashMap::new();
    let mut resolve = |lid| {
        let info = fts::lookup(&fast, &names, lid);
        if let Some(i) = &info {
            found.insert(lid, i.clone());
        }
        info
    };
    let mut out = FtOut::default();
    let (o, on) = (FtOpts::default(), OnFailure::Stop);
    fts::unicast(s, &sw, o, 0, 0, on, &mut resolve, "", &mut out);
    drop(fast);
    if !out.err.is_empty() {
        inv.io.err(&out.err);
    }
    let want = num(port);
    for row in &out.rows {
        // A LID whose node was named (not a further LID of an LMC range).
        let (Some(lid), Some(out_port), false) = (
            row["lid"].as_u64(),
            row["port"].as_u64(),
            row["dest"].is_null(),
        ) else {
            continue;
        };
        let info = u16::try_from(lid).ok().and_then(|l| found.get(&l));
        if let Some(i) = info.filter(|i| i.ntype == NodeType::CA.0 && out_port == want) {
            hosts.push(Some(i.name.clone()));
        }
    }
    Ok(hosts)
}

/// Runs `ibfindnodesusing`.
///
/// # Errors
/// Usage (exit 2), a switch not in the topology file (exit 1, the
/// script's message on stdout), no port or a failed discovery when the
/// file must be made (`IBEXIT`), an unreadable file (exit 2, as `die`).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let Script {
        prog,
        json,
        opts: g,
    } = script_options(inv, "hRC:P:", usage)?;
    let (ca, port) = (g.value('C').unwrap_or(""), g.value('P').unwrap_or(""));
    let target = format_guid(g.rest.first().map_or("", String::as_str));
    let target_port = g.rest.get(1).cloned().unwrap_or_default();
    let file = topology_file(inv, ca, port, g.has('R'))?;
    let read = || -> Result<String, CliError> {
        std::fs::read(&file)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| CliError::Stderr(format!("Failed to open ibnet topology: {e}\n"), 2))
    };
    let text = read()?;
    if target_port.is_empty() {
        inv.io.out(&usage(&prog));
        return Err(CliError::Exit(2));
    }
    let found = switch_port(&text, &target, &target_port)
        .map_err(|e| CliError::Stderr(format!("{prog}: {e}\n"), 2))?;
    let Some(SwitchPort { guid, desc, end }) = found else {
        inv.io.out(&format!(
            "Switch \"{target}\" not found\n   Try running with the \"-R\" or \"-P\" option.\n"
        ));
        return Err(CliError::Exit(1));
    };
    let c = Common {
        ca: (!ca.is_empty()).then(|| ca.to_owned()),
        port: (!port.is_empty()).then(|| crate::cnum::parse_port_arg(port)),
        ..Common::default()
    };
    let mut session = ibdiag::open_session(inv, &c)?;
    let mut lists = Vec::new();
    for (g, p) in [(&guid, &target_port), (&end.guid, &end.port)] {
        match hosts_routed(&mut session, &c, inv, g, p) {
            Ok(h) => lists.push(compress(&h)),
            Err(e) => {
                inv.io.err(&format!("{e}\n"));
                lists.push(Vec::new());
            }
        }
    }
    let _ = session.close();
    if json {
        let side = |g: &str, p: &str, d: &str| {
            Json::obj()
                .with("guid", Json::from(g))
                .with("port", Json::from(p))
                .with("desc", Json::from(d))
        };
        let names = |v: &Vec<String>| {
            Json::Array(
                v.iter()
                    .filter(|h| !h.is_empty())
                    .map(|h| Json::from(h.as_str()))
                    .collect(),
            )
        };
        ibdiag::print_json(
            inv,
            &Json::obj()
                .with("switch", side(&guid, &target_port, &desc))
                .with("remote", side(&end.guid, &end.port, &end.desc))
                .with("out", names(&lists[0]))
                .with("back", names(&lists[1])),
        );
        return Ok(());
    }
    let head = |arrow: &str| {
        format!(
            "{guid} {target_port} ({desc})  {arrow}  {} {} ({})\n",
            end.guid, end.port, end.desc
        )
    };
    inv.io.out(&format!(
        "{}{}\n\n{}{}\n",
        head("==>>"),
        lists[0].join(" "),
        head("<<=="),
        lists[1].join(" ")
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{compress, format_guid};

    fn hosts(names: &[&str]) -> String {
        let mut v = vec![None];
        v.extend(names.iter().map(|n| Some((*n).to_owned())));
        compress(&v).join(" ")
    }

    /// The lists Perl's `compress_hostlist` makes of the same names.
    #[test]
    fn host_lists_compress_as_the_script_compresses_them() {
        assert_eq!(
            hosts(&["lx01", "lx02", "lx03", "lx05", "dev0", "dev1", "dev21"]),
            " dev0-1 dev21 lx01-03 lx05"
        );
        assert_eq!(
            hosts(&["host1", "host2", "host3", "hostb", "hosta", "node7"]),
            " host1-3 hosta hostb node7"
        );
        assert_eq!(hosts(&[]), "");
        assert_eq!(hosts(&["a10", "a9", "a11", "x"]), " a9-11 x");
    }

    #[test]
    fn guids_are_formatted_as_format_guid_does() {
        assert_eq!(format_guid("0x2000AB"), "0x00000000002000ab");
        assert_eq!(format_guid("2000ab"), "0x00000000002000ab");
        assert_eq!(format_guid("SW1"), "0x0000000000000SW1");
        assert_eq!(format_guid(""), "0x0000000000000000");
    }
}
