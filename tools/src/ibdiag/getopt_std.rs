//! Perl's `Getopt::Std::getopts`, as infiniband-diags' Perl scripts
//! read their options: letters bundle (`-Rv`), an option argument is
//! attached or the next word, options end at `--` or at the first word
//! that is not `-X...`; an unknown letter is warned about and skipped
//! (the scan goes on), an option argument missing at the end counts as
//! an error without a message. `--help` and `--version` print
//! Getopt::Std's own texts on stderr (it has no `$STANDARD_HELP_VERSION`
//! there, so the scan goes on after them).

use std::collections::HashMap;

use crate::command::{CliError, Invocation};

/// What `getopts` read.
#[derive(Debug, Default)]
pub struct GetoptStd {
    /// Each option seen, with its argument (`None` for a flag, or for an
    /// argument missing at the end).
    pub opts: HashMap<char, Option<String>>,
    /// What it prints on stderr, in order: the "Unknown option: X"
    /// warnings, and the texts of `--help` and `--version`.
    pub warnings: Vec<String>,
    /// False when an option was unknown or lacked its argument (Perl's
    /// return value).
    pub ok: bool,
    /// The words after the options.
    pub rest: Vec<String>,
}

impl GetoptStd {
    /// True when option `c` was given.
    #[must_use]
    pub fn has(&self, c: char) -> bool {
        self.opts.contains_key(&c)
    }

    /// The argument of option `c` (`None` when not given or missing).
    #[must_use]
    pub fn value(&self, c: char) -> Option<&str> {
        self.opts.get(&c).and_then(Option::as_deref)
    }
}

/// Getopt::Std's version and the Perl's it runs under, as Debian 12
/// (where infiniband-diags 44 ships) prints them.
const GETOPT_STD_VERSION: &str = "1.13";
const PERL_VERSION: &str = "5.36.0";

/// `version_mess` of script `script` (Perl's `$0`).
fn version_mess(script: &str) -> String {
    format!(
        "{script} version [unknown] calling Getopt::Std::getopts (version {GETOPT_STD_VERSION} [paranoid]),\nrunning under Perl version {PERL_VERSION}.\n"
    )
}

/// `help_mess` of `spec` for script `script`, then `try_exit`'s notice.
fn help_mess(script: &str, spec: &str) -> String {
    let letters: Vec<(char, bool)> = spec
        .char_indices()
        .filter(|(_, c)| *c != ':')
        .map(|(i, c)| (c, spec[i + c.len_utf8()..].starts_with(':')))
        .collect();
    let list = |arg: bool| -> Vec<String> {
        letters
            .iter()
            .filter(|(_, a)| *a == arg)
            .map(|(c, _)| format!("-{c}"))
            .collect()
    };
    let (with, without) = (list(true), list(false));
    let mut help = String::new();
    if !with.is_empty() {
        help.push_str(&format!("\n\tWith arguments: {}", with.join(" ")));
    }
    if !without.is_empty() {
        help.push_str(&format!(
            "\n\tBoolean (without arguments): {}",
            without.join(" ")
        ));
    }
    let scr = script.rsplit('/').next().unwrap_or(script);
    let spacing = if with.is_empty() {
        ""
    } else {
        "\nSpace is not required between options and their arguments."
    };
    format!(
        "\nUsage: {scr} [-OPTIONS [-MORE_OPTIONS]] [--] [PROGRAM_ARG1 ...]\n\n\
         The following single-character options are accepted:{help}\n\n\
         Options may be merged together.  -- stops processing of options.{spacing}\n"
    )
}

/// `try_exit`'s notice (the scan goes on).
const CONTINUING: &str = "  [Now continuing due to backward compatibility and excessive paranoia.\n   See 'perldoc Getopt::Std' about $Getopt::Std::STANDARD_HELP_VERSION.]\n";

/// Reads `args` as `getopts(spec)` does in script `script` (Perl's `$0`;
/// `spec` as Perl's: letters, a `:` after one that takes an argument).
#[must_use]
pub fn getopts(script: &str, spec: &str, args: &[String]) -> GetoptStd {
    let takes_arg = |c: char| -> Option<bool> {
        let i = spec.find(c).filter(|_| c != ':')?;
        Some(spec[i + c.len_utf8()..].starts_with(':'))
    };
    let mut g = GetoptStd::default();
    let mut errs = 0;
    let mut words: Vec<String> = args.to_vec();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].clone();
        let mut chars = w.chars();
        if chars.next() != Some('-') {
            break;
        }
        let Some(first) = chars.next() else { break };
        let rest: String = chars.collect();
        if w == "--" {
            i += 1;
            break;
        }
        match takes_arg(first) {
            Some(true) => {
                i += 1;
                let val = if rest.is_empty() {
                    if i >= words.len() {
                        errs += 1;
                    }
                    let v = words.get(i).cloned();
                    i += 1;
                    v
                } else {
                    Some(rest)
                };
                g.opts.insert(first, val);
            }
            Some(false) => {
                g.opts.insert(first, None);
                if rest.is_empty() {
                    i += 1;
                } else {
                    words[i] = format!("-{rest}");
                }
            }
            None if first == '-' && (rest == "help" || rest == "version") => {
                let mut text = version_mess(script);
                if rest == "help" {
                    text.push_str(&help_mess(script, spec));
                }
                text.push_str(CONTINUING);
                g.warnings.push(text.trim_end_matches('\n').to_owned());
                i += 1;
            }
            None => {
                g.warnings.push(format!("Unknown option: {first}"));
                errs += 1;
                if rest.is_empty() {
                    i += 1;
                } else {
                    words[i] = format!("-{rest}");
                }
            }
        }
    }
    g.rest = words.get(i..).map(<[String]>::to_vec).unwrap_or_default();
    g.ok = errs == 0;
    g
}

/// How a Perl script of infiniband-diags was started.
#[derive(Debug)]
pub struct Script {
    /// Its name as run (`basename $0`).
    pub prog: String,
    /// `--json` (global, or among the words, where it is taken out).
    pub json: bool,
    /// The options.
    pub opts: GetoptStd,
}

/// Reads a script's options as `getopts(spec)`, the warnings printed on
/// stderr.
///
/// # Errors
/// The usage `usage(prog)` on stdout and exit status 2 when an option was
/// unknown or lacked its argument, or `-h` was given (the scripts'
/// `getopts(...) or usage; usage if $opt_h`).
pub fn script_options(
    inv: &mut Invocation<'_, '_>,
    spec: &str,
    usage: fn(&str) -> String,
) -> Result<Script, CliError> {
    let prog = inv.prog.rsplit('/').next().unwrap_or(&inv.prog).to_owned();
    let mut args = inv.args.clone();
    let json = inv.session.json || args.iter().any(|a| a == "--json");
    args.retain(|a| a != "--json");
    let opts = getopts(&inv.prog, spec, &args);
    for w in &opts.warnings {
        inv.io.err(&format!("{w}\n"));
    }
    if !opts.ok || opts.has('h') {
        inv.io.out(&usage(&prog));
        return Err(CliError::Exit(2));
    }
    Ok(Script { prog, json, opts })
}

#[cfg(test)]
mod tests {
    use super::getopts;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn bundles_attached_and_next_word_arguments() {
        let g = getopts("s", "hl:i:ve", &words("-vel file -iCACHE rest -x"));
        assert!(g.ok);
        assert!(g.has('v') && g.has('e') && !g.has('h'));
        assert_eq!(g.value('l'), Some("file"));
        assert_eq!(g.value('i'), Some("CACHE"));
        assert_eq!(g.rest, words("rest -x"));
    }

    #[test]
    fn an_unknown_letter_is_warned_about_and_the_scan_goes_on() {
        let g = getopts("s", "hRC:P:", &words("-xRy -h -- -R"));
        assert!(!g.ok);
        assert_eq!(g.warnings, ["Unknown option: x", "Unknown option: y"]);
        assert!(g.has('R') && g.has('h'));
        assert_eq!(g.rest, words("-R"));
    }

    #[test]
    fn a_missing_argument_fails_without_a_message() {
        let g = getopts("s", "hl:", &words("-l"));
        assert!(!g.ok);
        assert!(g.warnings.is_empty());
        assert!(g.has('l') && g.value('l').is_none());
        // `-` alone and a colon are not options.
        let g = getopts("s", "h:", &words("-: - -h"));
        assert!(!g.ok);
        assert_eq!(g.rest, words("- -h"));
    }

    /// Getopt::Std's `--help` and `--version` texts (as perl 5.36's
    /// prints them for check_lft_balance), and the scan going on after.
    #[test]
    fn help_and_version_print_getopt_std_texts_and_the_scan_goes_on() {
        let g = getopts(
            "/usr/sbin/check_lft_balance",
            "hl:i:ve",
            &words("--help -v"),
        );
        assert!(g.ok && g.has('v') && !g.has('h') && !g.has('e'));
        assert_eq!(
            g.warnings.join("\n"),
            "/usr/sbin/check_lft_balance version [unknown] calling Getopt::Std::getopts (version 1.13 [paranoid]),\n\
             running under Perl version 5.36.0.\n\
             \n\
             Usage: check_lft_balance [-OPTIONS [-MORE_OPTIONS]] [--] [PROGRAM_ARG1 ...]\n\
             \n\
             The following single-character options are accepted:\n\
             \tWith arguments: -l -i\n\
             \tBoolean (without arguments): -h -v -e\n\
             \n\
             Options may be merged together.  -- stops processing of options.\n\
             Space is not required between options and their arguments.\n  \
             [Now continuing due to backward compatibility and excessive paranoia.\n   \
             See 'perldoc Getopt::Std' about $Getopt::Std::STANDARD_HELP_VERSION.]"
        );
        let g = getopts("x", "h", &words("--version --helpx"));
        assert!(!g.ok);
        assert!(g.warnings[0].starts_with("x version [unknown] calling"));
        assert!(!g.warnings[0].contains("Usage:"));
        // `--helpx` is `-` unknown, then the letters of `helpx`.
        assert_eq!(g.warnings[1], "Unknown option: -");
        assert!(g.has('h'));
    }
}
