//! `ibportstate` (infiniband-diags `ibportstate.c`).

use crate::cli::{CliError, Invocation};

/// Runs `ibportstate`.
///
/// # Errors
/// Not written yet.
pub fn run(_inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    Err(CliError::Failed("ibportstate: not implemented yet".into()))
}
