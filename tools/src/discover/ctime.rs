//! C's `ctime()` for the "generated on" line of a topology file: local
//! time as `"Sun Nov 22 00:12:04 2026\n"`.
//!
//! The local zone is the one glibc's `localtime` uses, found by `jiff`
//! the same way: `TZ` (a zone name with or without a leading `:`, a
//! path to a TZif file, or a POSIX rule string such as `EST5EDT`), else
//! `/etc/localtime`; UTC when none can be read. A `TZ` naming a file
//! that is not a regular file of at most
//! [`MAX_ZONE_FILE_LEN`](crate::limits::MAX_ZONE_FILE_LEN) bytes
//! (`TZ=/dev/zero`) counts as UTC instead of being read.

use jiff::tz::TimeZone;
use jiff::Timestamp;

/// `ctime`'s format (`"%a %b %e %H:%M:%S %Y\n"`).
const CTIME: &str = "%a %b %e %H:%M:%S %Y\n";

/// `ctime` text of the instant `secs` seconds since the epoch, in `tz`.
#[must_use]
pub fn format_ctime(secs: i64, tz: &TimeZone) -> String {
    let t = Timestamp::from_second(secs).unwrap_or(Timestamp::UNIX_EPOCH);
    t.to_zoned_datetime(tz.clone()).strftime(CTIME).to_string()
}

/// True when `TZ` names a file that must not be read whole: not a
/// regular file, or longer than the limit.
fn tz_file_too_odd() -> bool {
    let Some(tz) = std::env::var_os("TZ") else {
        return false;
    };
    let tz = tz.to_string_lossy();
    let path = std::path::Path::new(tz.strip_prefix(':').unwrap_or(&tz));
    match std::fs::metadata(path) {
        Ok(m) => !m.is_file() || m.len() > crate::limits::MAX_ZONE_FILE_LEN,
        Err(_) => false,
    }
}

/// `ctime(time(NULL))` in the local zone.
#[must_use]
pub fn ctime_now() -> String {
    format_ctime(Timestamp::now().as_second(), &local_zone())
}

/// The zone [`ctime_now`] prints in.
fn local_zone() -> TimeZone {
    if tz_file_too_odd() {
        TimeZone::UTC
    } else {
        TimeZone::try_system().unwrap_or(TimeZone::UTC)
    }
}

/// [`ctime_now`] at the time the returned function is called, the local
/// zone found meanwhile on another thread (finding it may read the zone
/// database: milliseconds a command that first discovers a fabric need
/// not wait for). Without a thread, the zone is found at the call.
pub fn ctime_later() -> impl FnOnce() -> String {
    let zone = std::thread::Builder::new()
        .name("local-zone".into())
        .spawn(local_zone)
        .ok();
    move || {
        let tz = zone.and_then(|t| t.join().ok()).unwrap_or_else(local_zone);
        format_ctime(Timestamp::now().as_second(), &tz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (seconds since the epoch, zone, what `ctime()` prints there).
    fn cases() -> Vec<(i64, TimeZone, &'static str)> {
        let est = TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").expect("a POSIX TZ");
        vec![
            (0, TimeZone::UTC, "Thu Jan  1 00:00:00 1970\n"),
            // 2026-11-22 00:12:04 UTC was a Sunday.
            (1_795_306_324, TimeZone::UTC, "Sun Nov 22 00:12:04 2026\n"),
            (951_782_400, TimeZone::UTC, "Tue Feb 29 00:00:00 2000\n"),
            // POSIX rules and zone names shift as localtime does:
            // 2026-07-01 12:00:00 UTC is 08:00 EDT; 2026-01-01 12:00 UTC
            // 07:00 EST.
            (1_782_907_200, est.clone(), "Wed Jul  1 08:00:00 2026\n"),
            (1_767_268_800, est, "Thu Jan  1 07:00:00 2026\n"),
        ]
    }

    #[test]
    fn ctime_later_prints_what_ctime_now_does() {
        let later = ctime_later();
        let (a, b) = (later(), ctime_now());
        // The same zone and format; the seconds may have ticked between.
        assert_eq!(a.len(), b.len());
        assert_eq!(a.get(..11), b.get(..11));
        assert_eq!(a.get(19..), b.get(19..));
    }

    #[test]
    fn formats_like_ctime_in_utc_and_under_posix_rules() {
        for (secs, tz, want) in cases() {
            assert_eq!(format_ctime(secs, &tz), want, "{secs}");
        }
    }
}
