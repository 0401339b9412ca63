//! Calendar dates (`YYYY-MM-DD`) as day numbers, for comparing a manifest set's date with
//! another set's (no rollback) and with today's (`manifests-stale`).
//!
//! Pure: the caller reads the clock and passes a [`SystemTime`] in, so rules and tests can use
//! any day. No time zones: manifest dates are calendar days, and a day's error either way does
//! not change a 90-day verdict. Depends on std only.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// A day of the proleptic Gregorian calendar, ordered by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    /// Days since 1970-01-01 (negative before).
    days: i64,
}

impl Date {
    /// 1970-01-01: the start for a running maximum.
    pub const EPOCH: Date = Date { days: 0 };

    /// Parses `YYYY-MM-DD`, refusing days a month does not have (`2026-02-30`).
    #[must_use]
    pub fn parse(text: &str) -> Option<Date> {
        let bytes = text.as_bytes();
        if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
            return None;
        }
        let digits = |range: std::ops::Range<usize>| -> Option<u32> {
            let part = &text[range];
            part.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| part.parse().ok())
                .flatten()
        };
        let year = digits(0..4)?;
        let month = digits(5..7)?;
        let day = digits(8..10)?;
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        Some(Date {
            days: days_from_civil(i64::from(year), month, day),
        })
    }

    /// The UTC calendar day of a point in time; `None` for a clock set before 1970.
    #[must_use]
    pub fn from_system_time(time: SystemTime) -> Option<Date> {
        let secs = time.duration_since(UNIX_EPOCH).ok()?.as_secs();
        Some(Date {
            days: i64::try_from(secs / 86_400).ok()?,
        })
    }

    /// Whole days from `earlier` to `self` (negative when `earlier` is later).
    #[must_use]
    pub fn days_since(self, earlier: Date) -> i64 {
        self.days - earlier.days
    }

    /// The day after this one.
    #[must_use]
    pub fn next_day(self) -> Date {
        Date {
            days: self.days + 1,
        }
    }
}

/// A point in time as RFC 3339 in UTC, to the second (`2026-12-01T10:59:07Z`): fixed width,
/// so two such stamps compare as strings in time order.
#[must_use]
pub fn utc_timestamp(secs_since_epoch: u64) -> String {
    let days = i64::try_from(secs_since_epoch / 86_400).unwrap_or(i64::MAX / 2);
    let rest = secs_since_epoch % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (year, month, day) = civil_from_days(self.days);
        write!(f, "{year:04}-{month:02}-{day:02}")
    }
}

fn is_leap(year: u32) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// The two conversions are Howard Hinnant's `days_from_civil` / `civil_from_days`
// (https://howardhinnant.github.io/date_algorithms.html): exact for every Gregorian date, no
// tables, no floating point. Eras are 400-year cycles of 146 097 days starting on March 1st, so
// the leap day falls at the end of a cycle year.

fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        // 2024-02-29 is a leap day; 1709251199 is its last second (date -u -d @1709251199).
        assert_eq!(utc_timestamp(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(utc_timestamp(1_709_251_200), "2024-03-01T00:00:00Z");
    }
    use std::time::Duration;

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
        assert_eq!(Date::parse("1970-01-01").map(|d| d.days), Some(0));
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
