//! Dates and times, the one place gpu-doctor handles them, over [`jiff`]: calendar dates
//! (`YYYY-MM-DD`) for comparing a manifest set's date with another set's (no rollback) and with
//! today's (`manifests-stale`), and RFC 3339 times for reports' `generated_at`.
//!
//! Pure: the caller reads the clock and passes a [`SystemTime`] in, so rules and tests can use
//! any day. No time zones: manifest dates are calendar days, and a day's error either way does
//! not change a 90-day verdict; times are UTC or carry their own offset.

use std::fmt;
use std::time::SystemTime;

use jiff::Timestamp;
use jiff::civil;
use jiff::tz::Offset;

/// A day of the proleptic Gregorian calendar, ordered by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(civil::Date);

impl Date {
    /// 1970-01-01: the start for a running maximum.
    pub const EPOCH: Date = Date(civil::date(1970, 1, 1));

    /// Parses `YYYY-MM-DD`, refusing days a month does not have (`2026-02-30`) and the other
    /// spellings ISO 8601 allows (`20260101`, `+002026-01-01`): manifests write this one.
    #[must_use]
    pub fn parse(text: &str) -> Option<Date> {
        let bytes = text.as_bytes();
        let shape = bytes.len() == 10
            && bytes.iter().enumerate().all(|(i, b)| match i {
                4 | 7 => *b == b'-',
                _ => b.is_ascii_digit(),
            });
        if !shape {
            return None;
        }
        let year = text.get(0..4)?.parse().ok()?;
        let month = text.get(5..7)?.parse().ok()?;
        let day = text.get(8..10)?.parse().ok()?;
        civil::Date::new(year, month, day).ok().map(Date)
    }

    /// The UTC calendar day of a point in time; `None` for a clock set before 1970.
    #[must_use]
    pub fn from_system_time(time: SystemTime) -> Option<Date> {
        let time = Timestamp::try_from(time).ok()?;
        (time >= Timestamp::UNIX_EPOCH).then(|| Date(Offset::UTC.to_datetime(time).date()))
    }

    /// Whole days from `earlier` to `self` (negative when `earlier` is later).
    #[must_use]
    pub fn days_since(self, earlier: Date) -> i64 {
        // Between two dates jiff's span is in days; it cannot fail for dates jiff holds.
        self.0
            .since(earlier.0)
            .map_or(0, |span| i64::from(span.get_days()))
    }

    /// The day after this one (the same day at jiff's last day, 9999-12-31).
    #[must_use]
    pub fn next_day(self) -> Date {
        Date(self.0.tomorrow().unwrap_or(self.0))
    }
}

/// A point in time as RFC 3339 in UTC, to the second (`2026-12-01T10:59:07Z`); `None` past
/// the year 9999.
#[must_use]
pub fn utc_timestamp(secs_since_epoch: u64) -> Option<String> {
    let secs = i64::try_from(secs_since_epoch).ok()?;
    Some(Timestamp::from_second(secs).ok()?.to_string())
}

/// An RFC 3339 time (`2026-12-01T10:59:07Z`, `2026-12-01T12:59:07.5+02:00`, `t` or a space
/// between date and time) as an instant; `None` when it is not one. jiff also reads the other
/// forms ISO 8601 allows (no seconds, `20261201T...`); RFC 3339 has only this one, so the
/// separators are checked first.
#[must_use]
pub fn parse_timestamp(text: &str) -> Option<Timestamp> {
    let text = text.trim();
    let bytes = text.as_bytes();
    let sep = |i: usize, c: u8| bytes.get(i) == Some(&c);
    if !(sep(4, b'-') && sep(7, b'-') && sep(13, b':') && sep(16, b':')) {
        return None;
    }
    text.parse().ok()
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let stamp = |secs| utc_timestamp(secs).unwrap_or_default();
        assert_eq!(stamp(0), "1970-01-01T00:00:00Z");
        // 2024-02-29 is a leap day; 1709251199 is its last second (date -u -d @1709251199).
        assert_eq!(stamp(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(stamp(1_709_251_200), "2024-03-01T00:00:00Z");
    }
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn parses_and_prints_round_trip() {
        for text in [
            "1970-01-01",
            "2000-02-29",
            "2024-02-29",
            "2026-11-29",
            "1999-12-31",
            "2100-03-01",
        ] {
            let date = Date::parse(text).unwrap_or_else(|| panic!("{text} parses"));
            assert_eq!(date.to_string(), text);
        }
        assert_eq!(Date::parse("1970-01-01"), Some(Date::EPOCH));
    }

    #[test]
    fn refuses_what_is_not_a_day() {
        for text in [
            "2026-02-29",
            "2100-02-29",
            "2026-13-01",
            "2026-04-31",
            "2026-00-10",
            "2026-01-00",
            "2026-1-01",
            "26-01-01xx",
            "2026/01/01",
            "+026-01-01",
            "",
        ] {
            assert_eq!(Date::parse(text), None, "{text}");
        }
    }

    #[test]
    fn differences_cross_months_years_and_leap_days() {
        let d = |t: &str| Date::parse(t).expect("date");
        assert_eq!(d("2026-11-29").days_since(d("2026-08-31")), 90);
        assert_eq!(d("2025-03-01").days_since(d("2024-02-28")), 367);
        assert_eq!(d("2026-01-01").days_since(d("2026-01-02")), -1);
        assert_eq!(d("2026-12-31").next_day(), d("2027-01-01"));
        assert_eq!(d("2024-02-28").next_day(), d("2024-02-29"));
    }

    #[test]
    fn system_time_is_the_utc_day() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_996_799); // 2026-11-29T23:59:59Z
        assert_eq!(
            Date::from_system_time(t).map(|d| d.to_string()),
            Some("2026-11-29".to_string())
        );
        assert_eq!(
            Date::from_system_time(UNIX_EPOCH - Duration::from_secs(1)),
            None
        );
    }
}
