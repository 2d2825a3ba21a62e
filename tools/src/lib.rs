//! # mad-tools
//!
//! The library behind the `mad` multi-call binary: command dispatch
//! ([`cli`]), the `mad decode` subcommand ([`decode_cmd`]) with its hex
//! input parser ([`hex`], also used by the fuzz targets), the text and JSON
//! printers of decoded MADs ([`print`]) and a small JSON writer ([`json`]).
#![deny(unsafe_code)]

pub mod cli;
pub mod decode_cmd;
pub mod diags;
pub mod hex;
pub mod json;
pub mod print;
