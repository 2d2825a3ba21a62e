//! Perl's `Getopt::Std::getopts`, as infiniband-diags' Perl scripts
//! read their options: letters bundle (`-Rv`), an option argument is
//! attached or the next word, options end at `--` or at the first word
//! that is not `-X...`; an unknown letter is warned about and skipped
//! (the scan goes on), an option argument missing at the end counts as
//! an error without a message.

use std::collections::HashMap;

use crate::command::{CliError, Invocation};

/// What `getopts` read.
#[derive(Debug, Default)]
pub struct GetoptStd {
    /// Each option seen, with its argument (`None` for a flag, or for an
    /// argument missing at the end).
    pub opts: HashMap<char, Option<String>>,
    /// The "Unknown option: X" warnings, in order.
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

/// Reads `args` as `getopts(spec)` does (`spec` as Perl's: letters, a
/// `:` after one that takes an argument).
#[must_use]
pub fn getopts(spec: &str, args: &[String]) -> GetoptStd {
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
    let opts = getopts(spec, &args);
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
        let g = getopts("hl:i:ve", &words("-vel file -iCACHE rest -x"));
        assert!(g.ok);
        assert!(g.has('v') && g.has('e') && !g.has('h'));
        assert_eq!(g.value('l'), Some("file"));
        assert_eq!(g.value('i'), Some("CACHE"));
        assert_eq!(g.rest, words("rest -x"));
    }

    #[test]
    fn an_unknown_letter_is_warned_about_and_the_scan_goes_on() {
        let g = getopts("hRC:P:", &words("-xRy -h -- -R"));
        assert!(!g.ok);
        assert_eq!(g.warnings, ["Unknown option: x", "Unknown option: y"]);
        assert!(g.has('R') && g.has('h'));
        assert_eq!(g.rest, words("-R"));
    }

    #[test]
    fn a_missing_argument_fails_without_a_message() {
        let g = getopts("hl:", &words("-l"));
        assert!(!g.ok);
        assert!(g.warnings.is_empty());
        assert!(g.has('l') && g.value('l').is_none());
        // `-` alone and a colon are not options.
        let g = getopts("h:", &words("-: - -h"));
        assert!(!g.ok);
        assert_eq!(g.rest, words("- -h"));
    }
}
