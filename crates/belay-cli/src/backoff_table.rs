//! `belay backoff`: the delay schedule of every backoff policy, computed by
//! the same `belay_proto::backoff::Backoff` the clients run.

use std::fmt::Write as _;
use std::time::Duration;

use belay_proto::backoff::{Backoff, BackoffPolicy};
use belay_proto::rng::SplitMix64;
use belay_proto::Instant;

/// Arguments of `belay backoff`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Only this policy (by name, e.g. `equal_jitter`); default: all reference policies.
    #[arg(long)]
    policy: Option<String>,
    /// Or a policy given as JSON, e.g. '{"kind":"full_jitter","base_ms":500,"cap_ms":10000}'.
    #[arg(long, conflicts_with = "policy")]
    policy_json: Option<String>,
    /// Number of consecutive failed attempts to show.
    #[arg(long, default_value_t = 10)]
    attempts: u32,
    /// Seed of the random source (SplitMix64), so runs are reproducible.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let policies = select(args)?;
    let mut out = String::new();
    if !args.json {
        let _ = writeln!(
            out,
            "delays in seconds for {} failed attempts in a row (seed {}); `max` is the policy's bound",
            args.attempts, args.seed
        );
    }
    for policy in policies {
        let delays = schedule(&policy, args.attempts, args.seed);
        if args.json {
            let line = serde_json::json!({
                "policy": policy,
                "delays_ms": delays.iter().map(|d| d.as_millis() as u64).collect::<Vec<_>>(),
                "max_delay_ms": policy.max_delay().as_millis() as u64,
            });
            let _ = writeln!(out, "{line}");
        } else {
            let cells: Vec<String> = delays
                .iter()
                .map(|d| format!("{:.3}", d.as_secs_f64()))
                .collect();
            let _ = writeln!(
                out,
                "{:<20} {}  max {:.1}",
                policy.name(),
                cells.join(" "),
                policy.max_delay().as_secs_f64()
            );
        }
    }
    print!("{out}");
    Ok(())
}

fn select(args: &Args) -> Result<Vec<BackoffPolicy>, String> {
    if let Some(json) = &args.policy_json {
        let policy =
            serde_json::from_str(json).map_err(|e| format!("invalid --policy-json: {e}"))?;
        return Ok(vec![policy]);
    }
    let all = BackoffPolicy::all_reference();
    match &args.policy {
        None => Ok(all),
        Some(name) => {
            let names: Vec<&str> = all.iter().map(BackoffPolicy::name).collect();
            all.iter()
                .find(|p| p.name() == name)
                .cloned()
                .map(|p| vec![p])
                .ok_or_else(|| format!("unknown policy {name:?}; known: {}", names.join(", ")))
        }
    }
}

/// The delays before each of `attempts` reconnects, with the clock advancing
/// by each delay (so server-paced policies see time move).
fn schedule(policy: &BackoffPolicy, attempts: u32, seed: u64) -> Vec<Duration> {
    let mut backoff = Backoff::new(policy.clone());
    let mut rng = SplitMix64::new(seed);
    let mut now = Instant::ZERO;
    (0..attempts)
        .map(|_| {
            let delay = backoff.next_delay(now, &mut rng);
            now = now + delay;
            delay
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_schedule_doubles_up_to_the_cap() {
        let policy = BackoffPolicy::exponential(Duration::from_secs(1), Duration::from_secs(30));
        let secs: Vec<u64> = schedule(&policy, 7, 1)
            .iter()
            .map(Duration::as_secs)
            .collect();
        assert_eq!(secs, vec![1, 2, 4, 8, 16, 30, 30]);
    }

    #[test]
    fn an_unknown_policy_name_is_a_clear_error() {
        let args = Args {
            policy: Some("nope".into()),
            policy_json: None,
            attempts: 3,
            seed: 1,
            json: false,
        };
        let err = select(&args).unwrap_err();
        assert!(err.contains("unknown policy"));
        assert!(err.contains("equal_jitter"));
    }

    #[test]
    fn every_scheduled_delay_respects_the_policy_bound() {
        for policy in BackoffPolicy::all_reference() {
            for delay in schedule(&policy, 50, 9) {
                assert!(delay <= policy.max_delay(), "{}", policy.name());
            }
        }
    }
}
