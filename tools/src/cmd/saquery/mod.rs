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
//! saquery does not have: 3 ([`crate::command::EXIT_INCOMPLETE`]) when the
//! table printed is incomplete — cut to its first MAD (ibsim,
//! libumad2sim), or an all-pairs PathRecord table the built-in SA capped
//! — with a line on stderr saying so (saquery prints the cut table and
//! exits 0).
//!
//! `--json` prints `{"command":"saquery","attribute":"NodeRecord",
//! "records":[{...}],"truncated":B}` (records as their fields), or the
//! ClassPortInfo fields for `-c` / `CPI`; a truncated table has
//! `complete: false` and `missing`.

mod listings;
mod options;
mod query;
mod records;

use mad_agents::sa::{SaClient, SaClientConfig};
use mad_core::wire::attr::ClassPortInfo;
use mad_core::wire::{Method, Repr, SA_DATA_OFFSET};

use self::options::{
    Cmd, Request, K_DGID, K_DLID, K_GID, K_MGID, K_MLID, K_NODE_NAME_MAP, K_PKEY, K_PKT_LIFE,
    K_SCOPE, K_SERVICE_ID, K_SGID, K_SGID_TO_DGID, K_SL, K_SLID, K_SMKEY, K_SRC_TO_DST,
};
use self::query::{pid, table_mode, Ctx, Fail};
use self::records::{Query, RECORD_TYPES};
use crate::command::{CliError, Invocation};
use crate::diags::sa;
use crate::ibdiag::{self, Common, Opt, ToolSpec};
use crate::json::{Json, JsonExt};
use crate::session::{Backend, Session};

/// `DEFAULT_SA_TIMEOUT_MS`.
const SA_TIMEOUT_MS: u32 = 1000;

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

fn usage_args() -> String {
    let mut s = String::from(
        "[query-name] [<name> | <lid> | <guid>]\n\nSupported query names (and aliases):\n",
    );
    for t in RECORD_TYPES {
        s.push_str(&format!("  {} ({}) {}\n", t.name, t.alias, t.usage));
    }
    s.push_str("\n  Queries node records by default.");
    s
}

/// Runs `saquery`.
///
/// # Errors
/// Usage errors (exit 2), and saquery's own exit statuses.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let usage_args = usage_args();
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "DGLsy",
        usage_args: &usage_args,
        examples: &[],
    };
    let p = ibdiag::parse(inv, &spec)?;
    let mut req =
        options::read(&p, |name| records::find(name).map(|t| t.attr)).map_err(|complaint| {
            CliError::ToolUsage(format!(
                "{complaint}{}",
                ibdiag::usage_text(&inv.prog, &spec)
            ))
        })?;
    let mut common_opts = p.common.clone();
    if common_opts.timeout_ms.is_none() {
        common_opts.timeout_ms = Some(SA_TIMEOUT_MS);
    }
    let session = ibdiag::open_session(inv, &common_opts)?;
    let names = ibdiag::open_name_map(inv, req.map_file.as_deref()).unwrap_or_default();
    let sa_client = match sa_client(inv, &session, &common_opts, req.sm_key) {
        Ok(c) => c,
        Err(e) => {
            let _ = session.close();
            return Err(e);
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
        attr_name: records::attr_name,
        built_in_sa: matches!(session.backend(), Backend::Sim(_)),
    };
    let spinner = crate::discover::progress::Spinner::start("saquery: reading the SA's records");
    let result = execute(&mut c, &mut req);
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

/// The SA client saquery queries through (`sa_get_handle`); without an
/// SM, saquery's words and exit status 255 (the caller closes the
/// session).
fn sa_client(
    inv: &mut Invocation<'_, '_>,
    session: &Session,
    common: &Common,
    sm_key: u64,
) -> Result<SaClient, CliError> {
    if session.port_attrs().sm_lid == 0 {
        inv.io.err(&format!(
            "ibwarn: [{}] sa_get_handle: No SM/SA found on port :{}\nibpanic: [{}] main: Failed to bind to the SA: Success\n",
            pid(),
            common.port.unwrap_or(0),
            pid()
        ));
        return Err(CliError::Exit(255));
    }
    let cfg = SaClientConfig {
        name: "saquery".into(),
        timeout: session.timeout(),
        retries: 0,
        table_mode: table_mode(session),
        receive_reports: false,
        sm_key,
        ..SaClientConfig::default()
    };
    SaClient::new(session.runtime(), cfg).map_err(|e| CliError::Failed(format!("SA client: {e}")))
}

/// The SA's ClassPortInfo (read before CPI, `-c` and SWIR).
fn class_port_info(c: &mut Ctx<'_>) -> Result<Option<ClassPortInfo>, Fail> {
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
    Ok(a.bytes
        .get(SA_DATA_OFFSET..)
        .and_then(|d| ClassPortInfo::parse(d).ok()))
}

/// Carries out `req`, the records printed into `c`.
fn execute(c: &mut Ctx<'_>, req: &mut Request) -> Result<(), Fail> {
    if let Some((s, d)) = &req.src_dst {
        if !s.is_empty() {
            req.params.slid = query::get_lid(c, s)?;
        }
        if !d.is_empty() {
            req.params.dlid = query::get_lid(c, d)?;
        }
    }
    let need_cpi =
        req.cmd == Cmd::ClassPortInfo || req.query_type == 0x0001 || req.query_type == 0x0014;
    let cpi = if need_cpi { class_port_info(c)? } else { None };
    match req.cmd {
        Cmd::NodeRecord => listings::print_node_records(
            c,
            req.how,
            req.requested_name.as_deref(),
            req.requested_lid.unwrap_or(0),
            req.requested_guid.unwrap_or(0),
        )
        .map(|_| ()),
        Cmd::ClassPortInfo => {
            records::print_class_port_info(c, cpi.as_ref());
            Ok(())
        }
        Cmd::IsSm => listings::print_is_sm(c),
        Cmd::McGroups => listings::print_mc_groups(c),
        Cmd::McMembers => listings::print_mc_members(c, req.args.first().map(String::as_str)),
        Cmd::Query => match records::of_attr(req.query_type) {
            Some(t) => records::query(
                c,
                t,
                &Query {
                    params: &req.params,
                    args: &req.args,
                    cpi: cpi.as_ref(),
                },
            ),
            None => Err(Fail {
                stderr: format!("Unknown query type {}\n", req.query_type),
                code: 22,
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_names_and_aliases() {
        let attr = |n: &str| records::find(n).map(|t| t.attr);
        assert_eq!(attr("nr"), Some(0x0011));
        assert_eq!(attr("PathRecord"), Some(0x0035));
        assert_eq!(attr("swir"), Some(0x0014));
        assert_eq!(attr("frob"), None);
        let u = usage_args();
        assert!(u.contains("  PortInfoRecord (PIR) [[lid]/[port]/[options]]\n"));
        assert!(u.ends_with("\n  Queries node records by default."));
    }
}
