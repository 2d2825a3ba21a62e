//! `smpquery` (infiniband-diags `smpquery.c`).

use crate::cli::{CliError, Invocation};

/// Runs `smpquery`.
///
/// # Errors
/// Not written yet.
pub fn run(_inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    Err(CliError::Failed("smpquery: not implemented yet".into()))
}
