//! # mad-tools
//!
//! The library behind the `mad` multi-call binary: command dispatch
//! ([`cli`]), the transport and stack setup every command shares
//! ([`session`]: `--sim`, `--ibsim`, a real port, `--pcap`), the
//! infiniband-diags-compatible commands ([`cmd`]) and their output
//! formatters ([`diags`]), the `mad decode` subcommand ([`decode_cmd`])
//! with its hex input parser ([`hex`], also used by the fuzz targets), the
//! text and JSON printers of decoded MADs ([`print`]), a small JSON
//! writer ([`json`]) and the size limits on the files it reads
//! ([`limits`]).
#![deny(unsafe_code)]

pub mod child;
pub mod cli;
pub mod cmd;
pub mod cnum;
pub mod command;
pub mod decode_cmd;
pub mod diags;
pub mod discover;
pub mod getopt;
pub mod hex;
pub mod ibdiag;
pub mod json;
pub mod limits;
pub mod namemap;
pub mod print;
pub mod session;
