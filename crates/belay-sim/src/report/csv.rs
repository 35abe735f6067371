//! CSV files (`--csv`): one header line, one line per run, times in seconds.

use std::fmt::Write as _;

use super::csv_seconds;
use crate::scenario::blip::{BlipRun, Detection};
use crate::scenario::flapping::{FlappingRun, Reset};
use crate::scenario::outage::{OutageRun, OutageSpec};

/// A field, quoted if it needs to be.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// The outage (or planned-restart) results.
pub fn outage_csv(spec: &OutageSpec, runs: &[OutageRun]) -> String {
    let mut out = String::from(
        "scenario,policy,label,pacing,clients,down_s,rate,horizon_s,seed,peak_after_return,\
         peak_at_s,total_attempts,wasted_attempts,attempts_while_down,to_50_s,to_99_s,to_100_s,\
         connected_at_end\n",
    );
    let scenario = if spec.planned { "restart" } else { "outage" };
    for run in runs {
        let m = &run.metrics;
        let _ = writeln!(
            out,
            "{scenario},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            field(&run.case.name),
            field(&run.case.label),
            run.case.pacing,
            m.clients,
            spec.down_for.as_secs_f64(),
            spec.server.rate,
            spec.horizon.as_secs_f64(),
            spec.seed,
            m.peak_after_return,
            csv_seconds(m.peak_at),
            m.total_attempts,
            m.wasted_attempts,
            m.attempts_while_down,
            csv_seconds(m.to_50),
            csv_seconds(m.to_99),
            csv_seconds(m.to_100),
            m.connected_at_end,
        );
    }
    out
}

/// The flapping results, one line per policy and reset rule.
pub fn flapping_csv(runs: &[FlappingRun]) -> String {
    let mut out = String::from(
        "policy,label,reset,reset_after_s,first_minute_mean,first_minute_min,first_minute_max,per_minute_mean\n",
    );
    for run in runs {
        let reset = match run.reset {
            Reset::OnOpen => "on_open",
            Reset::AfterReady => "after_ready",
        };
        let _ = writeln!(
            out,
            "{},{},{reset},{},{:.3},{},{},{:.3}",
            field(&run.case.name),
            field(&run.case.label),
            run.case.config.reset_after().as_secs_f64(),
            run.first_minute,
            run.first_minute_range.0,
            run.first_minute_range.1,
            run.per_minute,
        );
    }
    out
}

/// The blip results.
pub fn blip_csv(runs: &[BlipRun]) -> String {
    let mut out = String::from("policy,label,detection,mean_s,median_s,p99_s,max_s,not_back\n");
    for run in runs {
        let detection = match run.detection {
            Detection::SocketError => "socket",
            Detection::Heartbeat => "heartbeat",
        };
        let _ = writeln!(
            out,
            "{},{},{detection},{},{},{},{},{}",
            field(&run.case.name),
            field(&run.case.label),
            csv_seconds(run.mean()),
            csv_seconds(run.quantile(0.5)),
            csv_seconds(run.quantile(0.99)),
            csv_seconds(run.max()),
            run.not_back,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a, b"), "\"a, b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
