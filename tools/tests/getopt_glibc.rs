//! `mad_tools::getopt` against glibc's own `getopt_long`: a small C
//! program, compiled with `cc` when the test runs, parses the same
//! argv with the same option table; both print what they saw (the
//! options with their arguments, the operands, or the complaint on
//! stderr) and the two must agree case by case.
//!
//! Without a C compiler the test is skipped locally; with `CI` set it
//! fails instead.

use std::path::PathBuf;
use std::process::Command;

use mad_tools::getopt::{getopt_long_with, HasArg, LongOpt};

/// Reads the option table from argv[1] (short) and argv[2]
/// (`name,has_arg,val;...`), parses argv[3..] (argv[3] is its argv[0]),
/// and prints `opt KEY ARG|-` lines then `operand ARG` lines, or only
/// `error` when getopt_long returned '?' (its complaint is on stderr).
const PROGRAM: &str = r#"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    static struct option longs[32];
    int n = 0;
    char *table = strdup(argv[2]);
    for (char *e = strtok(table, ";"); e && n < 31; e = strtok(NULL, ";")) {
        char name[64];
        int has_arg, val;
        if (sscanf(e, "%63[^,],%d,%d", name, &has_arg, &val) != 3) return 3;
        longs[n].name = strdup(name);
        longs[n].has_arg = has_arg;
        longs[n].flag = NULL;
        longs[n].val = val;
        n++;
    }
    char out[65536] = "";
    int c;
    while ((c = getopt_long(argc - 3, argv + 3, argv[1], longs, NULL)) != -1) {
        char line[512];
        if (c == '?') {
            printf("error\n");
            return 0;
        }
        snprintf(line, sizeof line, "opt %d %s\n", c, optarg ? optarg : "-");
        strncat(out, line, sizeof out - strlen(out) - 1);
    }
    fputs(out, stdout);
    for (int i = optind; i < argc - 3; i++) printf("operand %s\n", argv[3 + i]);
    return 0;
}
"#;

const LONG: &[LongOpt<'static>] = &[
    LongOpt::new("Ca", HasArg::Required, 'C' as i32),
    LongOpt::new("Port", HasArg::Required, 'P' as i32),
    LongOpt::new("Direct", HasArg::No, 'D' as i32),
    LongOpt::new("timeout", HasArg::Required, 't' as i32),
    LongOpt::new("verbose", HasArg::No, 'v' as i32),
    LongOpt::new("version", HasArg::No, 'V' as i32),
    LongOpt::new("node-name-map", HasArg::Required, 1),
    LongOpt::new("node-name", HasArg::Required, 1),
    LongOpt::new("color", HasArg::Optional, 2),
    LongOpt::new("json", HasArg::No, 1000),
];

const SHORT: &str = "C:P:Dt:vVc::";

/// (option string, argv after argv[0]).
const CASES: &[(&str, &[&str])] = &[
    (SHORT, &["-v", "a", "-t", "5", "b"]),
    (SHORT, &["a", "-vD", "-t5", "--", "-v", "c"]),
    (SHORT, &["-vt", "7", "x", "-C", "mlx5_0", "-P1"]),
    (SHORT, &["--time=9", "--Ca", "mlx4_0", "--Port=2", "1"]),
    (SHORT, &["--verb", "-", "--json"]),
    (SHORT, &["--ver"]),
    (SHORT, &["--ver=1"]),
    (SHORT, &["--node", "map.txt"]),
    (SHORT, &["--node-name=x", "y"]),
    (SHORT, &["--foo"]),
    (SHORT, &["--foo=bar", "-v"]),
    (SHORT, &["-x"]),
    (SHORT, &["-vx"]),
    (SHORT, &["-t"]),
    (SHORT, &["a", "--timeout"]),
    (SHORT, &["--Direct=1"]),
    (SHORT, &["--color", "red", "--color=blue", "--col"]),
    (SHORT, &["-c", "x", "-cyan"]),
    (SHORT, &["-t", "--", "a", "--", "b"]),
    (SHORT, &["", "-v", "--"]),
    ("+C:P:Dt:vV", &["-v", "a", "-t", "5"]),
    ("-C:P:Dt:vV", &["-v", "a", "-t", "5", "b"]),
    (SHORT, &["-:"]),
    (SHORT, &["--=x"]),
];

fn compiler(tag: &str) -> Option<PathBuf> {
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let dir = std::env::temp_dir().join(format!("madstack-getopt-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let src = dir.join("getopt_long.c");
    std::fs::write(&src, PROGRAM).ok()?;
    let exe = dir.join("getopt_long");
    let ok = Command::new(&cc)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(exe)
}

fn table() -> String {
    LONG.iter()
        .map(|o| {
            let h = match o.has_arg {
                HasArg::No => 0,
                HasArg::Required => 1,
                HasArg::Optional => 2,
            };
            format!("{},{h},{}", o.name, o.key)
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// What the Rust module sees, in the C program's format.
fn ours(short: &str, args: &[String], posixly_correct: bool) -> (String, String) {
    match getopt_long_with("prog", args, short, LONG, posixly_correct) {
        Ok(m) => {
            let mut out = String::new();
            for (k, v) in &m.opts {
                out.push_str(&format!("opt {k} {}\n", v.as_deref().unwrap_or("-")));
            }
            for o in &m.operands {
                out.push_str(&format!("operand {o}\n"));
            }
            (out, String::new())
        }
        Err(msg) => ("error\n".to_owned(), msg),
    }
}

#[test]
fn getopt_matches_glibc_getopt_long() {
    let Some(exe) = compiler("cases") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no C compiler (cc) to build the glibc getopt_long reference"
        );
        eprintln!("skipped: no C compiler");
        return;
    };
    let table = table();
    for (short, case) in CASES {
        let args: Vec<String> = case.iter().map(|s| (*s).to_owned()).collect();
        let out = Command::new(&exe)
            .arg(short)
            .arg(&table)
            .arg("prog")
            .args(&args)
            .env_remove("POSIXLY_CORRECT")
            .output()
            .expect("run the getopt_long reference");
        assert!(out.status.success(), "{case:?}: {out:?}");
        let theirs = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert_eq!(
            ours(short, &args, false),
            theirs,
            "short {short:?}, argv {case:?}"
        );
    }
    let _ = std::fs::remove_dir_all(exe.parent().unwrap_or(&exe));
}

#[test]
fn posixly_correct_stops_at_the_first_operand_as_glibc_does() {
    let Some(exe) = compiler("posix") else {
        assert!(std::env::var_os("CI").is_none(), "no C compiler (cc)");
        return;
    };
    let args: Vec<String> = ["-v", "a", "-t", "5"].map(String::from).to_vec();
    let out = Command::new(&exe)
        .arg(SHORT)
        .arg(table())
        .arg("prog")
        .args(&args)
        .env("POSIXLY_CORRECT", "1")
        .output()
        .expect("run the getopt_long reference");
    let theirs = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(ours(SHORT, &args, true), (theirs.clone(), String::new()));
    assert!(
        theirs.ends_with("operand a\noperand -t\noperand 5\n"),
        "{theirs}"
    );
    let _ = std::fs::remove_dir_all(exe.parent().unwrap_or(&exe));
}
