//! `perfquery` (infiniband-diags `perfquery.c`).

use crate::cli::{CliError, Invocation};

/// Runs `perfquery`.
///
/// # Errors
/// Not written yet.
pub fn run(_inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    Err(CliError::Failed("perfquery: not implemented yet".into()))
}
