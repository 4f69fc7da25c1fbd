//! Durations round-trip: what `format_duration` writes, `parse_duration` reads back.

use std::time::Duration;

use proptest::prelude::*;
use toolgate_policy::{format_duration, parse_duration};

proptest! {
    #[test]
    fn any_millisecond_duration_round_trips(ms in 0u64..=(1u64 << 50)) {
        let duration = Duration::from_millis(ms);
        let text = format_duration(Some(duration));
        prop_assert_eq!(parse_duration(&text), Ok(Some(duration)), "{}", text);
    }

    #[test]
    fn any_written_combination_of_units_parses_to_its_sum(
        h in proptest::option::of(0u64..1000),
        m in proptest::option::of(0u64..1000),
        s in proptest::option::of(0u64..1000),
        ms in proptest::option::of(0u64..1000),
    ) {
        prop_assume!(h.is_some() || m.is_some() || s.is_some() || ms.is_some());
        let mut text = String::new();
        let mut total = 0;
        for (count, unit, unit_ms) in [(h, "h", 3_600_000), (m, "m", 60_000), (s, "s", 1_000), (ms, "ms", 1)] {
            if let Some(count) = count {
                text.push_str(&format!("{count}{unit}"));
                total += count * unit_ms;
            }
        }
        prop_assert_eq!(parse_duration(&text), Ok(Some(Duration::from_millis(total))), "{}", text);
    }

    #[test]
    fn a_leading_minus_is_always_refused(ms in 0u64..1_000_000) {
        let text = format!("-{}", format_duration(Some(Duration::from_millis(ms))));
        prop_assert!(parse_duration(&text).is_err(), "{}", text);
    }
}

#[test]
fn none_round_trips() {
    assert_eq!(parse_duration(&format_duration(None)), Ok(None));
}
