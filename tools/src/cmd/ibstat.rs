//! `ibstat` and `ibstatus` (infiniband-diags `ibstat.c`, `ibstatus`).

use crate::cli::{CliError, Invocation};

/// Runs `ibstat`.
///
/// # Errors
/// Not written yet.
pub fn run(_inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    Err(CliError::Failed("ibstat: not implemented yet".into()))
}

/// Runs `ibstatus`.
///
/// # Errors
/// Not written yet.
pub fn run_ibstatus(_inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    Err(CliError::Failed("ibstatus: not implemented yet".into()))
}
