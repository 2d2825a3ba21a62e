//! A switch's forwarding tables as text, byte for byte as infiniband-diags
//! prints them: `ibroute` for one switch, `dump_fts` (and the
//! `dump_lfts` / `dump_mfts` scripts) for every switch of the fabric.
//! The two programs print the tables the same way and differ in how a
//! destination LID is named and what a failed block read does.

use std::ops::ControlFlow;
use std::time::Duration;

use mad_agents::smp::{SmpClient, SmpTarget};
use mad_agents::QueryError;
use mad_core::wire::attr::{NodeDescription, NodeInfo, NodeType, PortInfo, SwitchInfo};
use mad_core::wire::AttributeId;

use super::{Opt, RawSmpData, ToolSpec};
use crate::diags::dump;
use crate::json::{Json, JsonExt};
use crate::namemap::NameMap;
use crate::session::Session;

/// `IB_MIN_MCAST_LID`.
pub const MIN_MCAST_LID: u32 = 0xC000;
/// `IB_MAX_MCAST_LID`.
pub const MAX_MCAST_LID: u32 = 0xFFFE;
/// `IB_MAX_UCAST_LID`.
pub const MAX_UCAST_LID: u32 = 0xBFFF;

/// The option key of `--node-name-map`.
pub const KEY_NODE_NAME_MAP: i32 = 1;

/// The options of ibroute and dump_fts (the same in both programs).
pub const OPTS: &[Opt] = &[
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
    super::node_name_map_opt(KEY_NODE_NAME_MAP),
];

/// The command line of ibroute and dump_fts: [`OPTS`], the same
/// operands, and the common options in `exclude` left out.
#[must_use]
pub const fn spec(exclude: &'static str, examples: &'static [&'static str]) -> ToolSpec<'static> {
    ToolSpec {
        opts: OPTS,
        exclude,
        usage_args: "[<dest dr_path|lid|guid> [<startlid> [<endlid>]]]",
        examples,
    }
}

/// Operand `i` of `args` as a LID (C's `strtoul`), 0 when absent: the
/// start and end LIDs of ibroute and dump_fts.
#[must_use]
pub fn lid_arg(args: &[String], i: usize) -> u32 {
    args.get(i).map_or(0, |a| crate::cnum::c_strtoul(a) as u32)
}

/// The switch whose tables are printed.
#[derive(Debug, Clone)]
pub struct FtSwitch {
    /// How its SMA is reached.
    pub target: SmpTarget,
    /// libibmad's `portid2str` of that address.
    pub text: String,
    /// Node GUID.
    pub guid: u64,
    /// Its name (node name map applied).
    pub name: String,
    /// Number of ports.
    pub nports: u32,
    /// Its SwitchInfo.
    pub si: SwitchInfo,
    /// Its LID (port 0), for dump_fts' error line.
    pub lid: u16,
}

/// Which table is printed and how (`-M`, `-n`, `-a`).
#[derive(Debug, Clone, Copy, Default)]
pub struct FtOpts {
    /// `-n`: no destinations; masks in hex.
    pub brief: bool,
    /// `-a`: every entry, even invalid ones.
    pub dump_all: bool,
    /// `-M`: the multicast table instead of the unicast one.
    pub multicast: bool,
}

impl FtOpts {
    /// `-n`, `-a` and `-M` of ibroute and dump_fts.
    #[must_use]
    pub fn of(p: &super::Parsed) -> Self {
        Self {
            brief: p.has('n' as i32),
            dump_all: p.has('a' as i32),
            multicast: p.has('M' as i32),
        }
    }

    /// The JSON key of the table's rows.
    #[must_use]
    pub fn table_key(self) -> &'static str {
        if self.multicast {
            "multicast"
        } else {
            "unicast"
        }
    }
}

/// The table `o` asks for ([`multicast`] or [`unicast`]) of switch `sw`
/// from `lids.0` to `lids.1`; `resolve` and `unknown` as [`unicast`]
/// takes them.
#[allow(clippy::too_many_arguments)]
pub fn table(
    s: &Session,
    sw: &FtSwitch,
    o: FtOpts,
    lids: (u32, u32),
    on: OnFailure,
    resolve: &mut dyn FnMut(u16) -> Option<LidInfo>,
    unknown: &str,
    out: &mut FtOut,
) {
    if o.multicast {
        multicast(s, sw, o, lids.0, lids.1, on, out);
    } else {
        unicast(s, sw, o, lids.0, lids.1, on, resolve, unknown, out);
    }
}

/// What a block read that fails does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// ibroute: `SubnGet() failed; ...` and the table ends there.
    Stop,
    /// dump_fts: `SubnGet(LFT|MFT) failed on switch ...` and go on.
    Report,
}

/// The text, the warnings and the JSON rows printed.
#[derive(Debug, Default)]
pub struct FtOut {
    /// Standard output.
    pub text: String,
    /// Standard error.
    pub err: String,
    /// One JSON object per entry printed.
    pub rows: Vec<Json>,
}

/// What a unicast destination LID names.
#[derive(Debug, Clone)]
pub struct LidInfo {
    /// Node type.
    pub ntype: u8,
    /// Port GUID.
    pub port_guid: u64,
    /// Its node's name (node name map applied).
    pub name: String,
    /// Base LID of the port.
    pub base_lid: u16,
    /// LMC of the port.
    pub lmc: u8,
}

/// ibroute's `check_switch`: the (NodeInfo, NodeDescription, SwitchInfo)
/// of the switch at `t`, or ibroute's message (and the failure behind it).
///
/// # Errors
/// The node does not answer, or is not a switch.
pub fn check_switch(
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

/// The SMP client ibroute's `dump_lid` asks with: a 100 ms timeout,
/// the default retries, `m_key`.
///
/// # Errors
/// The agent could not be registered.
pub fn lookup_client(s: &Session, m_key: u64) -> Result<SmpClient, String> {
    let mut fast = SmpClient::new(s.runtime()).map_err(|e| format!("SMP agent: {e}"))?;
    fast.timeout = Duration::from_millis(100);
    fast.retries = crate::session::DEFAULT_RETRIES;
    fast.m_key = m_key;
    Ok(fast)
}

/// ibroute's `dump_lid` lookup: NodeDescription, PortInfo and NodeInfo
/// of the LID, asked with `fast` ([`lookup_client`]).
#[must_use]
pub fn lookup(fast: &SmpClient, names: &NameMap, lid: u16) -> Option<LidInfo> {
    let t = SmpTarget::Lid(lid);
    let nd = fast.node_description(&t).ok()?;
    let pi: PortInfo = fast.port_info(&t, 0).ok()?;
    let ni = fast.node_info(&t).ok()?;
    Some(LidInfo {
        ntype: ni.node_type.0,
        port_guid: ni.port_guid,
        name: names.remap(ni.node_guid, &nd),
        base_lid: pi.lid,
        lmc: pi.lmc,
    })
}

/// `dump_lid`'s static state.
#[derive(Default)]
struct LidState {
    last_port_lid: u32,
    base_port_lid: u32,
    portguid: u64,
}

fn status_of(e: &QueryError) -> u16 {
    match e {
        QueryError::Status { status, .. } => status.0,
        _ => 0,
    }
}

impl FtOut {
    /// The heading of a table: `kind` (`Unicast lids`, `Multicast mlids`)
    /// from `start` to `end` of switch `sw`.
    fn heading(&mut self, kind: &str, start: u32, end: u32, sw: &FtSwitch) {
        self.text.push_str(&format!(
            "{kind} [0x{start:x}-0x{end:x}] of switch {} guid 0x{:016x} ({}):\n",
            sw.text, sw.guid, sw.name
        ));
    }

    /// Block `am` of `sw`'s forwarding table `attr` (`what` in the error
    /// line: `LFT`, `MFT`); `Continue(None)` after a failure `on` lets the
    /// dump go on from, `Break` when it ends there.
    fn block(
        &mut self,
        s: &Session,
        sw: &FtSwitch,
        (attr, what): (AttributeId, &str),
        am: u32,
        on: OnFailure,
    ) -> ControlFlow<(), Option<[u8; 64]>> {
        match s.smp().get::<RawSmpData>(&sw.target, attr, am) {
            Ok(d) => ControlFlow::Continue(Some(d.0)),
            Err(e) => {
                self.block_failed(sw, on, what, &e, am);
                if on == OnFailure::Stop {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(None)
                }
            }
        }
    }

    fn block_failed(&mut self, sw: &FtSwitch, on: OnFailure, what: &str, e: &QueryError, am: u32) {
        let status = status_of(e);
        self.err.push_str(&match on {
            OnFailure::Stop => format!("SubnGet() failed; MAD status 0x{status:x} AM 0x{am:x}\n"),
            OnFailure::Report => format!(
                "SubnGet({what}) failed on switch '{}' {} Node GUID 0x{:x} SMA LID {}; MAD status 0x{status:x} AM 0x{am:x}\n",
                sw.name, sw.text, sw.guid, sw.lid
            ),
        });
    }
}

/// `dump_lid`: the destination text of LID `lid` (`resolve` names it;
/// `unknown` is printed when it cannot).
fn dump_lid(
    o: FtOpts,
    st: &mut LidState,
    lid: u32,
    valid: bool,
    resolve: &mut dyn FnMut(u16) -> Option<LidInfo>,
    unknown: &str,
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
    let Some(d) = resolve(lid as u16) else {
        return (unknown.to_owned(), Json::Null);
    };
    st.portguid = d.port_guid;
    if d.lmc > 0 {
        st.base_port_lid = d.base_lid.into();
        st.last_port_lid = u32::from(d.base_lid) + (1u32 << d.lmc) - 1;
    }
    let j = Json::obj()
        .with("type", Json::String(dump::node_type(d.ntype)))
        .with("port_guid", super::hex(d.port_guid, 16))
        .with("node_description", Json::String(d.name.clone()));
    (
        format!(
            ": ({} portguid {}: '{}')",
            dump::node_type(d.ntype),
            dump::hex(d.port_guid, 8),
            d.name
        ),
        j,
    )
}

/// `dump_unicast_tables`. `unknown`: the text of a LID `resolve` cannot
/// name.
#[allow(clippy::too_many_arguments)]
pub fn unicast(
    s: &Session,
    sw: &FtSwitch,
    o: FtOpts,
    startlid: u32,
    mut endlid: u32,
    on: OnFailure,
    resolve: &mut dyn FnMut(u16) -> Option<LidInfo>,
    unknown: &str,
    out: &mut FtOut,
) {
    let top = u32::from(sw.si.linear_fdb_top);
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
    out.heading("Unicast lids", startlid, endlid, sw);
    out.text
        .push_str("  Lid  Out   Destination\n       Port     Info \n");
    let mut st = LidState::default();
    let mut n = 0;
    let mut lft = [0u8; 64];
    for block in startlid / 64..endlid.div_ceil(64) {
        let lft_attr = (AttributeId::LINEAR_FWD_TABLE, "LFT");
        let ControlFlow::Continue(d) = out.block(s, sw, lft_attr, block, on) else {
            return;
        };
        if let Some(d) = d {
            lft = d;
        }
        let mut i = (block * 64).max(startlid);
        let e = (block * 64 + 64).min(endlid + 1);
        while i < e {
            let outport = u32::from(lft[(i % 64) as usize]);
            let valid = outport <= sw.nports;
            if valid || o.dump_all {
                let (text, j) = dump_lid(o, &mut st, i, valid, resolve, unknown);
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
}

/// `dump_multicast_tables`.
pub fn multicast(
    s: &Session,
    sw: &FtSwitch,
    o: FtOpts,
    mut startlid: u32,
    mut endlid: u32,
    on: OnFailure,
    out: &mut FtOut,
) {
    let nports = sw.nports;
    let cap = u32::from(sw.si.multicast_fdb_cap);
    let top = u32::from(sw.si.multicast_fdb_top);
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
    out.heading("Multicast mlids", startlid, endlid, sw);
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
    let mut mft: Vec<[u16; 32]> = vec![[0; 32]; chunks as usize];
    let mut n = 0;
    for block in startlid / 32..=endlid / 32 {
        for j in 0..chunks {
            let m = (block - MIN_MCAST_LID / 32) | (j << 28);
            let mft_attr = (AttributeId::MCAST_FWD_TABLE, "MFT");
            let ControlFlow::Continue(d) = out.block(s, sw, mft_attr, m, on) else {
                return;
            };
            if let Some(d) = d {
                for (k, v) in mft[j as usize].iter_mut().enumerate() {
                    *v = u16::from_be_bytes([d[2 * k], d[2 * k + 1]]);
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
}
