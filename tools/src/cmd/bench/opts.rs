//! `mad bench`'s options.

use std::path::PathBuf;

use mad_core::wire::smp::DrPath;

use crate::command::CliError;

pub(super) const USAGE: &str = "\
Usage: mad [--sim[=TOPO] | --ibsim | -C CA -P PORT] bench [OPTIONS]
  --w LIST          outstanding SMPs to measure, comma-separated (default 1,16,256)
  --seconds S       timed part of each measurement (default 1)
  --queries N       timed queries per measurement instead of --seconds
  --targets R;R     directed routes queried round-robin (default \"0;0,1\")
  --rmpp            also SA GetTable time and throughput per table
  --json [FILE]     the numbers as JSON: on stdout instead of the table, or
                    written to FILE
  --plot FILE.svg   draw rate against W (and against table size)
  --vs-libibmad     also run the libibmad anchor over the same ibsim
                    (with --ibsim, or the umad transport under libumad2sim)
";

/// How long each measurement runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// The timed part lasts this long.
    Seconds(f64),
    /// This many timed queries.
    Queries(u64),
}

/// The command line of `mad bench`.
#[derive(Debug, Clone, PartialEq)]
pub struct Opts {
    /// Outstanding SMPs, one measurement each.
    pub windows: Vec<usize>,
    /// How long each measurement runs.
    pub budget: Budget,
    /// Directed routes, as given.
    pub targets: Vec<String>,
    /// Measure SA GetTable.
    pub rmpp: bool,
    /// JSON output file.
    pub json: Option<PathBuf>,
    /// `--json` without a file: the JSON on stdout instead of the table.
    pub json_stdout: bool,
    /// SVG plot file.
    pub plot: Option<PathBuf>,
    /// Run the libibmad anchor too.
    pub vs_libibmad: bool,
}

pub(super) fn usage_err(m: impl Into<String>) -> CliError {
    CliError::Stderr(format!("mad bench: {}\n{USAGE}", m.into()), 2)
}

/// Parses `mad bench`'s arguments.
///
/// # Errors
/// An unknown option, a missing or bad value (a usage error, status 2).
pub fn parse_opts(args: &[String]) -> Result<Option<Opts>, CliError> {
    let mut o = Opts {
        windows: vec![1, 16, 256],
        budget: Budget::Seconds(1.0),
        targets: vec!["0".into(), "0,1".into()],
        rmpp: false,
        json: None,
        json_stdout: false,
        plot: None,
        vs_libibmad: false,
    };
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (a.as_str(), None),
        };
        let bare_flag = inline.is_none() && it.peek().is_none_or(|n| n.starts_with('-'));
        let mut value = || -> Result<String, CliError> {
            match inline.clone() {
                Some(v) if v.is_empty() => Err(usage_err(format!("option {name} needs a value"))),
                Some(v) => Ok(v),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| usage_err(format!("option {name} needs a value"))),
            }
        };
        match name {
            "-h" | "--help" => return Ok(None),
            "--w" | "-w" => {
                let v = value()?;
                o.windows = v
                    .split(',')
                    .map(|s| match s.trim().parse::<usize>() {
                        Ok(n) if (1..=65_535).contains(&n) => Ok(n),
                        _ => Err(usage_err(format!(
                            "--w: bad outstanding count {s:?} (1 to 65535)"
                        ))),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--seconds" => {
                let v = value()?;
                match v.parse::<f64>() {
                    Ok(s) if s > 0.0 && s.is_finite() => o.budget = Budget::Seconds(s),
                    _ => return Err(usage_err(format!("--seconds: bad duration {v:?}"))),
                }
            }
            "--queries" => {
                let v = value()?;
                match v.parse::<u64>() {
                    Ok(n) if n > 0 => o.budget = Budget::Queries(n),
                    _ => return Err(usage_err(format!("--queries: bad count {v:?}"))),
                }
            }
            "--targets" => {
                let v = value()?;
                o.targets = v.split(';').map(|s| s.trim().to_owned()).collect();
                for t in &o.targets {
                    t.parse::<DrPath>()
                        .map_err(|e| usage_err(format!("--targets: bad route {t:?}: {e}")))?;
                }
            }
            "--rmpp" => o.rmpp = true,
            "--vs-libibmad" => o.vs_libibmad = true,
            "--json" if bare_flag => {
                o.json_stdout = true;
            }
            "--json" => o.json = Some(PathBuf::from(value()?)),
            "--plot" => o.plot = Some(PathBuf::from(value()?)),
            other => return Err(usage_err(format!("unknown option {other:?}"))),
        }
    }
    Ok(Some(o))
}

/// One SMP measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct SmpResult {
    /// `runtime`, `engine` or `libibmad`.
    pub imp: String,
    /// Outstanding requests.
    pub w: usize,
    /// Answered timed queries.
    pub answered: u64,
    /// Failed timed queries (timeouts, errors).
    pub errors: u64,
    /// The timed part.
    pub seconds: f64,
    /// Answered queries per second.
    pub qps: f64,
    /// p50, p99, p99.9, max latency in microseconds.
    pub lat_us: [f64; 4],
}

/// One SA GetTable measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct RmppResult {
    /// Record type.
    pub table: &'static str,
    /// Records in the answer.
    pub records: usize,
    /// Bytes of the reassembled answer.
    pub bytes: usize,
    /// GetTables timed.
    pub repeats: u32,
    /// Mean time per GetTable.
    pub seconds_per_table: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_parse_windows_budget_and_files() {
        let o = parse_opts(&args(&[
            "--w",
            "1,4",
            "--queries=50",
            "--rmpp",
            "--json",
            "x.json",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(o.windows, [1, 4]);
        assert_eq!(o.budget, Budget::Queries(50));
        assert!(o.rmpp);
        assert_eq!(o.json, Some(PathBuf::from("x.json")));
    }

    #[test]
    fn bad_options_are_usage_errors() {
        for bad in [
            &["--w", "0"][..],
            &["--seconds", "-1"],
            &["--frob"],
            &["--json="],
        ] {
            let e = parse_opts(&args(bad)).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }

    #[test]
    fn json_without_a_file_means_stdout() {
        let o = parse_opts(&args(&["--json"])).unwrap().unwrap();
        assert!(o.json_stdout && o.json.is_none());
        let o = parse_opts(&args(&["--json", "--rmpp"])).unwrap().unwrap();
        assert!(o.json_stdout && o.rmpp);
        let o = parse_opts(&args(&["--json", "f.json"])).unwrap().unwrap();
        assert!(!o.json_stdout && o.json == Some(PathBuf::from("f.json")));
    }
}
