//! C's `ctime()` for the "generated on" line of a topology file: local
//! time as `"Sun Nov 22 00:12:04 2026\n"`.
//!
//! The local zone is read the way glibc finds it for the common cases:
//! `TZ` unset → `/etc/localtime`; `TZ=":Area/City"` or `"Area/City"` →
//! that zoneinfo file; `TZ` = `UTC`, `UTC0`, `GMT`, empty → UTC. The
//! offset is the one of the last transition at or before now in the
//! TZif file (version 2+ 64-bit data when present); POSIX rule strings
//! (the file footer, or `TZ=EST5EDT`-style values) are not evaluated:
//! those fall back to the last transition, or to UTC.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Days since 1970-01-01 → (year, month 1-12, day 1-31).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `ctime`-style text of `secs` seconds since the epoch, already shifted
/// to local time.
#[must_use]
pub fn format_ctime(local_secs: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = local_secs.div_euclid(86_400);
    let rem = local_secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let wd = DAYS[days.rem_euclid(7) as usize];
    let mon = MONTHS[(m as usize).saturating_sub(1).min(11)];
    format!(
        "{wd} {mon} {d:>2} {:02}:{:02}:{:02} {y}\n",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn be_i32(b: &[u8], at: usize) -> Option<i64> {
    let s = b.get(at..at + 4)?;
    Some(i64::from(i32::from_be_bytes([s[0], s[1], s[2], s[3]])))
}

fn be_i64(b: &[u8], at: usize) -> Option<i64> {
    let s = b.get(at..at + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(i64::from_be_bytes(a))
}

/// The UTC offset (seconds) a TZif file gives for `now`.
#[must_use]
pub fn tzif_offset(data: &[u8], now: i64) -> Option<i64> {
    if data.get(0..4)? != b"TZif" {
        return None;
    }
    let counts = |base: usize| -> Option<[usize; 6]> {
        let mut c = [0usize; 6];
        for (i, v) in c.iter_mut().enumerate() {
            *v = usize::try_from(be_i32(data, base + 20 + 4 * i)?).ok()?;
        }
        Some(c)
    };
    let c1 = counts(0)?;
    let [isut, isstd, leap, timecnt, typecnt, charcnt] = c1;
    let v1_len = timecnt * 5 + typecnt * 6 + charcnt + leap * 8 + isstd + isut;
    let version = *data.get(4)?;
    // Version 2+: a second header with 64-bit times follows the v1 body.
    let (base, tsize, c) = if version >= b'2' {
        let b2 = 44 + v1_len;
        (b2, 8usize, counts(b2)?)
    } else {
        (0, 4usize, c1)
    };
    let [_, _, _, timecnt, typecnt, _] = c;
    let times = base + 44;
    let idxs = times + timecnt * tsize;
    let types = idxs + timecnt;
    let mut ty = 0usize;
    // First non-DST type is the default before the first transition;
    // plain type 0 is what glibc uses in practice.
    for i in 0..timecnt {
        let t = if tsize == 8 {
            be_i64(data, times + i * 8)?
        } else {
            be_i32(data, times + i * 4)?
        };
        if t > now {
            break;
        }
        ty = usize::from(*data.get(idxs + i)?);
    }
    if ty >= typecnt {
        return None;
    }
    be_i32(data, types + ty * 6)
}

fn zone_file() -> Option<PathBuf> {
    match std::env::var("TZ") {
        Err(_) => Some(PathBuf::from("/etc/localtime")),
        Ok(tz) => {
            let name = tz.strip_prefix(':').unwrap_or(&tz);
            if name.is_empty() || matches!(name, "UTC" | "UTC0" | "GMT" | "GMT0" | "UCT") {
                return None;
            }
            if name.starts_with('/') {
                Some(PathBuf::from(name))
            } else {
                let p = Path::new("/usr/share/zoneinfo").join(name);
                p.exists().then_some(p)
            }
        }
    }
}

/// `ctime(time(NULL))` in the local zone.
#[must_use]
pub fn ctime_now() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0));
    let off = zone_file()
        .and_then(|p| {
            crate::limits::read_file(p, crate::limits::MAX_ZONE_FILE_LEN, "a time-zone file").ok()
        })
        .and_then(|d| tzif_offset(&d, now))
        .unwrap_or(0);
    format_ctime(now + off)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_ctime() {
        assert_eq!(format_ctime(0), "Thu Jan  1 00:00:00 1970\n");
        // 2026-11-22 00:12:04 UTC was a Sunday.
        assert_eq!(format_ctime(1_795_306_324), "Sun Nov 22 00:12:04 2026\n");
        assert_eq!(format_ctime(951_782_400), "Tue Feb 29 00:00:00 2000\n");
    }

    /// A version-1 TZif body: one transition at `at` from type 0 (UTC+1)
    /// to type 1 (UTC+2).
    fn tzif_v1(at: i32) -> Vec<u8> {
        let mut d = b"TZif".to_vec();
        d.push(0);
        d.extend([0u8; 15]);
        // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
        for c in [0u32, 0, 0, 1, 2, 4] {
            d.extend(c.to_be_bytes());
        }
        d.extend(at.to_be_bytes());
        d.push(1);
        d.extend(3600i32.to_be_bytes());
        d.extend([0, 0]);
        d.extend(7200i32.to_be_bytes());
        d.extend([1, 0]);
        d.extend(b"AB\0\0");
        d
    }

    #[test]
    fn tzif_offset_follows_the_last_transition() {
        let d = tzif_v1(1000);
        assert_eq!(tzif_offset(&d, 999), Some(3600));
        assert_eq!(tzif_offset(&d, 1000), Some(7200));
        assert_eq!(tzif_offset(&d, 5_000_000), Some(7200));
        assert_eq!(tzif_offset(b"nope", 0), None);
        assert_eq!(tzif_offset(&d[..30], 0), None);
    }
}
