//! `sminfo` (infiniband-diags `sminfo.c`): the SMInfo of the SM (the
//! port's SM LID, or a given LID / directed route), or a Set of it with
//! a modifier.
//!
//! `--json` prints `{"command":"sminfo","sm_lid":N,"sm_info":{"guid":..,
//! "sm_key":..,"act_count":..,"priority":..,"sm_state":..},
//! "state_name":"SMINFO_MASTER"}`.

use mad_core::wire::attr::{SmInfo, SmState};
use mad_core::wire::AttributeId;

use crate::command::{CliError, Invocation};
use crate::diags::smp;
use crate::ibdiag::{self, Dest, Opt, ToolSpec};
use crate::json::{Json, JsonExt};

const OPTS: &[Opt] = &[
    Opt::new("state", 's', true, Some("<0-3>"), "set SM state"),
    Opt::new("priority", 'p', true, Some("<0-15>"), "set SM priority"),
    Opt::new("activity", 'a', true, None, "set activity count"),
];

/// Runs `sminfo`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "sK",
        usage_args: "<sm_lid|sm_dr_path> [modifier]",
        examples: &[],
    };
    let p = ibdiag::parse(inv, &spec)?;
    let (mut act, mut prio, mut state) = (0u32, 0u32, 2u32);
    for (k, v) in &p.custom {
        let v = crate::cnum::c_strtoul(v.as_deref().unwrap_or("")) as u32;
        match u8::try_from(*k).map(char::from).unwrap_or('\0') {
            'a' => act = v,
            's' => state = v,
            'p' => prio = v,
            _ => {}
        }
    }
    let modifier = p.args.get(1).map_or(0, |a| crate::cnum::c_atoi(a));
    let session = ibdiag::open_session(inv, &p.common)?;
    let (session, dest) = if let Some(a) = p.args.first() {
        ibdiag::dest_arg(session, &p.common, a)?
    } else {
        // resolve_sm_portid: the port's SM LID; LID 0 means the local
        // port (a directed route of no hops), printed as LID 0.
        let lid = session.port_attrs().sm_lid;
        let d = if lid == 0 {
            let mut d = Dest::dr(&[0]).unwrap_or_else(|| Dest::lid(0));
            d.text = crate::diags::PortIdText::lid(0);
            d
        } else {
            Dest::lid(lid)
        };
        (session, d)
    };
    let r = if modifier != 0 {
        let v = SmInfo {
            guid: 0,
            sm_key: 0,
            act_count: act,
            priority: (prio & 0xF) as u8,
            sm_state: SmState((state & 0xF) as u8),
        };
        session
            .smp()
            .set(&dest.target, AttributeId::SM_INFO, modifier as u32, &v)
    } else {
        session
            .smp()
            .get::<SmInfo>(&dest.target, AttributeId::SM_INFO, 0)
    };
    if let Err(e) = &r {
        ibdiag::warn_failed(inv, &dest.text, e);
    }
    let close = session.close();
    let sm = r.map_err(|_| CliError::IbExit("query".into()))?;
    if p.common.json {
        let j = Json::obj()
            .with("command", Json::String("sminfo".into()))
            .with("sm_lid", Json::from(u64::from(dest.lid)))
            .with("sm_info", ibdiag::attr_json(&sm))
            .with(
                "state_name",
                Json::String(smp::sminfo_state_str(sm.sm_state.0).into()),
            );
        ibdiag::print_json(inv, &j);
    } else {
        inv.io.out(&smp::format_sminfo(dest.lid, &sm));
    }
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))
}
