//! What `ibping` and `ibsysstat` share: this host's name as their servers
//! answer it, and the server loop of an OpenIB vendor class.

use mad_agents::{AgentEvent, AgentSpec, SendRequest};
use mad_core::wire::openib::{host_and_domain, OPENIB_CLASS_VERSION};
use mad_core::wire::{Mad, Method, MgmtClass, VENDOR_DATA_OFFSET};

use crate::command::{CliError, Invocation};
use crate::ibdiag::{self, Common, Dest};
use crate::session::Session;

/// `resolve_portid_str` of the destination `arg` (a GUID the SA does not
/// resolve is warned by [`ibdiag::resolve_dest`] as libibmad warns).
///
/// # Errors
/// The `IBEXIT` when `arg` does not resolve.
pub fn dest(
    _inv: &mut Invocation<'_, '_>,
    session: Session,
    common: &Common,
    arg: &str,
) -> Result<(Session, Dest), CliError> {
    ibdiag::dest_arg(session, common, arg)
}

/// This host's `hostname.domainname` (`get_host_and_domain`; Linux says
/// `(none)` for an unset domain, as `getdomainname` does).
#[must_use]
pub fn this_host() -> String {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}")).map(|s| s.trim_end().to_owned())
    };
    let host = read("hostname").unwrap_or_else(|_| "?hostname?".to_owned());
    let domain = read("domainname").unwrap_or_else(|_| "?domainname?".to_owned());
    host_and_domain(&host, &domain)
}

/// Serves vendor class `class` with `oui` until the process is stopped:
/// every request is answered (a GetResp with its TID and attribute) with
/// the data `answer` gives for it (the request's data area when `None`);
/// an answer longer than one MAD goes out as RMPP.
///
/// # Errors
/// `IBEXIT(refused)` when the class cannot be registered.
pub fn serve(
    s: &Session,
    (class, oui): (MgmtClass, u32),
    refused: String,
    mut answer: impl FnMut(&[u8]) -> Option<Vec<u8>>,
) -> Result<(), CliError> {
    let spec = AgentSpec::requests(
        "openib-server",
        class,
        OPENIB_CLASS_VERSION,
        &[Method::GET, Method::SET],
    )
    .with_oui(oui)
    .with_rmpp();
    let Ok((agent, rx)) = s.runtime().register_channel(spec) else {
        return Err(CliError::IbExit(refused));
    };
    while let Some(ev) = rx.recv() {
        let AgentEvent::Received(msg) = ev else {
            continue;
        };
        let req = msg.bytes();
        let mut resp = req.get(..VENDOR_DATA_OFFSET).unwrap_or_default().to_vec();
        if resp.len() < VENDOR_DATA_OFFSET {
            continue;
        }
        match answer(req) {
            Some(d) => resp.extend_from_slice(&d),
            None => resp.extend_from_slice(req.get(VENDOR_DATA_OFFSET..).unwrap_or_default()),
        }
        resp.resize(resp.len().max(256), 0);
        Mad::new_unchecked(&mut resp[..]).set_method(Method::GET, true);
        // A failed answer is the asker's lost packet, as for the C servers.
        let _ = agent
            .handle()
            .send(SendRequest::new(resp, msg.reply_address()));
    }
    Ok(())
}

/// libibmad's warning for a vendor call that got no answer
/// (`ib_vendor_call_via` goes through `mad_rpc_rmpp`), after what `-e`
/// shows of it; a status answer or a malformed one is not warned without
/// `-e`.
pub fn warn_vendor_failed(inv: &mut Invocation<'_, '_>, dest: &str, e: &mad_agents::QueryError) {
    let lines = crate::ibdiag::ibdebug::rpc_failure_lines(&inv.mad_diag, "mad_rpc_rmpp", &dest, e);
    inv.io.err(&lines);
}
