//! Every file `mad` reads has a size limit (issue 13): an endless input
//! (`/dev/zero`, an endless standard input) stops at the limit with an
//! error naming the input and the limit.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use mad_testkit::assert_contains_all;
use mad_tools::limits::{MAX_CACHE_FILE_LEN, MAX_DECODE_INPUT_LEN, MAX_NODE_NAME_MAP_LEN};
use mad_tools::namemap::NameMap;

const MAD: &str = env!("CARGO_BIN_EXE_mad");

#[test]
fn mad_decode_of_dev_zero_stops_at_its_limit_and_names_the_file_and_limit() {
    let out = Command::new(MAD)
        .args(["decode", "/dev/zero"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_contains_all(
        &err,
        &["/dev/zero", &MAX_DECODE_INPUT_LEN.to_string(), "64 MiB"],
    );
}

#[test]
fn mad_decode_of_an_endless_standard_input_stops_at_its_limit() {
    let mut child = Command::new(MAD)
        .arg("decode")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = "00 ".repeat(4096);
        // Until mad stops reading and its end of the pipe closes.
        while input.write_all(chunk.as_bytes()).is_ok() {}
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("stdin") && err.contains("64 MiB"), "{err}");
}

#[test]
fn a_node_name_map_of_dev_zero_is_refused_naming_the_file_and_limit() {
    let e = NameMap::load(Path::new("/dev/zero")).unwrap_err();
    assert_contains_all(
        &e,
        &["/dev/zero", &MAX_NODE_NAME_MAP_LEN.to_string(), "16 MiB"],
    );
}

#[test]
fn the_diags_node_name_map_of_dev_zero_is_no_map_with_a_warning_naming_the_limit() {
    let (map, warn) = NameMap::open(Some(Path::new("/dev/zero")));
    let warn = warn.unwrap();
    assert!(
        warn.contains("/dev/zero") && warn.contains("16 MiB"),
        "{warn}"
    );
    assert_eq!(map, None);
}

/// Runs `mad ARGS` under GNU time and returns its exit code, its
/// standard error and its peak resident set in KiB. GNU time forks and
/// `wait4`s `mad` itself: the rusage of a child spawned straight from
/// this (large, multi-threaded) test process would carry the test
/// process's own high-water mark across `exec`.
fn run_with_peak_rss(args: &[&str]) -> (Option<i32>, String, u64) {
    let dir = tempdir();
    let err_path = dir.join("stderr");
    let rss_path = dir.join("rss");
    let status = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss_path)
        .arg(MAD)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .status()
        .expect("GNU time (Debian package time, in scripts/test.sh) runs");
    let err = std::fs::read_to_string(&err_path).unwrap();
    let rss = std::fs::read_to_string(&rss_path).unwrap();
    let rss = rss
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS from GNU time: {rss:?}"));
    let _ = std::fs::remove_dir_all(&dir);
    (status.code(), err, rss)
}

/// A fresh directory under the system's temporary directory.
fn tempdir() -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("mad-input-limits-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Peak RSS a refused cache may cost: `mad` itself runs in about 10 MiB;
/// reading a 1 GB file whole costs 1 GB.
const SMALL_RSS_KIB: u64 = 48 * 1024;

/// Every command that reads an ibnetdiscover cache, with `FILE` where
/// the cache goes (`--sim`: iblinkinfo and ibqueryerrors open their port
/// before they load a cache, as infiniband-diags' do).
const CACHE_READERS: [&[&str]; 6] = [
    &["ibnetdiscover", "--load-cache", "FILE"],
    &["--sim", "iblinkinfo", "--load-cache", "FILE"],
    &["--sim", "ibqueryerrors", "--load-cache", "FILE"],
    &["--sim", "ibnetdiscover", "--diff", "FILE"],
    &["--sim", "iblinkinfo", "--diff", "FILE"],
    &["ibcacheedit", "FILE", "OUT"],
];

fn assert_every_cache_reader_refuses(file: &str, expect: &[&str]) {
    let dir = tempdir();
    let out = dir.join("out.cache");
    for cmd in CACHE_READERS {
        let args: Vec<&str> = cmd
            .iter()
            .map(|a| match *a {
                "FILE" => file,
                "OUT" => out.to_str().unwrap(),
                a => a,
            })
            .collect();
        let (code, err, rss) = run_with_peak_rss(&args);
        assert_ne!(code, Some(0), "mad {args:?}: {err}");
        assert!(code.is_some(), "mad {args:?} did not exit: {err}");
        assert_contains_all(&err, expect);
        assert!(
            rss < SMALL_RSS_KIB,
            "mad {args:?} peaked at {rss} KiB refusing {file}: {err}"
        );
        assert!(!out.exists(), "ibcacheedit wrote {}", out.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cache_of_dev_zero_is_refused_by_every_reader_with_a_small_rss() {
    assert_every_cache_reader_refuses("/dev/zero", &["/dev/zero", "not an ibnetdiscover cache"]);
}

#[test]
fn a_sparse_1_gb_cache_is_refused_before_it_is_read_naming_the_file_and_limit() {
    let dir = tempdir();
    let path = dir.join("sparse.cache");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    let p = path.to_str().unwrap();
    assert_every_cache_reader_refuses(
        p,
        &[p, &MAX_CACHE_FILE_LEN.to_string(), "128 MiB", "cache file"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cache_from_a_fifo_with_a_valid_header_and_endless_records_stops_at_the_limit() {
    use mad_tools::discover::cache::{HEADER_LEN, MAGIC, VERSION};
    let dir = tempdir();
    let path = dir.join("endless.cache");
    let p = path.to_str().unwrap().to_owned();
    let made = Command::new("mkfifo").arg(&p).status().unwrap();
    assert!(made.success(), "mkfifo {p}");
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(&MAGIC.to_le_bytes());
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&u32::MAX.to_le_bytes());
        header.extend_from_slice(&u32::MAX.to_le_bytes());
        header.resize(HEADER_LEN, 0);
        f.write_all(&header).unwrap();
        let chunk = vec![0u8; 1 << 16];
        let mut sent = 0u64;
        while f.write_all(&chunk).is_ok() {
            sent += chunk.len() as u64;
        }
        sent
    });
    let (code, err, _) = run_with_peak_rss(&["ibnetdiscover", "--load-cache", &p]);
    let sent = writer.join().unwrap();
    assert_ne!(code, Some(0), "{err}");
    assert_contains_all(&err, &[&p, "128 MiB"]);
    assert!(
        sent <= MAX_CACHE_FILE_LEN + (1 << 20),
        "{sent} bytes were read from the FIFO"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
