//! Bytes as plain hex text (two lower-case digits a byte, no separators),
//! the form tests pass MADs in between processes and read from tools.

/// `bytes` as hex text.
#[must_use]
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of hex text `s` (either case).
///
/// # Errors
/// An odd number of digits, or a pair that is not hex; the message quotes
/// `s`.
pub fn decode(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd hex length in {s:?}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| format!("{s:?}: bad hex at {i}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_reads_back_what_encode_wrote_and_refuses_bad_text() {
        let b = [0x00, 0x7f, 0xab, 0xff];
        assert_eq!(encode(&b), "007fabff");
        assert_eq!(decode("007fABff"), Ok(b.to_vec()));
        assert_eq!(decode(""), Ok(Vec::new()));
        assert!(decode("abc").unwrap_err().contains("odd hex length"));
        assert!(decode("zz").unwrap_err().contains("bad hex at 0"));
        assert!(decode("aé").is_err(), "a multi-byte character is no digit");
    }
}
