//! Building and running the C program that encodes MADs with libibmad,
//! and reading its output; bit helpers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use mad_core::wire::field::set_bits;

// ------------------------------------------------------------------ running

pub(crate) const MAD_SIZE: usize = 256;

/// The parsed output of the C program.
pub(crate) struct Run {
    pub(crate) buffers: Vec<Buffer>,
    pub(crate) quirks: Vec<String>,
    /// (group, enum name, bits changed outside the field) for u32 fields
    /// whose setter does not mask an over-wide value.
    pub(crate) spills: BTreeSet<(String, String, usize)>,
}

/// One libibmad-encoded MAD.
pub(crate) struct Buffer {
    pub(crate) name: String,
    pub(crate) round: u32,
    /// Group name → the byte offset the C program used as its base.
    pub(crate) parts: Vec<(String, usize)>,
    pub(crate) fields: Vec<LibField>,
    pub(crate) bytes: Vec<u8>,
}

/// One field as libibmad wrote it.
#[derive(Clone)]
pub(crate) struct LibField {
    pub(crate) group: String,
    /// `IB_..._F` enum name.
    pub(crate) ename: String,
    /// `mad_field_name()`.
    pub(crate) print: String,
    /// First bit in the MAD, MSB-first (probed).
    pub(crate) abs_off: usize,
    pub(crate) len: usize,
    /// The value written, as `len` bits MSB-first.
    pub(crate) value: Vec<bool>,
}

/// Why the C program could not be run.
pub(crate) enum RunError {
    /// The machine lacks libibmad-dev or a C compiler.
    Setup(String),
    /// Anything else (a bug here or in the C program).
    Other(String),
}

pub(crate) fn run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| match build_and_run() {
        Ok(r) => r,
        Err(RunError::Other(e)) => panic!("libibmad interop: {e}"),
        Err(RunError::Setup(e)) => panic!(
            "libibmad interop: {e}\n\
             This test needs rdma-core's libibmad headers and library (Debian package \
             `libibmad-dev`) and a C compiler (`cc`, Debian package `gcc`): \
             `apt-get install libibmad-dev gcc`. It fails rather than skips{}.",
            if std::env::var("CI").as_deref() == Ok("true") {
                " (CI=true)"
            } else {
                ""
            }
        ),
    })
}

pub(crate) fn build_and_run() -> Result<Run, RunError> {
    let header = PathBuf::from("/usr/include/infiniband/mad.h");
    if !header.exists() {
        return Err(RunError::Setup(format!(
            "{} not found: libibmad-dev is not installed",
            header.display()
        )));
    }
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/libibmad_fields.c");
    // One executable per test process, so concurrent runs cannot race.
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("libibmad_fields-{}", std::process::id()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(["-libmad", "-libumad"])
        .output()
        .map_err(|e| RunError::Setup(format!("cannot run the C compiler `{cc}`: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let msg = format!("compiling {} with `{cc}` failed:\n{stderr}", src.display());
        // A missing library shows up as a link error.
        return Err(
            if stderr.contains("-libmad") || stderr.contains("-libumad") {
                RunError::Setup(msg)
            } else {
                RunError::Other(msg)
            },
        );
    }
    let out = Command::new(&exe).output();
    // Best effort: the result is already in `out`.
    let _ = std::fs::remove_file(&exe);
    let out = out.map_err(|e| RunError::Other(format!("cannot run {}: {e}", exe.display())))?;
    if !out.status.success() {
        return Err(RunError::Other(format!(
            "{} failed ({}):\n{}",
            exe.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    parse_output(&String::from_utf8_lossy(&out.stdout)).map_err(RunError::Other)
}

pub(crate) use mad_testkit::hex::decode as hex_bytes;

pub(crate) fn parse_output(text: &str) -> Result<Run, String> {
    let mut buffers = Vec::new();
    let mut quirks = Vec::new();
    let mut spills = BTreeSet::new();
    let mut cur: Option<Buffer> = None;
    let mut parts_base: BTreeMap<String, usize> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let w: Vec<&str> = line.split(' ').collect();
        let bad = || format!("line {}: cannot parse {line:?}", n + 1);
        match w[0] {
            "fields" => {}
            "buffer" => {
                parts_base.clear();
                cur = Some(Buffer {
                    name: w.get(1).ok_or_else(bad)?.to_string(),
                    round: w.get(2).ok_or_else(bad)?.parse().map_err(|_| bad())?,
                    parts: Vec::new(),
                    fields: Vec::new(),
                    bytes: Vec::new(),
                });
            }
            "part" => {
                let b = cur.as_mut().ok_or_else(bad)?;
                let base: usize = w.get(2).ok_or_else(bad)?.parse().map_err(|_| bad())?;
                b.parts.push((w[1].to_string(), base));
                parts_base.insert(w[1].to_string(), base);
            }
            "field" => {
                if w.len() != 8 {
                    return Err(bad());
                }
                let b = cur.as_mut().ok_or_else(bad)?;
                let base = *parts_base.get(w[1]).ok_or_else(bad)?;
                let off: usize = w[5].parse().map_err(|_| bad())?;
                let len: usize = w[6].parse().map_err(|_| bad())?;
                let value = match w[4] {
                    "u32" | "u64" => {
                        let v = u64::from_str_radix(w[7].trim_start_matches("0x"), 16)
                            .map_err(|_| bad())?;
                        int_bits(v, len)
                    }
                    "arr" => bytes_bits(&hex_bytes(w[7])?),
                    _ => return Err(bad()),
                };
                if value.len() != len {
                    return Err(format!("line {}: value is not {len} bits wide", n + 1));
                }
                b.fields.push(LibField {
                    group: w[1].to_string(),
                    ename: w[2].to_string(),
                    print: w[3].to_string(),
                    abs_off: base * 8 + off,
                    len,
                    value,
                });
            }
            "bytes" => {
                let b = cur.as_mut().ok_or_else(bad)?;
                b.bytes = hex_bytes(w.get(1).ok_or_else(bad)?)?;
                if b.bytes.len() != MAD_SIZE {
                    return Err(bad());
                }
            }
            "end" => buffers.push(cur.take().ok_or_else(bad)?),
            "quirk" => quirks.push(line.to_string()),
            "spill" => {
                let n = w.get(3).ok_or_else(bad)?.parse().map_err(|_| bad())?;
                spills.insert((w[1].to_string(), w[2].to_string(), n));
            }
            _ => return Err(bad()),
        }
    }
    if buffers.is_empty() {
        return Err("the C program printed no buffers".into());
    }
    Ok(Run {
        buffers,
        quirks,
        spills,
    })
}

// ------------------------------------------------------------------ bits

pub(crate) fn int_bits(v: u64, len: usize) -> Vec<bool> {
    (0..len)
        .rev()
        .map(|i| i < 64 && (v >> i) & 1 == 1)
        .collect()
}

pub(crate) fn bytes_bits(b: &[u8]) -> Vec<bool> {
    b.iter()
        .flat_map(|byte| int_bits(u64::from(*byte), 8))
        .collect()
}

pub(crate) fn show_bits(bits: &[bool]) -> String {
    if bits.len() <= 64 {
        let v = bits.iter().fold(0u64, |a, b| (a << 1) | u64::from(*b));
        format!("{v:#x}")
    } else {
        let bytes: Vec<String> = bits
            .chunks(8)
            .map(|c| format!("{:02x}", c.iter().fold(0u8, |a, b| (a << 1) | u8::from(*b))))
            .collect();
        bytes.concat()
    }
}

/// Writes `bits` at bit `pos` of `buf` with mad-core's own bit writer.
pub(crate) fn write_bits(buf: &mut [u8], pos: usize, bits: &[bool]) {
    for (i, b) in bits.iter().enumerate() {
        set_bits(buf, pos + i, 1, u64::from(*b));
    }
}
