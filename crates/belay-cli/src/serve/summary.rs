//! The periodic `info` summary of `belay serve`: what the node holds and
//! what happened since the last line (welcomed, closed by code, refused,
//! reaped), from the server's counters. A busy node writes one line per
//! period instead of one per connection; a quiet one writes none.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use belay_server::metrics::Metrics;
use belay_server::Server;

/// The counters a summary compares with the last.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Counts {
    open: i64,
    welcomed: u64,
    closed: BTreeMap<u16, u64>,
    refused: u64,
    reaped: u64,
}

impl Counts {
    fn of(metrics: &Metrics) -> Counts {
        Counts {
            open: metrics.open_connections(),
            welcomed: metrics.connects(),
            closed: metrics.closes_by_code(),
            refused: metrics.connection_refusals() + metrics.admission_refusals(),
            reaped: metrics.zombies_reaped(),
        }
    }
}

/// Write a summary every `every` while anything changed, for the life of
/// the process.
pub(crate) async fn every(server: Server, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let mut last = Counts::of(server.metrics());
    loop {
        tick.tick().await;
        let now = Counts::of(server.metrics());
        if now != last {
            line(&last, &now);
            last = now;
        }
    }
}

fn line(last: &Counts, now: &Counts) {
    let mut closed_by_code = String::new();
    let mut closed = 0;
    for (code, count) in &now.closed {
        let since = count - last.closed.get(code).copied().unwrap_or(0);
        if since > 0 {
            closed += since;
            let _ = write!(
                closed_by_code,
                "{}{code}:{since}",
                if closed_by_code.is_empty() { "" } else { " " }
            );
        }
    }
    tracing::info!(
        target: "belay::server",
        open = now.open,
        welcomed = now.welcomed - last.welcomed,
        closed,
        closed_by_code,
        refused = now.refused - last.refused,
        reaped = now.reaped - last.reaped,
        "summary"
    );
}
