//! `ibaddr` (infiniband-diags `ibaddr.c`): the GID and LID range of a
//! port (the local one by default).
//!
//! `--json` prints `{"command":"ibaddr","gid":"fe80::...","lid_start":N,
//! "lid_end":N,"lmc":N,"port_guid":"0x..."}`.

use mad_core::wire::attr::{NodeInfo, PortInfo};
use mad_core::wire::AttributeId;

use crate::command::{CliError, Invocation};
use crate::diags::dump;
use crate::ibdiag::{self, Dest, Opt, ToolSpec};
use crate::json::{Json, JsonExt};

const OPTS: &[Opt] = &[
    Opt::new("gid_show", 'g', false, None, "show gid address only"),
    Opt::new("lid_show", 'l', false, None, "show lid range only"),
    Opt::new(
        "Lid_show",
        'L',
        false,
        None,
        "show lid range (in decimal) only",
    ),
];

const EXAMPLES: &[&str] = &[
    "\t\t# local port's address",
    "32\t\t# show lid range and gid of lid 32",
    "-G 0x8f1040023\t# same but using guid address",
    "-l 32\t\t# show lid range only",
    "-L 32\t\t# show decimal lid range only",
    "-g 32\t\t# show gid address only",
];

/// Runs `ibaddr`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "KL",
        usage_args: "[<lid|dr_path|guid>]",
        examples: EXAMPLES,
    };
    let p = ibdiag::parse(inv, &spec)?;
    let (mut show_lid, mut show_gid) = (0i32, false);
    for (k, _) in &p.custom {
        match u8::try_from(*k).map(char::from).unwrap_or('\0') {
            'g' => show_gid = true,
            'l' => show_lid += 1,
            'L' => show_lid = -100,
            _ => {}
        }
    }
    let mut port = p
        .args
        .get(1)
        .map_or(0, |a| crate::cnum::c_strtoul(a) as u32);
    if show_lid == 0 && !show_gid {
        show_lid = 1;
        show_gid = true;
    }
    let session = ibdiag::open_session(inv, &p.common)?;
    let (session, dest) = if let Some(a) = p.args.first() {
        ibdiag::dest_arg(session, &p.common, a)?
    } else {
        let a = session.port_attrs();
        port = u32::from(a.port_num);
        let d = Dest::lid(a.lid);
        (session, d)
    };
    let ni = session
        .smp()
        .get::<NodeInfo>(&dest.target, AttributeId::NODE_INFO, 0);
    let pi = ni.as_ref().ok().map(|_| {
        session
            .smp()
            .get::<PortInfo>(&dest.target, AttributeId::PORT_INFO, port)
    });
    let close = session.close();
    let (ni, pi) = match (ni, pi) {
        (Ok(ni), Some(Ok(pi))) => (ni, pi),
        (Err(e), _) | (Ok(_), Some(Err(e))) => {
            ibdiag::warn_failed(inv, &dest.text, &e);
            return Err(CliError::IbExit("can't resolve requested address".into()));
        }
        (Ok(_), None) => return Err(CliError::IbExit("can't resolve requested address".into())),
    };
    let mut gid = [0u8; 16];
    gid[..8].copy_from_slice(&pi.gid_prefix.to_be_bytes());
    gid[8..].copy_from_slice(&ni.port_guid.to_be_bytes());
    let lid = u32::from(pi.lid);
    let end = lid + (1u32 << pi.lmc) - 1;
    if p.common.json {
        let j = Json::obj()
            .with("command", Json::String("ibaddr".into()))
            .with("gid", Json::String(dump::inet_ntop6(&gid)))
            .with("port_guid", ibdiag::hex(ni.port_guid, 16))
            .with("lid_start", Json::from(u64::from(lid)))
            .with("lid_end", Json::from(u64::from(end)))
            .with("lmc", Json::from(u64::from(pi.lmc)));
        ibdiag::print_json(inv, &j);
    } else {
        let mut s = String::new();
        if show_gid {
            s.push_str(&format!("GID {} ", dump::inet_ntop6(&gid)));
        }
        if show_lid > 0 {
            s.push_str(&format!("LID start 0x{lid:x} end 0x{end:x}"));
        } else if show_lid < 0 {
            s.push_str(&format!("LID start {lid} end {end}"));
        }
        s.push('\n');
        inv.io.out(&s);
    }
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))
}
