//! `ibroute` (infiniband-diags `ibroute.c`).

use crate::cli::{CliError, Invocation};

/// Runs `ibroute`.
///
/// # Errors
/// Not written yet.
pub fn run(_inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    Err(CliError::Failed("ibroute: not implemented yet".into()))
}
