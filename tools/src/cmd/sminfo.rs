//! `sminfo` (infiniband-diags `sminfo.c`).

use crate::cli::{CliError, Invocation};

/// Runs `sminfo`.
///
/// # Errors
/// Not written yet.
pub fn run(_inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    Err(CliError::Failed("sminfo: not implemented yet".into()))
}
