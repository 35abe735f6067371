//! A hold child process (`cluster-bench hold`): opens its sessions, then
//! obeys the parent's lines on stdin (the protocol is in the parent's
//! module docs) and answers each with a line on stdout.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belay_proto::Config;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, watch, Semaphore};

use crate::clients::target::Target;
use crate::clients::websocket;

use super::session::Session;
use super::MAX_PER_PROCESS;

/// What a hold process opens.
#[derive(Debug, Clone)]
pub struct HoldArgs {
    /// The target (loopback).
    pub url: String,
    /// Sessions (at most [`MAX_PER_PROCESS`]).
    pub connections: usize,
    /// Source addresses, round-robin.
    pub sources: Vec<IpAddr>,
    /// The channel to subscribe on `subscribe`.
    pub channel: String,
    /// Publications each session waits for after subscribing.
    pub messages: u64,
    /// Handshakes in flight at once.
    pub handshakes: usize,
    /// Subscribes pending at once (sent, not yet answered for good; 0:
    /// every session subscribes at once).
    pub subscribes_in_flight: usize,
    /// The sessions' quiet time before they probe (twice the nodes' ping
    /// interval).
    pub probe_interval: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Hold,
    Subscribe,
    Report,
    Stop,
}

#[derive(Debug)]
pub(super) enum Event {
    Opened(Result<(), String>),
    Subscribed(Result<(), String>),
    /// A subscribe refused and to be retried after the backoff.
    Refused(String),
    Done(Received),
}

#[derive(Debug, Default)]
pub(super) struct Received {
    pub(super) got: u64,
    pub(super) gaps: u64,
    /// Subscriptions lost (`unsubscribed`) and subscribed again from the
    /// last position, as a Belay client does.
    pub(super) resumed: u32,
    /// Of those, answered `recovered: false` (publications skipped).
    pub(super) not_recovered: u32,
    pub(super) latencies: Vec<u32>,
    pub(super) last_wall: u64,
    pub(super) error: Option<String>,
}

/// The hold process's main: open, then obey stdin until it closes.
pub async fn hold_main(args: HoldArgs) -> Result<(), String> {
    let target = Target::parse(&args.url).map_err(|e| e.to_string())?;
    let connections = args.connections.min(MAX_PER_PROCESS);
    let started = std::time::Instant::now();
    let (phase_tx, phase_rx) = watch::channel(Phase::Hold);
    let (events_tx, mut events) = mpsc::unbounded_channel::<Event>();
    let alive = Arc::new(AtomicUsize::new(0));
    let permits = Arc::new(Semaphore::new(args.handshakes.max(1)));
    // The node's pings keep each session alive; the client probes only
    // when they stop.
    let mut config = Config::default();
    config.set_probe_interval(args.probe_interval);
    let subscribe_permits = (args.subscribes_in_flight > 0)
        .then(|| Arc::new(Semaphore::new(args.subscribes_in_flight)));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..connections {
        let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
            break;
        };
        let session = Session {
            target: target.clone(),
            source: websocket::source_for(&args.sources, i),
            config: config.clone(),
            seed: 0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1),
            phase: phase_rx.clone(),
            events: events_tx.clone(),
            alive: Arc::clone(&alive),
            channel: args.channel.clone(),
            messages: args.messages,
            subscribe_permits: subscribe_permits.clone(),
        };
        tasks.spawn(session.run(permit));
    }
    drop(events_tx);
    let (mut ok, mut failed, mut first) = (0usize, 0usize, None);
    let mut pending = Vec::new();
    while ok + failed < connections {
        match tokio::time::timeout(Duration::from_secs(600), events.recv()).await {
            Ok(Some(Event::Opened(Ok(())))) => ok += 1,
            Ok(Some(Event::Opened(Err(e)))) => {
                failed += 1;
                first.get_or_insert(e);
            }
            Ok(Some(other)) => pending.push(other),
            Ok(None) | Err(_) => break,
        }
    }
    println!(
        "OPENED {ok} {failed} {} {}",
        started.elapsed().as_millis(),
        one_line(first.as_deref())
    );
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut subscribed = 0usize;
    while let Ok(Some(line)) = lines.next_line().await {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("alive") => println!("ALIVE {}", alive.load(Ordering::Relaxed)),
            Some("subscribe") => {
                let asked = std::time::Instant::now();
                let _ = phase_tx.send(Phase::Subscribe);
                let (mut refused, mut retried, mut first) = (0usize, 0usize, None);
                let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
                while subscribed + refused < ok {
                    match tokio::time::timeout_at(deadline, events.recv()).await {
                        Ok(Some(Event::Subscribed(Ok(())))) => subscribed += 1,
                        Ok(Some(Event::Subscribed(Err(e)))) => {
                            refused += 1;
                            first.get_or_insert(e);
                        }
                        Ok(Some(Event::Refused(e))) => {
                            retried += 1;
                            first.get_or_insert(e);
                        }
                        Ok(Some(other)) => pending.push(other),
                        Ok(None) | Err(_) => break,
                    }
                }
                println!(
                    "SUBSCRIBED {subscribed} {refused} {retried} {} {}",
                    asked.elapsed().as_millis(),
                    one_line(first.as_deref())
                );
            }
            Some("collect") => {
                let secs: u64 = words.next().and_then(|s| s.parse().ok()).unwrap_or(60);
                let deadline = tokio::time::Instant::now() + Duration::from_secs(secs.min(600));
                let mut done: Vec<Received> = pending
                    .drain(..)
                    .filter_map(|e| match e {
                        Event::Done(r) => Some(r),
                        _ => None,
                    })
                    .collect();
                let mut asked = false;
                while done.len() < subscribed {
                    match tokio::time::timeout_at(deadline, events.recv()).await {
                        Ok(Some(Event::Done(r))) => done.push(r),
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        // Past the deadline: every session still waiting
                        // reports what it has.
                        Err(_) if !asked => {
                            asked = true;
                            let _ = phase_tx.send(Phase::Report);
                        }
                        Err(_) => {
                            match tokio::time::timeout(Duration::from_secs(30), events.recv()).await
                            {
                                Ok(Some(Event::Done(r))) => done.push(r),
                                Ok(Some(_)) => {}
                                Ok(None) | Err(_) => break,
                            }
                        }
                    }
                }
                let deliveries: u64 = done.iter().map(|r| r.got).sum();
                let complete = done.iter().filter(|r| r.got == args.messages).count();
                let gaps: u64 = done.iter().map(|r| r.gaps).sum();
                let last = done.iter().map(|r| r.last_wall).max().unwrap_or(0);
                let first = done.iter().find_map(|r| r.error.clone());
                let resumed: u32 = done.iter().map(|r| r.resumed).sum();
                let not_recovered: u32 = done.iter().map(|r| r.not_recovered).sum();
                println!(
                    "RECEIVED {deliveries} {complete} {gaps} {last} {resumed} {not_recovered} {}",
                    one_line(first.as_deref())
                );
                let mut lat = String::with_capacity(deliveries as usize * 7);
                lat.push_str("LAT ");
                for r in &done {
                    for v in &r.latencies {
                        let _ = write!(lat, "{v},");
                    }
                }
                println!("{}", lat.trim_end_matches(','));
            }
            _ => {}
        }
    }
    let _ = phase_tx.send(Phase::Stop);
    let _ = tokio::time::timeout(Duration::from_secs(20), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    Ok(())
}

fn one_line(error: Option<&str>) -> String {
    error.map_or_else(|| "-".into(), |e| e.replace(['\n', '\r'], " "))
}
