//! The store's clock as its answers state it: the HTTP `Date` header (RFC 9110 §5.6.7), which every S3
//! answer carries, in seconds. Leases are judged by the store's clock, never by this machine's wall clock
//! (SPEC §5, docs/protocol.md "Clocks"), so this is the one place a date from the network is read. Pure and
//! total: anything that is not a valid HTTP date is `None` (the answer then teaches nothing about time).

use crate::sigv4::AmzDate;

/// Unix milliseconds of an HTTP date: the preferred IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and the
/// two obsolete forms recipients must accept, RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`). Whole seconds: the store's clock was somewhere in `[result, result + 1000)`
/// when it wrote the header. Dates before 1970 or after 9999 are `None`.
pub fn parse_http_date(value: &str) -> Option<u64> {
    let value = value.trim();
    let (weekday, rest) = value.split_once([',', ' '])?;
    if !(3..=9).contains(&weekday.len()) || !weekday.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let parts: Vec<&str> = rest.split(' ').filter(|p| !p.is_empty()).collect();
    let (day, month, year, time) = match parts.as_slice() {
        // IMF-fixdate: `, 06 Nov 1994 08:49:37 GMT`.
        [day, month, year, time, "GMT"] if value.as_bytes()[weekday.len()] == b',' && year.len() == 4 => {
            (number(day, 2)?, month_number(month)?, number(year, 4)?, *time)
        }
        // RFC 850: `, 06-Nov-94 08:49:37 GMT`; a two-digit year is 1970..=2069.
        [date, time, "GMT"] if value.as_bytes()[weekday.len()] == b',' => {
            let mut fields = date.split('-');
            let (day, month, yy) = (fields.next()?, fields.next()?, fields.next()?);
            if fields.next().is_some() {
                return None;
            }
            let yy = number(yy, 2)?;
            (number(day, 2)?, month_number(month)?, if yy < 70 { 2000 + yy } else { 1900 + yy }, *time)
        }
        // asctime: ` Nov  6 08:49:37 1994` (the day padded with a space, which `split` dropped).
        [month, day, time, year] if value.as_bytes()[weekday.len()] == b' ' && (1..=2).contains(&day.len()) => {
            (digits(day)?, month_number(month)?, number(year, 4)?, *time)
        }
        _ => return None,
    };
    let mut hms = time.split(':');
    let (h, m, s) = (number(hms.next()?, 2)?, number(hms.next()?, 2)?, number(hms.next()?, 2)?);
    // 60: a leap second, which the header may show and Unix time folds into the next second.
    if hms.next().is_some() || h > 23 || m > 59 || s > 60 || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day)?;
    Some(((days * 86_400) + h * 3600 + m * 60 + s) * 1000)
}

/// The IMF-fixdate of Unix ms (whole seconds, as stores write their `Date`): what `parse_http_date` reads
/// back, for stores simulated in tests and the R2 binding's writes (`s3::r2::answer_put`).
pub fn format_http_date(ms: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let secs = ms / 1000;
    let days = secs / 86_400;
    let amz = AmzDate::from_unix_ms(ms);
    let ymd = amz.as_str();
    let month = ymd[4..6].parse::<usize>().unwrap_or(1);
    let rem = secs % 86_400;
    format!(
        "{}, {} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        &ymd[6..8],
        MONTHS[month.clamp(1, 12) - 1],
        &ymd[0..4],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Exactly `width` ASCII digits.
fn number(s: &str, width: usize) -> Option<u64> {
    if s.len() == width { digits(s) } else { None }
}

fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.bytes().try_fold(0u64, |acc, d| acc.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

fn month_number(name: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    MONTHS.iter().position(|m| *m == name).map(|i| i as u64 + 1)
}

fn days_in_month(year: u64, month: u64) -> u64 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's `days_from_civil`); `None` before 1970
/// or after 9999.
fn days_from_civil(year: u64, month: u64, day: u64) -> Option<u64> {
    if !(1970..=9999).contains(&year) {
        return None;
    }
    let y = if month <= 2 { year - 1 } else { year };
    let (era, yoe) = (y / 400, y % 400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms_of_rfc_9110() {
        let t = Some(784_111_777_000);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), t);
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), t);
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), t);
        assert_eq!(parse_http_date("  Wed, 02 Dec 2026 02:51:17 GMT "), Some(1_796_179_877_000));
        assert_eq!(parse_http_date("Thursday, 01-Jan-70 00:00:00 GMT"), Some(0));
        assert_eq!(parse_http_date("Tuesday, 01-Jan-69 00:00:00 GMT"), Some(3_124_224_000_000), "two digits: 2069");
        assert_eq!(parse_http_date("Thu, 29 Feb 2024 23:59:60 GMT"), Some(1_709_251_200_000), "a leap second");
    }

    #[test]
    fn every_day_of_four_centuries_agrees_with_the_signers_calendar() {
        const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        for day in (0..146_097u64).step_by(7) {
            let ms = day * 86_400_000 + 45_296_000;
            let amz = AmzDate::from_unix_ms(ms);
            let s = amz.as_str();
            let (year, month, dom) = (&s[0..4], &s[4..6], &s[6..8]);
            let month = MONTHS[month.parse::<usize>().unwrap() - 1];
            let header = format!("Xyz, {dom} {month} {year} 12:34:56 GMT");
            assert_eq!(parse_http_date(&header), Some(ms), "{header}");
        }
    }

    #[test]
    fn formatted_dates_read_back_to_the_second() {
        assert_eq!(format_http_date(784_111_777_999), "Sun, 06 Nov 1994 08:49:37 GMT");
        for ms in [0, 951_782_400_000, 1_709_251_199_000, 1_700_000_000_000 + 86_400_000 * 400 + 1] {
            assert_eq!(parse_http_date(&format_http_date(ms)), Some(ms / 1000 * 1000), "{ms}");
        }
    }

    #[test]
    fn anything_else_teaches_nothing() {
        for bad in [
            "",
            "GMT",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37 +0000",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 31 Nov 1994 08:49:37 GMT",
            "Sun, 29 Feb 1900 08:49:37 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 08:49:37:00 GMT",
            "Sun, 06 Nov 1994 +8:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sunday, 06-Nov-94-1 08:49:37 GMT",
            "Sun Nov  6 08:49:37 94",
            "Sun Nov 006 08:49:37 1994",
            "S, 06 Nov 1994 08:49:37 GMT",
            "1994-11-06T08:49:37Z",
            "1796179877",
            "Sun, 06 Nov 1994 08:49:37 GMT GMT",
            "Ünï, 06 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad:?}");
        }
    }
}
