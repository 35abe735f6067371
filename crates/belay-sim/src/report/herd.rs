//! The herd tables: the cost sweep, the server's work, and the detection
//! spread against its bound.

use std::fmt::Write as _;

use super::{seconds_or_horizon, thousands};
use crate::format_duration;
use crate::policy::PolicyCase;
use crate::scenario::cost_sweep::{CostCell, GOODPUT_WINDOW};
use crate::scenario::outage::{OutageRun, OutageSpec};
use crate::scenario::spread::SpreadRow;

/// The server's work per policy, for an outage run with a cost model.
pub fn work_markdown(runs: &[OutageRun]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| policy | server CPU busy | attempts that waited | dropped (backlog full) | admitted too late | connected at the end | got in per s, last {} |",
        format_duration(GOODPUT_WINDOW)
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|");
    for run in runs {
        let Some(work) = run.work else { continue };
        let _ = writeln!(
            out,
            "| `{}` | {:.1} s | {} | {} | {} | {} | {:.0} |",
            run.case.name,
            work.busy.as_secs_f64(),
            thousands(work.queued),
            thousands(work.dropped),
            thousands(work.admitted_too_late),
            thousands(run.metrics.connected_at_end as u64),
            run.goodput_at_end(GOODPUT_WINDOW),
        );
    }
    out
}

/// The cost sweep: one row per policy, one column per handshake cost; a
/// cell is "all connected after" or, for a server that never caught up,
/// how many were in at the horizon and how many got in per second at the
/// end.
pub fn cost_sweep_markdown(
    spec: &OutageSpec,
    cases: &[PolicyCase],
    cells: &[Vec<CostCell>],
) -> String {
    let mut out = String::new();
    let Some(first) = cells.first().and_then(|row| row.first()) else {
        return out;
    };
    let cost = spec.server.cost.unwrap_or_default();
    let _ = writeln!(
        out,
        "cost sweep: {} clients, server down {}, then {}/s; {} worker(s), {} more per admitted session, \
         listen backlog {}, client connect timeout 10 s, horizon {}, seed {}",
        thousands(spec.clients as u64),
        format_duration(spec.down_for),
        thousands(spec.server.rate),
        cost.workers,
        format_duration(cost.session),
        thousands(cost.backlog as u64),
        format_duration(first.run.metrics.horizon),
        spec.seed,
    );
    let _ = writeln!(
        out,
        "cells: all connected after (peak attempts/s after return, attempts); never (metastable: less than a tenth of the rate getting in at the end) or not within the horizon: connected at the horizon, got in per s over the last {}",
        format_duration(GOODPUT_WINDOW)
    );
    let _ = writeln!(out);
    let mut header = String::from("| policy |");
    let mut rule = String::from("|---|");
    for cell in &cells[0] {
        let _ = write!(header, " handshake {} |", format_duration(cell.handshake));
        rule.push_str("---|");
    }
    let _ = writeln!(out, "{header}");
    let _ = writeln!(out, "{rule}");
    for (case, row) in cases.iter().zip(cells) {
        let mut line = format!("| `{}` |", case.name);
        for cell in row {
            let m = &cell.run.metrics;
            if cell.metastable(spec.server.rate) {
                let _ = write!(
                    line,
                    " **never**: {} in, {:.0}/s |",
                    thousands(m.connected_at_end as u64),
                    cell.goodput_at_end()
                );
            } else if cell.never_caught_up() {
                let _ = write!(
                    line,
                    " not within {}: {} in, {:.0}/s |",
                    format_duration(m.horizon),
                    thousands(m.connected_at_end as u64),
                    cell.goodput_at_end()
                );
            } else {
                let _ = write!(
                    line,
                    " {} ({}, {}) |",
                    seconds_or_horizon(m.to_100, m.horizon),
                    thousands(m.peak_after_return as u64),
                    thousands(m.total_attempts as u64)
                );
            }
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The detection-spread table: each window's worst over its death phases
/// next to its bound.
pub fn spread_markdown(spec: &OutageSpec, case: &PolicyCase, rows: &[SpreadRow]) -> String {
    let mut out = String::new();
    let phases = rows.first().map_or(1, |row| row.runs.len());
    let _ = writeln!(
        out,
        "detection spread: `{}`, {} clients, server down {}, then {}/s, horizon {}, seed {}; \
         window 0: every connection reset at once; otherwise a silent death each client's heartbeat notices, spread over the window; \
         each cell the worst of {} death phases",
        case.name,
        thousands(spec.clients as u64),
        format_duration(spec.down_for),
        thousands(spec.server.rate),
        format_duration(spec.horizon),
        spec.seed,
        phases,
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| window | peak attempts/s after return: run / bound (ratio) | attempts per client after return: run / bound (ratio) | all connected: run / bound (ratio) | phases all connected within 10 % |"
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|");
    for row in rows {
        let horizon = spec.horizon;
        let time = match row.time_ratio() {
            Some(ratio) => format!(
                "{} / {:.1} s ({ratio:.3})",
                seconds_or_horizon(row.all_connected(), horizon),
                row.bound.all_connected.as_secs_f64()
            ),
            None => format!(
                "{} / {:.1} s",
                seconds_or_horizon(None, horizon),
                row.bound.all_connected.as_secs_f64()
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {} / {:.0} ({:.3}) | {:.3} / {:.0} ({:.3}) | {time} | {} of {} |",
            format_duration(row.window),
            thousands(row.peak() as u64),
            row.bound.peak,
            row.peak_ratio(),
            row.attempts_per_client(),
            row.bound.attempts_per_client,
            row.attempts_ratio(),
            row.phases_on_time(0.1),
            row.runs.len(),
        );
    }
    out
}
