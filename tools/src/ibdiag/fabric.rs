//! What the fabric-wide tools (ibnetdiscover, ibhosts and friends,
//! iblinkinfo, ibqueryerrors, sweep) share: running a discovery with its
//! progress line and warnings, its limits, marking a result incomplete,
//! the node name map, and how a link and a node's name are printed.

use std::path::PathBuf;
use std::time::Duration;

use mad_core::wire::attr::{port_cap, PortInfo, PortState};

use crate::command::{CliError, Invocation};
use crate::diags::dump;
use crate::discover::agent::AgentExchange;
use crate::discover::gather::{GatherOptions, GatherProgress, Gathered, QueryFailure};
use crate::discover::model::{dr_path_str, Node, Port, Scan};
use crate::discover::progress::Progress;
use crate::discover::{self, Discovery, Limits};
use crate::namemap::NameMap;
use crate::session::Session;

/// SMPs in flight on the port unless `-o` says otherwise.
pub const DEFAULT_WINDOW: usize = 256;
/// SMPs in flight to one node.
pub const PER_NODE: usize = 4;
/// libibnetdisc's retries (`DEFAULT_RETRIES`).
pub const RETRIES: u32 = 3;

/// Discovers the fabric through `session`'s stack, with a progress line
/// on a terminal's stderr. Failed queries are reported on stderr.
///
/// # Errors
/// `IBEXIT("discover failed")` after saying why on stderr.
pub fn run_discovery(
    inv: &mut Invocation<'_, '_>,
    session: &Session,
    limits: Limits,
    m_key: u64,
    show: bool,
) -> Result<Discovery, CliError> {
    run_scan(inv, session, limits, m_key, show, None, &mut |_| None).map(|(d, _)| d)
}

/// [`run_discovery`] of a partial scan ([`discover::discover_scan`]):
/// also returns the lines libibnetdisc prints while scanning.
///
/// # Errors
/// As [`run_discovery`].
pub fn run_scan(
    inv: &mut Invocation<'_, '_>,
    session: &Session,
    limits: Limits,
    m_key: u64,
    show: bool,
    max_depth: Option<usize>,
    pick: &mut dyn FnMut(&Gathered) -> Option<Scan>,
) -> Result<(Discovery, Vec<String>), CliError> {
    // libibnetdisc's SMPs print no libibmad DEBUG line (-d); the tool's
    // own queries after the discovery do again (when this guard drops).
    let _quiet = session.discovering();
    let mut ex = AgentExchange::new(session.runtime()).map_err(|e| {
        inv.io.err(&format!("{}: {e}\n", inv.prog));
        CliError::IbExit("discover failed".into())
    })?;
    let opts = GatherOptions {
        limits,
        m_key,
        mlx_epi: true,
    };
    let mut bar = Progress::stderr("discovering");
    let mut on_progress = |p: &GatherProgress| {
        bar.update_with(p.nodes as u64, None, || {
            format!(
                "nodes ({} switches), {} SMPs answered, {} pending",
                p.switches, p.answered, p.pending
            )
        });
    };
    let r = discover::discover_scan(&mut ex, &opts, show, max_depth, pick, &mut on_progress);
    bar.finish();
    match r {
        Ok((d, lines)) => {
            for f in &d.failures {
                inv.io.err(&format!(
                    "{}: warning: {} Attr 0x{:x}:{}: {}\n",
                    inv.prog,
                    dr_path_str(&f.path),
                    f.attr.0,
                    f.attr_mod,
                    f.reason
                ));
            }
            Ok((d, lines))
        }
        Err(e) => {
            inv.io.err(&format!("{}: {e}\n", inv.prog));
            Err(CliError::IbExit("discover failed".into()))
        }
    }
}

/// Where the partial scan of iblinkinfo / ibqueryerrors starts (its
/// argument resolved).
pub enum ScanStart {
    /// `-D`: the directed route from the local port (hops after the 0).
    Route(Vec<u8>),
    /// `-S` / `-G`: the port with this GUID, reached by its LID.
    Guid(u64),
}

/// `resolve_portid_str` of a `-D` route for a partial scan: its start,
/// or (a route that does not parse) the C tools' warning and `None` (a
/// full scan).
pub fn route_start(inv: &mut Invocation<'_, '_>, path: &str) -> Option<ScanStart> {
    let Some(v) = super::str2drpath(path) else {
        inv.io.err(&format!(
            "ibwarn: [{}] main: Failed to resolve {path}; attempting full scan\n",
            std::process::id()
        ));
        return None;
    };
    Some(ScanStart::Route(v.get(1..).unwrap_or(&[]).to_vec()))
}

/// The scan libibnetdisc runs: from `start` `max_hops` deep (1 when not
/// given), or from the local port within `max_hops`. A GUID that
/// nothing read has scans the whole fabric.
pub fn scan_of(g: &Gathered, start: Option<&ScanStart>, max_hops: u32) -> Option<Scan> {
    let partial = if max_hops == 0 { 1 } else { max_hops };
    match start {
        None => Some(Scan {
            max_hops,
            ..Scan::default()
        }),
        Some(ScanStart::Route(path)) => Some(Scan {
            path: path.clone(),
            lid_start: None,
            max_hops: partial,
            dr_lids: 0xffff,
        }),
        Some(ScanStart::Guid(guid)) => {
            let at = g
                .via
                .values()
                .chain(g.root.as_ref())
                .find(|ni| ni.port_guid == *guid)?;
            Some(Scan {
                path: Vec::new(),
                lid_start: Some((at.node_guid, at.local_port_num)),
                max_hops: partial,
                dr_lids: 0,
            })
        }
    }
}

/// How deep the routes of the scan [`scan_of`] gives can go (what
/// discovery has to read for it): the start's route plus the hop limit
/// plus the one hop libibnetdisc takes beyond it; `None` (everything)
/// for an unlimited scan and for a start by GUID (found in what was
/// read).
#[must_use]
pub fn scan_depth(start: Option<&ScanStart>, max_hops: u32) -> Option<usize> {
    let hops = usize::try_from(max_hops).unwrap_or(usize::MAX);
    match start {
        None if max_hops == 0 => None,
        None => Some(hops.saturating_add(1)),
        Some(ScanStart::Route(path)) => Some(path.len() + hops.max(1).saturating_add(1)),
        Some(ScanStart::Guid(_)) => None,
    }
}

/// `Ok` when discovery got an answer to every query it sent; otherwise
/// the result (already printed) is marked incomplete: which queries went
/// unanswered (`missing`, in JSON), a line on stderr, and exit status
/// [`crate::command::EXIT_INCOMPLETE`] (ibnetdiscover exits 0 there, its
/// output silently short of what lies behind those routes).
///
/// # Errors
/// [`CliError::Incomplete`] when some query failed.
pub fn check_complete(
    inv: &mut Invocation<'_, '_>,
    failures: &[QueryFailure],
) -> Result<(), CliError> {
    if failures.is_empty() {
        return Ok(());
    }
    let items: Vec<String> = failures
        .iter()
        .map(|f| {
            let mut path = String::from("0");
            for h in &f.path {
                path.push_str(&format!(",{h}"));
            }
            format!(
                "DR path {path} Attr 0x{:x}:{}: {}",
                f.attr.0, f.attr_mod, f.reason
            )
        })
        .collect();
    let n = items.len();
    let message = format!(
        "discovery incomplete: {n} {} went unanswered (the warnings above name them); \
         the nodes and links behind {} are missing from the output. Try a longer \
         timeout (-t MS), or check those links",
        if n == 1 { "query" } else { "queries" },
        if n == 1 { "it" } else { "them" }
    );
    Err(super::report::incomplete(
        inv,
        "queries",
        Some(n as u64),
        items,
        message,
    ))
}

/// The limits of a discovery: `-o` (window), `-t` (timeout).
#[must_use]
pub fn limits(window: Option<usize>, timeout_ms: Option<u32>) -> Limits {
    Limits {
        window: window.unwrap_or(DEFAULT_WINDOW).max(1),
        per_dest: PER_NODE,
        timeout: Duration::from_millis(u64::from(timeout_ms.unwrap_or(1000))),
        retries: RETRIES,
    }
}

/// Opens the node name map as infiniband-diags does (warnings on
/// stderr, then no map).
pub fn open_name_map(inv: &mut Invocation<'_, '_>, path: Option<&str>) -> Option<NameMap> {
    let p = path.map(PathBuf::from);
    let (map, warning) = NameMap::open(p.as_deref());
    if let Some(w) = warning {
        inv.io.err(&format!("{w}\n"));
    }
    map
}

/// The name infiniband-diags shows for a node (`remap_node_name`): the
/// map's name, else the description as libibnetdisc keeps it (every
/// byte that is not printable ASCII a space).
pub fn remap(node: &Node, map: Option<&NameMap>) -> String {
    map.and_then(|m| m.get(node.guid()))
        .map_or_else(|| node.clean_desc(), str::to_owned)
}

/// The PortInfo whose CapabilityMask speaks for `node`'s ports: a
/// switch's port 0's, a CA's or router's own.
pub fn cap_info<'n>(node: &'n Node, port: &'n Port) -> Option<&'n PortInfo> {
    if node.is_switch() {
        node.port(0).and_then(|p| p.info.as_ref())
    } else {
        port.info.as_ref()
    }
}

/// `get_max_width`: the widest width of a LinkWidthSupported set.
pub fn max_width(w: u8) -> u8 {
    let r = if w & 8 != 0 {
        3
    } else if w & 4 != 0 {
        2
    } else if w & 2 != 0 {
        1
    } else if w & 0x10 != 0 {
        4
    } else {
        0
    };
    1 << r
}

/// `get_max`: the highest bit of `v` (1 for 0).
pub fn max_bit(v: u8) -> u8 {
    if v == 0 {
        1
    } else {
        1 << (7 - v.leading_zeros())
    }
}

/// `get_max_msg`: "Could be ..." for a link below what both ends
/// support (width, speed). FDR10 support (Mellanox ExtendedPortInfo
/// LinkSpeedSupported) is not read by discovery and counts as absent.
pub fn max_msg(node: &Node, port: &Port, remote: &Port, rnode: &Node) -> (String, String) {
    let zero = PortInfo::default();
    let l = port.info.as_ref().unwrap_or(&zero);
    let r = remote.info.as_ref().unwrap_or(&zero);
    let mut width_msg = String::new();
    let mw = max_width(l.link_width_supported & r.link_width_supported);
    if mw & l.link_width_active == 0 {
        width_msg = format!("Could be {}", dump::link_width(mw));
    }
    let cap = cap_info(node, port).map_or(0, |i| i.capability_mask);
    let rcap = cap_info(rnode, remote).map_or(0, |i| i.capability_mask);
    if cap & port_cap::HAS_EXT_SPEEDS != 0
        && rcap & port_cap::HAS_EXT_SPEEDS != 0
        && l.link_speed_ext_supported != 0
        && r.link_speed_ext_supported != 0
    {
        let m = max_bit(l.link_speed_ext_supported & r.link_speed_ext_supported);
        let speed_msg = if m & l.link_speed_ext_active == 0 {
            format!("Could be {}", dump::link_speed_ext(m))
        } else {
            String::new()
        };
        return (width_msg, speed_msg);
    }
    let m = max_bit(l.link_speed_supported & r.link_speed_supported);
    let speed_msg = if m & l.link_speed_active == 0 {
        format!("Could be {}", dump::link_speed(m))
    } else {
        String::new()
    };
    (width_msg, speed_msg)
}

/// The `(width speed state/phys)` part of a port line, as `print_port`
/// builds it; also the width and speed texts (`None` when Down).
pub fn link_str(node: &Node, port: &Port, additional: bool) -> (String, Option<(String, String)>) {
    let zero = PortInfo::default();
    let pi = port.info.as_ref().unwrap_or(&zero);
    let state = pi.port_state;
    let st = dump::port_state(state.0);
    let phys = dump::phys_port_state(pi.port_phys_state.0);
    if state == PortState::DOWN {
        return (format!("(              {st:>6}/{phys:>8})"), None);
    }
    let (mut width, mut speed, mut espeed) = (pi.link_width_active, pi.link_speed_active, 0);
    match cap_info(node, port) {
        Some(ci) => {
            if ci.capability_mask & port_cap::HAS_EXT_SPEEDS != 0 {
                espeed = pi.link_speed_ext_active;
            }
        }
        None => {
            width = 0;
            speed = 0;
        }
    }
    let speed_text = if espeed != 0 {
        dump::link_speed_ext(espeed)
    } else if port.ext_speed_active & 1 != 0 {
        "10.0 Gbps (FDR10)".to_owned()
    } else {
        dump::link_speed(speed)
    };
    let width_text = dump::link_width(width);
    let mut s = format!("({:>3} {:>18} {st:>6}/{phys:>8})", width_text, speed_text);
    if additional {
        s.push_str(&format!(
            " (HOQ:{} VL_Stall:{})",
            pi.hoq_life, pi.vl_stall_count
        ));
    }
    (s, Some((width_text, speed_text)))
}

/// An ibnetdiscover cache file (`ibnd_load_fabric`) as a finished
/// discovery (no failures, no SMPs).
///
/// # Errors
/// The file cannot be read or is no usable cache (the message says why).
pub fn cached_discovery(path: &str) -> Result<Discovery, discover::cache::CacheError> {
    let start = std::time::Instant::now();
    Ok(Discovery {
        fabric: discover::cache::load(path)?,
        failures: Vec::new(),
        stats: discover::Stats::default(),
        elapsed: start.elapsed(),
    })
}

/// [`cached_discovery`], failing as infiniband-diags does,
/// `IBEXIT(failure)`, after naming the fault on stderr (infiniband-diags
/// says nothing about it).
///
/// # Errors
/// `IBEXIT(failure)`.
pub fn load_cache(
    inv: &mut Invocation<'_, '_>,
    path: &str,
    failure: &str,
) -> Result<Discovery, CliError> {
    cached_discovery(path).map_err(|e| {
        inv.io.err(&format!("{}: {e}\n", inv.prog));
        CliError::IbExit(failure.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_width_and_max_bit_pick_the_widest_and_fastest() {
        assert_eq!(max_width(0b1011), 8);
        assert_eq!(max_width(0b0011), 2);
        assert_eq!(max_width(0x11), 16);
        assert_eq!(max_width(0), 1);
        assert_eq!(max_bit(7), 4);
        assert_eq!(max_bit(0), 1);
        assert_eq!(max_bit(1), 1);
    }
}
