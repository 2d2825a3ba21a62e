//! The C library's number parsing, as ibsim uses it on topology lines
//! (`strtoul(s, NULL, 0)`, `atoi`), so that a file means the same number
//! here as there: leading white space, an optional sign, then base 0
//! (`0x` hex, leading `0` octal, else decimal), stopping at the first
//! character that is not a digit of the base.

/// What `strtoul(s, &end, 0)` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CNum {
    /// The magnitude read (saturated at `u64::MAX` on overflow).
    pub value: u64,
    /// A `-` sign preceded the digits.
    pub negative: bool,
    /// At least one digit was read.
    pub digits: bool,
    /// The digits did not fit in 64 bits.
    pub overflow: bool,
    /// Byte offset just past the last character consumed.
    pub end: usize,
}

/// C `isspace` in the "C" locale.
pub(crate) fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `strtoul(s, &end, base)` with base 0 (auto) or 10.
pub(crate) fn strtoul(s: &str, auto_base: bool) -> CNum {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_c_space(b[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        negative = b[i] == b'-';
        i += 1;
    }
    let mut base = 10u64;
    if auto_base && i < b.len() && b[i] == b'0' {
        if b.get(i + 1).is_some_and(|c| *c == b'x' || *c == b'X')
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            base = 16;
            i += 2;
        } else {
            base = 8;
        }
    }
    let mut value = 0u64;
    let mut digits = false;
    let mut overflow = false;
    while i < b.len() {
        let d = match b[i] {
            c @ b'0'..=b'9' => u64::from(c - b'0'),
            c @ b'a'..=b'f' => u64::from(c - b'a') + 10,
            c @ b'A'..=b'F' => u64::from(c - b'A') + 10,
            _ => break,
        };
        if d >= base {
            break;
        }
        digits = true;
        match value.checked_mul(base).and_then(|v| v.checked_add(d)) {
            Some(v) => value = v,
            None => {
                overflow = true;
                value = u64::MAX;
            }
        }
        i += 1;
    }
    if !digits {
        // Nothing converted: C sets end to the start of the string.
        return CNum {
            value: 0,
            negative: false,
            digits: false,
            overflow: false,
            end: 0,
        };
    }
    CNum {
        value,
        negative,
        digits,
        overflow,
        end: i,
    }
}

/// `atoi(s)` as a wide integer (glibc's `atoi` is `strtol(s, NULL, 10)`),
/// saturated to the `i64` range; 0 when there are no digits.
pub(crate) fn atoi(s: &str) -> i64 {
    let n = strtoul(s, false);
    let mag = i64::try_from(n.value).unwrap_or(i64::MAX);
    if n.negative {
        -mag
    } else {
        mag
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_zero_reads_hex_octal_and_decimal_like_c() {
        assert_eq!(
            strtoul("0x2c90300a1b2c3(2c9)", true).value,
            0x0002_c903_00a1_b2c3
        );
        assert_eq!(strtoul("0x2c90300a1b2c3(2c9)", true).end, 15);
        assert_eq!(strtoul(" 010", true).value, 8);
        assert_eq!(strtoul("010", false).value, 10);
        assert_eq!(strtoul("\t36 \"x\"", true).value, 36);
        assert_eq!(
            strtoul("0x", true).value,
            0,
            "0 then an x that is not a prefix"
        );
        assert!(strtoul("0x", true).digits);
        assert_eq!(strtoul("09", true).value, 0, "octal stops at 9");
    }

    #[test]
    fn no_digits_overflow_and_sign_are_reported() {
        let n = strtoul("abc", true);
        assert!(!n.digits);
        assert_eq!((n.value, n.end), (0, 0));
        let n = strtoul("0x1ffffffffffffffff", true);
        assert!(n.overflow);
        assert_eq!(n.value, u64::MAX);
        assert!(strtoul("-3", true).negative);
        assert_eq!(atoi("-3]"), -3);
        assert_eq!(atoi("12]\"x\""), 12);
        assert_eq!(atoi("]"), 0);
        assert_eq!(atoi("99999999999999999999999"), i64::MAX);
    }
}
