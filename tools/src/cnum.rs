//! C's number parsers as infiniband-diags uses them on arguments and
//! files: `strtoul` / `strtol` / `strtoull` with base 0 (`0x` hex,
//! leading-`0` octal, else decimal), and `atoi` (base 10). One scanner
//! ([`scan`]) reads the number; the functions differ only in what they
//! make of its sign, its overflow and the text after it (trailing
//! garbage is ignored by `strtoul(s, NULL, 0)`, rejected by the callers
//! that check `*end`: [`c_strtoul_full`]).

/// What C's `strto*` functions read from a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scan {
    /// A `-` sign was read.
    pub negative: bool,
    /// The value of the digits (saturated at `u64::MAX`).
    pub magnitude: u64,
    /// The digits did not fit in 64 bits (`ERANGE`).
    pub overflow: bool,
    /// How many digits were read (0: no conversion, `*end == s`).
    pub digits: usize,
    /// Byte offset of the first character not read (`*end - s`).
    pub end: usize,
}

const C_SPACE: [char; 6] = [' ', '\t', '\n', '\r', '\x0b', '\x0c'];

/// Scans `s` as `strtoull(s, &end, base)` does for base 0 (`base0`) or
/// base 10: leading blanks, an optional sign, for base 0 a `0x`/`0X`
/// prefix (only when a hex digit follows) or a leading `0` (octal), then
/// the digits up to the first one invalid in the base.
#[must_use]
pub fn scan(s: &str, base0: bool) -> Scan {
    let start = s.len() - s.trim_start_matches(C_SPACE).len();
    let mut i = start;
    let b = s.as_bytes();
    let negative = b.get(i) == Some(&b'-');
    if matches!(b.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let mut radix = 10u32;
    if base0 && b.get(i) == Some(&b'0') {
        radix = 8;
        if matches!(b.get(i + 1), Some(b'x' | b'X'))
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            radix = 16;
            i += 2;
        }
    }
    let (mut magnitude, mut overflow, mut digits) = (0u64, false, 0usize);
    while let Some(d) = b.get(i).and_then(|c| char::from(*c).to_digit(radix)) {
        match magnitude
            .checked_mul(u64::from(radix))
            .and_then(|x| x.checked_add(u64::from(d)))
        {
            Some(x) => magnitude = x,
            None => {
                magnitude = u64::MAX;
                overflow = true;
            }
        }
        digits += 1;
        i += 1;
    }
    Scan {
        negative,
        magnitude,
        overflow,
        digits,
        end: if digits == 0 { 0 } else { i },
    }
}

impl Scan {
    /// The `unsigned long long` C returns: `ULLONG_MAX` on overflow, a
    /// negative number modulo 2^64.
    #[must_use]
    pub fn unsigned(&self) -> u64 {
        if self.overflow {
            u64::MAX
        } else if self.negative {
            self.magnitude.wrapping_neg()
        } else {
            self.magnitude
        }
    }

    /// The `long` C returns, saturated at the 64-bit range.
    #[must_use]
    pub fn signed(&self) -> i64 {
        let m = i64::try_from(self.magnitude).unwrap_or(i64::MAX);
        if self.negative {
            -m
        } else {
            m
        }
    }
}

/// C `strtoull(s, &end, 0)`: the value and the text after the number,
/// or `None` when no digit was read.
#[must_use]
pub fn c_strtoull_rest(s: &str) -> Option<(u64, &str)> {
    let n = scan(s, true);
    (n.digits > 0).then(|| (n.unsigned(), &s[n.end..]))
}

/// C `strtoul(s, NULL, 0)`: trailing text ignored, 0 when nothing
/// parses, a leading `-` negating modulo 2^64, `ULONG_MAX` on overflow.
#[must_use]
pub fn c_strtoul(s: &str) -> u64 {
    scan(s, true).unsigned()
}

/// C `strtoul` with an end check (`*end == '\0'`): the value if all of
/// `s` is the number.
#[must_use]
pub fn c_strtoul_full(s: &str) -> Option<u64> {
    let n = scan(s, true);
    (n.digits > 0 && n.end == s.len()).then(|| n.unsigned())
}

/// C `strtol(s, NULL, 0)`: trailing text ignored, 0 when nothing parses,
/// saturating on overflow.
#[must_use]
pub fn c_strtol(s: &str) -> i64 {
    scan(s, true).signed()
}

/// C `atoi`: decimal, leading blanks and sign, stops at the first
/// non-digit, 0 when nothing parses (wrapping like a 32-bit int).
#[must_use]
pub fn c_atoi(s: &str) -> i32 {
    scan(s, false).signed() as i32
}

/// `-P` as `strtoul(optarg, NULL, 0)` into an int.
#[must_use]
pub fn parse_port_arg(s: &str) -> u32 {
    c_strtoul(s) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strto_helpers_follow_c() {
        assert_eq!(c_strtoul("0x10"), 16);
        assert_eq!(c_strtoul("010"), 8);
        assert_eq!(c_strtoul("12abc"), 12);
        assert_eq!(c_strtoul("-1"), u64::MAX);
        assert_eq!(c_strtoul("zz"), 0);
        assert_eq!(c_strtoul("0x1ffffffffffffffff"), u64::MAX);
        assert_eq!(c_strtoul_full("12abc"), None);
        assert_eq!(c_strtoul_full("0x1f"), Some(31));
        assert_eq!(c_strtoul_full("0x"), None);
        assert_eq!(c_strtoul_full("08"), None);
        assert_eq!(c_strtoul_full("+"), None);
        assert_eq!(c_strtoul_full(" 017"), Some(15));
        assert_eq!(c_atoi("0x5"), 0);
        assert_eq!(c_atoi(" 7,"), 7);
        assert_eq!(c_atoi("010"), 10);
        assert_eq!(c_atoi("300") as u8, 44);
    }

    #[test]
    fn strtol_follows_c_prefix_rules() {
        assert_eq!(c_strtol("0xC000"), 0xC000);
        assert_eq!(c_strtol("49152"), 49152);
        assert_eq!(c_strtol("010"), 8);
        assert_eq!(c_strtol("12abc"), 12);
        assert_eq!(c_strtol("abc"), 0);
        assert_eq!(c_strtol("-3"), -3);
        assert_eq!(c_strtol("0x"), 0);
        assert_eq!(c_strtol("99999999999999999999"), i64::MAX);
    }

    #[test]
    fn strtoull_rest_is_the_text_after_the_number() {
        assert_eq!(c_strtoull_rest("0x10 name"), Some((16, " name")));
        assert_eq!(c_strtoull_rest("0xg"), Some((0, "xg")));
        assert_eq!(c_strtoull_rest("017#c"), Some((15, "#c")));
        assert_eq!(c_strtoull_rest("name"), None);
        assert_eq!(
            c_strtoull_rest("99999999999999999999 x"),
            Some((u64::MAX, " x"))
        );
    }
}
