//! Destinations (`resolve_portid_str`: LID, directed route, GUID
//! through the SA, combined route), opening a tool's session, and the
//! SMP Get every tool makes.

use std::time::Duration;

use mad_agents::smp::SmpTarget;
use mad_agents::QueryError;
use mad_core::wire::smp::DrPath;

use super::options::{Common, DestType};
use crate::cnum::{c_atoi, c_strtol, c_strtoul};
use crate::command::{CliError, Invocation};
use crate::diags::PortIdText;
use crate::session::{Session, SessionOpts};

/// The 64 data bytes of an SMP, unparsed (vendor attributes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSmpData(pub [u8; 64]);

impl mad_core::wire::Repr for RawSmpData {
    const NAME: &'static str = "SmpData";
    const LEN: usize = 64;

    fn parse(buf: &[u8]) -> Result<Self, mad_core::wire::Error> {
        let b = buf.get(..64).ok_or(mad_core::wire::Error::Truncated {
            what: "SmpData",
            need: 64,
            got: buf.len(),
        })?;
        let mut a = [0u8; 64];
        a.copy_from_slice(b);
        Ok(Self(a))
    }

    fn emit(&self, buf: &mut [u8]) -> Result<(), mad_core::wire::Error> {
        let got = buf.len();
        let b = buf.get_mut(..64).ok_or(mad_core::wire::Error::Truncated {
            what: "SmpData",
            need: 64,
            got,
        })?;
        b.copy_from_slice(&self.0);
        Ok(())
    }
}

/// Opens the session for a tool: the global options with the tool's
/// `-C` / `-P`, `-t` and `-y` applied.
///
/// # Errors
/// `IBEXIT("Failed to open ...")` after a message saying why on stderr
/// (for no device at all: which flags to use).
pub fn open_session(inv: &mut Invocation<'_, '_>, common: &Common) -> Result<Session, CliError> {
    let mut opts: SessionOpts = inv.session.clone();
    if common.ca.is_some() {
        opts.ca.clone_from(&common.ca);
    }
    if common.port.is_some() {
        opts.port = common.port;
    }
    opts.debug = common.debug;
    opts.sm_lid = common.sm_lid;
    match Session::open(&opts) {
        Ok(mut s) => {
            if let Some(ms) = common.timeout_ms {
                s.set_timeout(Duration::from_millis(u64::from(ms)));
            }
            inv.mad_diag.timeout_ms = u64::try_from(s.timeout().as_millis()).unwrap_or(u64::MAX);
            s.set_m_key(common.m_key);
            if common.verbose > 0 {
                inv.io.err(&format!("# {}\n", s.describe()));
            }
            Ok(s)
        }
        // A real port the user named: libibmad's words (after ours on
        // stderr saying why). Otherwise the reason itself is the error:
        // no "(null)" CA that nobody named.
        Err(e) if opts.ca.is_some() => {
            inv.io.err(&format!("{}: {}\n", inv.prog, e.message));
            Err(CliError::IbExit(format!(
                "Failed to open '{}' port '{}'",
                opts.ca.as_deref().unwrap_or("(null)"),
                opts.port.unwrap_or(0)
            )))
        }
        Err(e) => Err(CliError::IbExit(format!(
            "Failed to open a port: {}",
            e.message
        ))),
    }
}

/// A resolved destination (`ib_portid_t`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dest {
    /// As `portid2str` prints it.
    pub text: PortIdText,
    /// Where SMPs go.
    pub target: SmpTarget,
    /// The LID (0 for a directed route).
    pub lid: u16,
}

impl Dest {
    /// A LID-routed destination.
    #[must_use]
    pub fn lid(lid: u16) -> Self {
        Self {
            text: PortIdText::lid(lid),
            target: SmpTarget::Lid(lid),
            lid,
        }
    }

    /// A directed route given as libibmad's `p[0..=cnt]` (`p[0]` is not a
    /// hop); `None` beyond 63 hops.
    #[must_use]
    pub fn dr(path: &[u8]) -> Option<Self> {
        let hops = path.get(1..).unwrap_or(&[]);
        let dr = DrPath::from_hops(hops).ok()?;
        Some(Self {
            text: PortIdText::dr(path),
            target: SmpTarget::Dr(dr),
            lid: 0,
        })
    }

    /// The directed route one hop further, out of `port`
    /// (`drpath.cnt++; p[cnt] = port`); from a LID, a route starting
    /// LID-routed at our own LID is not supported by the transports, so
    /// the result is `None` there.
    #[must_use]
    pub fn extend(&self, port: u8) -> Option<Self> {
        if self.lid != 0 {
            return None;
        }
        let mut p = self.text.path.clone();
        if p.is_empty() {
            p.push(0);
        }
        p.push(port);
        Self::dr(&p)
    }
}

/// `resolve_portid_str` of the destination argument `addr` (read as the
/// common options' address type), or, the session closed,
/// `IBEXIT("can't resolve destination port ADDR")`.
///
/// # Errors
/// The `IBEXIT` when `addr` does not resolve.
pub fn dest_arg(
    mut session: Session,
    common: &Common,
    addr: &str,
) -> Result<(Session, Dest), CliError> {
    match resolve_dest(&mut session, common, addr, common.dest_type) {
        Some(d) => Ok((session, d)),
        None => {
            let _ = session.close();
            Err(CliError::IbExit(format!(
                "can't resolve destination port {addr}"
            )))
        }
    }
}

/// libibmad's `str2drpath`: comma-separated `atoi` values; `None` for an
/// empty string (count -1) or a path too long for an SMP.
#[must_use]
pub fn str2drpath(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() {
        return None;
    }
    let mut v = Vec::new();
    let mut rest = s;
    loop {
        let (head, tail) = match rest.split_once(',') {
            Some((h, t)) => (h, Some(t)),
            None => (rest, None),
        };
        v.push(c_atoi(head) as u8);
        match tail {
            Some(t) if !t.is_empty() => rest = t,
            _ => break,
        }
    }
    (v.len() <= 64).then_some(v)
}

/// libibmad's `DEBUG` line of `str2drpath` (`-d`).
fn debug_str2drpath(common: &Common, route: &str) {
    if common.debug > 0 {
        super::ibdebug::eprint_ibwarn("str2drpath", &format!("DR str: {route}"));
    }
}

/// `resolve_portid_str`: the destination `addr` read as `dest_type`.
/// `None` where the C function returns -1 ("can't resolve destination
/// port").
pub fn resolve_dest(
    session: &mut Session,
    common: &Common,
    addr: &str,
    dest_type: DestType,
) -> Option<Dest> {
    match dest_type {
        DestType::Lid => {
            let lid = c_strtol(addr);
            (1..=0xBFFF).contains(&lid).then(|| Dest::lid(lid as u16))
        }
        DestType::DrPath => {
            debug_str2drpath(common, addr);
            Dest::dr(&str2drpath(addr)?)
        }
        DestType::Guid => {
            let guid = c_strtoul(addr);
            if guid == 0 {
                return None;
            }
            // The destination's resolution prints as libibmad's does, on
            // the process's stderr (no command streams here).
            let (lid, told) = resolve_guid_told(session, common, guid);
            eprint!("{told}");
            lid.map(Dest::lid)
        }
        DestType::DrSlid => {
            let lid = c_strtol(addr);
            if !(1..=0xBFFF).contains(&lid) {
                return None;
            }
            // The route part follows the LID after one separator.
            let digits = addr
                .trim_start()
                .trim_start_matches(['+', '-'])
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(addr.len());
            let route = addr.get(digits + 1..).unwrap_or("");
            debug_str2drpath(common, route);
            let path = str2drpath(route)?;
            let self_lid = session.port_attrs().lid;
            let hops = path.get(1..).unwrap_or(&[]);
            let dr = DrPath::from_hops(hops).ok()?.with_lids(self_lid, 0xFFFF);
            Some(Dest {
                text: PortIdText {
                    lid: lid as u16,
                    gid: None,
                    drslid: self_lid,
                    drdlid: 0xFFFF,
                    path,
                },
                target: SmpTarget::Dr(dr),
                lid: lid as u16,
            })
        }
    }
}

/// The LID of the port with GUID `guid`, from a PathRecord the SA gives
/// for our GID to its GID (`resolve_guid`), the SA reached at `-s` or
/// the port's SM LID; nothing printed ([`resolve_guid_told`] tells).
pub fn resolve_guid(session: &mut Session, common: &Common, guid: u64) -> Option<u16> {
    resolve_guid_told(session, common, guid).0
}

/// [`resolve_guid`], with what libibmad prints on stderr meanwhile:
/// with `-d`, `sa_rpc_call`'s `DEBUG` line; on failure, with no SM LID
/// `sa_rpc_call: only lid routes are supported`, with no answer
/// `mad_rpc_rmpp: _do_madrpc failed; dport (Lid N)` (after `-e`'s
/// lines), then `ib_path_query_via: sa call path_query failed`.
pub fn resolve_guid_told(
    session: &mut Session,
    common: &Common,
    guid: u64,
) -> (Option<u16>, String) {
    use super::ibdebug::{ibwarn, rpc_failure_lines, MadDiag};
    let a = session.port_attrs();
    let prefix = if a.gid_prefix != 0 {
        a.gid_prefix
    } else {
        0xfe80_0000_0000_0000
    };
    let gid = |g: u64| {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&prefix.to_be_bytes());
        b[8..].copy_from_slice(&g.to_be_bytes());
        b
    };
    let sgid = gid(a.port_guid);
    let dgid = gid(guid);
    let sa_lid = session.sa_lid();
    let sa_dest = PortIdText::lid(sa_lid);
    let mut told = String::new();
    if common.debug > 0 {
        told.push_str(&ibwarn(
            "sa_rpc_call",
            &format!("attr 0x35 mod 0x0 route {sa_dest}"),
        ));
    }
    let path_query_failed = ibwarn("ib_path_query_via", "sa call path_query failed");
    if sa_lid == 0 {
        told.push_str(&ibwarn("sa_rpc_call", "only lid routes are supported"));
        told.push_str(&path_query_failed);
        return (None, told);
    }
    let Ok(sa) = session.sa() else {
        return (None, told);
    };
    // ib_path_query_via: a PathRecord Get by SGID and DGID.
    let t = mad_core::wire::sa_records::PathRecord {
        sgid,
        dgid,
        ..Default::default()
    };
    let mask = mad_core::wire::sa_records::PathRecord::COMP_SGID
        | mad_core::wire::sa_records::PathRecord::COMP_DGID;
    let pr = match sa.get(&t, mask) {
        Ok(pr) => pr,
        Err(e) => {
            let diag = MadDiag {
                debug: common.debug,
                show_errors: common.errors || common.debug > 0,
                timeout_ms: u64::try_from(session.timeout().as_millis()).unwrap_or(u64::MAX),
            };
            let e = match e {
                mad_agents::sa::SaError::Timeout { attempts, .. } => QueryError::Timeout {
                    retries: attempts.saturating_sub(1),
                },
                mad_agents::sa::SaError::Transfer(st) => QueryError::Failed(st),
                other => match other.status() {
                    Some(st) => QueryError::Status {
                        status: mad_core::wire::MadStatus(st),
                        meaning: "",
                    },
                    None => QueryError::Malformed(other.to_string()),
                },
            };
            told.push_str(&rpc_failure_lines(&diag, "mad_rpc_rmpp", &sa_dest, &e));
            told.push_str(&path_query_failed);
            return (None, told);
        }
    };
    ((pr.dlid != 0).then_some(pr.dlid), told)
}

/// A Get of an SMP attribute at `d`. A combined route (a LID with a
/// directed-route part) goes LID-routed to `d.lid`, where the directed
/// part starts, as libibmad sends it.
///
/// # Errors
/// See [`QueryError`].
pub fn smp_get<R: mad_core::wire::Repr>(
    s: &Session,
    d: &Dest,
    attr: mad_core::wire::AttributeId,
    attr_mod: u32,
) -> Result<R, QueryError> {
    match &d.target {
        SmpTarget::Dr(path) if d.lid != 0 => {
            let c = s.smp();
            let mut req = mad_agents::smp::request(
                &d.target,
                mad_core::wire::Method::GET,
                attr,
                attr_mod,
                &[],
                c.m_key,
            )
            .expect_response(c.timeout, c.retries);
            req.dest.lid = d.lid;
            let _ = path;
            let done = c.agent().send_and_wait(req)?;
            mad_agents::smp::parse(&done, attr)
        }
        t => s.smp().get(t, attr, attr_mod),
    }
}

/// The `-G` GUID argument `g` of the discovering tools (`c_strtoul`);
/// when it is 0 or the SA does not resolve it, warned as libibmad and the
/// C tools' `main` warn (`… attempting full scan`, then `tail`), and
/// returned all the same (the tool scans the whole fabric for it).
pub fn resolve_guid_or_warn(
    inv: &mut Invocation<'_, '_>,
    session: &mut Session,
    common: &Common,
    g: &str,
    tail: &str,
) -> u64 {
    resolve_guid_warned(inv, session, common, g, tail).0
}

/// [`resolve_guid_or_warn`], also telling whether the GUID resolved.
pub fn resolve_guid_warned(
    inv: &mut Invocation<'_, '_>,
    session: &mut Session,
    common: &Common,
    g: &str,
    tail: &str,
) -> (u64, bool) {
    let guid = c_strtoul(g);
    let resolved = guid != 0 && {
        let (lid, told) = resolve_guid_told(session, common, guid);
        inv.io.err(&told);
        lid.is_some()
    };
    if !resolved {
        let pid = std::process::id();
        // A query that was made told its own failure.
        if guid == 0 {
            if session.sa_lid() == 0 {
                inv.io.err(&format!(
                    "ibwarn: [{pid}] sa_rpc_call: only lid routes are supported\n"
                ));
            }
            inv.io.err(&format!(
                "ibwarn: [{pid}] ib_path_query_via: sa call path_query failed\n"
            ));
        }
        inv.io.err(&format!(
            "ibwarn: [{pid}] main: Failed to resolve {g}; attempting full scan{tail}"
        ));
    }
    (guid, resolved)
}

/// NodeInfo of the node at the end of the directed route `path` (text
/// form, as `str2drpath` reads it); `None` for a path that does not parse
/// or a query that fails, the failure told: `on_error` first, then
/// [`super::warn_failed`].
pub fn dr_node_info(
    inv: &mut Invocation<'_, '_>,
    session: &Session,
    path: &str,
    on_error: impl FnOnce(&mut Invocation<'_, '_>, &Dest, &QueryError),
) -> Option<mad_core::wire::attr::NodeInfo> {
    let d = str2drpath(path).and_then(|v| Dest::dr(&v))?;
    match smp_get(session, &d, mad_core::wire::AttributeId::NODE_INFO, 0) {
        Ok(ni) => Some(ni),
        Err(e) => {
            on_error(inv, &d, &e);
            super::warn_failed(inv, &d.text, &e);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drpath_parsing_is_str2drpath() {
        assert_eq!(str2drpath("0,1,3"), Some(vec![0, 1, 3]));
        assert_eq!(str2drpath("0,"), Some(vec![0]));
        assert_eq!(str2drpath("0,x"), Some(vec![0, 0]));
        assert_eq!(str2drpath(""), None);
        let long = vec!["1"; 65].join(",");
        assert_eq!(str2drpath(&long), None);
    }
}
