//! Markdown tables, as printed by `belay sim`.

use std::fmt::Write as _;

use super::{seconds_or_horizon, thousands};
use crate::format_duration;
use crate::scenario::blip::{BlipRun, BlipSpec, Detection};
use crate::scenario::flapping::{FlappingRun, FlappingSpec, Reset};
use crate::scenario::outage::{OutageRun, OutageSpec};
use crate::server::Balancer;

/// The outage (or planned-restart) table: one row per policy.
pub fn outage_markdown(spec: &OutageSpec, runs: &[OutageRun]) -> String {
    let mut out = String::new();
    let what = if spec.planned {
        "planned restart (reconnect advice, then close 1012)"
    } else {
        "outage"
    };
    let _ = writeln!(
        out,
        "{what}: {} clients, server down {}, then {}/s (token bucket of {} tokens starting with {}), \
         horizon {}, seed {}",
        thousands(spec.clients as u64),
        format_duration(spec.down_for),
        thousands(spec.server.rate),
        spec.server.capacity.unwrap_or(spec.server.rate as f64),
        spec.server.initial_tokens,
        format_duration(spec.horizon),
        spec.seed,
    );
    let mut options = Vec::new();
    if spec.server.reject_cost > 0.0 {
        options.push(format!(
            "a refusal burns {} tokens",
            spec.server.reject_cost
        ));
    }
    if !spec.detection_window.is_zero() && !spec.planned {
        options.push(format!(
            "losses noticed over {}",
            format_duration(spec.detection_window)
        ));
    }
    if let Some(ping) = spec.server.ping_interval.filter(|_| !spec.planned) {
        options.push(format!(
            "the server pings on its beat every {}; a silent death the clients notice by the missing pings",
            format_duration(ping)
        ));
    }
    if !spec.latency.is_zero() {
        options.push(format!("round trip {}", format_duration(spec.latency)));
    }
    if spec.server.answer_503 && spec.server.cost.is_none() {
        options.push("refusals are 503 + Retry-After".to_owned());
    }
    if spec.server.nodes > 1 {
        options.push(format!(
            "{} nodes of {}/s each behind a {} balancer, {}",
            spec.server.nodes,
            thousands(spec.server.rate),
            match spec.server.balancer {
                Balancer::Random => "random",
                _ => "round-robin",
            },
            if spec.server.cluster_plan {
                "slots planned for the cluster's capacity"
            } else {
                "each node planning its slots alone"
            }
        ));
    }
    if let Some(cost) = spec.server.cost {
        options.push(format!(
            "every attempt costs the server {} of work ({} more if admitted) on {} worker(s),              listen backlog {}, refusals are 503 + Retry-After",
            format_duration(cost.handshake),
            format_duration(cost.session),
            cost.workers,
            cost.backlog
        ));
    }
    if !options.is_empty() {
        let _ = writeln!(out, "options: {}", options.join("; "));
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| policy | name | peak attempts/s after return | total attempts | wasted attempts | 50 % connected | 99 % connected | all connected |"
    );
    let _ = writeln!(out, "|---|---|--:|--:|--:|--:|--:|--:|");
    for run in runs {
        let m = &run.metrics;
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} | {} | {} | {} |",
            run.case.label,
            run.case.name,
            thousands(m.peak_after_return as u64),
            thousands(m.total_attempts as u64),
            thousands(m.wasted_attempts),
            seconds_or_horizon(m.to_50, m.horizon),
            seconds_or_horizon(m.to_99, m.horizon),
            seconds_or_horizon(m.to_100, m.horizon),
        );
    }
    if runs.iter().any(|run| run.work.is_some()) {
        let _ = writeln!(out);
        out.push_str(&super::work_markdown(runs));
    }
    if spec.server.nodes > 1 {
        let _ = writeln!(out);
        out.push_str(&nodes_markdown(spec, runs));
    }
    out
}

/// Against the cluster's bound `D + N / (nodes × rate)`: when the fleet is
/// in, and the busiest node's peak against its own rate.
fn nodes_markdown(spec: &OutageSpec, runs: &[OutageRun]) -> String {
    let capacity = (spec.server.rate * spec.server.nodes as u64).max(1) as f64;
    let bound = spec.down_for.as_secs_f64() + spec.clients as f64 / capacity;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| policy | all connected / bound D + N / (sum of rates) | busiest node: peak attempts/s after return / its rate | quietest node's peak |"
    );
    let _ = writeln!(out, "|---|--:|--:|--:|");
    for run in runs {
        let busiest = run.node_peaks.iter().copied().max().unwrap_or(0);
        let quietest = run.node_peaks.iter().copied().min().unwrap_or(0);
        let done = run.metrics.to_100.map_or_else(
            || format!("not within {}", format_duration(run.metrics.horizon)),
            |t| {
                let t = t.as_secs_f64();
                format!("{t:.1} s / {bound:.1} s ({:.3})", t / bound)
            },
        );
        let _ = writeln!(
            out,
            "| `{}` | {done} | {} / {} ({:.3}) | {} |",
            run.case.name,
            thousands(busiest as u64),
            thousands(spec.server.rate),
            busiest as f64 / spec.server.rate.max(1) as f64,
            thousands(quietest as u64),
        );
    }
    out
}

/// The flapping table: one row per policy, both reset rules side by side.
pub fn flapping_markdown(spec: &FlappingSpec, runs: &[FlappingRun]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "flapping: the server drops every connection {} after it is ready; mean of {} independent \
         clients over {}, seed {}; reconnects per minute",
        format_duration(spec.drop_after),
        spec.clients,
        format_duration(spec.duration),
        spec.seed,
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| policy | name | reset on open: first minute | reset on open: mean | reset after {} ready: first minute | reset after {} ready: mean |",
        reset_label(runs),
        reset_label(runs),
    );
    let _ = writeln!(out, "|---|---|--:|--:|--:|--:|");
    for pair in runs.chunks(2) {
        let find = |reset| pair.iter().find(|r| r.reset == reset);
        let (Some(open), Some(ready)) = (find(Reset::OnOpen), find(Reset::AfterReady)) else {
            continue;
        };
        let _ = writeln!(
            out,
            "| {} | `{}` | {:.1} | {:.1} | {:.1} | {:.1} |",
            ready.case.label,
            ready.case.name,
            open.first_minute,
            open.per_minute,
            ready.first_minute,
            ready.per_minute,
        );
    }
    out
}

fn reset_label(runs: &[FlappingRun]) -> String {
    runs.iter()
        .find(|r| r.reset == Reset::AfterReady)
        .map_or_else(
            || "5s".to_owned(),
            |r| format_duration(r.case.config.reset_after()),
        )
}

/// The blip table: time from the network's return until ready again.
pub fn blip_markdown(spec: &BlipSpec, runs: &[BlipRun]) -> String {
    let mut out = String::new();
    let detected = match spec.detection {
        Detection::SocketError => "the socket errors at once",
        Detection::Heartbeat => "only the heartbeat notices",
    };
    let _ = writeln!(
        out,
        "blip: the client's own network is away for {} ({detected}); server healthy; {} \
         independent clients, seed {}; time from the network's return until ready",
        format_duration(spec.down),
        spec.clients,
        spec.seed,
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| policy | name | mean | median | p99 | max | not back within {} |",
        format_duration(spec.horizon)
    );
    let _ = writeln!(out, "|---|---|--:|--:|--:|--:|--:|");
    let show = |d: Option<std::time::Duration>| {
        d.map_or_else(|| "–".to_owned(), |d| format!("{:.2} s", d.as_secs_f64()))
    };
    for run in runs {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} | {} | {} |",
            run.case.label,
            run.case.name,
            show(run.mean()),
            show(run.quantile(0.5)),
            show(run.quantile(0.99)),
            show(run.max()),
            run.not_back,
        );
    }
    out
}
