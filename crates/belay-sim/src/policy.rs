//! The reconnect configurations the simulator compares.
//!
//! Every case is a full [`Config`]: `Config::default()` with only the backoff
//! policy swapped (so `reset_after` stays 5 s, the connect timeout 10 s, and
//! so on), plus whether the simulated server sends pacing hints in `welcome`.
//! Server-paced policies are the only ones that read the hints; for every
//! other policy they are sent and ignored, as a real Belay server would.

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_proto::Config;

/// The start window of the seed's "random start, +1 s linear" policy, which
/// the seed does not state. 1 s reproduces its row best (see
/// docs/SIMULATION.md for the sweep).
pub const SEED_LINEAR_START_WINDOW: Duration = Duration::from_secs(1);

/// The seed's linear policy has no cap; the core's needs one, so it gets one
/// far beyond any delay a 90 s run can reach.
pub const SEED_LINEAR_CAP: Duration = Duration::from_secs(3600);

/// One row of a comparison: a named client configuration and the server's
/// pacing switch.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyCase {
    /// Short name, used by `--policy` and in CSV files.
    pub name: String,
    /// Human label for tables and legends.
    pub label: String,
    /// The session configuration every simulated client runs.
    pub config: Config,
    /// Whether the server puts `FleetPacing` hints in every `welcome`.
    pub pacing: bool,
    /// Whether this row is one of the seed's four.
    pub from_seed: bool,
}

impl PolicyCase {
    /// `Config::default()` with `policy` as its backoff.
    pub fn new(name: &str, label: &str, policy: BackoffPolicy, pacing: bool) -> Self {
        let mut config = Config::default();
        config.set_backoff(policy);
        PolicyCase {
            name: name.to_owned(),
            label: label.to_owned(),
            config,
            pacing,
            from_seed: false,
        }
    }

    fn seed(mut self) -> Self {
        self.from_seed = true;
        self
    }

    /// The same case with another `reset_after` (the flapping comparison).
    pub fn with_reset_after(mut self, reset_after: Duration) -> Self {
        self.config.set_reset_after(reset_after);
        self
    }

    /// The same case with the seed linear policy's start window replaced.
    pub fn linear_with_window(window: Duration) -> Self {
        PolicyCase::new(
            "linear_random_start_uncapped",
            &format!(
                "random start (window {} s) + 1 s linear, no cap",
                window.as_secs_f64()
            ),
            BackoffPolicy::linear_random_start(window, Duration::from_secs(1), SEED_LINEAR_CAP),
            true,
        )
        .seed()
    }
}

/// Every case, in table order: the seed's four, then every other policy of
/// [`BackoffPolicy::all_reference`], then Belay's default with and without
/// server pacing.
pub fn all_cases() -> Vec<PolicyCase> {
    let s = Duration::from_secs;
    let mut cases = vec![
        PolicyCase::new("fixed", "fixed 1 s", BackoffPolicy::fixed(s(1)), true).seed(),
        PolicyCase::new(
            "exponential",
            "exponential 1–30 s",
            BackoffPolicy::exponential(s(1), s(30)),
            true,
        )
        .seed(),
        PolicyCase::linear_with_window(SEED_LINEAR_START_WINDOW),
        PolicyCase::new(
            "full_jitter",
            "exponential 1–30 s, full jitter",
            BackoffPolicy::full_jitter(s(1), s(30)),
            true,
        )
        .seed(),
    ];
    let covered: Vec<BackoffPolicy> = cases.iter().map(|case| case.config.backoff()).collect();
    for policy in BackoffPolicy::all_reference() {
        if covered.contains(&policy) || policy == BackoffPolicy::default() {
            continue;
        }
        let label = reference_label(&policy);
        cases.push(PolicyCase::new(policy.name(), &label, policy, true));
    }
    cases.push(PolicyCase::new(
        "belay-default",
        "Belay default (server-paced), pacing on",
        BackoffPolicy::default(),
        true,
    ));
    cases.push(PolicyCase::new(
        "belay-default-no-pacing",
        "Belay default, server sends no pacing",
        BackoffPolicy::default(),
        false,
    ));
    cases
}

/// The cases named by `--policy`: `all`, or one name (see [`all_cases`]).
pub fn select_cases(name: Option<&str>) -> Result<Vec<PolicyCase>, String> {
    let all = all_cases();
    match name {
        None | Some("all") => Ok(all),
        Some(name) => {
            let names: Vec<String> = all.iter().map(|c| c.name.clone()).collect();
            all.into_iter()
                .find(|c| c.name == name)
                .map(|c| vec![c])
                .ok_or_else(|| format!("unknown policy {name:?}; known: all, {}", names.join(", ")))
        }
    }
}

fn reference_label(policy: &BackoffPolicy) -> String {
    match policy.name() {
        "equal_jitter" => "equal jitter 0.5–30 s".to_owned(),
        "decorrelated" => "decorrelated jitter 1–30 s".to_owned(),
        "decorrelated_capped" => "decorrelated jitter 1–30 s, capped interval".to_owned(),
        "linear_random_start" => "random start (window 1 s) + 1 s linear, cap 30 s".to_owned(),
        "grpc" => "gRPC 1 s ×1.6 ±20 %, max 120 s".to_owned(),
        other => other.replace('_', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_the_seed_rows_every_reference_policy_and_both_defaults() {
        let names: Vec<String> = all_cases().into_iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "fixed",
                "exponential",
                "linear_random_start_uncapped",
                "full_jitter",
                "equal_jitter",
                "decorrelated",
                "decorrelated_capped",
                "linear_random_start",
                "grpc",
                "belay-default",
                "belay-default-no-pacing",
            ]
        );
    }

    #[test]
    fn every_case_keeps_the_default_session_settings() {
        for case in all_cases() {
            assert_eq!(
                case.config.reset_after(),
                Duration::from_secs(5),
                "{}",
                case.name
            );
            assert_eq!(
                case.config.connect_timeout(),
                Config::default().connect_timeout()
            );
        }
    }

    #[test]
    fn only_the_no_pacing_row_turns_the_hints_off() {
        let off: Vec<String> = all_cases()
            .into_iter()
            .filter(|c| !c.pacing)
            .map(|c| c.name)
            .collect();
        assert_eq!(off, ["belay-default-no-pacing"]);
    }

    #[test]
    fn selecting_an_unknown_policy_names_the_known_ones() {
        let error = select_cases(Some("nope")).unwrap_err();
        assert!(error.contains("belay-default"), "{error}");
        assert_eq!(select_cases(Some("grpc")).unwrap().len(), 1);
        assert_eq!(select_cases(Some("all")).unwrap().len(), all_cases().len());
    }
}
