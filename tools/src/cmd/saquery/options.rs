//! saquery's options (`struct query_params` and the mode options) and
//! what it makes of its arguments: the [`Request`] a run carries out.

use super::query::pton6;
use crate::ibdiag::Parsed;

/// The option keys of saquery's long options without a short form.
pub(super) const K_SRC_TO_DST: i32 = 1;
pub(super) const K_SGID_TO_DGID: i32 = 2;
pub(super) const K_NODE_NAME_MAP: i32 = 3;
pub(super) const K_SMKEY: i32 = 4;
pub(super) const K_SLID: i32 = 5;
pub(super) const K_DLID: i32 = 6;
pub(super) const K_MLID: i32 = 7;
pub(super) const K_SGID: i32 = 14;
pub(super) const K_DGID: i32 = 15;
pub(super) const K_GID: i32 = 16;
pub(super) const K_MGID: i32 = 17;
pub(super) const K_PKEY: i32 = 18;
pub(super) const K_SL: i32 = 19;
pub(super) const K_PKT_LIFE: i32 = 20;
pub(super) const K_SCOPE: i32 = 21;
pub(super) const K_SERVICE_ID: i32 = 22;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// What saquery does (its mode options).
pub(super) enum Cmd {
    Query,
    NodeRecord,
    ClassPortInfo,
    IsSm,
    McGroups,
    McMembers,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// How the node list prints (`-L`, `-l`, `-G`, `-O`, `-U`, `-D`).
pub(super) enum NodePrint {
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
pub(super) struct Params {
    pub(super) service_id: u64,
    pub(super) sgid: [u8; 16],
    pub(super) dgid: [u8; 16],
    pub(super) gid: [u8; 16],
    pub(super) mgid: [u8; 16],
    pub(super) slid: u16,
    pub(super) dlid: u16,
    pub(super) mlid: u16,
    pub(super) flow_label: u32,
    pub(super) hop_limit: i32,
    pub(super) tclass: u8,
    pub(super) reversible: i32,
    pub(super) numb_path: i32,
    pub(super) pkey: u16,
    pub(super) qos_class: i32,
    pub(super) sl: i32,
    pub(super) mtu: u8,
    pub(super) rate: u8,
    pub(super) pkt_life: u8,
    pub(super) qkey: u32,
    pub(super) scope: u8,
    pub(super) join_state: u8,
    pub(super) proxy_join: i32,
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

/// What one saquery run does, read from its command line.
pub(super) struct Request {
    pub(super) params: Params,
    pub(super) cmd: Cmd,
    pub(super) how: NodePrint,
    /// The SA attribute of a [`Cmd::Query`].
    pub(super) query_type: u16,
    pub(super) src_dst: Option<(String, String)>,
    pub(super) map_file: Option<String>,
    pub(super) sm_key: u64,
    /// The arguments after the query name.
    pub(super) args: Vec<String>,
    pub(super) requested_name: Option<String>,
    pub(super) requested_lid: Option<u16>,
    pub(super) requested_guid: Option<u64>,
}

/// Reads saquery's options and arguments as its `process_opt` and
/// `main` do; `find_query` is the attribute of a query name (or alias).
///
/// # Errors
/// The complaint printed before the usage (may be empty).
#[allow(clippy::too_many_lines)]
pub(super) fn read(
    p: &Parsed,
    find_query: fn(&str) -> Option<u16>,
) -> Result<Request, &'static str> {
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
                    return Err("");
                };
                src_dst = Some((s.to_owned(), d.to_owned()));
                params.numb_path = 0x7f;
                query_type = 0x0035;
            }
            (K_SGID_TO_DGID, _) => {
                let Some((s, d)) = v.split_once('-') else {
                    return Err("");
                };
                let (Some(s), Some(d)) = (pton6(s), pton6(d)) else {
                    return Err("");
                };
                params.sgid = s;
                params.dgid = d;
                params.numb_path = 0x7f;
                query_type = 0x0035;
            }
            (K_NODE_NAME_MAP, _) => map_file = Some(v),
            (K_SMKEY, _) => {
                if !v.starts_with(|c: char| c.is_ascii_hexdigit()) {
                    return Err("cannot get SM_Key\n");
                }
                sm_key = u();
            }
            (K_SLID, _) => params.slid = u() as u16,
            (K_DLID, _) => params.dlid = u() as u16,
            (K_MLID, _) => params.mlid = u() as u16,
            (K_SGID | K_DGID | K_GID | K_MGID, _) => {
                let Some(g) = pton6(&v) else {
                    return Err("");
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
                    return Err("cannot get P_Key\n");
                }
                params.pkey = u() as u16;
            }
            (K_SL, _) => params.sl = u() as i32,
            (K_PKT_LIFE, _) => params.pkt_life = u() as u8,
            (K_SCOPE, _) => params.scope = u() as u8,
            (K_SERVICE_ID, _) => params.service_id = u(),
            (_, 'p') => query_type = 0x0035,
            (_, c @ ('D' | 'L' | 'l' | 'G' | 'O' | 'U')) => {
                how = match c {
                    'D' => NodePrint::AllDesc,
                    'L' => NodePrint::LidOnly,
                    'l' => NodePrint::UniqueLidOnly,
                    'G' => NodePrint::GuidOnly,
                    'O' => NodePrint::NameOfLid,
                    _ => NodePrint::NameOfGuid,
                };
                cmd = Cmd::NodeRecord;
            }
            (_, 'c') => cmd = Cmd::ClassPortInfo,
            (_, 'S') => query_type = 0x0031,
            (_, 'I') => query_type = 0x00F3,
            (_, 'N') => cmd = Cmd::NodeRecord,
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
                    return Err("cannot get Q_Key\n");
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
        return Err("ERROR: name not specified\n");
    }
    if how == NodePrint::NameOfLid && requested_lid.is_none() {
        return Err("ERROR: lid not specified\n");
    }
    if how == NodePrint::NameOfGuid && requested_guid.is_none() {
        return Err("ERROR: guid not specified\n");
    }
    if how == NodePrint::NameOfLid && requested_lid == Some(0) {
        return Err("ERROR: lid invalid\n");
    }
    Ok(Request {
        params,
        cmd,
        how,
        query_type,
        src_dst,
        map_file,
        sm_key,
        args,
        requested_name,
        requested_lid,
        requested_guid,
    })
}
