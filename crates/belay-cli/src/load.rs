//! `belay load`: the load generator (loopback only, bounded in count and time).

use std::time::Duration;

use belay_load::clients::target::{parse_sources, Target};
use belay_load::loads::broadcast::{self, BroadcastConfig};
use belay_load::loads::echo::{self, EchoConfig};
use belay_load::loads::idle::{self, IdleConfig};
use belay_load::measure::stats::ms;

/// Arguments of `belay load`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    load: Load,
}

#[derive(Debug, clap::Subcommand)]
enum Load {
    /// Open N sessions (connect → welcome), answer pings, hold them.
    Idle {
        #[command(flatten)]
        common: Common,
        /// Sessions to open (at most 1,000,000).
        #[arg(long)]
        connections: usize,
        /// How long to hold them, e.g. `30s`, `2m`, `500ms` (at most 1 h).
        #[arg(long, default_value = "30s", value_parser = parse_duration)]
        hold: Duration,
    },
    /// C sessions each sending R sequential `echo` requests.
    Echo {
        #[command(flatten)]
        common: Common,
        /// Sessions (at most 100,000).
        #[arg(long, default_value_t = 10)]
        connections: usize,
        /// Requests per session.
        #[arg(long, default_value_t = 1_000)]
        requests: usize,
    },
    /// S subscribers of one channel; the server publishes M stamped messages
    /// at X/s when asked through the `bench.publish` method (server-bench's
    /// servers have it).
    Broadcast {
        #[command(flatten)]
        common: Common,
        /// Subscribers.
        #[arg(long, default_value_t = 1_000)]
        subscribers: usize,
        /// Publications (at most 100,000).
        #[arg(long, default_value_t = 100)]
        messages: u64,
        /// Publications per second.
        #[arg(long, default_value_t = 10.0)]
        rate: f64,
        /// The channel.
        #[arg(long, default_value = "bench")]
        channel: String,
    },
}

#[derive(Debug, clap::Args)]
struct Common {
    /// WebSocket URL of a loopback server, e.g. ws://127.0.0.1:8080/ws.
    #[arg(long)]
    url: String,
    /// Loopback source addresses to spread sockets over (each gives about
    /// 28k ephemeral ports), e.g. 127.0.0.1-127.0.0.40.
    #[arg(long)]
    sources: Option<String>,
    /// Give up after this long, e.g. `120s` (at most 1 h).
    #[arg(long, default_value = "300s", value_parser = parse_duration)]
    time_limit: Duration,
}

impl Common {
    fn resolve(&self) -> Result<(Target, Vec<std::net::IpAddr>), String> {
        let target = Target::parse(&self.url).map_err(|e| e.to_string())?;
        let sources = match &self.sources {
            Some(spec) => parse_sources(spec).map_err(|e| e.to_string())?,
            None => Vec::new(),
        };
        Ok((target, sources))
    }
}

/// `30s`, `2m`, `500ms`, `1h` or plain seconds, at most one hour.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((s, "s"), |i| (&s[..i], &s[i..]));
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {s:?}"))?;
    let secs = match unit {
        "ms" => value / 1e3,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("invalid duration unit in {s:?} (use ms, s, m, h)")),
    };
    if !(0.0..=3600.0).contains(&secs) {
        return Err(format!("duration {s:?} is outside 0..1h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(run_load(&args.load))
}

async fn run_load(load: &Load) -> Result<(), String> {
    match load {
        Load::Idle {
            common,
            connections,
            hold,
        } => {
            let (target, sources) = common.resolve()?;
            let mut config = IdleConfig::new(*connections, sources);
            config.total_timeout = common.time_limit;
            let report = idle::run(&target, &config, *hold)
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "idle: {} of {} sessions got welcome in {:.2} s ({} failed); {} still open after holding {:?}",
                report.opened,
                connections,
                report.open_time.as_secs_f64(),
                report.failed,
                report.alive_after_hold,
                hold
            );
            if let Some(e) = report.first_error {
                println!("first failure: {e}");
            }
        }
        Load::Echo {
            common,
            connections,
            requests,
        } => {
            let (target, sources) = common.resolve()?;
            let config = EchoConfig {
                sources,
                time_limit: common.time_limit,
                ..EchoConfig::new(*connections, *requests)
            };
            let mut report = echo::run(&target, &config)
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "echo: {} sessions, {} completed, {} failed in {:.2} s: {:.0} requests/s, p50 {} ms, p99 {} ms",
                report.sessions,
                report.completed,
                report.failed,
                report.elapsed.as_secs_f64(),
                report.requests_per_sec(),
                ms(report.latencies.percentile(50.0)),
                ms(report.latencies.percentile(99.0)),
            );
            if let Some(e) = report.first_error {
                println!("first failure: {e}");
            }
        }
        Load::Broadcast {
            common,
            subscribers,
            messages,
            rate,
            channel,
        } => {
            let (target, sources) = common.resolve()?;
            let config = BroadcastConfig {
                sources,
                channel: channel.clone(),
                time_limit: common.time_limit,
                ..BroadcastConfig::new(*subscribers, *messages, *rate)
            };
            let mut report = broadcast::run(&target, &config)
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "broadcast: {} subscribers, {} of {} deliveries in {:.2} s: {:.0} deliveries/s, p50 {} ms, p99 {} ms",
                report.subscribers,
                report.deliveries,
                report.expected,
                report.elapsed.as_secs_f64(),
                report.deliveries_per_sec(),
                ms(report.latencies.percentile(50.0)),
                ms(report.latencies.percentile(99.0)),
            );
            if let Some(e) = report.first_error {
                println!("first problem: {e}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_bounds() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("2h").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }
}
