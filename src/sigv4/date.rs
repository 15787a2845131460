//! The signing time, `YYYYMMDDTHHMMSSZ` (UTC). Parsing checks real calendar ranges; conversion from Unix
//! milliseconds uses a proleptic Gregorian civil-from-days computation (no clock is ever read here).
//! Must never accept a string whose first 8 bytes are not a valid date: they become the credential scope.

use crate::error::{joined, Error, Result};

/// `YYYYMMDDTHHMMSSZ`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmzDate(String);

/// The last instant `YYYY` can express: 9999-12-31T23:59:59.999Z.
const MAX_MS: u64 = 253_402_300_799_999;

fn is_leap(year: u32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// (year, month, day) for a count of days since 1970-01-01 (Hinnant's `civil_from_days`, non-negative
/// input only, which keeps the arithmetic unsigned).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

impl AmzDate {
    /// Parses `20150830T123600Z`; anything else is `invalid-input`.
    pub fn parse(s: &str) -> Result<Self> {
        let bad = |why: &str| Error::invalid_value("datetime ", s, &joined(&[" is not YYYYMMDDTHHMMSSZ: ", why]));
        let b = s.as_bytes();
        if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
            return Err(bad("wrong shape"));
        }
        let num = |from: usize, to: usize| -> Result<u32> {
            b[from..to].iter().try_fold(0u32, |acc, &d| {
                if d.is_ascii_digit() {
                    Ok(acc * 10 + u32::from(d - b'0'))
                } else {
                    Err(bad("non-digit"))
                }
            })
        };
        let (year, month, day) = (num(0, 4)?, num(4, 6)?, num(6, 8)?);
        let (hour, minute, second) = (num(9, 11)?, num(11, 13)?, num(13, 15)?);
        if !(1..=12).contains(&month) {
            return Err(bad("month out of range"));
        }
        if day == 0 || day > days_in_month(year, month) {
            return Err(bad("day out of range"));
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err(bad("time out of range"));
        }
        Ok(AmzDate(s.to_owned()))
    }

    /// From Unix milliseconds (what `Date.now()` gives). Instants after year 9999 cannot be written as
    /// `YYYY` and saturate to 9999-12-31T23:59:59Z (a signature that far out fails loudly at the store).
    pub fn from_unix_ms(ms: u64) -> Self {
        let secs = ms.min(MAX_MS) / 1000;
        let (year, month, day) = civil_from_days(secs / 86_400);
        let rem = secs % 86_400;
        // Digits written by hand: `format!` is several times slower, and this runs on every signature.
        let mut out = *b"00000000T000000Z";
        for (at, width, value) in [(0, 4, year), (4, 2, month), (6, 2, day), (9, 2, rem / 3600), (11, 2, rem % 3600 / 60), (13, 2, rem % 60)] {
            let mut v = value;
            for slot in out[at..at + width].iter_mut().rev() {
                *slot = b'0' + (v % 10) as u8;
                v /= 10;
            }
        }
        // ASCII digits by construction, so this never falls back to the empty string.
        AmzDate(String::from_utf8(out.to_vec()).unwrap_or_default())
    }

    /// The full `YYYYMMDDTHHMMSSZ` string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `YYYYMMDD` part used in the credential scope.
    pub fn date(&self) -> &str {
        // Always 16 ASCII bytes (both constructors guarantee it), so index 8 is a char boundary.
        self.0.get(..8).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_valid_dates() {
        for s in [
            "20150830T123600Z",
            "20000229T000000Z",
            "19700101T000000Z",
            "99991231T235959Z",
        ] {
            let d = AmzDate::parse(s).unwrap();
            assert_eq!(d.as_str(), s);
            assert_eq!(d.date(), &s[..8]);
        }
    }

    #[test]
    fn rejects_malformed_and_out_of_range() {
        for s in [
            "",
            "20150830T123600",
            "20150830T123600z",
            "20150830 123600Z",
            "2015-08-30T12:36:00Z",
            "2015083OT123600Z",
            "20150830T12360€Z",
            "20151330T123600Z",
            "20150030T123600Z",
            "20150800T123600Z",
            "20150431T123600Z",
            "19000229T000000Z",
            "20150229T000000Z",
            "20150830T243600Z",
            "20150830T126000Z",
            "20150830T123660Z",
            "+0150830T123600Z",
        ] {
            let err = AmzDate::parse(s).unwrap_err();
            assert_eq!(err.code(), "invalid-input", "{s}");
        }
    }

    #[test]
    fn from_unix_ms_matches_known_instants() {
        assert_eq!(AmzDate::from_unix_ms(0).as_str(), "19700101T000000Z");
        assert_eq!(
            AmzDate::from_unix_ms(1_440_938_160_000).as_str(),
            "20150830T123600Z"
        );
        assert_eq!(
            AmzDate::from_unix_ms(951_782_400_999).as_str(),
            "20000229T000000Z"
        );
        assert_eq!(
            AmzDate::from_unix_ms(1_709_251_199_000).as_str(),
            "20240229T235959Z"
        );
        assert_eq!(
            AmzDate::from_unix_ms(4_107_542_400_000).as_str(),
            "21000301T000000Z"
        );
        assert_eq!(AmzDate::from_unix_ms(u64::MAX).as_str(), "99991231T235959Z");
        assert_eq!(
            AmzDate::from_unix_ms(MAX_MS + 1).as_str(),
            "99991231T235959Z"
        );
    }

    #[test]
    fn from_unix_ms_round_trips_through_parse_for_every_day_of_four_centuries() {
        // Every day from 1970 to 2370 must format as a date `parse` accepts, one day after the other.
        let mut prev = String::new();
        for day in 0..146_097u64 {
            let d = AmzDate::from_unix_ms(day * 86_400_000 + 45_296_000);
            assert_eq!(AmzDate::parse(d.as_str()).unwrap(), d);
            assert!(d.as_str() > prev.as_str());
            assert!(d.as_str().ends_with("T123456Z"));
            prev = d.as_str().to_owned();
        }
        assert_eq!(prev, "23691231T123456Z");
    }
}
