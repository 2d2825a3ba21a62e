//! # mad-tools
//!
//! The library behind the `mad` multi-call binary: command dispatch
//! ([`cli`]), what the dispatcher and every command share ([`command`]:
//! the invocation, errors, exit statuses), the transport and stack setup
//! ([`session`]: `--sim`, `--ibsim`, a real port, `--pcap`), the commands
//! ([`cmd`], one module each), the shared layer of the
//! infiniband-diags-compatible ones ([`ibdiag`]: options, destinations,
//! output pieces, discovery, route walk) with glibc's `getopt_long`
//! ([`getopt`]), C's number parsers ([`cnum`]) and the node name map
//! ([`namemap`]), their output formatters ([`diags`]), fabric discovery
//! ([`discover`]), the `mad decode` subcommand ([`decode_cmd`]) with its
//! hex input parser ([`hex`], also used by the fuzz targets), the text
//! and JSON printers of decoded MADs ([`mod@print`]), the JSON output
//! contract ([`json`]) and the size limits on the files it reads
//! ([`limits`]).
//!
//! ```
//! use mad_tools::cli::{run, Io};
//! let (mut out, mut err) = (Vec::new(), Vec::new());
//! let argv = ["mad".to_string(), "--version".to_string()];
//! let code = run(
//!     &argv,
//!     &mut Io { stdin: &mut std::io::empty(), stdout: &mut out, stderr: &mut err },
//! );
//! assert_eq!(code, 0);
//! assert!(String::from_utf8_lossy(&out).contains("infiniband-diags 44.0"));
//! ```
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
pub mod global_opts;
pub mod hex;
pub mod ibdiag;
pub mod json;
pub mod limits;
pub mod namemap;
pub mod print;
pub mod session;
