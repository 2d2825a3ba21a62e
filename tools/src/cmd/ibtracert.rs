//! `ibtracert` (infiniband-diags `ibtracert.c`).

use crate::cli::{CliError, Invocation};

/// Runs `ibtracert`.
///
/// # Errors
/// Not written yet.
pub fn run(_inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    Err(CliError::Failed("ibtracert: not implemented yet".into()))
}
