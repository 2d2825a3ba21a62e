//! Command dispatch of the `mad` multi-call binary.
//!
//! `mad COMMAND [ARGS]` runs a subcommand; the same binary started under
//! another name (a symlink called `smpquery`, say) runs the program of that
//! name from [`PROGRAMS`]. Both tables are here, so adding a tool is one
//! line.

use std::io::{Read, Write};

/// Why a command failed; decides the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// Bad command line (exit status 2).
    Usage(String),
    /// Input that cannot be read or parsed at all (exit status 1).
    Input(String),
    /// The command ran but some of its work failed (exit status 1).
    Failed(String),
}

impl CliError {
    /// The process exit status for this error.
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Usage(_) => 2,
            Self::Input(_) | Self::Failed(_) => 1,
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

/// A command's entry point: arguments after its name.
pub type CommandFn = fn(&[String], &mut Io<'_>) -> Result<(), CliError>;

/// Subcommands of `mad`: (name, one-line summary, entry point).
pub const COMMANDS: &[(&str, &str, CommandFn)] = &[(
    "decode",
    "print every field of MADs from hex text or a pcap file",
    crate::decode_cmd::run,
)];

/// Programs the binary runs when started under their own name (argv[0]).
/// infiniband-diags-compatible tools (smpquery, saquery, ...) go here.
pub const PROGRAMS: &[(&str, CommandFn)] = &[];

fn usage() -> String {
    let mut s = String::from("Usage: mad COMMAND [ARGS...]\n\nCommands:\n");
    for (name, summary, _) in COMMANDS {
        s.push_str(&format!("  {name:<10} {summary}\n"));
    }
    s.push_str("\nRun `mad COMMAND --help` for the options of a command.\n");
    s
}

fn program_name(argv0: &str) -> &str {
    argv0.rsplit('/').next().unwrap_or(argv0)
}

fn dispatch(argv: &[String], io: &mut Io<'_>) -> Result<(), CliError> {
    let argv0 = argv.first().map_or("mad", String::as_str);
    let prog = program_name(argv0);
    if let Some((_, f)) = PROGRAMS.iter().find(|(n, _)| *n == prog) {
        return f(argv.get(1..).unwrap_or(&[]), io);
    }
    if !prog.starts_with("mad") {
        return Err(CliError::Usage(format!(
            "started as {prog:?}, which is not a program of this binary; run it as `mad COMMAND`"
        )));
    }
    let Some(cmd) = argv.get(1) else {
        return Err(CliError::Usage("no command given".into()));
    };
    match cmd.as_str() {
        "-h" | "--help" | "help" => {
            io.out(&usage());
            Ok(())
        }
        name => match COMMANDS.iter().find(|(n, _, _)| *n == name) {
            Some((_, _, f)) => f(argv.get(2..).unwrap_or(&[]), io),
            None => Err(CliError::Usage(format!("unknown command {name:?}"))),
        },
    }
}

/// Runs the binary with `argv` (argv[0] included) and returns the exit status.
/// Errors are written to `io.stderr`; usage errors add the usage text.
pub fn run(argv: &[String], io: &mut Io<'_>) -> i32 {
    match dispatch(argv, io) {
        Ok(()) => 0,
        Err(e) => {
            let code = e.exit_code();
            match e {
                CliError::Usage(m) => io.err(&format!("mad: {m}\n\n{}", usage())),
                CliError::Input(m) | CliError::Failed(m) => io.err(&format!("mad: {m}\n")),
            }
            code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(argv: &[&str], stdin: &str) -> (i32, String, String) {
        let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
        let mut input = stdin.as_bytes();
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = run(
            &argv,
            &mut Io {
                stdin: &mut input,
                stdout: &mut out,
                stderr: &mut err,
            },
        );
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn no_command_and_unknown_command_are_usage_errors() {
        let (code, _, err) = run_with(&["mad"], "");
        assert_eq!(code, 2);
        assert!(err.contains("no command given") && err.contains("Usage: mad"));
        let (code, _, err) = run_with(&["/usr/bin/mad", "frobnicate"], "");
        assert_eq!(code, 2);
        assert!(err.contains("unknown command \"frobnicate\""), "{err}");
    }

    #[test]
    fn unknown_program_name_is_a_usage_error() {
        let (code, _, err) = run_with(&["/usr/local/bin/notatool", "decode"], "");
        assert_eq!(code, 2);
        assert!(err.contains("\"notatool\""), "{err}");
    }

    #[test]
    fn help_lists_the_commands() {
        let (code, out, _) = run_with(&["mad", "--help"], "");
        assert_eq!(code, 0);
        assert!(out.contains("decode"));
    }

    #[test]
    fn decode_reads_hex_from_stdin() {
        let mut mad = vec![0u8; 256];
        mad[0] = 1;
        mad[1] = 0x07;
        let hex: String = mad.iter().map(|b| format!("{b:02x} ")).collect();
        let (code, out, err) = run_with(&["mad", "decode"], &hex);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("MgmtClass:.......................ComMgt"),
            "{out}"
        );
    }

    #[test]
    fn decode_rejects_unknown_options_and_bad_hex() {
        let (code, _, err) = run_with(&["mad", "decode", "--bogus"], "");
        assert_eq!(code, 2);
        assert!(err.contains("unknown option \"--bogus\""), "{err}");
        let (code, _, err) = run_with(&["mad", "decode"], "01 0g");
        assert_eq!(code, 1);
        assert!(
            err.contains("stdin: line 1, column 5: 'g' is not a hex digit"),
            "{err}"
        );
        let (code, _, err) = run_with(&["mad", "decode"], "01 02 03");
        assert_eq!(code, 1);
        assert!(
            err.contains("stdin line 1: MadHeader: truncated: 3 bytes"),
            "{err}"
        );
    }
}
