//! `ibsysstat` (infiniband-diags `ibsysstat.c`): asks a port's sysstat
//! server (OpenIB vendor class 0x33, OUI 0x001405 or `-o`) for `ping`
//! (the default: `sysstat ping succeeded`), `host` (its
//! `hostname.domainname`) or `cpu` (a `cpu N: model M MHZ F` line per
//! CPU); `-S` serves the class for this host. One request, no retries,
//! `-t` or 1000 ms, as the C tool's `umad_send` / `umad_recv`; a lost
//! request is `IBEXIT("ibsystat to DEST: Connection timed out")`.
//!
//! `--json` prints `{"command":"ibsysstat","dest":{...},"op":NAME,
//! "text":TEXT|null}` (`text`: the host or CPU text; null for ping).

use mad_agents::{AgentSpec, SendRequest, SendStatus};
use mad_core::transport::{Address, Qp};
use mad_core::wire::openib::{
    c_text, cpu_info_text, sysstat_attr, sysstat_op, text_data, vendor_get,
};
use mad_core::wire::vendor::{IB_OPENIB_OUI, IB_VENDOR_OPENIB_SYSSTAT_CLASS};
use mad_core::wire::VENDOR_DATA_OFFSET;

use crate::command::{CliError, Invocation};
use crate::diags::openib;
use crate::ibdiag::{self, Dest, Opt, ToolSpec};
use crate::json::{Json, JsonExt};
use crate::session::Session;

const KEY_OUI: i32 = 'o' as i32;
const KEY_SERVER: i32 = 'S' as i32;

const OPTS: &[Opt] = &[
    Opt::new("oui", 'o', true, None, "use specified OUI number"),
    Opt::new("Server", 'S', false, None, "start in server mode"),
];

/// The server's answer to attribute `attr` (`mk_reply`): none for ping
/// and unknown attributes (the request's data goes back), the host, or
/// the CPU lines.
fn reply(attr: u16, host: &str, cpus: &str) -> Option<Vec<u8>> {
    match attr {
        sysstat_attr::HOST_INFO => Some(text_data(host).to_vec()),
        sysstat_attr::CPU_INFO => {
            let mut d = cpus.as_bytes().to_vec();
            d.push(0);
            Some(d)
        }
        _ => None,
    }
}

/// One request of `attr`; the answer's text, or the failure as
/// `strerror` says it.
fn query(s: &Session, dest: &Dest, (attr, oui): (u16, u32)) -> Result<String, String> {
    let req =
        vendor_get(IB_VENDOR_OPENIB_SYSSTAT_CLASS, oui, (attr, 0)).map_err(|e| e.to_string())?;
    let (agent, _rx) = s
        .runtime()
        .register_channel(AgentSpec::send_only("ibsysstat", Qp::Qp1).with_rmpp())
        .map_err(|e| e.to_string())?;
    let done = agent
        .handle()
        .send_and_wait(
            SendRequest::new(req, Address::gsi(dest.lid)).expect_response(s.timeout(), 0),
        )
        .map_err(|e| e.to_string())?;
    // The C tool checks the transport's status only, not the MAD's.
    match (done.status, done.response) {
        (SendStatus::Success, Some(r)) => Ok(c_text(
            r.bytes().get(VENDOR_DATA_OFFSET..).unwrap_or_default(),
        )),
        (SendStatus::Timeout, _) | (SendStatus::Success, None) => {
            Err("Connection timed out".to_owned())
        }
        (other, _) => Err(format!("{other:?}")),
    }
}

/// Runs `ibsysstat`.
///
/// # Errors
/// Usage errors (exit 2), `IBEXIT` failures (exit 255).
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let spec = ToolSpec {
        opts: OPTS,
        exclude: "DKy",
        usage_args: "<dest lid|guid> [<op>]",
        examples: &[],
    };
    let p = ibdiag::parse(inv, &spec)?;
    let server = p.has(KEY_SERVER);
    let usage = || CliError::ToolUsage(ibdiag::usage_text(&inv.prog, &spec));
    if p.args.is_empty() && !server {
        return Err(usage());
    }
    let (op, attr) = match p.args.get(1) {
        Some(name) => match sysstat_op(name) {
            Some(a) => (name.clone(), a),
            None => return Err(usage()),
        },
        None => ("ping".to_owned(), sysstat_attr::PING),
    };
    let oui = p
        .value(KEY_OUI)
        .map_or(IB_OPENIB_OUI, |v| crate::cnum::c_strtoul(v) as u32);
    let session = ibdiag::open_session(inv, &p.common)?;
    if server {
        let host = openib::this_host();
        let cpus = cpu_info_text(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default());
        let r = openib::serve(
            &session,
            (IB_VENDOR_OPENIB_SYSSTAT_CLASS, oui),
            format!("can't serve class {}", IB_VENDOR_OPENIB_SYSSTAT_CLASS.0),
            |req| {
                let attr = mad_core::wire::Mad::new_unchecked(req).attr_id().0;
                reply(attr, &host, &cpus)
            },
        );
        let _ = session.close();
        return r;
    }
    let (session, dest) = openib::dest(inv, session, &p.common, &p.args[0])?;
    let r = query(&session, &dest, (attr, oui));
    let close = session.close();
    let text = match r {
        Ok(t) => t,
        Err(e) => {
            let msg = format!("ibsystat to {}: {e}", dest.text);
            if p.common.json {
                let j = Json::obj()
                    .with("command", Json::String("ibsysstat".into()))
                    .with("dest", ibdiag::dest_json(&dest))
                    .with("op", Json::String(op))
                    .with("error", Json::String(msg));
                ibdiag::print_json(inv, &j);
                return Err(CliError::Exit(255));
            }
            return Err(CliError::IbExit(msg));
        }
    };
    let ping = attr == sysstat_attr::PING;
    if p.common.json {
        let j = Json::obj()
            .with("command", Json::String("ibsysstat".into()))
            .with("dest", ibdiag::dest_json(&dest))
            .with("op", Json::String(op))
            .with("text", if ping { Json::Null } else { Json::String(text) });
        ibdiag::print_json(inv, &j);
    } else if ping {
        inv.io.out("sysstat ping succeeded\n");
    } else {
        inv.io.out(&format!("{text}\n"));
    }
    close.map_err(|e| CliError::Failed(format!("pcap: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_the_host_the_cpus_or_the_request_back() {
        assert_eq!(reply(sysstat_attr::PING, "h", "c"), None);
        assert_eq!(reply(0x99, "h", "c"), None);
        let h = reply(sysstat_attr::HOST_INFO, "h.d", "").unwrap();
        assert_eq!(c_text(&h), "h.d");
        let c = reply(sysstat_attr::CPU_INFO, "", "cpu 0: model x MHZ 1\n").unwrap();
        assert_eq!(c_text(&c), "cpu 0: model x MHZ 1\n");
    }
}
