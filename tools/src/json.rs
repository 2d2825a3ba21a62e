//! The tools' JSON output contract, written with `serde_json`.
//!
//! Every command's `--json` output is one object on one line
//! ([`Envelope`]): `command`, `version` and `complete` first, then the
//! command's own keys, then — when the work was not finished — `missing`
//! (what was not obtained) and `error` (why). Keys are snake case
//! throughout; 64-bit values (GUIDs, keys, 64-bit counters) are strings
//! `"0x"` + 16 lowercase hex digits, since JSON numbers lose precision
//! beyond 2^53 in most parsers (jq among them). Objects keep their
//! insertion order. The JSON Schema of each command is in
//! `tools/schemas/<command>.schema.json`.

use serde::Serialize;

/// A JSON value (`serde_json::Value`, objects in insertion order).
pub type Json = serde_json::Value;

/// The version every JSON object reports: madstack's.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Building objects and writing them.
pub trait JsonExt: Sized {
    /// An empty object.
    fn obj() -> Self;
    /// Adds `key: value` to an object (does nothing on other values).
    #[must_use]
    fn with(self, key: &str, value: Json) -> Self;
    /// Adds `key: value` to an object (does nothing on other values).
    fn push(&mut self, key: &str, value: Json);
    /// A string value, or null.
    fn opt_str(s: Option<&str>) -> Self;
    /// The compact JSON text.
    fn to_text(&self) -> String;
}

impl JsonExt for Json {
    fn obj() -> Self {
        Self::Object(serde_json::Map::new())
    }

    fn with(mut self, key: &str, value: Json) -> Self {
        self.push(key, value);
        self
    }

    fn push(&mut self, key: &str, value: Json) {
        if let Self::Object(m) = self {
            m.insert(key.to_owned(), value);
        }
    }

    fn opt_str(s: Option<&str>) -> Self {
        s.map_or(Self::Null, |s| Self::String(s.to_owned()))
    }

    fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A 64-bit value in its JSON form: `"0x"` + 16 hex digits.
#[must_use]
pub fn u64_hex(v: u64) -> Json {
    Json::String(format!("0x{v:016x}"))
}

/// An unsigned integer field of `bits` bits in its JSON form: a number
/// up to 32 bits, else a `"0x…"` string of `bits / 4` hex digits (a
/// 64-bit value: 16 digits).
#[must_use]
pub fn uint_field(bits: u32, v: u64) -> Json {
    if bits > 32 {
        let w = bits.div_ceil(4) as usize;
        Json::String(format!("0x{v:0w$x}"))
    } else {
        Json::from(v)
    }
}

/// What a command could not obtain: the `missing` key of an incomplete
/// result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// What kind of thing is missing (`nodes`, `ports`, `records`, ...).
    pub what: String,
    /// How many (when known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Which ones, as the text output names them (may be empty).
    pub items: Vec<String>,
}

/// The object every command prints under `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct Envelope<'a> {
    /// The command's name (`smpquery`, `sweep`, ...), never a path.
    pub command: &'a str,
    /// madstack's version.
    pub version: &'a str,
    /// False when the command could not finish its work (it then exits
    /// non-zero).
    pub complete: bool,
    /// The command's own keys.
    #[serde(flatten)]
    pub body: serde_json::Map<String, Json>,
    /// What was not obtained (a list of [`Missing`]), when `complete`
    /// is false and it is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<Json>,
    /// Why the command failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
}

/// A failure in JSON: what went wrong and the exit status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorInfo {
    /// The message a person reads (the same text as without `--json`).
    pub message: String,
    /// The process exit status.
    pub status: i32,
}

impl<'a> Envelope<'a> {
    /// The envelope of `body` (an object; other values are put under
    /// `value`), the `command`, `complete`, `missing` and `error` keys
    /// of the body taken over.
    #[must_use]
    pub fn new(command: &'a str, body: Json) -> Self {
        let mut map = match body {
            Json::Object(m) => m,
            Json::Null => serde_json::Map::new(),
            other => {
                let mut m = serde_json::Map::new();
                m.insert("value".into(), other);
                m
            }
        };
        map.shift_remove("command");
        map.shift_remove("version");
        let missing = map.shift_remove("missing");
        let complete = map
            .shift_remove("complete")
            .and_then(|c| c.as_bool())
            .unwrap_or(true);
        let error = match map.shift_remove("error") {
            Some(Json::String(message)) => Some(ErrorInfo { message, status: 1 }),
            Some(e @ Json::Object(_)) => {
                serde_json::from_value::<ErrorIn>(e)
                    .ok()
                    .map(|e| ErrorInfo {
                        message: e.message,
                        status: e.status,
                    })
            }
            _ => None,
        };
        Self {
            command,
            version: VERSION,
            complete: complete && error.is_none() && missing.is_none(),
            body: map,
            missing,
            error,
        }
    }

    /// The envelope of a failure that produced nothing else.
    #[must_use]
    pub fn error(command: &'a str, message: &str, status: i32) -> Self {
        let mut e = Self::new(command, Json::Null);
        e.complete = false;
        e.error = Some(ErrorInfo {
            message: message.to_owned(),
            status,
        });
        e
    }

    /// The compact JSON text (one line, no newline).
    #[must_use]
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[derive(serde::Deserialize)]
struct ErrorIn {
    message: String,
    status: i32,
}

/// The `error` object of a body: `{"message": ..., "status": ...}`.
#[must_use]
pub fn error_value(message: &str, status: i32) -> Json {
    serde_json::json!({"message": message, "status": status})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_insertion_order_and_escape_text() {
        let j = Json::obj()
            .with("z", Json::from(7u64))
            .with("a", Json::Array(vec![Json::Null, Json::Bool(true)]))
            .with("s", Json::String("q\"\\\n\u{1}é".into()));
        assert_eq!(
            j.to_text(),
            r#"{"z":7,"a":[null,true],"s":"q\"\\\n\u0001é"}"#
        );
    }

    #[test]
    fn values_wider_than_32_bits_are_hex_strings() {
        assert_eq!(
            uint_field(32, u64::from(u32::MAX)),
            Json::from(4_294_967_295u64)
        );
        assert_eq!(
            uint_field(64, 16_437_343_705_890_927_104),
            Json::String("0xe41d2d0300a1b200".into())
        );
        assert_eq!(u64_hex(1), Json::String("0x0000000000000001".into()));
    }

    #[test]
    fn the_envelope_puts_command_version_complete_first_and_error_last() {
        let body = Json::obj()
            .with("command", Json::String("/usr/bin/smpquery".into()))
            .with("x", Json::from(1u64))
            .with("error", Json::String("timeout".into()));
        let text = Envelope::new("smpquery", body).to_text();
        assert_eq!(
            text,
            format!(
                r#"{{"command":"smpquery","version":"{VERSION}","complete":false,"x":1,"error":{{"message":"timeout","status":1}}}}"#
            )
        );
        let e = Envelope::error("sminfo", "no device", 255).to_text();
        let v: Json = serde_json::from_str(&e).unwrap();
        assert_eq!(v["complete"], false);
        assert_eq!(v["error"]["status"], 255);
    }
}
