//! A minimal JSON value with an order-preserving object and a compact
//! writer: enough for the tools' `--json` output, without a dependency.

use core::fmt::Write as _;

/// A JSON value. Objects keep their insertion order.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An unsigned integer (written exactly, all 64 bits).
    UInt(u64),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Json>),
    /// An object, in insertion order.
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// An empty object.
    #[must_use]
    pub fn obj() -> Self {
        Self::Obj(Vec::new())
    }

    /// Adds `key: value` to an object (does nothing on other values).
    #[must_use]
    pub fn with(mut self, key: &str, value: Json) -> Self {
        self.push(key, value);
        self
    }

    /// Adds `key: value` to an object (does nothing on other values).
    pub fn push(&mut self, key: &str, value: Json) {
        if let Self::Obj(v) = self {
            v.push((key.to_owned(), value));
        }
    }

    /// A string value, or null.
    #[must_use]
    pub fn opt_str(s: Option<&str>) -> Self {
        s.map_or(Self::Null, |s| Self::Str(s.to_owned()))
    }

    /// Writes compact JSON text into `out`.
    pub fn write(&self, out: &mut String) {
        match self {
            Self::Null => out.push_str("null"),
            Self::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Self::UInt(n) => {
                let _ = write!(out, "{n}");
            }
            Self::Str(s) => write_str(s, out),
            Self::Arr(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Self::Obj(o) => {
                out.push('{');
                for (i, (k, v)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(k, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// The compact JSON text.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_nested_values_in_insertion_order_with_escapes() {
        let j = Json::obj()
            .with("z", Json::UInt(u64::MAX))
            .with("a", Json::Arr(vec![Json::Null, Json::Bool(true)]))
            .with("s", Json::Str("q\"\\\n\u{1}é".into()));
        let text = j.to_text();
        assert_eq!(
            text,
            r#"{"z":18446744073709551615,"a":[null,true],"s":"q\"\\\n\u0001é"}"#
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["s"], "q\"\\\n\u{1}é");
        assert_eq!(v["z"].as_u64(), Some(u64::MAX));
    }
}
