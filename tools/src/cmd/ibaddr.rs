//! `ibaddr` (infiniband-diags `ibaddr.c`).

use crate::cli::{CliError, Invocation};

/// Runs `ibaddr`.
///
/// # Errors
/// Not written yet.
pub fn run(_inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    Err(CliError::Failed("ibaddr: not implemented yet".into()))
}
