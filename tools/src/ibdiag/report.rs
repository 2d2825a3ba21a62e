//! What the tools print besides their formatted output: libibmad's
//! warnings, the JSON forms shared by several tools, the JSON result and
//! its incomplete marks.

use std::time::Duration;

use mad_agents::QueryError;
use mad_core::wire::{FieldValue, Fields};

use super::dest::Dest;
use crate::command::{CliError, Invocation};
use crate::diags::PortIdText;
use crate::json::{Json, JsonExt};

/// The `ibwarn` line libibmad prints on stderr when a query gets no
/// answer (`_do_madrpc failed; dport (...)`).
#[must_use]
pub fn rpc_failed_warning(dest: &PortIdText) -> String {
    format!(
        "ibwarn: [{}] mad_rpc: _do_madrpc failed; dport ({dest})\n",
        std::process::id()
    )
}

/// Prints libibmad's warning for a failed query (a timeout or transport
/// failure; a status answer prints nothing there unless `-e` or `-d`
/// show the errors, see [`super::ibdebug`]).
pub fn warn_failed(inv: &mut Invocation<'_, '_>, dest: &PortIdText, e: &QueryError) {
    let lines = super::ibdebug::rpc_failure_lines(&inv.mad_diag, "mad_rpc", dest, e);
    inv.io.err(&lines);
}

/// The JSON object of an attribute: its fields by their snake-case
/// names, in wire order, reserved fields left out; integers up to 32 bits
/// as numbers, wider ones (GUIDs, keys, 64-bit counters) as `"0x…"`
/// strings ([`crate::json::uint_field`]), text fields (descriptions,
/// names) as text, other byte strings as hex text, arrays as arrays.
#[must_use]
pub fn attr_json(f: &dyn Fields) -> Json {
    let mut o = Json::obj();
    for (i, desc) in f.field_descs().iter().enumerate() {
        if desc.is_reserved() {
            continue;
        }
        let Some(value) = f.field_value(i) else {
            continue;
        };
        let j = match value {
            FieldValue::Uint(v) => crate::json::uint_field(desc.bit_len, v),
            FieldValue::Bytes(b) if desc.name.contains("desc") || desc.name.ends_with("name") => {
                // Text (a node description, a service name): up to the
                // first NUL, other bytes as the replacement character.
                let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
                Json::String(String::from_utf8_lossy(&b[..end]).into_owned())
            }
            FieldValue::Bytes(b) => Json::String(b.iter().map(|x| format!("{x:02x}")).collect()),
            FieldValue::Array(a) => {
                let bits = match desc.kind {
                    mad_core::wire::FieldKind::Array { elem_bits, .. } => elem_bits,
                    _ => 64,
                };
                Json::Array(
                    a.into_iter()
                        .map(|x| crate::json::uint_field(bits, x))
                        .collect(),
                )
            }
            FieldValue::Nested(n) => attr_json(n),
        };
        o.push(desc.name, j);
    }
    o
}

/// [`attr_json`] of a PortInfo, the M_Key left out unless `show_keys`
/// (as the text does).
#[must_use]
pub fn portinfo_json(pi: &mad_core::wire::attr::PortInfo, show_keys: bool) -> Json {
    let j = attr_json(pi);
    match j {
        Json::Object(mut v) if !show_keys => {
            v.shift_remove("m_key");
            Json::Object(v)
        }
        other => other,
    }
}

/// Sets the command's JSON result: the dispatcher prints it in the
/// envelope of [`crate::json::Envelope`] (`command`, `version`,
/// `complete`, the error if the command fails) once the command returns.
pub fn print_json(inv: &mut Invocation<'_, '_>, json: &Json) {
    inv.session.json = true;
    inv.json_body = Some(json.clone());
}

/// Marks the command's JSON result incomplete (`complete: false`, and
/// `missing: [{"what", "count", "items"}]`) and returns the error that
/// says so on stderr and exits with [`crate::command::EXIT_INCOMPLETE`].
/// Call after [`print_json`] (without `--json` only the error matters).
pub fn incomplete(
    inv: &mut Invocation<'_, '_>,
    what: &str,
    count: Option<u64>,
    items: Vec<String>,
    message: String,
) -> CliError {
    if let Some(Json::Object(body)) = &mut inv.json_body {
        let m = crate::json::Missing {
            what: what.to_owned(),
            count,
            items,
        };
        body.insert("complete".into(), Json::Bool(false));
        body.insert(
            "missing".into(),
            Json::Array(vec![serde_json::to_value(m).unwrap_or(Json::Null)]),
        );
    }
    CliError::Incomplete(message)
}

/// A duration as a person reads it: `0.479 ms`, `15.204 s`.
#[must_use]
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{:.3} ms", s * 1000.0)
    } else {
        format!("{s:.3} s")
    }
}

/// A hex string `0x...` of `v` with `digits` digits (the JSON form of
/// GUIDs and masks).
#[must_use]
pub fn hex(v: u64, digits: usize) -> Json {
    Json::String(format!("0x{v:0digits$x}"))
}

/// The JSON form of a destination: `{"lid":N}` or `{"dr_path":[...]}`.
#[must_use]
pub fn dest_json(d: &Dest) -> Json {
    let mut j = Json::obj();
    if d.text.lid != 0 {
        j.push("lid", Json::from(u64::from(d.text.lid)));
    }
    if !d.text.path.is_empty() {
        j.push(
            "dr_path",
            Json::Array(
                d.text
                    .path
                    .iter()
                    .map(|p| Json::from(u64::from(*p)))
                    .collect(),
            ),
        );
    }
    j.push("text", Json::String(d.text.to_string()));
    j
}
