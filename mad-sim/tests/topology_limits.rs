//! A topology file cannot make the loader take unbounded memory or time
//! (issue 13): blank lines, endless includes (`/dev/zero`, a FIFO whose
//! writer never stops) and many included files all stop at a
//! [`TopologyLimits`] with an error naming the file and the limit.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::PathBuf;

use mad_sim::topology::{ErrorKind, MAX_TOPOLOGY_BYTES, MAX_TOPOLOGY_LINES};
use mad_sim::{Topology, TopologyLimits};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mad-sim-limits-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const SMALL: TopologyLimits = TopologyLimits {
    max_bytes: 1 << 20,
    max_lines: 1000,
};

fn too_large(e: &mad_sim::TopologyError) -> (&str, &'static str, u64) {
    match &e.kind {
        ErrorKind::TooLarge { file, what, limit } => (file.as_str(), *what, *limit),
        other => panic!("expected TooLarge, got {other:?} ({e})"),
    }
}

#[test]
fn blank_lines_past_the_line_limit_are_refused() {
    let d = dir("blank");
    let f = d.join("blank.net");
    std::fs::write(&f, "\n".repeat(1001)).unwrap();
    let e = Topology::load_with_limits(&f, SMALL).unwrap_err();
    let (file, what, limit) = too_large(&e);
    assert!(file.ends_with("blank.net"), "{e}");
    assert_eq!((what, limit), ("lines", 1000));
    assert!(e.to_string().contains("1000 lines"), "{e}");
    std::fs::write(&f, "\n".repeat(1000)).unwrap();
    Topology::load_with_limits(&f, SMALL).unwrap();
}

#[test]
fn a_string_of_more_blank_lines_than_the_default_limit_is_refused() {
    let text = "\n".repeat(MAX_TOPOLOGY_LINES + 1);
    let e = Topology::parse_str(&text).unwrap_err();
    assert_eq!(too_large(&e).1, "lines");
}

#[test]
fn an_include_of_dev_zero_stops_at_the_byte_limit_and_names_the_file() {
    let d = dir("zero");
    let f = d.join("main.net");
    std::fs::write(&f, "# a hostile topology\ninclude \"/dev/zero\"\n").unwrap();
    let e = Topology::load_with_limits(&f, SMALL).unwrap_err();
    let (file, what, limit) = too_large(&e);
    assert_eq!((file, what, limit), ("/dev/zero", "bytes", 1 << 20));
    assert_eq!(e.location.line, 2, "located at the include line: {e}");
    assert!(e.to_string().contains("/dev/zero"), "{e}");
}

#[test]
fn loading_dev_zero_itself_stops_at_the_default_limit() {
    let e = Topology::load("/dev/zero").unwrap_err();
    assert_eq!(too_large(&e), ("/dev/zero", "bytes", MAX_TOPOLOGY_BYTES));
}

#[test]
fn an_include_of_a_fifo_with_an_endless_writer_stops_at_the_byte_limit() {
    let d = dir("fifo");
    let fifo = d.join("endless.net");
    let _ = std::fs::remove_file(&fifo);
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo failed");
    let f = d.join("main.net");
    std::fs::write(&f, "include \"endless.net\"\n").unwrap();
    let w = fifo.clone();
    let writer = std::thread::spawn(move || {
        let mut out = std::fs::OpenOptions::new().write(true).open(w).unwrap();
        let chunk = "# more\n".repeat(1024);
        // Ends when the reader closes its end (EPIPE).
        while out.write_all(chunk.as_bytes()).is_ok() {}
    });
    let e = Topology::load_with_limits(
        &f,
        TopologyLimits {
            max_bytes: 1 << 20,
            max_lines: usize::MAX,
        },
    )
    .unwrap_err();
    let (file, what, _) = too_large(&e);
    assert!(file.ends_with("endless.net"), "{e}");
    assert_eq!(what, "bytes");
    writer.join().unwrap();
}

#[test]
fn the_byte_limit_counts_every_included_file_together() {
    let d = dir("sum");
    let half = "#".repeat(200) + "\n";
    let body = half.repeat(2700); // about 530 KiB each
    std::fs::write(d.join("a.net"), &body).unwrap();
    std::fs::write(d.join("b.net"), &body).unwrap();
    std::fs::write(d.join("main.net"), "include \"a.net\"\ninclude \"b.net\"\n").unwrap();
    let limits = TopologyLimits {
        max_bytes: 1 << 20,
        max_lines: usize::MAX,
    };
    let e = Topology::load_with_limits(d.join("main.net"), limits).unwrap_err();
    let (file, _, _) = too_large(&e);
    assert!(
        file.ends_with("b.net"),
        "the second include passes the limit: {e}"
    );
    // Each alone fits.
    std::fs::write(d.join("main.net"), "include \"a.net\"\n").unwrap();
    Topology::load_with_limits(d.join("main.net"), limits).unwrap();
}
