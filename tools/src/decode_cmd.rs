//! `mad decode`: print every field of MADs given as hex text or a pcap file.

use crate::command::{CliError, Io};
use crate::getopt::{getopt_long, HasArg, LongOpt};
use crate::hex::parse_hex_mads;
use crate::json::{Json, JsonExt};
use crate::limits::MAX_DECODE_INPUT_LEN;
use crate::print::{mad_json, write_mad_text};
use mad_core::pcap::PcapReader;
use mad_core::wire::decode::decode_mad;

/// The `--help` text of `mad decode`, including the JSON shape.
pub const HELP: &str = "\
Usage: mad decode [--json] [--pcap FILE | FILE | -]

Decodes InfiniBand MADs and prints every field of every layer: the common
header, the class header (SMP, RMPP, SA, PerfMgt, vendor OUI) and the
attribute or SA record(s), with the labels libibmad / infiniband-diags print.

Input:
  (none) or -     hex text on standard input
  FILE            a pcap file (detected by its magic number) or hex text
  --pcap FILE     a pcap file; anything else is an error

Hex text: bytes as hex digits, separated by whitespace, ':' or ','; a '0x'
prefix is allowed on any token, '#' starts a comment. Blank lines separate
MADs. A block of lines that each hold a whole MAD (256 bytes or more) is one
MAD per line; any other block is one MAD made of all its lines.

Options:
  --json          print JSON instead of text
  -h, --help      print this help

Text output: per MAD a '## MAD from SOURCE: N bytes' line, then per layer a
'# NAME [INDEX] (byte OFFSET)' line and its fields as 'Label:....value'.
Reserved fields are shown only when non-zero; undecoded bytes as hex rows.

JSON output (stable shape), one document on one line (its JSON Schema:
tools/schemas/decode.schema.json):
  {\"command\": \"decode\", \"version\": V, \"complete\": B,
   \"mads\": [MAD...], \"errors\": [{\"source\": S, \"error\": S}...],
   \"error\": {\"message\": S, \"status\": N}}   (error: when complete is false)
  MAD   = {\"source\": S, \"length\": N, \"header\": FIELDS,
           \"layers\": [LAYER...], \"notes\": [S...]}
  LAYER = {\"name\": S, \"offset\": N, \"index\": N|null, \"note\": S|null,
           \"struct\": S, \"fields\": FIELDS}      for a decoded structure
        | {\"name\": \"Data\", \"offset\": N, \"index\": null, \"note\": S|null,
           \"raw\": HEX}                           for undecoded bytes
  FIELDS = {FIELD_NAME: VALUE, ...} in wire order, reserved fields included;
  FIELD_NAME is the snake_case field name (e.g. \"node_guid\"). VALUE is a
  number for integers up to 32 bits and a \"0x\" + hex string for wider ones
  (GUIDs, keys, TIDs: 16 digits for 64 bits, which JSON numbers cannot hold
  exactly); {\"value\": N, \"name\": S|null} for enumerated fields;
  a lowercase hex string (no 0x) for byte runs (GIDs, descriptions);
  an array of numbers for tables; a FIELDS object for embedded structures.
  SOURCE is \"stdin line L\", \"FILE line L\" or \"FILE packet P\".

Input is read up to 64 MiB; longer input is an error.

Exit status: 0 when every MAD decoded; 1 when the input is unreadable or any
MAD failed to decode (the others are still printed); 2 on a usage error.
";

/// A CRC verdict in words.
fn crc_text(c: mad_core::pcap::packet::CrcCheck) -> String {
    use mad_core::pcap::packet::CrcCheck;
    match c {
        CrcCheck::Valid => "valid".into(),
        CrcCheck::Invalid { found, computed } => {
            format!("wrong (0x{found:08x}, computed 0x{computed:08x})")
        }
        CrcCheck::Absent => "not captured".into(),
    }
}

/// Where the input comes from.
enum Input {
    Stdin,
    File(String),
    Pcap(String),
}

/// pcap magic numbers (either byte order), microsecond and nanosecond.
const PCAP_MAGICS: [[u8; 4]; 4] = [
    [0xd4, 0xc3, 0xb2, 0xa1],
    [0xa1, 0xb2, 0xc3, 0xd4],
    [0x4d, 0x3c, 0xb2, 0xa1],
    [0xa1, 0xb2, 0x3c, 0x4d],
];
/// pcapng section header block type.
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

fn looks_like_pcap(bytes: &[u8]) -> bool {
    bytes
        .get(..4)
        .is_some_and(|m| PCAP_MAGICS.iter().any(|p| p == m))
}

/// One MAD to decode, with where it came from.
struct InputMad {
    /// "stdin line 3", "FILE packet 2".
    source: String,
    /// The MAD bytes.
    bytes: Vec<u8>,
    /// Facts about the packet around it (pcap addressing, CRCs).
    notes: Vec<String>,
}

/// MADs read from the input plus per-packet read errors (source, message).
type Inputs = (Vec<InputMad>, Vec<(String, String)>);

/// Reads the MADs of a pcap file. A bad record is reported and skipped; a
/// file that is not a pcap file at all is an error.
fn pcap_mads(name: &str, bytes: &[u8]) -> Result<Inputs, CliError> {
    if bytes.get(..4) == Some(&PCAPNG_MAGIC[..]) {
        return Err(CliError::Input(format!(
            "{name}: pcapng files are not supported; convert with `editcap -F pcap`"
        )));
    }
    let mut reader = PcapReader::new(bytes).map_err(|e| CliError::Input(format!("{name}: {e}")))?;
    let mut mads = Vec::new();
    let mut errors = Vec::new();
    loop {
        let packet = reader.records_read() + 1;
        let source = format!("{name} packet {packet}");
        match reader.next_record() {
            Ok(None) => break,
            Ok(Some(rec)) => {
                let m = rec.meta;
                let mut notes = vec![format!(
                    "packet: {:?}, SLID {:#06x} DLID {:#06x} SL {} VL {}, QP {} -> {}, \
                     Q_Key {:#010x}, P_Key {:#06x}, PSN {}{}",
                    match m.direction {
                        mad_core::pcap::packet::Direction::Sent => "sent",
                        mad_core::pcap::packet::Direction::Received => "received",
                        mad_core::pcap::packet::Direction::Unknown => "direction unknown",
                    },
                    m.slid,
                    m.dlid,
                    m.sl,
                    m.vl,
                    m.src_qp,
                    m.dest_qp,
                    m.qkey,
                    m.pkey,
                    m.psn,
                    if rec.has_grh { ", with GRH" } else { "" }
                )];
                if !rec.crc.all_valid() {
                    notes.push(format!(
                        "CRC check: ICRC {}, VCRC {}",
                        crc_text(rec.crc.icrc),
                        crc_text(rec.crc.vcrc)
                    ));
                }
                mads.push(InputMad {
                    source,
                    bytes: rec.mad,
                    notes,
                });
            }
            Err(e) => errors.push((source, e.to_string())),
        }
    }
    if mads.is_empty() && errors.is_empty() {
        return Err(CliError::Input(format!(
            "{name}: the pcap file holds no packets"
        )));
    }
    Ok((mads, errors))
}

fn hex_mads(source: &str, bytes: &[u8]) -> Result<Inputs, CliError> {
    let text = core::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        CliError::Input(format!(
            "{source}: not hex text and not a pcap file (byte {:#04x} at offset {at} is not text)",
            bytes.get(at).copied().unwrap_or(0)
        ))
    })?;
    let mads = parse_hex_mads(text).map_err(|e| CliError::Input(format!("{source}: {e}")))?;
    let mads = mads
        .into_iter()
        .map(|m| InputMad {
            source: format!("{source} line {}", m.line),
            bytes: m.bytes,
            notes: Vec::new(),
        })
        .collect();
    Ok((mads, Vec::new()))
}

/// `mad decode`'s options, for [`crate::getopt`].
const LONG: &[LongOpt<'static>] = &[
    LongOpt::new("help", HasArg::No, 'h' as i32),
    LongOpt::new("json", HasArg::No, 1),
    LongOpt::new("pcap", HasArg::Required, 2),
];

/// Parses `mad decode`'s arguments (getopt_long rules): `None` for
/// `--help`.
fn parse_args(args: &[String]) -> Result<Option<(bool, Input)>, CliError> {
    let m = getopt_long("decode", args, "h", LONG)
        .map_err(|e| CliError::Usage(e.trim_end().to_owned()))?;
    let mut json = false;
    let mut inputs = Vec::new();
    for (key, v) in m.opts {
        match (key, v) {
            (1, _) => json = true,
            (2, Some(f)) => inputs.push(Input::Pcap(f)),
            _ => return Ok(None),
        }
    }
    inputs.extend(m.operands.into_iter().map(|a| {
        if a == "-" {
            Input::Stdin
        } else {
            Input::File(a)
        }
    }));
    if inputs.len() > 1 {
        return Err(CliError::Usage(
            "decode takes one input: --pcap FILE, FILE or -".into(),
        ));
    }
    Ok(Some((json, inputs.pop().unwrap_or(Input::Stdin))))
}

/// Reads `mad decode`'s input file, at most
/// [`MAX_DECODE_INPUT_LEN`](crate::limits::MAX_DECODE_INPUT_LEN) bytes.
fn read_file(name: &str) -> Result<Vec<u8>, CliError> {
    crate::limits::read_file(name, MAX_DECODE_INPUT_LEN, "mad decode input")
        .map_err(|e| CliError::Input(format!("{name}: {e}")))
}

/// Runs `mad decode` with `args` (after the subcommand name).
///
/// # Errors
/// [`CliError::Usage`] for bad options, [`CliError::Input`] for unreadable
/// input, [`CliError::Failed`] when some MAD did not decode.
pub fn run(args: &[String], io: &mut Io<'_>) -> Result<(), CliError> {
    let mut doc = None;
    let r = run_doc(args, io, &mut doc);
    if let Some(doc) = doc {
        let mut text = crate::json::Envelope::new("decode", doc).to_text();
        text.push('\n');
        io.out(&text);
    }
    r
}

/// [`run`], the JSON document (with `--json`) left in `doc` for the
/// caller to print in its envelope instead of printed.
///
/// # Errors
/// As [`run`].
pub fn run_doc(args: &[String], io: &mut Io<'_>, doc: &mut Option<Json>) -> Result<(), CliError> {
    let Some((json, input)) = parse_args(args)? else {
        io.out(HELP);
        return Ok(());
    };
    let (mads, mut errors) = match input {
        Input::Stdin => {
            let mut buf = Vec::new();
            mad_core::limits::read_to_end_limited(
                &mut *io.stdin,
                MAX_DECODE_INPUT_LEN,
                "mad decode input",
                &mut buf,
            )
            .map_err(|e| CliError::Input(format!("stdin: {e}")))?;
            hex_mads("stdin", &buf)?
        }
        Input::Pcap(name) => pcap_mads(&name, &read_file(&name)?)?,
        Input::File(name) => {
            let bytes = read_file(&name)?;
            if looks_like_pcap(&bytes) || bytes.get(..4) == Some(&PCAPNG_MAGIC[..]) {
                pcap_mads(&name, &bytes)?
            } else {
                hex_mads(&name, &bytes)?
            }
        }
    };
    let mut text = String::new();
    let mut out_mads = Vec::new();
    for m in mads {
        match decode_mad(&m.bytes) {
            Ok(mut d) => {
                d.notes.splice(0..0, m.notes);
                if json {
                    out_mads.push(mad_json(&m.source, &d));
                } else {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    write_mad_text(&mut text, &m.source, &d);
                }
            }
            Err(e) => errors.push((m.source, e.to_string())),
        }
    }
    if json {
        let errs = errors
            .iter()
            .map(|(s, e)| {
                Json::obj()
                    .with("source", Json::String(s.clone()))
                    .with("error", Json::String(e.clone()))
            })
            .collect();
        *doc = Some(
            Json::obj()
                .with("mads", Json::Array(out_mads))
                .with("errors", Json::Array(errs)),
        );
        text.clear();
    }
    io.out(&text);
    if errors.is_empty() {
        Ok(())
    } else {
        let msg = errors
            .iter()
            .map(|(s, e)| format!("{s}: {e}"))
            .collect::<Vec<_>>()
            .join("\n");
        Err(CliError::Failed(msg))
    }
}
