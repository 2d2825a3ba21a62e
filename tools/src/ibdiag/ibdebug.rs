//! libibmad's diagnostics, which the common options `-d` and `-e` turn
//! on (`process_opt` in `ibdiag_common.c`):
//!
//! - `-e` (`madrpc_show_errors(1)`): the send and receive errors of a
//!   query that `_do_madrpc` and `mad_rpc` print with `ERRS` — a line per
//!   resend, the timeout after the last try, an answer's non-zero MAD
//!   status — before the `_do_madrpc failed; dport (...)` warning;
//! - `-d` (`ibdebug++`, which also shows the errors): libibmad's `DEBUG`
//!   lines (`smp_query_status_via: attr 0x11 mod 0x0 route Lid 1` for each
//!   SMP, `pma_query_via: lid 1 port 0` for each PerfMgt Get, and so on,
//!   written by [`crate::session::debug::DebugTap`] as the MADs go out),
//!   and `IBEXIT`'s longer form (`PROG: iberror: [pid N] main: failed: ...`).
//!
//! As libibmad's `IBWARN`, the lines go straight to the process's stderr
//! when they are printed where the command's streams are not at hand (the
//! transport tap, a destination's resolution); the `mad` binary's stderr
//! is unbuffered, so they keep their order with the command's own lines.
//! Levels above 1 (libibmad's packet hex dumps) print what level 1 prints.

use std::fmt::Display;

use mad_agents::QueryError;

/// What `-d` and `-e` asked for, and the timeout the errors name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MadDiag {
    /// `-d` count (libibmad's `ibdebug`).
    pub debug: u32,
    /// `-e` (or `-d`): libibmad's `iberrs`.
    pub show_errors: bool,
    /// The response timeout of one try, in ms (what the resend lines say).
    pub timeout_ms: u64,
}

/// An `IBWARN` line: `ibwarn: [PID] FUNC: MSG`.
#[must_use]
pub fn ibwarn(func: &str, msg: &str) -> String {
    format!("ibwarn: [{}] {func}: {msg}\n", std::process::id())
}

/// Writes an `IBWARN` line to the process's stderr (as libibmad does,
/// where the command's streams are not at hand).
pub fn eprint_ibwarn(func: &str, msg: &str) {
    eprint!("{}", ibwarn(func, msg));
}

/// The `ERRS` lines `_do_madrpc` and `FUNC` (`mad_rpc`, `mad_rpc_rmpp`)
/// print with `-e` for the failed query `e` to `dest`: a line per resend
/// and the timeout after the last try, or the answer's MAD status; empty
/// without `-e` or for other failures.
#[must_use]
pub fn errs_lines(diag: &MadDiag, func: &str, dest: &dyn Display, e: &QueryError) -> String {
    if !diag.show_errors {
        return String::new();
    }
    match e {
        QueryError::Timeout { retries } => {
            let t = diag.timeout_ms;
            let mut s = String::new();
            for r in 1..=*retries {
                s.push_str(&ibwarn(
                    "_do_madrpc",
                    &format!("retry {r} (timeout {t} ms)"),
                ));
            }
            let tries = u64::from(*retries) + 1;
            s.push_str(&ibwarn(
                "_do_madrpc",
                &format!("timeout after {tries} retries, {} ms", t * tries),
            ));
            s
        }
        QueryError::Status { status, .. } => ibwarn(
            func,
            &format!(
                "MAD completed with error status 0x{:x}; dport ({dest})",
                status.0
            ),
        ),
        _ => String::new(),
    }
}

/// What libibmad prints for the failed query `e` to `dest` made by
/// `func` (`mad_rpc`, `mad_rpc_rmpp`): the `-e` lines, then, when no
/// answer came, `_do_madrpc failed; dport (...)`.
#[must_use]
pub fn rpc_failure_lines(diag: &MadDiag, func: &str, dest: &dyn Display, e: &QueryError) -> String {
    let mut s = errs_lines(diag, func, dest, e);
    match e {
        QueryError::Status { .. } | QueryError::Malformed(_) => {}
        _ => s.push_str(&ibwarn(func, &format!("_do_madrpc failed; dport ({dest})"))),
    }
    s
}

/// `IBEXIT`'s line on stdout: `PROG: iberror: failed: MSG`, or with `-d`
/// `PROG: iberror: [pid N] main: failed: MSG` (the tools exit from their
/// `main`).
#[must_use]
pub fn iberror_line(diag: &MadDiag, prog: &str, message: &str) -> String {
    if diag.debug > 0 {
        format!(
            "{prog}: iberror: [pid {}] main: failed: {message}\n",
            std::process::id()
        )
    } else {
        crate::diags::format_iberror(prog, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diags::PortIdText;
    use mad_core::wire::MadStatus;

    #[test]
    fn errors_are_shown_only_with_e_and_name_each_resend() {
        let dest = PortIdText::lid(77);
        let timeout = QueryError::Timeout { retries: 2 };
        let off = MadDiag::default();
        assert_eq!(errs_lines(&off, "mad_rpc", &dest, &timeout), "");
        let on = MadDiag {
            show_errors: true,
            timeout_ms: 100,
            ..MadDiag::default()
        };
        let pid = std::process::id();
        assert_eq!(
            rpc_failure_lines(&on, "mad_rpc", &dest, &timeout),
            format!(
                "ibwarn: [{pid}] _do_madrpc: retry 1 (timeout 100 ms)\n\
                 ibwarn: [{pid}] _do_madrpc: retry 2 (timeout 100 ms)\n\
                 ibwarn: [{pid}] _do_madrpc: timeout after 3 retries, 300 ms\n\
                 ibwarn: [{pid}] mad_rpc: _do_madrpc failed; dport (Lid 77)\n"
            )
        );
        let status = QueryError::Status {
            status: MadStatus(0x1c),
            meaning: "",
        };
        assert_eq!(
            rpc_failure_lines(&on, "mad_rpc", &dest, &status),
            format!(
                "ibwarn: [{pid}] mad_rpc: MAD completed with error status 0x1c; dport (Lid 77)\n"
            )
        );
        assert_eq!(rpc_failure_lines(&off, "mad_rpc", &dest, &status), "");
    }

    #[test]
    fn debug_gives_ibexit_its_long_form() {
        let d = MadDiag {
            debug: 1,
            ..MadDiag::default()
        };
        assert_eq!(
            iberror_line(&d, "smpquery", "x"),
            format!(
                "smpquery: iberror: [pid {}] main: failed: x\n",
                std::process::id()
            )
        );
        assert_eq!(
            iberror_line(&MadDiag::default(), "smpquery", "x"),
            "smpquery: iberror: failed: x\n"
        );
    }
}
