//! The commands, one module each. What they share lives outside this
//! module: [`crate::command`] (the invocation and errors) and
//! [`crate::ibdiag`] (options, usage, destinations, `IBEXIT`, output);
//! a command imports neither the dispatcher nor another command.
//!
//! A command is a function `fn(&mut Invocation) -> Result<(), CliError>`
//! listed in [`crate::cli::COMMANDS`]. Each parses its options with
//! [`crate::ibdiag::parse`] (infiniband-diags' common options plus its own, the
//! same usage text), opens a [`crate::session::Session`] with
//! [`crate::ibdiag::open_session`], and prints with the [`crate::diags`]
//! formatters, or JSON with `--json`.

pub mod bench;
pub mod check_lft_balance;
pub mod check_routes;
pub mod cm;
pub mod dump_fts;
pub mod exporter;
pub mod ibaddr;
pub mod ibcacheedit;
pub mod ibccconfig;
pub mod ibccquery;
pub mod ibfindnodesusing;
pub mod ibhosts;
pub mod ibidsverify;
pub mod iblinkinfo;
pub mod ibnetdiscover;
pub mod ibping;
pub mod ibportstate;
pub mod ibqueryerrors;
pub mod ibroute;
pub mod ibstat;
pub mod ibsysstat;
pub mod ibtracert;
pub mod perfquery;
pub mod saquery;
pub mod sim;
pub mod sm;
pub mod sminfo;
pub mod smpdump;
pub mod smpquery;
pub mod sweep;
pub mod vendstat;
