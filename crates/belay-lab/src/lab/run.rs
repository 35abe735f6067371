//! One repetition: a fresh server (and proxy, or network namespace), one
//! client, the fault on and off, then the figures.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::time::{sleep, Instant};

use super::agent::{Agent, BrowserSetup, ClientKind, Workload};
use super::fault::LabFault;
use super::measure::{figures, Frame, RepFigures};
use super::netns::Netns;
use super::observation::Observation;
use super::probe;
use super::server::{LabServer, ServerSetup};
use crate::{Direction, Fault, Proxy};

/// Everything one repetition needs.
#[derive(Debug, Clone)]
pub(crate) struct RepPlan {
    pub(crate) fault: LabFault,
    pub(crate) client: ClientKind,
    pub(crate) fault_for: Duration,
    pub(crate) flapping_for: Duration,
    pub(crate) server: ServerSetup,
    pub(crate) work: Workload,
    pub(crate) browser: BrowserSetup,
}

/// How long a client may take to be ready and see data at the start
/// (a browser has to launch).
const WARM_UP: Duration = Duration::from_secs(30);
/// Healthy time before the fault.
const STEADY: Duration = Duration::from_secs(1);
/// How long after the fault a client may take to be ready again: more
/// than the default policy's largest delay (30 s) plus a connect timeout,
/// so a backoff that grew during the fault is measured, not cut short.
const RECOVERY: Duration = Duration::from_secs(40);

/// The environment of one repetition, torn down on drop.
struct Stage {
    server: LabServer,
    proxy: Option<Proxy>,
    net: Option<Netns>,
}

impl Stage {
    async fn build(plan: &RepPlan) -> Result<Stage, String> {
        let net = if plan.fault == LabFault::LinkCut {
            Some(Netns::create().await?)
        } else {
            None
        };
        let listen = match &net {
            Some(n) => SocketAddr::new(n.server_ip(), 0),
            None => SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        };
        let server = LabServer::start(&plan.server, listen, net.as_ref().map(Netns::name)).await?;
        let proxy = if plan.fault.proxied() {
            let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
            Some(
                Proxy::start(listen, server.addr())
                    .await
                    .map_err(|e| format!("proxy: {e}"))?,
            )
        } else {
            None
        };
        Ok(Stage { server, proxy, net })
    }

    fn client_url(&self) -> String {
        let addr = self
            .proxy
            .as_ref()
            .map_or(self.server.addr(), Proxy::local_addr);
        format!("ws://{addr}/ws")
    }

    fn proxy(&self, fault: Fault) -> Result<(), String> {
        self.proxy
            .as_ref()
            .ok_or("no proxy for this fault")?
            .set(fault)
            .map_err(|e| format!("proxy: {e}"))
    }

    fn net(&self) -> Result<&Netns, String> {
        self.net
            .as_ref()
            .ok_or_else(|| "no network namespace".to_owned())
    }

    /// Switch the fault on, wait out its duration, switch it off; returns
    /// when it ended.
    async fn apply(&mut self, plan: &RepPlan) -> Result<Instant, String> {
        let on = r#"{"on":true}"#;
        let off = r#"{"on":false}"#;
        let hold = plan.fault_for;
        match plan.fault {
            LabFault::Freeze | LabFault::ServiceDown | LabFault::SlowReplies => {
                let name = match plan.fault {
                    LabFault::Freeze => "freeze",
                    LabFault::ServiceDown => "service_down",
                    _ => "slow_replies",
                };
                self.server.fault(name, on).await?;
                sleep(hold).await;
                self.server.fault(name, off).await?;
            }
            LabFault::Flapping => {
                self.server
                    .fault("flapping", r#"{"on":true,"after_ms":300}"#)
                    .await?;
                sleep(plan.flapping_for).await;
                self.server.fault("flapping", off).await?;
            }
            LabFault::Restart => {
                let body = format!(r#"{{"down_ms":{}}}"#, hold.as_millis());
                let until = Instant::now() + hold;
                self.server.fault("restart", &body).await?;
                tokio::time::sleep_until(until).await;
            }
            LabFault::Blackhole => {
                self.proxy(Fault::Blackhole)?;
                sleep(hold).await;
                self.proxy(Fault::Pass)?;
            }
            LabFault::HalfOpen => {
                self.proxy(Fault::HalfOpen {
                    drop: Direction::ServerToClient,
                })?;
                sleep(hold).await;
                self.proxy(Fault::Pass)?;
            }
            LabFault::Zombie => {
                self.proxy(Fault::Reset { refuse_ms: 0 })?;
                self.proxy(Fault::Blackhole)?;
                sleep(hold).await;
                self.proxy(Fault::Pass)?;
            }
            LabFault::LinkCut => {
                self.net()?.cut().await?;
                sleep(hold).await;
                self.net()?.restore().await?;
            }
            LabFault::Drain => {
                let addr = self.server.addr();
                self.server.fault("drain", on).await?;
                if !self.server.exited(Duration::from_secs(15)).await {
                    return Err("the drained server did not exit within 15 s".into());
                }
                // The next deployment takes the same address.
                self.server = LabServer::start(&plan.server, addr, None).await?;
            }
        }
        Ok(Instant::now())
    }
}

/// Run one repetition and measure it.
pub(crate) async fn repetition(plan: &RepPlan) -> Result<RepFigures, String> {
    let mut stage = Stage::build(plan).await?;
    let mut agent = Agent::spawn(plan.client, &stage.client_url(), &plan.work, &plan.browser)
        .map_err(|e| e.to_string())?;
    let began = Instant::now();
    let result = measured(plan, &mut stage, &mut agent, began).await;
    let stop_at = Instant::now();
    let seen = agent.stop().await;
    let (frame, conns, last) = result?;
    if std::env::var_os("BELAY_LAB_DEBUG").is_some() {
        for s in &seen {
            eprintln!(
                "{} {} {:>8} ms {:?}",
                plan.fault,
                plan.client,
                s.at.saturating_duration_since(began).as_millis(),
                s.what
            );
        }
        eprintln!(
            "frame fault {:?} end {:?} stop {:?}",
            frame.fault_at - began,
            frame.fault_end - began,
            stop_at - began
        );
    }
    let mut figures = figures(Frame { stop_at, ..frame }, &seen, last.as_ref());
    figures.server_connections_after = conns;
    stage.server.kill().await;
    Ok(figures)
}

type Measured = (Frame, Option<u64>, Option<probe::Position>);

async fn measured(
    plan: &RepPlan,
    stage: &mut Stage,
    agent: &mut Agent,
    began: Instant,
) -> Result<Measured, String> {
    agent
        .wait_for(began, WARM_UP, |o| *o == Observation::Ready)
        .await
        .ok_or_else(|| format!("{} never became ready", plan.client))?;
    agent
        .wait_for(began, WARM_UP, |o| matches!(o, Observation::Pub { .. }))
        .await
        .ok_or_else(|| format!("{} received no publication", plan.client))?;
    sleep(STEADY).await;
    let fault_at = Instant::now();
    let fault_end = stage.apply(plan).await?;
    // A client that recovers gets its chance; one that does not is measured as is.
    if !agent.ready_at(fault_end) {
        let _ = agent
            .wait_for(fault_end, RECOVERY, |o| *o == Observation::Ready)
            .await;
    }
    let settle_window = plan.work.request_timeout + Duration::from_millis(500);
    sleep(settle_window).await;
    let conns = stage
        .server
        .metric("belay_connections_open")
        .await
        .ok()
        .map(|n| n as u64);
    let last = probe::position(stage.server.addr(), &plan.work.channel)
        .await
        .ok();
    if let Some(p) = &last {
        // Give the client the time to be handed what was published so far.
        let _ = agent
            .wait_for(fault_end, Duration::from_secs(2), |o| {
                matches!(o, Observation::Pub { epoch, offset } if *epoch == p.epoch && *offset >= p.offset)
            })
            .await;
    }
    let frame = Frame {
        fault_at,
        fault_end,
        stop_at: Instant::now(),
        settle_window,
    };
    Ok((frame, conns, last))
}
