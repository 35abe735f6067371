//! Durations as people type them: `10s`, `500ms`, `1.5s`, `2m`, `1h`.

use std::time::Duration;

/// Parse a duration written as a number and a unit: `us` (or `µs`), `ms`,
/// `s`, `m` (or `min`), `h`. The number may have a fraction (`1.5s`); a bare
/// number is refused, because `10` could mean anything. The result is
/// rounded to whole microseconds, the simulator's resolution.
///
/// ```
/// use std::time::Duration;
/// use belay_sim::parse_duration;
///
/// assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
/// assert!(parse_duration("10").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("{text:?} has no unit (write e.g. 10s or 500ms)"))?;
    let (number, unit) = text.split_at(split);
    let micros_per_unit = match unit.trim() {
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" | "sec" => 1e6,
        "m" | "min" => 60e6,
        "h" => 3600e6,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?} (us, ms, s, m, h)"
            ))
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{number:?} in {text:?} is not a number"))?;
    let micros = (value * micros_per_unit).round();
    if !micros.is_finite() || micros < 0.0 || micros > u64::MAX as f64 {
        return Err(format!("{text:?} is out of range"));
    }
    Ok(Duration::from_micros(micros as u64))
}

/// Format a duration the way [`parse_duration`] reads it, with the largest
/// unit that keeps it exact (`90s`, `500ms`, `1.5s` stays `1500ms`).
pub fn format_duration(duration: Duration) -> String {
    let micros = duration.as_micros();
    if micros == 0 {
        "0s".to_owned()
    } else if micros % 1_000_000 == 0 {
        format!("{}s", micros / 1_000_000)
    } else if micros % 1000 == 0 {
        format!("{}ms", micros / 1000)
    } else {
        format!("{micros}us")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_is_understood() {
        let cases = [
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("300ms", Duration::from_millis(300)),
            ("10s", Duration::from_secs(10)),
            ("10m", Duration::from_secs(600)),
            ("10min", Duration::from_secs(600)),
            ("1h", Duration::from_secs(3600)),
            ("0.25s", Duration::from_millis(250)),
            (" 3s ", Duration::from_secs(3)),
        ];
        for (text, want) in cases {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn numbers_without_units_and_garbage_are_refused() {
        for text in ["10", "s", "1.2.3s", "-1s", "10 parsecs", "", "1e999s"] {
            assert!(parse_duration(text).is_err(), "{text}");
        }
    }

    #[test]
    fn formatting_round_trips() {
        for text in ["90s", "500ms", "1500ms", "7us", "0s"] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
    }
}
