//! infiniband-diags' command line (`ibdiag_common.c`): the common
//! options and a tool's own, parsed with `getopt_long` rules, the usage
//! text of `ibdiag_show_usage`, the config file, and the common options'
//! effects (`process_opt`).
//!
//! Every tool also takes `--json` (not listed in the usage text, which
//! stays byte-identical to infiniband-diags').

use crate::cnum::{c_strtol, c_strtoul, c_strtoul_full, parse_port_arg};
use crate::command::{CliError, Invocation};
use crate::getopt::{getopt_long, HasArg, LongOpt};

/// Where an option's value goes: a letter, or a small number for
/// long-only options (as `struct ibdiag_opt.letter`).
pub type OptKey = i32;

/// The key `--json` is reported under.
pub const JSON_KEY: OptKey = 1000;

/// One option (`struct ibdiag_opt`).
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    /// Long name.
    pub name: &'static str,
    /// Letter (as `i32`), or a number below 32 for long-only options.
    pub key: OptKey,
    /// Takes a value.
    pub has_arg: bool,
    /// Value placeholder in the usage text (`<val>` when `None`).
    pub arg_tmpl: Option<&'static str>,
    /// Description in the usage text.
    pub desc: &'static str,
}

impl Opt {
    /// An option with a letter.
    #[must_use]
    pub const fn new(
        name: &'static str,
        letter: char,
        has_arg: bool,
        arg_tmpl: Option<&'static str>,
        desc: &'static str,
    ) -> Self {
        Self::long(name, letter as i32, has_arg, arg_tmpl, desc)
    }

    /// A long-only option.
    #[must_use]
    pub const fn long(
        name: &'static str,
        key: OptKey,
        has_arg: bool,
        arg_tmpl: Option<&'static str>,
        desc: &'static str,
    ) -> Self {
        Self {
            name,
            key,
            has_arg,
            arg_tmpl,
            desc,
        }
    }

    fn letter(&self) -> Option<char> {
        u8::try_from(self.key)
            .ok()
            .filter(|b| b.is_ascii_graphic())
            .map(char::from)
    }
}

/// `--node-name-map <file>` under `key`: the option of the tools that
/// print node names.
#[must_use]
pub const fn node_name_map_opt(key: OptKey) -> Opt {
    Opt::long(
        "node-name-map",
        key,
        true,
        Some("<file>"),
        "node name map file",
    )
}

/// `--load-cache <file>` under `key`: the tools that can read the
/// fabric from an ibnetdiscover cache.
#[must_use]
pub const fn load_cache_opt(key: OptKey) -> Opt {
    Opt::long(
        "load-cache",
        key,
        true,
        Some("<file>"),
        "filename of ibnetdiscover cache to load",
    )
}

/// `--diff <file>` and `--diffcheck <key(s)>` under `diff` and `check`:
/// the tools that compare the fabric with an ibnetdiscover cache.
#[must_use]
pub const fn diff_opts(diff: OptKey, check: OptKey) -> [Opt; 2] {
    [
        Opt::long(
            "diff",
            diff,
            true,
            Some("<file>"),
            "filename of ibnetdiscover cache to diff",
        ),
        Opt::long(
            "diffcheck",
            check,
            true,
            Some("<key(s)>"),
            "specify checks to execute for --diff",
        ),
    ]
}

/// `-o, --outstanding_smps`: the option of the tools that discover the
/// fabric.
pub const OUTSTANDING_SMPS_OPT: Opt = Opt::new(
    "outstanding_smps",
    'o',
    true,
    None,
    "specify the number of outstanding SMP's which should be issued during the scan",
);

/// The options every tool has (`common_opts`).
pub const COMMON_OPTS: &[Opt] = &[
    Opt::new(
        "config",
        'z',
        true,
        Some("<config>"),
        "use config file, default: /etc/infiniband-diags/ibdiag.conf",
    ),
    Opt::new("Ca", 'C', true, Some("<ca>"), "Ca name to use"),
    Opt::new("Port", 'P', true, Some("<port>"), "Ca port number to use"),
    Opt::new("Direct", 'D', false, None, "use Direct address argument"),
    Opt::new("Lid", 'L', false, None, "use LID address argument"),
    Opt::new("Guid", 'G', false, None, "use GUID address argument"),
    Opt::new("timeout", 't', true, Some("<ms>"), "timeout in ms"),
    Opt::new("sm_port", 's', true, Some("<lid>"), "SM port lid"),
    Opt::new(
        "show_keys",
        'K',
        false,
        None,
        "display security keys in output",
    ),
    Opt::new("m_key", 'y', true, Some("<key>"), "M_Key to use in request"),
    Opt::new("errors", 'e', false, None, "show send and receive errors"),
    Opt::new("verbose", 'v', false, None, "increase verbosity level"),
    Opt::new("debug", 'd', false, None, "raise debug level"),
    Opt::new("help", 'h', false, None, "help message"),
    Opt::new("version", 'V', false, None, "show version"),
];

/// The infiniband-diags release whose tools' options, output and exit
/// statuses the commands reproduce.
pub const DIAGS_VERSION: &str = "44.0";

/// The default config file infiniband-diags reads.
pub const DEFAULT_CONFIG: &str = "/etc/infiniband-diags/ibdiag.conf";

/// A tool's command-line description.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec<'a> {
    /// The tool's own options, listed before the common ones.
    pub opts: &'a [Opt],
    /// Letters of common options the tool leaves out.
    pub exclude: &'a str,
    /// The argument synopsis after `[options]`.
    pub usage_args: &'a str,
    /// Usage examples (printed as `  PROG EXAMPLE`).
    pub examples: &'a [&'a str],
}

/// How the destination argument is read (`enum MAD_DEST`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DestType {
    /// A LID (the default).
    #[default]
    Lid,
    /// A directed route `0,1,3`.
    DrPath,
    /// A port GUID, resolved through the SA.
    Guid,
    /// A combined route: `LID PATH` (smpquery `-c`).
    DrSlid,
}

/// The common options' values (`ibd_*` globals).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Common {
    /// `-D` / `-L` / `-G` (or a tool's own).
    pub dest_type: DestType,
    /// `-C`.
    pub ca: Option<String>,
    /// `-P`.
    pub port: Option<u32>,
    /// `-t` in milliseconds.
    pub timeout_ms: Option<u32>,
    /// `-s`: the LID SA queries go to instead of the port's SM LID (as
    /// `ibd_sm_id`: the SA PathRecord that resolves a `-G` GUID).
    pub sm_lid: Option<u16>,
    /// `-K`.
    pub show_keys: bool,
    /// `-y`.
    pub m_key: u64,
    /// `-v` count.
    pub verbose: u32,
    /// `-d` count: libibmad's debug lines ([`super::ibdebug`]).
    pub debug: u32,
    /// `-e`: libibmad's send and receive errors ([`super::ibdebug`]).
    pub errors: bool,
    /// `--json`.
    pub json: bool,
}

/// A parsed command line.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The common options.
    pub common: Common,
    /// The tool's own options in command-line order, with their values.
    pub custom: Vec<(OptKey, Option<String>)>,
    /// The non-option arguments, in order (options permuted out, as GNU
    /// getopt does).
    pub args: Vec<String>,
}

impl Parsed {
    /// True if the tool's option `key` was given.
    #[must_use]
    pub fn has(&self, key: OptKey) -> bool {
        self.custom.iter().any(|(k, _)| *k == key)
    }

    /// The value of the tool's option `key` given last (as a getopt loop
    /// that assigns `optarg` keeps it), if given.
    #[must_use]
    pub fn value(&self, key: OptKey) -> Option<&str> {
        self.custom
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.as_deref())
    }
}

/// `pretty_print`: word-wraps `s` from column `start` to `width`.
fn pretty_print(out: &mut String, start: usize, width: usize, s: &str) {
    let len = width.saturating_sub(start) as isize;
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
        let b = rest.as_bytes();
        // Find the last space before `len` (at least one word).
        let mut e: usize;
        let mut p: Option<usize> = Some(0);
        loop {
            e = p.map_or(0, |x| x + 1);
            p = b
                .get(e..)
                .and_then(|t| t.iter().position(|c| *c == b' '))
                .map(|i| i + e);
            match p {
                Some(x) if (x as isize) < len => continue,
                _ => break,
            }
        }
        let Some(pp) = p else {
            out.push_str(rest);
            break;
        };
        if e == 1 {
            e = pp;
        }
        out.push_str(&rest[..e]);
        out.push('\n');
        out.push_str(&" ".repeat(start));
        rest = &rest[e..];
    }
}

fn long_opts<'a>(spec: &ToolSpec<'a>) -> Vec<&'a Opt> {
    let mut v: Vec<&Opt> = spec.opts.iter().collect();
    for o in COMMON_OPTS {
        if o.letter().is_some_and(|c| spec.exclude.contains(c)) {
            continue;
        }
        v.push(o);
    }
    v
}

/// `ibdiag_show_usage`'s text for `prog`.
#[must_use]
pub fn usage_text(prog: &str, spec: &ToolSpec<'_>) -> String {
    let mut s = format!("\nUsage: {prog} [options] {}\n\n", spec.usage_args);
    let opts = long_opts(spec);
    if !opts.is_empty() {
        s.push_str("Options:\n");
    }
    // The first option registered for a key describes it (opts_map).
    let mut seen: Vec<OptKey> = Vec::new();
    for o in &opts {
        let io = opts.iter().find(|x| x.key == o.key).copied().unwrap_or(o);
        let _ = seen.contains(&o.key);
        seen.push(o.key);
        let mut line = format!("  --{}", io.name);
        if let Some(c) = io.letter() {
            line.push_str(&format!(", -{c}"));
        }
        if io.has_arg {
            line.push(' ');
            line.push_str(io.arg_tmpl.unwrap_or("<val>"));
        }
        if !io.desc.is_empty() {
            let n = line.len();
            let pad = 24usize.saturating_sub(n);
            line.push_str(&" ".repeat(pad));
            line.push_str("  ");
            let n = line.len();
            s.push_str(&line);
            pretty_print(&mut s, n, 74, io.desc);
        } else {
            s.push_str(&line);
        }
        s.push('\n');
    }
    if !spec.examples.is_empty() {
        s.push_str("\nExamples:\n");
        for e in spec.examples {
            s.push_str(&format!("  {prog} {e}\n"));
        }
    }
    s.push('\n');
    s
}

/// The usage error: `complaint` (getopt's, may be empty) then the usage.
fn usage_error(prog: &str, spec: &ToolSpec<'_>, complaint: &str) -> CliError {
    CliError::ToolUsage(format!("{complaint}{}", usage_text(prog, spec)))
}

/// Reads a config file (`read_ibdiag_config`): `CA=`, `Port=`,
/// `timeout=`, `m_key=`; a missing file is ignored.
fn read_config(path: &str, c: &mut Common) {
    let Ok(text) =
        crate::limits::read_text(path, crate::limits::MAX_CONFIG_FILE_LEN, "a config file")
    else {
        return;
    };
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, val)) = line.split_once('=') else {
            continue;
        };
        if name.starts_with("CA") {
            c.ca = Some(val.to_owned());
        } else if name.starts_with("Port") {
            c.port = Some(c_strtoul(val) as u32);
        } else if name.starts_with("timeout") {
            c.timeout_ms = Some(c_strtoul(val) as u32);
        } else if name.starts_with("m_key") {
            c.m_key = c_strtoul(val);
        }
    }
}

/// `getopt_long` over `inv.args` with `spec`'s options and the common
/// ones, then the common options' effects (`process_opt`).
///
/// # Errors
/// A bad option (getopt's complaint and the usage, exit 2), `-h` (the
/// usage), `-V` (the version on stderr, exit 0), a bad `-t` or `-y`
/// (`IBEXIT`).
pub fn parse(inv: &mut Invocation<'_, '_>, spec: &ToolSpec<'_>) -> Result<Parsed, CliError> {
    let prog = inv.prog.clone();
    if inv
        .args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
    {
        // Known before any complaint about the other options, so that
        // a usage error is reported as JSON too.
        inv.session.json = true;
    }
    let mut opts = long_opts(spec);
    let json_opt = Opt::long("json", JSON_KEY, false, None, "");
    opts.push(&json_opt);
    let mut p = Parsed::default();
    read_config(DEFAULT_CONFIG, &mut p.common);
    // The option string and table ibdiag_common.c builds for getopt_long.
    let mut short = String::new();
    for c in opts
        .iter()
        .filter_map(|o| o.letter().map(|c| (c, o.has_arg)))
    {
        short.push(c.0);
        if c.1 {
            short.push(':');
        }
    }
    let long: Vec<LongOpt<'_>> = opts
        .iter()
        .map(|o| LongOpt {
            name: o.name,
            has_arg: if o.has_arg {
                HasArg::Required
            } else {
                HasArg::No
            },
            key: o.key,
        })
        .collect();
    let m = getopt_long(&prog, &inv.args, &short, &long)
        .map_err(|complaint| usage_error(&prog, spec, &complaint))?;
    p.args = m.operands;
    let items = m.opts;
    let own: Vec<OptKey> = spec.opts.iter().map(|o| o.key).collect();
    for (key, val) in items {
        if own.contains(&key) {
            p.custom.push((key, val));
            continue;
        }
        common_opt(&prog, spec, &mut p.common, key, val.as_deref())?;
    }
    p.common.json |= inv.session.json;
    inv.session.json = p.common.json;
    // `-d` also shows the errors (`madrpc_show_errors(1)` in both cases).
    inv.mad_diag.debug = p.common.debug;
    inv.mad_diag.show_errors = p.common.errors || p.common.debug > 0;
    Ok(p)
}

fn common_opt(
    prog: &str,
    spec: &ToolSpec<'_>,
    c: &mut Common,
    key: OptKey,
    val: Option<&str>,
) -> Result<(), CliError> {
    let v = val.unwrap_or("");
    match u8::try_from(key).map(char::from).unwrap_or('\0') {
        'z' => read_config(v, c),
        'h' => return Err(usage_error(prog, spec, "")),
        'V' => {
            return Err(CliError::Stderr(
                format!(
                "{prog} BUILD VERSION: madstack {} (matches infiniband-diags {DIAGS_VERSION})\n",
                crate::json::VERSION
            ),
                0,
            ))
        }
        'e' => c.errors = true,
        'v' => c.verbose += 1,
        'd' => c.debug += 1,
        'C' => c.ca = Some(v.to_owned()),
        'P' => c.port = Some(parse_port_arg(v)),
        'D' => c.dest_type = DestType::DrPath,
        'L' => c.dest_type = DestType::Lid,
        'G' => c.dest_type = DestType::Guid,
        't' => {
            let ok = c_strtoul_full(v)
                .filter(|_| !v.trim_start().starts_with('-'))
                .filter(|n| *n > 0 && *n <= i32::MAX as u64);
            match ok {
                Some(n) => c.timeout_ms = Some(n as u32),
                None => {
                    return Err(CliError::IbExit(format!(
                        "Invalid timeout \"{v}\".  Timeout requires a positive integer value < {}.",
                        i32::MAX
                    )))
                }
            }
        }
        's' => {
            let lid = c_strtol(v);
            if !(1..=0xBFFF).contains(&lid) {
                return Err(CliError::IbExit(format!(
                    "cannot resolve SM destination port {v}"
                )));
            }
            c.sm_lid = Some(lid as u16);
        }
        'K' => c.show_keys = true,
        'y' => match c_strtoul_full(v) {
            Some(k) => c.m_key = k,
            None => return Err(CliError::IbExit("Bad M_Key".into())),
        },
        _ if key == JSON_KEY => c.json = true,
        _ => return Err(usage_error(prog, spec, "")),
    }
    Ok(())
}

/// Key of `--per-node` (MADs in flight per node or LID), the option
/// `mad sweep` and `mad exporter` share.
pub const OPT_PER_NODE: i32 = 1;

/// The sweep window of `mad sweep` and `mad exporter`: `-o/--outstanding`
/// (MADs in flight on the port) and `--per-node` (per node or LID).
pub const SWEEP_WINDOW_OPTS: [Opt; 2] = [
    Opt::new(
        "outstanding",
        'o',
        true,
        Some("<n>"),
        "MADs in flight on the port (default 256)",
    ),
    Opt::long(
        "per-node",
        OPT_PER_NODE,
        true,
        Some("<n>"),
        "MADs in flight per node or LID (default 4)",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_text_matches_ibdiag_show_usage_layout() {
        let spec = ToolSpec {
            opts: &[Opt::new(
                "extended",
                'x',
                false,
                None,
                "use extended speeds",
            )],
            exclude: "",
            usage_args: "<op>",
            examples: &["-x 1\t# example"],
        };
        let u = usage_text("smpquery", &spec);
        assert!(u.starts_with("\nUsage: smpquery [options] <op>\n\nOptions:\n"));
        assert!(u.contains("  --extended, -x          use extended speeds\n"));
        assert!(u.contains(
            "  --config, -z <config>   use config file, default: /etc/infiniband-diags/ibdiag.conf\n"
        ));
        assert!(u.ends_with("\nExamples:\n  smpquery -x 1\t# example\n\n"));
    }

    #[test]
    fn pretty_print_wraps_at_column_74() {
        let mut s = String::new();
        pretty_print(
            &mut s,
            26,
            74,
            "one two three four five six seven eight nine ten eleven twelve thirteen",
        );
        assert_eq!(
            s,
            format!(
                "one two three four five six seven eight nine \n{}ten eleven twelve thirteen",
                " ".repeat(26)
            )
        );
    }
}
