//! The hex input format of `mad decode`.
//!
//! - Input is split into *blocks* by blank lines; `#` starts a comment that
//!   runs to the end of the line.
//! - Within a line, bytes are hex digits. Tokens are separated by
//!   whitespace, `:` or `,`; a token may hold one byte (`0a`) or many
//!   (`0a0b0c`), and may carry a `0x`/`0X` prefix. Every token must have an
//!   even number of digits.
//! - A block whose lines each hold at least one whole MAD (256 bytes) is
//!   read as one MAD per line; any other block is one MAD made of all its
//!   lines (a multi-line hex dump).
//!
//! The parser never panics; every error names the line (1-based) and what
//! was wrong.

use core::fmt;

/// One MAD read from hex text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexMad {
    /// Line (1-based) where the MAD starts.
    pub line: usize,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// Why hex input could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HexError {
    /// A character that is not a hex digit, separator or comment.
    NotHex {
        /// Line (1-based).
        line: usize,
        /// Column (1-based, in characters).
        column: usize,
        /// The offending character.
        found: char,
    },
    /// A token with an odd number of hex digits.
    OddDigits {
        /// Line (1-based).
        line: usize,
        /// The token as written.
        token: String,
    },
    /// The input holds no hex bytes at all.
    Empty,
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotHex {
                line,
                column,
                found,
            } => write!(
                f,
                "line {line}, column {column}: {found:?} is not a hex digit"
            ),
            Self::OddDigits { line, token } => write!(
                f,
                "line {line}: {token:?} has an odd number of hex digits (each byte needs two)"
            ),
            Self::Empty => write!(f, "no hex bytes in the input"),
        }
    }
}

impl std::error::Error for HexError {}

/// Bytes of one whole MAD; a line with at least this many is a MAD by itself.
const MAD_LEN: usize = 256;

/// Parses the hex bytes of one line (comment already removed).
fn parse_line(text: &str, line: usize) -> Result<Vec<u8>, HexError> {
    let mut out = Vec::new();
    let mut token = String::new();
    let mut token_start = 0usize;
    let flush = |token: &mut String, out: &mut Vec<u8>, start: usize| -> Result<(), HexError> {
        if token.is_empty() {
            return Ok(());
        }
        let digits = token
            .strip_prefix("0x")
            .or_else(|| token.strip_prefix("0X"))
            .unwrap_or(token);
        let mut nibbles = Vec::with_capacity(digits.len());
        for (i, c) in digits.chars().enumerate() {
            match c.to_digit(16) {
                Some(v) => nibbles.push(v as u8),
                None => {
                    let prefix = token.chars().count() - digits.chars().count();
                    return Err(HexError::NotHex {
                        line,
                        column: start + prefix + i + 1,
                        found: c,
                    });
                }
            }
        }
        if nibbles.is_empty() || nibbles.len() % 2 != 0 {
            return Err(HexError::OddDigits {
                line,
                token: token.clone(),
            });
        }
        out.extend(nibbles.chunks(2).map(|p| (p[0] << 4) | p[1]));
        token.clear();
        Ok(())
    };
    for (col, c) in text.chars().enumerate() {
        if c.is_whitespace() || c == ':' || c == ',' {
            flush(&mut token, &mut out, token_start)?;
        } else {
            if token.is_empty() {
                token_start = col;
            }
            token.push(c);
        }
    }
    flush(&mut token, &mut out, token_start)?;
    Ok(out)
}

/// Parses hex text into MADs (see the module docs for the format).
///
/// # Errors
/// [`HexError`] naming the line and the problem; [`HexError::Empty`] when
/// there are no bytes at all.
pub fn parse_hex_mads(text: &str) -> Result<Vec<HexMad>, HexError> {
    let mut mads = Vec::new();
    // Lines of the current block: (line number, bytes).
    let mut block: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut finish = |block: &mut Vec<(usize, Vec<u8>)>| {
        if block.is_empty() {
            return;
        }
        if block.len() > 1 && block.iter().all(|(_, b)| b.len() >= MAD_LEN) {
            for (line, bytes) in block.drain(..) {
                mads.push(HexMad { line, bytes });
            }
        } else {
            let line = block[0].0;
            let bytes = block.drain(..).flat_map(|(_, b)| b).collect();
            mads.push(HexMad { line, bytes });
        }
    };
    for (i, raw_line) in text.lines().enumerate() {
        let line = i + 1;
        let content = match raw_line.find('#') {
            Some(p) => &raw_line[..p],
            None => raw_line,
        };
        if content.trim().is_empty() {
            // A blank line ends a block; a comment-only line does not.
            if raw_line.trim().is_empty() {
                finish(&mut block);
            }
            continue;
        }
        let bytes = parse_line(content, line)?;
        if !bytes.is_empty() {
            block.push((line, bytes));
        }
    }
    finish(&mut block);
    if mads.is_empty() {
        return Err(HexError::Empty);
    }
    Ok(mads)
}

/// Formats bytes as lowercase hex with no separators.
#[must_use]
pub fn to_hex(bytes: &[u8]) -> String {
    use fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_of_hex_is_one_mad() {
        let m = parse_hex_mads("0102 0304\n").unwrap();
        assert_eq!(
            m,
            vec![HexMad {
                line: 1,
                bytes: vec![1, 2, 3, 4]
            }]
        );
    }

    #[test]
    fn prefixes_colons_and_commas_are_tolerated() {
        let mads = parse_hex_mads("0x01:0X02,ab  CD\t0xEFff").unwrap();
        assert_eq!(mads[0].bytes, vec![1, 2, 0xab, 0xcd, 0xef, 0xff]);
    }

    #[test]
    fn lines_of_a_block_are_concatenated_and_blank_lines_separate_mads() {
        let mads = parse_hex_mads("01 02\n03\n\n\n# comment\n04 05 # trailing\n").unwrap();
        assert_eq!(mads.len(), 2);
        assert_eq!(
            mads[0],
            HexMad {
                line: 1,
                bytes: vec![1, 2, 3]
            }
        );
        assert_eq!(
            mads[1],
            HexMad {
                line: 6,
                bytes: vec![4, 5]
            }
        );
    }

    #[test]
    fn a_block_of_full_mad_lines_gives_one_mad_per_line() {
        let line = "00".repeat(256);
        let text = format!("{line}\n{line}\n{line}\n");
        let mads = parse_hex_mads(&text).unwrap();
        assert_eq!(mads.len(), 3);
        assert_eq!(mads[2].line, 3);
        assert!(mads.iter().all(|x| x.bytes.len() == 256));
    }

    #[test]
    fn odd_digit_tokens_are_rejected_with_the_line() {
        let e = parse_hex_mads("01\n0203 4\n").unwrap_err();
        assert_eq!(
            e,
            HexError::OddDigits {
                line: 2,
                token: "4".into()
            }
        );
        assert!(e.to_string().contains("line 2"));
        assert!(matches!(
            parse_hex_mads("0x"),
            Err(HexError::OddDigits { .. })
        ));
    }

    #[test]
    fn non_hex_characters_are_rejected_with_line_and_column() {
        let e = parse_hex_mads("01 0xzz").unwrap_err();
        assert_eq!(
            e,
            HexError::NotHex {
                line: 1,
                column: 6,
                found: 'z'
            }
        );
        assert!(e.to_string().contains("'z'"));
    }

    #[test]
    fn empty_input_is_an_error() {
        assert_eq!(parse_hex_mads(""), Err(HexError::Empty));
        assert_eq!(parse_hex_mads("\n # nothing\n\n"), Err(HexError::Empty));
    }

    #[test]
    fn to_hex_writes_lowercase_pairs() {
        assert_eq!(to_hex(&[0, 0xAB, 0x7f]), "00ab7f");
    }
}
