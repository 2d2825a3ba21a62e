//! What the dispatcher ([`crate::cli`]) and every command share: the
//! [`Invocation`] a command gets (its name, arguments, the session
//! options, the standard streams, its JSON result), the [`CliError`] it
//! returns and the exit statuses. A leaf: it imports no command and not
//! the dispatcher.

use std::io::{Read, Write};

use crate::session::SessionOpts;

/// Why a command failed; decides the exit status and what is printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// Bad command line of `mad` itself (exit status 2, with `mad`'s
    /// usage on stderr).
    Usage(String),
    /// Input that cannot be read or parsed at all (exit status 1).
    Input(String),
    /// The command ran but some of its work failed (exit status 1).
    Failed(String),
    /// A bad command line of an infiniband-diags tool: this text (the
    /// getopt complaint, if any, and the tool's usage) goes to stderr
    /// as-is, exit status 2 (`ibdiag_show_usage`).
    ToolUsage(String),
    /// An infiniband-diags `IBEXIT`: `PROG: iberror: failed: MESSAGE` on
    /// stdout, exit status 255.
    IbExit(String),
    /// Everything has been reported already; exit with this status.
    Exit(i32),
    /// Print this text on stderr and exit with this status.
    Stderr(String, i32),
    /// The command printed its result, but the result is incomplete
    /// (nodes not discovered, ports not read, a table cut short): this
    /// message on stderr, exit status [`EXIT_INCOMPLETE`].
    Incomplete(String),
}

/// The exit status of a command whose output is valid but incomplete
/// (see [`CliError::Incomplete`]); infiniband-diags has no status for
/// this (its tools exit 0 or 255), so it is one of ours: distinct from
/// 1 (mad's own failures), 2 (usage) and 255 (`IBEXIT`).
pub const EXIT_INCOMPLETE: i32 = 3;

impl CliError {
    /// The process exit status for this error.
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Usage(_) | Self::ToolUsage(_) => 2,
            Self::Input(_) | Self::Failed(_) => 1,
            Self::IbExit(_) => 255,
            Self::Incomplete(_) => EXIT_INCOMPLETE,
            Self::Exit(c) | Self::Stderr(_, c) => *c,
        }
    }
}

/// Standard streams of a command, replaceable in tests.
pub struct Io<'a> {
    /// Standard input.
    pub stdin: &'a mut dyn Read,
    /// Standard output.
    pub stdout: &'a mut dyn Write,
    /// Standard error.
    pub stderr: &'a mut dyn Write,
}

impl Io<'_> {
    /// Writes to standard output (a closed pipe is not an error worth a panic).
    pub fn out(&mut self, s: &str) {
        let _ = self.stdout.write_all(s.as_bytes());
        let _ = self.stdout.flush();
    }

    /// Writes to standard error.
    pub fn err(&mut self, s: &str) {
        let _ = self.stderr.write_all(s.as_bytes());
        let _ = self.stderr.flush();
    }

    /// Reads all of standard input.
    ///
    /// # Errors
    /// The I/O error of the read.
    pub fn read_stdin(&mut self, buf: &mut Vec<u8>) -> std::io::Result<usize> {
        self.stdin.read_to_end(buf)
    }
}

/// Everything a command gets: its name, its arguments (global options
/// taken out), the global options, and the standard streams.
pub struct Invocation<'a, 'b> {
    /// The name the command reports itself under: `argv[0]` as given for
    /// the tool-named forms (as the C tools do), else the command name.
    pub prog: String,
    /// The arguments after the command name, global options removed.
    pub args: Vec<String>,
    /// Transport and output options given globally.
    pub session: SessionOpts,
    /// The standard streams.
    pub io: &'a mut Io<'b>,
    /// The command's name as `mad` knows it (never a path): the
    /// `command` of its JSON output.
    pub command: &'static str,
    /// The command's JSON result, set by [`crate::ibdiag::print_json`]
    /// and printed by the dispatcher in its envelope when the command
    /// returns (see [`crate::json`]).
    pub json_body: Option<crate::json::Json>,
    /// libibmad's diagnostics the command's `-d` and `-e` turned on
    /// (set by [`crate::ibdiag::parse`] and the session's timeout by
    /// [`crate::ibdiag::open_session`]).
    pub mad_diag: crate::ibdiag::ibdebug::MadDiag,
}

/// A command's entry point.
pub type CommandFn = fn(&mut Invocation<'_, '_>) -> Result<(), CliError>;
