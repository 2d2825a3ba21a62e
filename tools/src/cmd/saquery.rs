//! `saquery` (infiniband-diags `saquery.c`): SA records.
//!
//! The node list (`saquery` with no argument, `-N`, `-D`, `-L`, `-l`,
//! `-G`, `-O`, `-U`), PathRecords (`PR`, `-p`, `--src-to-dst`,
//! `--sgid-to-dgid`, and the PathRecord fields `--slid` ... `--sl`,
//! `-M`, `-R`, ...), `-s` (IsSM ports), `-g` / `-m` (multicast groups and
//! members), `-x` (LinkRecords), `-c` (the SA's ClassPortInfo), and the
//! named record types NR, PIR, SL2VL, PKTR, VLAR, IIR, LR, SR, PR, MCMR,
//! LFTR, MFTR, GIR, SWIR, SMIR, CPI with their `lid/port/...` arguments.
//!
//! Tables come over RMPP, whole. Under libumad2sim (which does no RMPP
//! and cuts every MAD to 256 bytes) and on ibsim (whose SMs run there)
//! a table arrives as its first MAD, and saquery prints the records that
//! fit, as infiniband-diags' saquery does there.
//!
//! Exit status as saquery's: 0, 5 (EIO) for an SA error status (with
//! `ERROR: Query result returned ...` on stderr), 110 for a timeout,
//! 22 / 64 for a bad or unknown LID or name, 255 without an SM. And one
//! saquery does not have: 3 ([`crate::cli::EXIT_INCOMPLETE`]) when the
//! table printed is incomplete — cut to its first MAD (ibsim,
//! libumad2sim), or an all-pairs PathRecord table the built-in SA capped
//! — with a line on stderr saying so (saquery prints the cut table and
//! exits 0).
//!
//! `--json` prints `{"command":"saquery","attribute":"NodeRecord",
//! "records":[{...}],"truncated":B}` (records as their fields), or the
//! ClassPortInfo fields for `-c` / `CPI`; a truncated table has
//! `complete: false` and `missing`.

use mad_agents::sa::SaError;
use mad_agents::sa::{SaClient, SaClientConfig, TableMode};
use mad_core::wire::attr::{port_cap, ClassPortInfo, NodeDescription};
use mad_core::wire::sa_records::{
    GuidInfoRecord, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord, MftRecord, NodeRecord,
    PKeyTableRecord, PathRecord, PortInfoRecord, SaRecord, ServiceRecord, Sl2VlRecord,
    SmInfoRecord, SwitchInfoRecord, VlArbRecord,
};
use mad_core::wire::{AttributeId, Fields, Method, Repr, SA_DATA_OFFSET};

use crate::command::{CliError, Invocation};
use crate::diags::{dump, sa};
use crate::ibdiag::{self, Opt, ToolSpec};
use crate::json::{Json, JsonExt};
use crate::namemap::NameMap;
use crate::session::{Backend, Session};

/// `DEFAULT_SA_TIMEOUT_MS`.
const SA_TIMEOUT_MS: u32 = 1000;

const K_SRC_TO_DST: i32 = 1;
const K_SGID_TO_DGID: i32 = 2;
const K_NODE_NAME_MAP: i32 = 3;
const K_SMKEY: i32 = 4;
const K_SLID: i32 = 5;
const K_DLID: i32 = 6;
const K_MLID: i32 = 7;
const K_SGID: i32 = 14;
const K_DGID: i32 = 15;
const K_GID: i32 = 16;
const K_MGID: i32 = 17;
const K_PKEY: i32 = 18;
const K_SL: i32 = 19;
const K_PKT_LIFE: i32 = 20;
const K_SCOPE: i32 = 21;
const K_SERVICE_ID: i32 = 22;

const OPTS: &[Opt] = &[
    Opt::new("p", 'p', false, None, "get PathRecord info"),
    Opt::new("N", 'N', false, None, "get NodeRecord info"),
    Opt::new("L", 'L', false, None, "return the Lids of the name specified"),
    Opt::new(
        "l",
        'l',
        false,
        None,
        "return the unique Lid of the name specified",
    ),
    Opt::new("G", 'G', false, None, "return the Guids of the name specified"),
    Opt::new("O", 'O', false, None, "return name for the Lid specified"),
    Opt::new("U", 'U', false, None, "return name for the Guid specified"),
    Opt::new(
        "s",
        's',
        false,
        None,
        "return the PortInfoRecords with isSM or isSMdisabled capability mask bit on",
    ),
    Opt::new("g", 'g', false, None, "get multicast group info"),
    Opt::new(
        "m",
        'm',
        false,
        None,
        "get multicast member info (if multicast group specified, list member GIDs only for group specified, for example 'saquery -m 0xC000')",
    ),
    Opt::new("x", 'x', false, None, "get LinkRecord info"),
    Opt::new("c", 'c', false, None, "get the SA's class port info"),
    Opt::new("S", 'S', false, None, "get ServiceRecord info"),
    Opt::new(
        "I",
        'I',
        false,
        None,
        "get InformInfoRecord (subscription) info",
    ),
    Opt::new("list", 'D', false, None, "the node desc of the CA's"),
    Opt::long(
        "src-to-dst",
        K_SRC_TO_DST,
        true,
        Some("<src:dst>"),
        "get a PathRecord for <src:dst> where src and dst are either node names or LIDs",
    ),
    Opt::long(
        "sgid-to-dgid",
        K_SGID_TO_DGID,
        true,
        Some("<sgid-dgid>"),
        "get a PathRecord for <sgid-dgid> where sgid and dgid are addresses in IPv6 format",
    ),
    Opt::long(
        "node-name-map",
        K_NODE_NAME_MAP,
        true,
        Some("<file>"),
        "specify a node name map file",
    ),
    Opt::long(
        "smkey",
        K_SMKEY,
        true,
        Some("<val>"),
        "SA SM_Key value for the query. If non-numeric value (like 'x') is specified then saquery will prompt for a value.  Default (when not specified here or in ibdiag.conf) is to  use SM_Key == 0 (or \"untrusted\")",
    ),
    Opt::long("slid", K_SLID, true, Some("<lid>"), "Source LID (PathRecord)"),
    Opt::long(
        "dlid",
        K_DLID,
        true,
        Some("<lid>"),
        "Destination LID (PathRecord)",
    ),
    Opt::long(
        "mlid",
        K_MLID,
        true,
        Some("<lid>"),
        "Multicast LID (MCMemberRecord)",
    ),
    Opt::long(
        "sgid",
        K_SGID,
        true,
        Some("<gid>"),
        "Source GID (IPv6 format) (PathRecord)",
    ),
    Opt::long(
        "dgid",
        K_DGID,
        true,
        Some("<gid>"),
        "Destination GID (IPv6 format) (PathRecord)",
    ),
    Opt::long(
        "gid",
        K_GID,
        true,
        Some("<gid>"),
        "Port GID (MCMemberRecord)",
    ),
    Opt::long(
        "mgid",
        K_MGID,
        true,
        Some("<gid>"),
        "Multicast GID (MCMemberRecord)",
    ),
    Opt::new(
        "reversible",
        'r',
        true,
        None,
        "Reversible path (PathRecord)",
    ),
    Opt::new(
        "numb_path",
        'n',
        true,
        None,
        "Number of paths (PathRecord)",
    ),
    Opt::long(
        "pkey",
        K_PKEY,
        true,
        None,
        "P_Key (PathRecord, MCMemberRecord). If non-numeric value (like 'x') is specified then saquery will prompt for a value",
    ),
    Opt::new("qos_class", 'Q', true, None, "QoS Class (PathRecord)"),
    Opt::long(
        "sl",
        K_SL,
        true,
        None,
        "Service level (PathRecord, MCMemberRecord)",
    ),
    Opt::new(
        "mtu",
        'M',
        true,
        None,
        "MTU and selector (PathRecord, MCMemberRecord)",
    ),
    Opt::new(
        "rate",
        'R',
        true,
        None,
        "Rate and selector (PathRecord, MCMemberRecord)",
    ),
    Opt::long(
        "pkt_lifetime",
        K_PKT_LIFE,
        true,
        None,
        "Packet lifetime and selector (PathRecord, MCMemberRecord)",
    ),
    Opt::new(
        "qkey",
        'q',
        true,
        None,
        "Q_Key (MCMemberRecord). If non-numeric value (like 'x') is specified then saquery will prompt for a value",
    ),
    Opt::new(
        "tclass",
        'T',
        true,
        None,
        "Traffic Class (PathRecord, MCMemberRecord)",
    ),
    Opt::new(
        "flow_label",
        'F',
        true,
        None,
        "Flow Label (PathRecord, MCMemberRecord)",
    ),
    Opt::new(
        "hop_limit",
        'H',
        true,
        None,
        "Hop limit (PathRecord, MCMemberRecord)",
    ),
    Opt::long("scope", K_SCOPE, true, None, "Scope (MCMemberRecord)"),
    Opt::new("join_state", 'J', true, None, "Join state (MCMemberRecord)"),
    Opt::new("proxy_join", 'X', true, None, "Proxy join (MCMemberRecord)"),
    Opt::long(
        "service_id",
        K_SERVICE_ID,
        true,
        None,
        "ServiceID (PathRecord)",
    ),
];

/// `query_cmds`: (name, alias, attribute, usage).
const QUERIES: &[(&str, &str, u16, &str)] = &[
    ("ClassPortInfo", "CPI", 0x0001, ""),
    ("NodeRecord", "NR", 0x0011, "[lid]"),
    ("PortInfoRecord", "PIR", 0x0012, "[[lid]/[port]/[options]]"),
    (
        "SL2VLTableRecord",
        "SL2VL",
        0x0013,
        "[[lid]/[in_port]/[out_port]]",
    ),
    ("PKeyTableRecord", "PKTR", 0x0033, "[[lid]/[port]/[block]]"),
    (
        "VLArbitrationTableRecord",
        "VLAR",
        0x0036,
        "[[lid]/[port]/[block]]",
    ),
    ("InformInfoRecord", "IIR", 0x00F3, "[subscriber_gid]"),
    (
        "LinkRecord",
        "LR",
        0x0020,
        "[[from_lid]/[from_port]] [[to_lid]/[to_port]]",
    ),
    ("ServiceRecord", "SR", 0x0031, ""),
    ("PathRecord", "PR", 0x0035, ""),
    ("MCMemberRecord", "MCMR", 0x0038, ""),
    ("LFTRecord", "LFTR", 0x0015, "[[lid]/[block]]"),
    ("MFTRecord", "MFTR", 0x0017, "[[mlid]/[position]/[block]]"),
    ("GUIDInfoRecord", "GIR", 0x0030, "[[lid]/[block]]"),
    ("SwitchInfoRecord", "SWIR", 0x0014, "[lid]"),
    ("SMInfoRecord", "SMIR", 0x0018, "[lid]"),
];

fn usage_args() -> String {
    let mut s = String::from(
        "[query-name] [<name> | <lid> | <guid>]\n\nSupported query names (and aliases):\n",
    );
    for (name, alias, _, usage) in QUERIES {
        s.push_str(&format!("  {name} ({alias}) {usage}\n"));
    }
    s.push_str("\n  Queries node records by default.");
    s
}

/// The record name of SA attribute `attr` (`NodeRecord`, ...).
fn attr_name(attr: u16) -> String {
    QUERIES.iter().find(|(_, _, t, _)| *t == attr).map_or_else(
        || format!("attribute 0x{attr:04x}"),
        |(n, _, _, _)| (*n).to_owned(),
    )
}

fn find_query(name: &str) -> Option<u16> {
    QUERIES
        .iter()
        .find(|(n, a, _, _)| n.eq_ignore_ascii_case(name) || a.eq_ignore_ascii_case(name))
        .map(|(_, _, t, _)| *t)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmd {
    Query,
    NodeRecord,
    ClassPortInfo,
    IsSm,
    McGroups,
    McMembers,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodePrint {
    All,
    LidOnly,
    UniqueLidOnly,
    GuidOnly,
    AllDesc,
    NameOfLid,
    NameOfGuid,
}

/// `struct query_params`.
#[derive(Debug, Clone)]
struct Params {
    service_id: u64,
    sgid: [u8; 16],
    dgid: [u8; 16],
    gid: [u8; 16],
    mgid: [u8; 16],
    slid: u16,
    dlid: u16,
    mlid: u16,
    flow_label: u32,
    hop_limit: i32,
    tclass: u8,
    reversible: i32,
    numb_path: i32,
    pkey: u16,
    qos_class: i32,
    sl: i32,
    mtu: u8,
    rate: u8,
    pkt_life: u8,
    qkey: u32,
    scope: u8,
    join_state: u8,
    proxy_join: i32,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            service_id: 0,
            sgid: [0; 16],
            dgid: [0; 16],
            gid: [0; 16],
            mgid: [0; 16],
            slid: 0,
            dlid: 0,
            mlid: 0,
            flow_label: 0,
            hop_limit: -1,
            tclass: 0,
            reversible: -1,
            numb_path: -1,
            pkey: 0,
            qos_class: -1,
            sl: -1,
            mtu: 0,
            rate: 0,
            pkt_life: 0,
            qkey: 0,
            scope: 0,
            join_state: 0,
            proxy_join: -1,
        }
    }
}

/// Parses an IPv6 address as `inet_pton(AF_INET6)` does.
fn pton6(s: &str) -> Option<[u8; 16]> {
    s.parse::<std::net::Ipv6Addr>().ok().map(|a| a.octets())
}

/// An SA answer as `sa_query` keeps it.
struct Answer {
    status: u16,
    bytes: Vec<u8>,
    get_table: bool,
}

impl Answer {
    fn attr_offset(&self) -> u16 {
        self.bytes
            .get(44..46)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
    }

    fn count(&self) -> usize {
        sa::result_count(
            self.bytes.len(),
            self.status,
            self.get_table,
            self.attr_offset(),
        )
    }

    /// The records `sa_get_query_rec` hands out.
    fn records<R: SaRecord>(&self) -> Vec<R> {
        let stride = usize::from(self.attr_offset()) * 8;
        (0..self.count())
            .map_while(|i| {
                let at = SA_DATA_OFFSET + i * stride;
                self.bytes.get(at..).and_then(|d| R::parse(d).ok())
            })
            .collect()
    }
}

/// How a query ended when it printed no records.
struct Fail {
    stderr: String,
    code: i32,
}

struct Ctx<'a> {
    sa: &'a SaClient,
    names: &'a NameMap,
    show_keys: bool,
    out: String,
    json_records: Vec<Json>,
    attribute: &'static str,
    truncated: bool,
    /// Why the answer is short (for the message), when it is.
    truncated_why: Option<String>,
    /// The answers come from the built-in SA (which caps all-pairs
    /// PathRecord tables).
    built_in_sa: bool,
}

fn pid() -> u32 {
    std::process::id()
}

impl Ctx<'_> {
    /// `sa_query`.
    fn query(
        &mut self,
        method: Method,
        attr: u16,
        attr_mod: u32,
        mask: u64,
        rec: &[u8],
    ) -> Result<Answer, Fail> {
        match self
            .sa
            .request(method, AttributeId(attr), attr_mod, mask, rec)
        {
            Ok(m) => {
                let bytes = m.bytes().to_vec();
                let status = bytes.get(4..6).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
                let get_table = method == Method::GET_TABLE;
                let a = Answer {
                    status,
                    bytes,
                    get_table,
                };
                if get_table && a.bytes.len() == 256 {
                    // An RMPP answer cut to one MAD (libumad2sim).
                    let flags = a.bytes.get(25).copied().unwrap_or(0);
                    if flags & 1 != 0 && flags & 6 != 6 {
                        self.truncated = true;
                        self.truncated_why = Some(format!(
                            "the SA's answer to the {} query arrived cut to its first MAD ({} \
                             records; the transport does no RMPP here: ibsim, or libumad2sim), \
                             so the table above is incomplete. Query the built-in fabric \
                             (--sim) or a real port for the whole table",
                            attr_name(attr),
                            a.count()
                        ));
                    }
                }
                if get_table
                    && attr == 0x0035
                    && self.built_in_sa
                    && mask
                        & (PathRecord::COMP_SLID
                            | PathRecord::COMP_DLID
                            | PathRecord::COMP_SGID
                            | PathRecord::COMP_DGID)
                        == 0
                    && a.count() >= mad_sim::sa::MAX_ALL_PAIRS_PATHS
                {
                    self.truncated = true;
                    self.truncated_why = Some(format!(
                        "the built-in SA answers at most {} PathRecords to a query that names \
                         neither end, so the table above is cut short; query per source \
                         (saquery PR --slid LID, or -p --slid LID) for the rest",
                        mad_sim::sa::MAX_ALL_PAIRS_PATHS
                    ));
                }
                Ok(a)
            }
            Err(SaError::Timeout { .. }) => Err(Fail {
                stderr: format!(
                    "ibwarn: [{}] sa_query: umad_recv failed: attr 0x{attr:x}: Connection timed out\n\nQuery SA failed: Connection timed out\n",
                    pid()
                ),
                code: 110,
            }),
            Err(e) => Err(Fail {
                stderr: format!("Query SA failed: {e}\n"),
                code: 5,
            }),
        }
    }

    /// `get_any_records`: a GetTable; an error status is reported.
    fn get_any(&mut self, attr: u16, attr_mod: u32, mask: u64, rec: &[u8]) -> Result<Answer, Fail> {
        let a = self.query(Method::GET_TABLE, attr, attr_mod, mask, rec)?;
        if a.status != 0 {
            return Err(Fail {
                stderr: sa::format_sa_report_err(a.status),
                code: 5,
            });
        }
        Ok(a)
    }

    fn get_all(&mut self, attr: u16) -> Result<Answer, Fail> {
        self.get_any(attr, 0, 0, &[])
    }

    /// Dumps records with `f`, and keeps them for JSON.
    fn dump<R: SaRecord + Fields>(&mut self, a: &Answer, f: impl Fn(&R) -> String) {
        for r in a.records::<R>() {
            self.out.push_str(&f(&r));
            self.json_records.push(ibdiag::attr_json(&r));
        }
    }

    /// A node record with its description replaced by the node name
    /// map's name, if it has one (`remap_node_name`).
    fn remap(&self, nr: &NodeRecord) -> NodeRecord {
        let mut n = nr.clone();
        let name = self.names.remap(nr.node_info.node_guid, &nr.node_desc);
        if name != dump::clean_nodedesc(&nr.node_desc) {
            n.node_desc = NodeDescription::from_text(&name);
        }
        n
    }
}

/// `get_lid`: a LID, or the LID of the node named so.
fn get_lid(c: &mut Ctx<'_>, name: &str) -> Result<u16, Fail> {
    if name.is_empty() {
        return Ok(0);
    }
    if name.starts_with(|ch: char| ch.is_ascii_alphabetic()) {
        let a = match c.get_all(0x0011) {
            Ok(a) => a,
            Err(f) => {
                return Err(Fail {
                    stderr: format!(
                        "{}Failed to find lid for \"{name}\": {}\n",
                        f.stderr,
                        strerror(f.code)
                    ),
                    code: f.code,
                })
            }
        };
        for nr in a.records::<NodeRecord>() {
            if desc_eq(name, &nr.node_desc) {
                return Ok(nr.lid);
            }
        }
        return Err(Fail {
            stderr: format!("Failed to find lid for \"{name}\": Machine is not on the network\n"),
            code: 64,
        });
    }
    let v = crate::cnum::c_strtol(name);
    if v <= 0 || v > i64::from(u16::MAX) {
        return Err(Fail {
            stderr: format!("Invalid lid specified: \"{name}\"\n"),
            code: 22,
        });
    }
    Ok(v as u16)
}

fn strerror(code: i32) -> &'static str {
    match code {
        5 => "Input/output error",
        110 => "Connection timed out",
        22 => "Invalid argument",
        64 => "Machine is not on the network",
        _ => "Unknown error",
    }
}

/// `strncmp(name, desc, 64) == 0`.
fn desc_eq(name: &str, desc: &NodeDescription) -> bool {
    let d = desc.to_vec().unwrap_or_default();
    let dend = d.iter().position(|b| *b == 0).unwrap_or(d.len());
    let n = name.as_bytes();
    let n = &n[..n.len().min(64)];
    let d = &d[..dend.min(64)];
    if n.len() >= 64 || d.len() >= 64 {
        n[..n.len().min(64)] == d[..d.len().min(64)]
    } else {
        n == d
    }
}

/// `parse_lid_and_ports`: `lid[/port1[/port2]]` (-1: not given).
fn parse_lid_and_ports(c: &mut Ctx<'_>, s: &str) -> Result<(u16, i64, i64), Fail> {
    let mut parts = s.splitn(3, '/');
    let lid = get_lid(c, parts.next().unwrap_or(""))?;
    // strtoul(str, &e, 0) into an int; nothing parsed (e == str): -1.
    let num = |p: Option<&str>| -> i64 {
        let Some(t) = p else { return -1 };
        let body = t.trim_start().trim_start_matches(['+', '-']);
        if body.starts_with(|ch: char| ch.is_ascii_digit()) {
            i64::from(crate::cnum::c_strtoul(t) as u32 as i32)
        } else {
            -1
        }
    };
    let p1 = num(parts.next());
    let p2 = num(parts.next());
    Ok((lid, p1, p2))
}

/// `CHECK_AND_SET_VAL` with an 8-bit compare: -1 (or 255) means unset.
fn set8(v: i64) -> Option<u8> {
    ((v as i8) != -1).then_some(v as u8)
}

fn set16(v: i64) -> Option<u16> {
    ((v as i16) != -1).then_some(v as u16)
}

#[allow(clippy::too_many_lines)]
fn handler(
    c: &mut Ctx<'_>,
    attr: u16,
    p: &Params,
    args: &[String],
    cpi: Option<&ClassPortInfo>,
) -> Result<(), Fail> {
    let arg = |i: usize| args.get(i).map(String::as_str);
    match attr {
        0x0001 => {
            c.attribute = "ClassPortInfo";
            if let Some(cpi) = cpi {
                c.out.push_str(&sa::format_class_port_info(cpi));
                c.json_records.push(ibdiag::attr_json(cpi));
            }
            Ok(())
        }
        0x0011 => {
            c.attribute = "NodeRecord";
            let mut nr = NodeRecord::default();
            let mut mask = 0;
            if let Some(a) = arg(0) {
                let (lid, _, _) = parse_lid_and_ports(c, a)?;
                if lid != 0 {
                    nr.lid = lid;
                    mask |= NodeRecord::COMP_LID;
                }
            }
            let a = c.get_any(attr, 0, mask, &rec(&nr))?;
            let names = c.names;
            let _ = names;
            for r in a.records::<NodeRecord>() {
                let r = c.remap(&r);
                c.out.push_str(&sa::format_node_record(&r));
                c.json_records.push(ibdiag::attr_json(&r));
            }
            Ok(())
        }
        0x0012 => {
            c.attribute = "PortInfoRecord";
            let (mut lid, mut port, mut opts) = (0, -1, -1);
            if let Some(a) = arg(0) {
                (lid, port, opts) = parse_lid_and_ports(c, a)?;
            }
            let mut r = PortInfoRecord::default();
            let mut mask = 0;
            if lid != 0 {
                r.lid = lid;
                mask |= PortInfoRecord::COMP_LID;
            }
            if let Some(v) = set8(port) {
                r.port_num = v;
                mask |= PortInfoRecord::COMP_PORT_NUM;
            }
            if let Some(v) = set8(opts) {
                r.options = v;
                mask |= PortInfoRecord::COMP_OPTIONS;
            }
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            let keys = c.show_keys;
            c.dump(&a, |r: &PortInfoRecord| sa::format_portinfo_record(r, keys));
            Ok(())
        }
        0x0013 => {
            c.attribute = "SL2VLTableRecord";
            let (mut lid, mut inp, mut outp) = (0, -1, -1);
            if let Some(a) = arg(0) {
                (lid, inp, outp) = parse_lid_and_ports(c, a)?;
            }
            let mut r = Sl2VlRecord::default();
            let mut mask = 0;
            if lid != 0 {
                r.lid = lid;
                mask |= Sl2VlRecord::COMP_LID;
            }
            if let Some(v) = set8(inp) {
                r.input_port = v;
                mask |= Sl2VlRecord::COMP_INPUT_PORT;
            }
            if let Some(v) = set8(outp) {
                r.output_port = v;
                mask |= Sl2VlRecord::COMP_OUTPUT_PORT;
            }
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, sa::format_sl2vl_record);
            Ok(())
        }
        0x0033 => {
            c.attribute = "PKeyTableRecord";
            let (mut lid, mut port, mut block) = (0, -1, -1);
            if let Some(a) = arg(0) {
                (lid, port, block) = parse_lid_and_ports(c, a)?;
            }
            let mut r = PKeyTableRecord::default();
            let mut mask = 0;
            if lid != 0 {
                r.lid = lid;
                mask |= PKeyTableRecord::COMP_LID;
            }
            if let Some(v) = set8(port) {
                r.port_num = v;
                mask |= PKeyTableRecord::COMP_PORT_NUM;
            }
            if let Some(v) = set16(block) {
                r.block_num = v;
                mask |= PKeyTableRecord::COMP_BLOCK_NUM;
            }
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, sa::format_pkey_table_record);
            Ok(())
        }
        0x0036 => {
            c.attribute = "VLArbitrationTableRecord";
            let (mut lid, mut port, mut block) = (0, -1, -1);
            if let Some(a) = arg(0) {
                (lid, port, block) = parse_lid_and_ports(c, a)?;
            }
            let mut r = VlArbRecord::default();
            let mut mask = 0;
            if lid != 0 {
                r.lid = lid;
                mask |= VlArbRecord::COMP_LID;
            }
            if let Some(v) = set8(port) {
                r.output_port = v;
                mask |= VlArbRecord::COMP_OUTPUT_PORT;
            }
            if let Some(v) = set8(block) {
                r.block_num = v;
                mask |= VlArbRecord::COMP_BLOCK_NUM;
            }
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, sa::format_vlarb_record);
            Ok(())
        }
        0x00F3 => {
            c.attribute = "InformInfoRecord";
            let mut r = InformInfoRecord::default();
            let mut mask = 0;
            if let Some(a) = arg(0) {
                let Some(g) = pton6(a) else {
                    return Err(Fail {
                        stderr: format!("Invalid SubscriberGID specified: \"{a}\"\n"),
                        code: 22,
                    });
                };
                r.subscriber_gid = g;
                mask = InformInfoRecord::COMP_SUBSCRIBER_GID;
            }
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            let keys = c.show_keys;
            c.dump(&a, |r: &InformInfoRecord| {
                sa::format_inform_info_record(r, keys)
            });
            Ok(())
        }
        0x0020 => {
            c.attribute = "LinkRecord";
            let (mut from_lid, mut from_port, mut to_lid, mut to_port) = (0, -1, 0, -1);
            if let Some(a) = arg(0) {
                (from_lid, from_port, _) = parse_lid_and_ports(c, a)?;
            }
            if let Some(a) = arg(1) {
                (to_lid, to_port, _) = parse_lid_and_ports(c, a)?;
            }
            let mut r = LinkRecord::default();
            let mut mask = 0;
            if from_lid != 0 {
                r.from_lid = from_lid;
                mask |= LinkRecord::COMP_FROM_LID;
            }
            if let Some(v) = set8(from_port) {
                r.from_port = v;
                mask |= LinkRecord::COMP_FROM_PORT;
            }
            if to_lid != 0 {
                r.to_lid = to_lid;
                mask |= LinkRecord::COMP_TO_LID;
            }
            if let Some(v) = set8(to_port) {
                r.to_port = v;
                mask |= LinkRecord::COMP_TO_PORT;
            }
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, sa::format_link_record);
            Ok(())
        }
        0x0031 => {
            c.attribute = "ServiceRecord";
            let a = c.get_all(attr)?;
            let keys = c.show_keys;
            c.dump(&a, |r: &ServiceRecord| sa::format_service_record(r, keys));
            Ok(())
        }
        0x0035 => {
            c.attribute = "PathRecord";
            let (r, mask) = path_template(p);
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, sa::format_path_record);
            Ok(())
        }
        0x0038 => {
            c.attribute = "MCMemberRecord";
            let (r, mask) = mcmember_template(p);
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, sa::format_mcmember_record);
            Ok(())
        }
        0x0015 => {
            c.attribute = "LFTRecord";
            let (mut lid, mut block) = (0, -1);
            if let Some(a) = arg(0) {
                (lid, block, _) = parse_lid_and_ports(c, a)?;
            }
            let mut r = LftRecord::default();
            let mut mask = 0;
            if lid != 0 {
                r.lid = lid;
                mask |= LftRecord::COMP_LID;
            }
            if let Some(v) = set16(block) {
                r.block_num = v;
                mask |= LftRecord::COMP_BLOCK_NUM;
            }
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, sa::format_lft_record);
            Ok(())
        }
        0x0017 => {
            c.attribute = "MFTRecord";
            let (mut lid, mut position, mut block) = (0, -1, -1);
            if let Some(a) = arg(0) {
                (lid, position, block) = parse_lid_and_ports(c, a)?;
            }
            let mut r = MftRecord::default();
            let mut mask = 0;
            if lid != 0 {
                r.lid = lid;
                mask |= MftRecord::COMP_LID;
            }
            if let Some(v) = set16(block) {
                r.block_num = v & 0x1FF;
                mask |= MftRecord::COMP_BLOCK_NUM;
            }
            if let Some(v) = set8(position) {
                r.position = v & 0xF;
                mask |= MftRecord::COMP_POSITION;
            }
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, sa::format_mft_record);
            Ok(())
        }
        0x0030 => {
            c.attribute = "GUIDInfoRecord";
            let (mut lid, mut block) = (0, -1);
            if let Some(a) = arg(0) {
                (lid, block, _) = parse_lid_and_ports(c, a)?;
            }
            let mut r = GuidInfoRecord::default();
            let mut mask = 0;
            if lid != 0 {
                r.lid = lid;
                mask |= GuidInfoRecord::COMP_LID;
            }
            if let Some(v) = set8(block) {
                r.block_num = v;
                mask |= GuidInfoRecord::COMP_BLOCK_NUM;
            }
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, sa::format_guidinfo_record);
            Ok(())
        }
        0x0014 => {
            c.attribute = "SwitchInfoRecord";
            let mut r = SwitchInfoRecord::default();
            let mut mask = 0;
            if let Some(a) = arg(0) {
                let (lid, _, _) = parse_lid_and_ports(c, a)?;
                if lid != 0 {
                    r.lid = lid;
                    mask |= SwitchInfoRecord::COMP_LID;
                }
            }
            let cap2 = cpi.map_or(0, |c| c.capability_mask2);
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, |r: &SwitchInfoRecord| {
                sa::format_switch_info_record(r, cap2)
            });
            Ok(())
        }
        0x0018 => {
            c.attribute = "SMInfoRecord";
            let mut r = SmInfoRecord::default();
            let mut mask = 0;
            if let Some(a) = arg(0) {
                let (lid, _, _) = parse_lid_and_ports(c, a)?;
                if lid != 0 {
                    r.lid = lid;
                    mask |= SmInfoRecord::COMP_LID;
                }
            }
            let a = c.get_any(attr, 0, mask, &rec(&r))?;
            c.dump(&a, sa::format_sm_info_record);
            Ok(())
        }
        other => Err(Fail {
            stderr: format!("Unknown query type {other}\n"),
            code: 22,
        }),
    }
}

fn rec<R: Repr>(r: &R) -> Vec<u8> {
    r.to_vec().unwrap_or_default()
}

/// `query_path_records`'s template and component mask.
fn path_template(p: &Params) -> (PathRecord, u64) {
    let mut pr = PathRecord::default();
    let mut m = 0;
    if p.service_id != 0 {
        pr.service_id = p.service_id;
        m |= PathRecord::COMP_SERVICE_ID;
    }
    if p.sgid != [0; 16] {
        pr.sgid = p.sgid;
        m |= PathRecord::COMP_SGID;
    }
    if p.dgid != [0; 16] {
        pr.dgid = p.dgid;
        m |= PathRecord::COMP_DGID;
    }
    if p.slid != 0 {
        pr.slid = p.slid;
        m |= PathRecord::COMP_SLID;
    }
    if p.dlid != 0 {
        pr.dlid = p.dlid;
        m |= PathRecord::COMP_DLID;
    }
    if p.hop_limit != -1 {
        pr.hop_limit = p.hop_limit as u8;
        m |= PathRecord::COMP_HOP_LIMIT;
    }
    if p.flow_label as u8 != 0 {
        pr.flow_label = u32::from(p.flow_label as u8);
        m |= PathRecord::COMP_FLOW_LABEL;
    }
    if p.tclass != 0 {
        pr.tclass = p.tclass;
        m |= PathRecord::COMP_TCLASS;
    }
    let mut reversible = 0u8;
    if p.reversible as i8 != -1 {
        reversible = p.reversible as u8;
        m |= PathRecord::COMP_REVERSIBLE;
    }
    let mut num_path = 0u8;
    if p.numb_path as i8 != -1 {
        num_path = p.numb_path as u8;
        m |= PathRecord::COMP_NUMB_PATH;
    }
    num_path |= reversible << 7;
    pr.numb_path = num_path & 0x7F;
    pr.reversible = num_path & 0x80 != 0;
    if p.pkey != 0 {
        pr.pkey = p.pkey;
        m |= PathRecord::COMP_PKEY;
    }
    if p.sl as i16 != -1 {
        pr.sl = (p.sl & 0xF) as u8;
        pr.qos_class = ((p.sl as u16) >> 4) & 0xFFF;
        m |= PathRecord::COMP_SL;
    }
    if p.qos_class != -1 {
        pr.qos_class = (p.qos_class & 0xFFF) as u16;
        m |= PathRecord::COMP_QOS_CLASS;
    } else {
        pr.qos_class = 0;
    }
    if p.mtu != 0 {
        pr.mtu_selector.0 = p.mtu >> 6;
        pr.mtu = p.mtu & 0x3F;
        m |= PathRecord::COMP_MTU | PathRecord::COMP_MTU_SELECTOR;
    }
    if p.rate != 0 {
        pr.rate_selector.0 = p.rate >> 6;
        pr.rate = p.rate & 0x3F;
        m |= PathRecord::COMP_RATE | PathRecord::COMP_RATE_SELECTOR;
    }
    if p.pkt_life != 0 {
        pr.packet_life_time_selector.0 = p.pkt_life >> 6;
        pr.packet_life_time = p.pkt_life & 0x3F;
        m |= PathRecord::COMP_PACKET_LIFE_TIME | PathRecord::COMP_PACKET_LIFE_TIME_SELECTOR;
    }
    (pr, m)
}

/// `query_mcmember_records`'s template and component mask.
fn mcmember_template(p: &Params) -> (McMemberRecord, u64) {
    let mut mr = McMemberRecord::default();
    let mut m = 0;
    if p.mgid != [0; 16] {
        mr.mgid = p.mgid;
        m |= McMemberRecord::COMP_MGID;
    }
    if p.gid != [0; 16] {
        mr.port_gid = p.gid;
        m |= McMemberRecord::COMP_PORT_GID;
    }
    if p.mlid != 0 {
        mr.mlid = p.mlid;
        m |= McMemberRecord::COMP_MLID;
    }
    if p.qkey != 0 {
        mr.qkey = p.qkey;
        m |= McMemberRecord::COMP_QKEY;
    }
    if p.mtu != 0 {
        mr.mtu_selector.0 = p.mtu >> 6;
        mr.mtu = p.mtu & 0x3F;
        m |= McMemberRecord::COMP_MTU | McMemberRecord::COMP_MTU_SELECTOR;
    }
    if p.rate != 0 {
        mr.rate_selector.0 = p.rate >> 6;
        mr.rate = p.rate & 0x3F;
        m |= McMemberRecord::COMP_RATE | McMemberRecord::COMP_RATE_SELECTOR;
    }
    if p.pkt_life != 0 {
        mr.packet_life_time_selector.0 = p.pkt_life >> 6;
        mr.packet_life_time = p.pkt_life & 0x3F;
        m |= McMemberRecord::COMP_PACKET_LIFE_TIME | McMemberRecord::COMP_PACKET_LIFE_TIME_SELECTOR;
    }
    if p.tclass != 0 {
        mr.tclass = p.tclass;
        m |= McMemberRecord::COMP_TCLASS;
    }
    if p.pkey != 0 {
        mr.pkey = p.pkey;
        m |= McMemberRecord::COMP_PKEY;
    }
    if p.sl as i8 != -1 {
        mr.sl = (p.sl & 0xF) as u8;
        m |= McMemberRecord::COMP_SL;
    }
    if p.flow_label as u8 != 0 {
        mr.flow_label = u32::from(p.flow_label as u8);
        m |= McMemberRecord::COMP_FLOW_LABEL;
    }
    if p.hop_limit as i8 != -1 {
        mr.hop_limit = p.hop_limit as u8;
        m |= McMemberRecord::COMP_HOP_LIMIT;
    }
    if p.scope != 0 {
        mr.scope = p.scope & 0xF;
        m |= McMemberRecord::COMP_SCOPE;
    }
    if p.join_state != 0 {
        mr.join_state = p.join_state & 0xF;
        mr.scope |= p.join_state >> 4;
        m |= McMemberRecord::COMP_JOIN_STATE;
    }
    if p.proxy_join as i8 != -1 {
        mr.proxy_join = p.proxy_join & 1 != 0;
        m |= McMemberRecord::COMP_PROXY_JOIN;
    }
    (mr, m)
}

/// `print_node_records`.
fn print_node_records(
    c: &mut Ctx<'_>,
    how: NodePrint,
    requested_name: Option<&str>,
    requested_lid: u16,
    requested_guid: u64,
) -> Result<bool, Fail> {
    c.attribute = "NodeRecord";
    let a = c.get_all(0x0011)?;
    let records = a.records::<NodeRecord>();
    if how == NodePrint::AllDesc {
        let remapped: Vec<NodeRecord> = records.iter().map(|r| c.remap(r)).collect();
        c.out.push_str(&sa::format_node_list(&remapped));
        for r in remapped.iter().filter(|r| r.node_info.node_type.0 == 1) {
            c.json_records.push(ibdiag::attr_json(r));
        }
        return Ok(false);
    }
    for nr in &records {
        let shown = c.remap(nr);
        let print = |c: &mut Ctx<'_>| {
            let s = match how {
                NodePrint::LidOnly | NodePrint::UniqueLidOnly => sa::format_node_lid(nr),
                NodePrint::GuidOnly => sa::format_node_port_guid(nr),
                NodePrint::NameOfLid | NodePrint::NameOfGuid => sa::format_node_name(&shown),
                _ => sa::format_node_record(&shown),
            };
            c.out.push_str(&s);
            c.json_records.push(ibdiag::attr_json(&shown));
        };
        match how {
            NodePrint::NameOfLid => {
                if requested_lid == nr.lid {
                    print(c);
                }
            }
            NodePrint::NameOfGuid => {
                if requested_guid == nr.node_info.port_guid {
                    print(c);
                }
            }
            _ => {
                let remapped = c.names.remap(nr.node_info.node_guid, &nr.node_desc);
                let matches = match requested_name {
                    None => true,
                    Some(n) => {
                        desc_eq(n, &nr.node_desc)
                            || n.get(..n.len().min(64)) == remapped.get(..remapped.len().min(64))
                    }
                };
                if matches {
                    print(c);
                    if how == NodePrint::UniqueLidOnly {
                        return Ok(true);
                    }
                }
            }
        }
    }
    Ok(false)
}

/// Runs `saquery`.
///
/// # Errors
/// Usage errors (exit 2), and saquery's own exit statuses.
#[allow(clippy::too_many_lines)]
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let usage_args = usage_args();
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "DGLsy",
        usage_args: &usage_args,
        examples: &[],
    };
    let usage = |inv: &Invocation<'_, '_>, pre: &str| {
        CliError::ToolUsage(format!("{pre}{}", ibdiag::usage_text(&inv.prog, &spec)))
    };
    let p = ibdiag::parse(inv, &spec)?;
    let mut params = Params::default();
    let mut cmd = Cmd::Query;
    let mut how = NodePrint::All;
    let mut query_type: u16 = 0;
    let mut src_dst: Option<(String, String)> = None;
    let mut map_file = None;
    let mut sm_key = 0u64;
    for (k, v) in &p.custom {
        let v = v.clone().unwrap_or_default();
        let u = || crate::cnum::c_strtoul(&v);
        let ch = u8::try_from(*k).map(char::from).unwrap_or('\0');
        match (*k, ch) {
            (K_SRC_TO_DST, _) => {
                let Some((s, d)) = v.split_once(':') else {
                    return Err(usage(inv, ""));
                };
                src_dst = Some((s.to_owned(), d.to_owned()));
                params.numb_path = 0x7f;
                query_type = 0x0035;
            }
            (K_SGID_TO_DGID, _) => {
                let Some((s, d)) = v.split_once('-') else {
                    return Err(usage(inv, ""));
                };
                let (Some(s), Some(d)) = (pton6(s), pton6(d)) else {
                    return Err(usage(inv, ""));
                };
                params.sgid = s;
                params.dgid = d;
                params.numb_path = 0x7f;
                query_type = 0x0035;
            }
            (K_NODE_NAME_MAP, _) => map_file = Some(v),
            (K_SMKEY, _) => {
                if !v.starts_with(|c: char| c.is_ascii_hexdigit()) {
                    return Err(usage(inv, "cannot get SM_Key\n"));
                }
                sm_key = u();
            }
            (K_SLID, _) => params.slid = u() as u16,
            (K_DLID, _) => params.dlid = u() as u16,
            (K_MLID, _) => params.mlid = u() as u16,
            (K_SGID | K_DGID | K_GID | K_MGID, _) => {
                let Some(g) = pton6(&v) else {
                    return Err(usage(inv, ""));
                };
                match *k {
                    K_SGID => params.sgid = g,
                    K_DGID => params.dgid = g,
                    K_GID => params.gid = g,
                    _ => params.mgid = g,
                }
            }
            (K_PKEY, _) => {
                if !v.starts_with(|c: char| c.is_ascii_hexdigit()) {
                    return Err(usage(inv, "cannot get P_Key\n"));
                }
                params.pkey = u() as u16;
            }
            (K_SL, _) => params.sl = u() as i32,
            (K_PKT_LIFE, _) => params.pkt_life = u() as u8,
            (K_SCOPE, _) => params.scope = u() as u8,
            (K_SERVICE_ID, _) => params.service_id = u(),
            (_, 'p') => query_type = 0x0035,
            (_, 'D') => {
                how = NodePrint::AllDesc;
                cmd = Cmd::NodeRecord;
            }
            (_, 'c') => cmd = Cmd::ClassPortInfo,
            (_, 'S') => query_type = 0x0031,
            (_, 'I') => query_type = 0x00F3,
            (_, 'N') => cmd = Cmd::NodeRecord,
            (_, 'L') => {
                how = NodePrint::LidOnly;
                cmd = Cmd::NodeRecord;
            }
            (_, 'l') => {
                how = NodePrint::UniqueLidOnly;
                cmd = Cmd::NodeRecord;
            }
            (_, 'G') => {
                how = NodePrint::GuidOnly;
                cmd = Cmd::NodeRecord;
            }
            (_, 'O') => {
                how = NodePrint::NameOfLid;
                cmd = Cmd::NodeRecord;
            }
            (_, 'U') => {
                how = NodePrint::NameOfGuid;
                cmd = Cmd::NodeRecord;
            }
            (_, 's') => cmd = Cmd::IsSm,
            (_, 'g') => cmd = Cmd::McGroups,
            (_, 'm') => cmd = Cmd::McMembers,
            (_, 'x') => query_type = 0x0020,
            (_, 'r') => params.reversible = u() as i32,
            (_, 'n') => params.numb_path = u() as i32,
            (_, 'Q') => params.qos_class = u() as i32,
            (_, 'M') => params.mtu = u() as u8,
            (_, 'R') => params.rate = u() as u8,
            (_, 'q') => {
                if !v.starts_with(|c: char| c.is_ascii_hexdigit()) {
                    return Err(usage(inv, "cannot get Q_Key\n"));
                }
                params.qkey = u() as u32;
            }
            (_, 'T') => params.tclass = u() as u8,
            (_, 'F') => params.flow_label = u() as u32,
            (_, 'H') => params.hop_limit = u() as i32,
            (_, 'J') => params.join_state = u() as u8,
            (_, 'X') => params.proxy_join = u() as i32,
            _ => {}
        }
    }
    let mut args: Vec<String> = p.args.clone();
    if query_type == 0 && cmd == Cmd::Query {
        match args.first().and_then(|a| find_query(a)) {
            Some(t) => {
                query_type = t;
                args.remove(0);
            }
            None => query_type = 0x0011,
        }
    }
    let (mut requested_name, mut requested_lid, mut requested_guid) = (None, None, None);
    if let Some(a) = args.first() {
        match how {
            NodePrint::NameOfLid => requested_lid = Some(crate::cnum::c_strtoul(a) as u16),
            NodePrint::NameOfGuid => requested_guid = Some(crate::cnum::c_strtoul(a)),
            _ => requested_name = Some(a.clone()),
        }
    }
    if matches!(
        how,
        NodePrint::LidOnly | NodePrint::UniqueLidOnly | NodePrint::GuidOnly
    ) && requested_name.is_none()
    {
        return Err(usage(inv, "ERROR: name not specified\n"));
    }
    if how == NodePrint::NameOfLid && requested_lid.is_none() {
        return Err(usage(inv, "ERROR: lid not specified\n"));
    }
    if how == NodePrint::NameOfGuid && requested_guid.is_none() {
        return Err(usage(inv, "ERROR: guid not specified\n"));
    }
    if how == NodePrint::NameOfLid && requested_lid == Some(0) {
        return Err(usage(inv, "ERROR: lid invalid\n"));
    }
    let mut common_opts = p.common.clone();
    if common_opts.timeout_ms.is_none() {
        common_opts.timeout_ms = Some(SA_TIMEOUT_MS);
    }
    let session = ibdiag::open_session(inv, &common_opts)?;
    let names = ibdiag::open_name_map(inv, map_file.as_deref()).unwrap_or_default();
    let attrs = session.port_attrs();
    if attrs.sm_lid == 0 {
        let _ = session.close();
        inv.io.err(&format!(
            "ibwarn: [{}] sa_get_handle: No SM/SA found on port :{}\nibpanic: [{}] main: Failed to bind to the SA: Success\n",
            pid(),
            common_opts.port.unwrap_or(0),
            pid()
        ));
        return Err(CliError::Exit(255));
    }
    let cfg = SaClientConfig {
        name: "saquery".into(),
        timeout: session.timeout(),
        retries: 0,
        table_mode: table_mode(&session),
        receive_reports: false,
        sm_key,
        ..SaClientConfig::default()
    };
    let sa_client = match SaClient::new(session.runtime(), cfg) {
        Ok(c) => c,
        Err(e) => {
            let _ = session.close();
            return Err(CliError::Failed(format!("SA client: {e}")));
        }
    };
    let mut c = Ctx {
        sa: &sa_client,
        names: &names,
        show_keys: common_opts.show_keys,
        out: String::new(),
        json_records: Vec::new(),
        attribute: "NodeRecord",
        truncated: false,
        truncated_why: None,
        built_in_sa: matches!(session.backend(), Backend::Sim(_)),
    };
    let spinner = crate::discover::progress::Spinner::start("saquery: reading the SA's records");
    let result = (|| -> Result<(), Fail> {
        if let Some((s, d)) = &src_dst {
            if !s.is_empty() {
                params.slid = get_lid(&mut c, s)?;
            }
            if !d.is_empty() {
                params.dlid = get_lid(&mut c, d)?;
            }
        }
        let need_cpi = cmd == Cmd::ClassPortInfo || query_type == 0x0001 || query_type == 0x0014;
        let mut cpi = None;
        if need_cpi {
            let a = c.query(Method::GET, 0x0001, 0, 0, &[]).map_err(|f| Fail {
                stderr: format!("{}Failed to query SA:ClassPortInfo\n", f.stderr),
                code: f.code,
            })?;
            if a.status != 0 {
                return Err(Fail {
                    stderr: format!(
                        "{}Failed to query SA:ClassPortInfo\n",
                        sa::format_sa_report_err(a.status)
                    ),
                    code: 5,
                });
            }
            cpi = a
                .bytes
                .get(SA_DATA_OFFSET..)
                .and_then(|d| ClassPortInfo::parse(d).ok());
        }
        match cmd {
            Cmd::NodeRecord => {
                print_node_records(
                    &mut c,
                    how,
                    requested_name.as_deref(),
                    requested_lid.unwrap_or(0),
                    requested_guid.unwrap_or(0),
                )?;
                Ok(())
            }
            Cmd::ClassPortInfo => {
                c.attribute = "ClassPortInfo";
                if let Some(cpi) = &cpi {
                    c.out.push_str(&sa::format_class_port_info(cpi));
                    c.json_records.push(ibdiag::attr_json(cpi));
                }
                Ok(())
            }
            Cmd::IsSm => {
                c.attribute = "PortInfoRecord";
                let issm = |c: &mut Ctx<'_>, bit: u32| -> Result<Vec<PortInfoRecord>, Fail> {
                    let mut r = PortInfoRecord::default();
                    r.port_info.capability_mask = bit;
                    let a = c.get_any(
                        0x0012,
                        1 << 31,
                        PortInfoRecord::COMP_CAPABILITY_MASK,
                        &rec(&r),
                    )?;
                    Ok(a.records())
                };
                let sm = issm(&mut c, port_cap::IS_SM)?;
                c.out.push_str("IsSM ports\n");
                c.out
                    .push_str(&sa::format_all(&sm, sa::format_portinfo_record_brief));
                let dis = issm(&mut c, port_cap::SM_DISAB)?;
                c.out.push_str("\nIsSMdisabled ports\n");
                c.out
                    .push_str(&sa::format_all(&dis, sa::format_portinfo_record_brief));
                for r in sm.iter().chain(&dis) {
                    c.json_records.push(ibdiag::attr_json(r));
                }
                Ok(())
            }
            Cmd::McGroups => {
                c.attribute = "MCMemberRecord";
                let a = c.get_all(0x0038)?;
                c.dump(&a, sa::format_mcgroup_record);
                Ok(())
            }
            Cmd::McMembers => {
                c.attribute = "MCMemberRecord";
                let g = c.get_all(0x0038)?;
                let n = c.get_all(0x0011)?;
                let groups = g.records::<McMemberRecord>();
                let nodes: Vec<NodeRecord> = n
                    .records::<NodeRecord>()
                    .iter()
                    .map(|r| c.remap(r))
                    .collect();
                c.out.push_str(&sa::format_mcmember_members(
                    &groups,
                    &nodes,
                    args.first().map(String::as_str),
                ));
                for r in &groups {
                    c.json_records.push(ibdiag::attr_json(r));
                }
                Ok(())
            }
            Cmd::Query => handler(&mut c, query_type, &params, &args, cpi.as_ref()),
        }
    })();
    drop(spinner);
    let Ctx {
        out,
        json_records,
        attribute,
        truncated,
        truncated_why,
        ..
    } = c;
    drop(sa_client);
    let close = session.close();
    if common_opts.json {
        let mut j = Json::obj()
            .with("command", Json::String("saquery".into()))
            .with("attribute", Json::String(attribute.into()))
            .with("records", Json::Array(json_records))
            .with("truncated", Json::Bool(truncated));
        if let Err(f) = &result {
            j.push("error", Json::String(f.stderr.trim_end().to_owned()));
        }
        ibdiag::print_json(inv, &j);
    } else {
        inv.io.out(&out);
    }
    if let Err(f) = result {
        if !common_opts.json {
            inv.io.err(&f.stderr);
        }
        return Err(CliError::Exit(f.code));
    }
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))?;
    if truncated {
        let why = truncated_why.unwrap_or_else(|| "the SA's answer was cut short".into());
        return Err(ibdiag::incomplete(
            inv,
            "records",
            None,
            Vec::new(),
            format!("incomplete {attribute} table: {why}"),
        ));
    }
    Ok(())
}

/// RMPP tables, except where the SA's answers come cut to one MAD: under
/// libumad2sim (no RMPP there), and on ibsim (its SMs run under
/// libumad2sim).
fn table_mode(s: &Session) -> TableMode {
    let umad2sim = std::env::var("LD_PRELOAD").is_ok_and(|v| v.contains("umad2sim"));
    match s.backend() {
        Backend::IbSim => TableMode::SingleMad,
        Backend::Umad { .. } if umad2sim => TableMode::SingleMad,
        _ => TableMode::Rmpp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_names_and_aliases() {
        assert_eq!(find_query("nr"), Some(0x0011));
        assert_eq!(find_query("PathRecord"), Some(0x0035));
        assert_eq!(find_query("swir"), Some(0x0014));
        assert_eq!(find_query("frob"), None);
        let u = usage_args();
        assert!(u.contains("  PortInfoRecord (PIR) [[lid]/[port]/[options]]\n"));
        assert!(u.ends_with("\n  Queries node records by default."));
    }

    #[test]
    fn path_template_follows_check_and_set() {
        let p = Params {
            slid: 2,
            dlid: 4,
            numb_path: 0x7f,
            ..Params::default()
        };
        let (pr, m) = path_template(&p);
        assert_eq!((pr.slid, pr.dlid, pr.numb_path), (2, 4, 0x7f));
        assert_eq!(
            m,
            PathRecord::COMP_SLID | PathRecord::COMP_DLID | PathRecord::COMP_NUMB_PATH
        );
        let p = Params {
            mtu: 0x84,
            reversible: 1,
            ..Params::default()
        };
        let (pr, m) = path_template(&p);
        assert_eq!((pr.mtu_selector.0, pr.mtu, pr.reversible), (2, 4, true));
        assert_eq!(
            m,
            PathRecord::COMP_MTU | PathRecord::COMP_MTU_SELECTOR | PathRecord::COMP_REVERSIBLE
        );
    }

    #[test]
    fn an_eight_bit_port_of_255_counts_as_unset() {
        assert_eq!(set8(-1), None);
        assert_eq!(set8(255), None);
        assert_eq!(set8(3), Some(3));
        assert_eq!(set16(0xFFFF), None);
    }
}
