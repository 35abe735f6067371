//! The `MEDIAN` lines every benchmark ends with: two series side by side
//! and their ratio.

use belay_load::measure::stats::median;

use crate::server::reference;

pub(crate) fn summary(what: &str, values: &[Vec<f64>; 2]) {
    summary_of(what, [reference(), "belay"], values);
}

/// `MEDIAN what: A a, B b, B/A ratio (runs: …)` for the two series.
pub(crate) fn summary_of(what: &str, [first, second]: [&str; 2], values: &[Vec<f64>; 2]) {
    let a = median(&values[0]).unwrap_or(f64::NAN);
    let b = median(&values[1]).unwrap_or(f64::NAN);
    println!(
        "MEDIAN {what}: {first} {a:.3}, {second} {b:.3}, {second}/{first} {:.2}x (runs: {first} {:?}, {second} {:?})",
        b / a,
        values[0],
        values[1]
    );
}
