//! Durations: the one place that reads and writes them.
//!
//! Policy files write `500ms`, `30s`, `2m`, `1h`, `1m30s`, or `none` ([`parse_duration`]); the
//! command line's ages may also start with days, `7d` or `1d12h` ([`parse_age`]); and every
//! duration shown to a user, in a summary, an explanation or an error message, is written by
//! [`format_duration`], in the form a policy file reads back.
//!
//! The grammar is deliberately small: whole numbers followed by a unit, units from the
//! largest to the smallest, each at most once. There are no fractions (`1.5s` is `1500ms`),
//! no signs (a negative timeout is meaningless) and no spaces.

use std::time::Duration;

use crate::error::DurationError;

/// The most digits a number of a duration may have (the schema's pattern allows as many).
const MAX_DIGITS: usize = 12;

const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// The units of a policy duration, largest first, with their length in milliseconds.
const UNITS: [(&str, u64); 4] = [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)];

/// The units of an age: a policy duration's, after days.
const AGE_UNITS: [(&str, u64); 5] = [
    ("d", DAY_MS),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses a policy duration. `none` gives `Ok(None)` (no limit at all).
///
/// # Errors
///
/// [`DurationError`] when `text` is not of the form above, its units are out of order or
/// repeated, or the total does not fit in a [`Duration`].
///
/// ```
/// use std::time::Duration;
/// use toolgate_policy::parse_duration;
///
/// assert_eq!(parse_duration("1m30s").unwrap(), Some(Duration::from_secs(90)));
/// assert_eq!(parse_duration("500ms").unwrap(), Some(Duration::from_millis(500)));
/// assert_eq!(parse_duration("none").unwrap(), None);
/// assert!(parse_duration("-5s").is_err());
/// assert!(parse_duration("30 seconds").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Option<Duration>, DurationError> {
    if text == "none" {
        return Ok(None);
    }
    parse_units(text, &UNITS).map(Some)
}

/// Parses an age, such as the command line's `--older-than`: a policy duration that may start
/// with a number of days (`7d`, `1d12h`, `30m`). There is no `none`.
///
/// # Errors
///
/// As [`parse_duration`]; a text that is not of this form is [`DurationError::InvalidAge`].
///
/// ```
/// use std::time::Duration;
/// use toolgate_policy::parse_age;
///
/// assert_eq!(parse_age("1d12h").unwrap(), Duration::from_secs(36 * 3600));
/// assert!(parse_age("none").is_err());
/// ```
pub fn parse_age(text: &str) -> Result<Duration, DurationError> {
    parse_units(text, &AGE_UNITS).map_err(|error| match error {
        DurationError::Invalid { text } => DurationError::InvalidAge { text },
        other => other,
    })
}

/// Whole numbers, each followed by one of `units`, largest unit first, each at most once.
fn parse_units(text: &str, units: &[(&str, u64)]) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid {
        text: text.to_owned(),
    };
    let overflow = || DurationError::Overflow {
        text: text.to_owned(),
    };
    let mut rest = text;
    let mut total_ms: u64 = 0;
    // Index into `units` of the next unit allowed: each unit must be smaller than the last.
    let mut next_unit = 0;
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(invalid());
        }
        let (number, after) = rest.split_at(digits);
        let unit_len = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (unit, after) = after.split_at(unit_len);
        let index = units
            .iter()
            .position(|(name, _)| *name == unit)
            .ok_or_else(invalid)?;
        if index < next_unit {
            return Err(DurationError::UnitOrder {
                text: text.to_owned(),
            });
        }
        next_unit = index + 1;
        // At most 12 digits per unit, as the schema's pattern says. Without days no total
        // overflows (999999999999h is 3.6e18 ms, under u64::MAX with every smaller unit added);
        // with days the checked arithmetic below catches it.
        if digits > MAX_DIGITS {
            return Err(overflow());
        }
        let value: u64 = number.parse().map_err(|_| overflow())?;
        let ms = value.checked_mul(units[index].1).ok_or_else(overflow)?;
        total_ms = total_ms.checked_add(ms).ok_or_else(overflow)?;
        rest = after;
    }
    Ok(Duration::from_millis(total_ms))
}

/// Writes a duration the way [`parse_duration`] reads it, largest unit first (`1h2m3s4ms`);
/// `None` is `none`.
///
/// Policies count in whole milliseconds, so a sub-millisecond remainder is dropped. A
/// duration under one millisecond but above zero, which only code can make, is written in
/// microseconds (`250µs`) rather than as a misleading `0s`; policies do not read that form.
///
/// ```
/// use std::time::Duration;
/// use toolgate_policy::format_duration;
///
/// assert_eq!(format_duration(Some(Duration::from_millis(90_500))), "1m30s500ms");
/// assert_eq!(format_duration(Some(Duration::ZERO)), "0s");
/// assert_eq!(format_duration(Some(Duration::from_micros(250))), "250µs");
/// assert_eq!(format_duration(None), "none");
/// ```
pub fn format_duration(duration: Option<Duration>) -> String {
    let Some(duration) = duration else {
        return "none".to_owned();
    };
    let mut ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return if duration.is_zero() {
            "0s".to_owned()
        } else {
            format!("{}µs", duration.as_micros())
        };
    }
    let mut out = String::new();
    for (name, unit_ms) in UNITS {
        let count = ms / unit_ms;
        if count > 0 {
            out.push_str(&count.to_string());
            out.push_str(name);
            ms -= count * unit_ms;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unit_parses() {
        assert_eq!(parse_duration("1h"), Ok(Some(Duration::from_secs(3600))));
        assert_eq!(parse_duration("2m"), Ok(Some(Duration::from_secs(120))));
        assert_eq!(parse_duration("30s"), Ok(Some(Duration::from_secs(30))));
        assert_eq!(
            parse_duration("500ms"),
            Ok(Some(Duration::from_millis(500)))
        );
    }

    #[test]
    fn units_combine_largest_first() {
        assert_eq!(
            parse_duration("1h1m1s1ms"),
            Ok(Some(Duration::from_millis(3_661_001)))
        );
    }

    #[test]
    fn units_out_of_order_are_refused() {
        assert!(matches!(
            parse_duration("30s1m"),
            Err(DurationError::UnitOrder { .. })
        ));
        assert!(matches!(
            parse_duration("1s1s"),
            Err(DurationError::UnitOrder { .. })
        ));
    }

    #[test]
    fn none_means_no_duration() {
        assert_eq!(parse_duration("none"), Ok(None));
    }

    #[test]
    fn garbage_is_refused() {
        for text in [
            "", "30", "s", "-5s", "1.5s", "30 s", "30sec", "1d", " 30s", "None",
        ] {
            assert!(
                matches!(parse_duration(text), Err(DurationError::Invalid { .. })),
                "{text:?}"
            );
        }
    }

    #[test]
    fn overflow_is_refused() {
        assert!(matches!(
            parse_duration("99999999999999999999h"),
            Err(DurationError::Overflow { .. })
        ));
        assert!(matches!(
            parse_duration("18446744073709551615h"),
            Err(DurationError::Overflow { .. })
        ));
    }

    #[test]
    fn an_age_may_start_with_days() {
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_age("1d12h"), Ok(Duration::from_secs(36 * 3_600)));
        assert_eq!(parse_age("1500ms"), Ok(Duration::from_millis(1500)));
    }

    #[test]
    fn days_are_not_a_policy_duration() {
        assert!(matches!(
            parse_duration("1d"),
            Err(DurationError::Invalid { .. })
        ));
    }

    #[test]
    fn an_age_is_refused_as_an_age() {
        for text in ["", "d", "7", "none", "7days", "-1d"] {
            assert!(
                matches!(parse_age(text), Err(DurationError::InvalidAge { .. })),
                "{text:?}"
            );
        }
        assert!(matches!(
            parse_age("1h1d"),
            Err(DurationError::UnitOrder { .. })
        ));
        assert!(matches!(
            parse_age("999999999999d"),
            Err(DurationError::Overflow { .. })
        ));
    }

    #[test]
    fn a_duration_under_a_millisecond_is_written_in_microseconds() {
        assert_eq!(format_duration(Some(Duration::from_micros(1))), "1µs");
        assert_eq!(
            format_duration(Some(Duration::from_nanos(1_500_000))),
            "1ms"
        );
    }
}
