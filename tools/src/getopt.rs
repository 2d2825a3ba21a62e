//! glibc's `getopt_long`, as the infiniband-diags tools parse their
//! command lines with it, so that our commands accept what they accept
//! and complain in the same words:
//!
//! - non-options are permuted to the end (unless the option string
//!   starts with `+` or `POSIXLY_CORRECT` is set: then the first
//!   non-option ends the options; a leading `-` returns each non-option
//!   in order as option [`NON_OPTION`]);
//! - `--` ends the options; a lone `-` is a non-option;
//! - `-abc` clusters, `-ovalue` and `-o value`, `o::` optional arguments
//!   (attached only);
//! - `--long=value` and `--long value`, optional arguments (`=` only),
//!   unique-prefix abbreviations (prefixes of options that are the same
//!   option count once), ambiguity;
//! - glibc's messages, with `argv[0]`: `unrecognized option '--foo'`,
//!   `invalid option -- 'x'`, `option requires an argument -- 'x'`,
//!   `option '--xyz' is ambiguous; possibilities: '--xyza' '--xyzb'`,
//!   `option '--name' requires an argument`, `option '--name' doesn't
//!   allow an argument`.
//!
//! The infiniband-diags tools stop at the first complaint (they print
//! their usage), so [`getopt_long`] does too: the complaint is its
//! error. A leading `:` in the option string (silent errors) is not
//! supported.
//!
//! ```
//! use mad_tools::getopt::{getopt_long, HasArg, LongOpt};
//! let long = [LongOpt::new("timeout", HasArg::Required, 't' as i32)];
//! let args: Vec<String> = ["5", "--time=10", "-v"].map(String::from).to_vec();
//! let m = getopt_long("prog", &args, "t:v", &long).unwrap();
//! assert_eq!(m.opts, vec![('t' as i32, Some("10".into())), ('v' as i32, None)]);
//! assert_eq!(m.operands, vec!["5".to_string()]);
//! ```

/// Whether an option takes an argument (`no_argument`,
/// `required_argument`, `optional_argument`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HasArg {
    /// No argument.
    No,
    /// An argument, attached or the next word.
    Required,
    /// An argument only when attached (`-ovalue`, `--long=value`).
    Optional,
}

/// One long option (`struct option` with `flag == NULL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongOpt<'a> {
    /// The name, without `--`.
    pub name: &'a str,
    /// Whether it takes an argument.
    pub has_arg: HasArg,
    /// What `getopt_long` returns for it (`val`).
    pub key: i32,
}

impl<'a> LongOpt<'a> {
    /// `{ name, has_arg, NULL, key }`.
    #[must_use]
    pub const fn new(name: &'a str, has_arg: HasArg, key: i32) -> Self {
        Self { name, has_arg, key }
    }
}

/// The key a non-option gets when the option string starts with `-`.
pub const NON_OPTION: i32 = 1;

/// What `getopt_long` saw: the options in order with their arguments,
/// then the operands (the non-options, in order, permuted after the
/// options; everything after `--`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matches {
    /// `(key, optarg)` in command-line order.
    pub opts: Vec<(i32, Option<String>)>,
    /// The arguments from `optind` on, once `getopt_long` returned -1.
    pub operands: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ordering {
    Permute,
    RequireOrder,
    ReturnInOrder,
}

/// `getopt_long(argc, argv, short, long)` over `args` (`argv[1..]`),
/// `argv0` naming the program in the messages; `POSIXLY_CORRECT` is read
/// from the environment.
///
/// # Errors
/// The first complaint glibc prints (ending in a newline).
pub fn getopt_long(
    argv0: &str,
    args: &[String],
    short: &str,
    long: &[LongOpt<'_>],
) -> Result<Matches, String> {
    let posixly_correct = std::env::var_os("POSIXLY_CORRECT").is_some();
    getopt_long_with(argv0, args, short, long, posixly_correct)
}

/// [`getopt_long`] with `POSIXLY_CORRECT` given instead of read.
///
/// # Errors
/// The first complaint glibc prints (ending in a newline).
pub fn getopt_long_with(
    argv0: &str,
    args: &[String],
    short: &str,
    long: &[LongOpt<'_>],
    posixly_correct: bool,
) -> Result<Matches, String> {
    let (ordering, short) = match short.as_bytes().first() {
        Some(b'-') => (Ordering::ReturnInOrder, &short[1..]),
        Some(b'+') => (Ordering::RequireOrder, &short[1..]),
        _ if posixly_correct => (Ordering::RequireOrder, short),
        _ => (Ordering::Permute, short),
    };
    let mut m = Matches::default();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if a == "--" {
            m.operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            m.opts.push(long_option(argv0, body, long, args, &mut i)?);
        } else if a.len() > 1 && a.starts_with('-') {
            short_cluster(argv0, &a[1..], short, args, &mut i, &mut m.opts)?;
        } else {
            match ordering {
                Ordering::Permute => m.operands.push(a.clone()),
                Ordering::ReturnInOrder => m.opts.push((NON_OPTION, Some(a.clone()))),
                Ordering::RequireOrder => {
                    m.operands.extend(args[i - 1..].iter().cloned());
                    break;
                }
            }
        }
    }
    Ok(m)
}

/// The next word as an option's argument (`optarg = argv[optind++]`).
fn next_word(args: &[String], i: &mut usize) -> Option<String> {
    let v = args.get(*i).cloned();
    if v.is_some() {
        *i += 1;
    }
    v
}

/// `process_long_option` for `--BODY`.
fn long_option(
    argv0: &str,
    body: &str,
    long: &[LongOpt<'_>],
    args: &[String],
    i: &mut usize,
) -> Result<(i32, Option<String>), String> {
    let (name, attached) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    let found = match long.iter().find(|o| o.name == name) {
        Some(o) => o,
        None => {
            let mut cands = long.iter().filter(|o| o.name.starts_with(name));
            let Some(first) = cands.next() else {
                return Err(format!("{argv0}: unrecognized option '--{body}'\n"));
            };
            // Prefixes of the same option (same argument rule and key)
            // are not ambiguous; the others are listed after the first.
            let others: Vec<&LongOpt<'_>> = cands
                .filter(|o| o.has_arg != first.has_arg || o.key != first.key)
                .collect();
            if !others.is_empty() {
                let mut msg = format!(
                    "{argv0}: option '--{body}' is ambiguous; possibilities: '--{}'",
                    first.name
                );
                for o in others {
                    msg.push_str(&format!(" '--{}'", o.name));
                }
                msg.push('\n');
                return Err(msg);
            }
            first
        }
    };
    let value =
        match (found.has_arg, attached) {
            (HasArg::No, Some(_)) => {
                return Err(format!(
                    "{argv0}: option '--{}' doesn't allow an argument\n",
                    found.name
                ))
            }
            (HasArg::No, None) | (HasArg::Optional, None) => None,
            (_, Some(v)) => Some(v.to_owned()),
            (HasArg::Required, None) => Some(next_word(args, i).ok_or_else(|| {
                format!("{argv0}: option '--{}' requires an argument\n", found.name)
            })?),
        };
    Ok((found.key, value))
}

/// How `short` (the option string, its ordering prefix removed) takes
/// `c`: `None` when it is not an option there.
fn short_rule(short: &str, c: char) -> Option<HasArg> {
    if c == ':' || c == ';' {
        return None;
    }
    let at = short.find(c)?;
    let rest = &short[at + c.len_utf8()..];
    Some(if rest.starts_with("::") {
        HasArg::Optional
    } else if rest.starts_with(':') {
        HasArg::Required
    } else {
        HasArg::No
    })
}

/// The options of one `-abc` word.
fn short_cluster(
    argv0: &str,
    cluster: &str,
    short: &str,
    args: &[String],
    i: &mut usize,
    opts: &mut Vec<(i32, Option<String>)>,
) -> Result<(), String> {
    for (at, c) in cluster.char_indices() {
        let rest = &cluster[at + c.len_utf8()..];
        let Some(rule) = short_rule(short, c) else {
            return Err(format!("{argv0}: invalid option -- '{c}'\n"));
        };
        let key = c as i32;
        match rule {
            HasArg::No => opts.push((key, None)),
            HasArg::Optional => {
                opts.push((key, (!rest.is_empty()).then(|| rest.to_owned())));
                return Ok(());
            }
            HasArg::Required if !rest.is_empty() => {
                opts.push((key, Some(rest.to_owned())));
                return Ok(());
            }
            HasArg::Required => {
                let v = next_word(args, i)
                    .ok_or_else(|| format!("{argv0}: option requires an argument -- '{c}'\n"))?;
                opts.push((key, Some(v)));
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: &[LongOpt<'static>] = &[
        LongOpt::new("verbose", HasArg::No, 'v' as i32),
        LongOpt::new("verify", HasArg::Required, 'f' as i32),
        LongOpt::new("color", HasArg::Optional, 2),
    ];

    fn run(args: &[&str], short: &str) -> Result<Matches, String> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        getopt_long_with("p", &args, short, LONG, false)
    }

    #[test]
    fn permutes_clusters_and_stops_at_double_dash() {
        let m = run(&["a", "-vx3", "b", "--", "-v"], "vx:").unwrap();
        assert_eq!(
            m.opts,
            vec![('v' as i32, None), ('x' as i32, Some("3".into()))]
        );
        assert_eq!(m.operands, ["a", "b", "-v"]);
        let m = run(&["a", "-v"], "+v").unwrap();
        assert!(m.opts.is_empty());
        assert_eq!(m.operands, ["a", "-v"]);
    }

    #[test]
    fn long_options_abbreviate_unless_ambiguous() {
        let m = run(&["--verb", "--verif", "x", "--col", "--color=red"], "").unwrap();
        assert_eq!(
            m.opts,
            vec![
                ('v' as i32, None),
                ('f' as i32, Some("x".into())),
                (2, None),
                (2, Some("red".into()))
            ]
        );
        assert_eq!(
            run(&["--ver"], "").unwrap_err(),
            "p: option '--ver' is ambiguous; possibilities: '--verbose' '--verify'\n"
        );
        assert_eq!(
            run(&["--nope=1"], "").unwrap_err(),
            "p: unrecognized option '--nope=1'\n"
        );
        assert_eq!(
            run(&["--verbose=1"], "").unwrap_err(),
            "p: option '--verbose' doesn't allow an argument\n"
        );
        assert_eq!(
            run(&["--verify"], "").unwrap_err(),
            "p: option '--verify' requires an argument\n"
        );
    }

    #[test]
    fn short_option_complaints_are_glibcs() {
        assert_eq!(run(&["-q"], "v").unwrap_err(), "p: invalid option -- 'q'\n");
        assert_eq!(
            run(&["-vx"], "vx:").unwrap_err(),
            "p: option requires an argument -- 'x'\n"
        );
        assert_eq!(
            run(&["-:"], "v:").unwrap_err(),
            "p: invalid option -- ':'\n"
        );
    }
}
