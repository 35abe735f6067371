//! One repetition: a fresh server (and proxy, or network namespace), or a
//! fresh cluster (Redis, two nodes, HAProxy), one client, the fault on and
//! off, then the figures.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::time::{sleep, Instant};

use super::agent::{Agent, BrowserSetup, ClientKind, Workload};
use super::cluster::{Cluster, HOST_NODE};
use super::fault::LabFault;
use super::hosted;
use super::measure::{figures, Frame, RepFigures};
use super::netns::Netns;
use super::observation::{Observation, Outcome};
use super::probe;
use super::server::{LabServer, ServerSetup};
use super::transport::LabTransport;
use crate::{Direction, Fault, Proxy, Toxic, ToxicKind};

/// The name of the toxic that blocks WebSockets (the `sse` transport, the
/// `websocket-blocked` fault).
const BLOCK: &str = "websocket-block";

fn block() -> Toxic {
    Toxic::new(ToxicKind::RefuseUpgrades).named(BLOCK)
}

/// Everything one repetition needs.
#[derive(Debug, Clone)]
pub(crate) struct RepPlan {
    pub(crate) fault: LabFault,
    pub(crate) client: ClientKind,
    pub(crate) transport: LabTransport,
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

/// How long a client may take after the `websocket-blocked` fault to be
/// back on WebSocket: a probe interval (1 s in the lab), the probe, the
/// switch at a quiet moment, and a generous margin.
const BACK_ON_WEBSOCKET: Duration = Duration::from_secs(10);

/// How long the Redis broker may take to notice a Redis that stopped
/// answering: its PUB/SUB `PING` every 1 s, answered within 2 s
/// (crates/belay-redis, docs/CLUSTER.md).
pub(crate) const REDIS_PROBE_BOUND: Duration = Duration::from_secs(3);

/// The environment of one repetition, torn down on drop.
struct Stage {
    /// One server (every fault but the cluster ones).
    server: Option<LabServer>,
    /// Two nodes on Redis behind HAProxy (the cluster faults).
    cluster: Option<Cluster>,
    proxy: Option<Proxy>,
    net: Option<Netns>,
    /// The node a deploy or a kill hits: the client's.
    target: Option<usize>,
    /// WebSockets blocked at the proxy throughout (the `sse` transport).
    blocked: bool,
}

impl Stage {
    async fn build(plan: &RepPlan) -> Result<Stage, String> {
        if plan.fault.cluster() {
            return Ok(Stage {
                server: None,
                cluster: Some(
                    Cluster::start(&plan.server, plan.fault.redis_setup(), plan.fault.hosted())
                        .await?,
                ),
                proxy: None,
                net: None,
                target: None,
                blocked: false,
            });
        }
        let blocked = plan.transport == LabTransport::Sse;
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
        // Over the fallback the link cut goes through the proxy too (it
        // cuts the proxy's side from the server's: as silent for the client).
        let proxy = if plan.fault.proxied() || blocked {
            let mut builder = Proxy::builder(server.addr());
            if net.is_some() {
                builder = builder.upstream_in_own_namespace();
            }
            let proxy = builder.start().await.map_err(|e| format!("proxy: {e}"))?;
            if blocked {
                proxy
                    .add_toxic(block())
                    .map_err(|e| format!("proxy: {e}"))?;
            }
            Some(proxy)
        } else {
            None
        };
        Ok(Stage {
            server: Some(server),
            cluster: None,
            proxy,
            net,
            target: None,
            blocked,
        })
    }

    /// Where the server side is reached: HAProxy for a cluster, else the
    /// server itself.
    fn server_addr(&self) -> SocketAddr {
        match (&self.cluster, &self.server) {
            (Some(c), _) => c.front(),
            (None, Some(s)) => s.addr(),
            (None, None) => SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        }
    }

    fn client_url(&self) -> String {
        let addr = self
            .proxy
            .as_ref()
            .map_or(self.server_addr(), Proxy::local_addr);
        format!("ws://{addr}/ws")
    }

    /// The workload as this stage asks it: with a resident host, the
    /// caller's token, and calls to the host with a deadline past the
    /// bound on `host_lost`.
    fn workload(&self, work: &Workload) -> Workload {
        let mut work = work.clone();
        if let Some(token) = self.cluster.as_ref().and_then(Cluster::caller_token) {
            work.token = Some(token.to_owned());
            work.call_host = Some(hosted::HOST_ID.to_owned());
            work.request_timeout = hosted::CALL_TIMEOUT;
        }
        work
    }

    fn server(&self) -> Result<&LabServer, String> {
        self.server
            .as_ref()
            .ok_or_else(|| "no server for this fault".to_owned())
    }

    fn cluster(&mut self) -> Result<&mut Cluster, String> {
        self.cluster
            .as_mut()
            .ok_or_else(|| "no cluster for this fault".to_owned())
    }

    /// Set `fault` on the proxy (keeping the `sse` transport's block).
    fn proxy(&self, fault: Fault) -> Result<(), String> {
        let proxy = self.proxy.as_ref().ok_or("no proxy for this fault")?;
        proxy.set(fault).map_err(|e| format!("proxy: {e}"))?;
        if self.blocked {
            proxy
                .add_toxic(block())
                .map_err(|e| format!("proxy: {e}"))?;
        }
        Ok(())
    }

    /// Block WebSockets at the proxy (`true`) or lift the block.
    fn block_websockets(&self, on: bool) -> Result<(), String> {
        let proxy = self.proxy.as_ref().ok_or("no proxy for this fault")?;
        if on {
            proxy.add_toxic(block()).map_err(|e| format!("proxy: {e}"))
        } else {
            proxy
                .remove_toxic(BLOCK)
                .map(drop)
                .map_err(|e| format!("proxy: {e}"))
        }
    }

    fn net(&self) -> Result<&Netns, String> {
        self.net
            .as_ref()
            .ok_or_else(|| "no network namespace".to_owned())
    }

    /// The server side's open connections: the server's, or the sum over
    /// the cluster's running nodes.
    async fn connections_open(&self) -> Result<u64, String> {
        match (&self.cluster, &self.server) {
            (Some(c), _) => c.connections_open().await,
            (None, Some(s)) => s.connections_open().await,
            (None, None) => Err("no server".into()),
        }
    }

    /// The channel's last publication, as the server side knows it.
    async fn position(&self, channel: &str) -> Result<probe::Position, String> {
        match (&self.server, &self.cluster) {
            (Some(s), None) => s.position(channel).await,
            (_, cluster) => {
                let token = cluster.as_ref().and_then(Cluster::caller_token);
                probe::position(self.server_addr(), channel, token).await
            }
        }
    }

    /// What must be known before the fault starts (so that looking it up
    /// is not timed): the node the client is on.
    async fn prepare(&mut self, plan: &RepPlan) -> Result<(), String> {
        if matches!(plan.fault, LabFault::Deploy | LabFault::NodeKill) {
            let node = self.cluster()?.client_node().await?;
            self.target = Some(node);
        }
        if plan.fault == LabFault::HostNodeKill {
            self.cluster()?.host_placed().await?;
            self.target = Some(HOST_NODE);
        }
        Ok(())
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
                self.server()?.fault(name, on).await?;
                sleep(hold).await;
                self.server()?.fault(name, off).await?;
            }
            LabFault::Flapping => {
                self.server()?
                    .fault("flapping", r#"{"on":true,"after_ms":300}"#)
                    .await?;
                sleep(plan.flapping_for).await;
                self.server()?.fault("flapping", off).await?;
            }
            LabFault::Restart => {
                let body = format!(r#"{{"down_ms":{}}}"#, hold.as_millis());
                let until = Instant::now() + hold;
                self.server()?.fault("restart", &body).await?;
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
            LabFault::WebsocketBlocked => {
                // The proxy that starts blocking drops what it carried.
                self.proxy(Fault::Reset { refuse_ms: 0 })?;
                self.block_websockets(true)?;
                sleep(hold).await;
                self.block_websockets(false)?;
            }
            LabFault::LinkCut => {
                self.net()?.cut().await?;
                sleep(hold).await;
                self.net()?.restore().await?;
            }
            LabFault::Drain => {
                let server = self.server.as_mut().ok_or("no server for this fault")?;
                let addr = server.addr();
                server.fault("drain", on).await?;
                if !server.exited(Duration::from_secs(15)).await {
                    return Err("the drained server did not exit within 15 s".into());
                }
                // The next deployment takes the same address.
                self.server = Some(LabServer::start(&plan.server, addr, None).await?);
            }
            LabFault::Deploy | LabFault::NodeKill | LabFault::HostNodeKill => {
                let node = self.target.ok_or("no node picked for the fault")?;
                let (signal, bound) = if plan.fault == LabFault::Deploy {
                    // The balancer's delay, the spread, the last requests.
                    ("TERM", Duration::from_secs(15))
                } else {
                    ("KILL", Duration::from_secs(5))
                };
                let cluster = self.cluster()?;
                cluster.stop_node(node, signal, bound).await?;
                // Over once the balancer has noticed (a drained node is out
                // before it exits: /readyz answered 503 first).
                cluster
                    .out_of_rotation(node, Duration::from_secs(5))
                    .await?;
            }
            LabFault::RedisDown => {
                // Held past the broker's probe bound, so that the outage
                // lasts the fault's length after it can have been noticed.
                self.cluster()?.redis()?.pause().await?;
                sleep(hold + REDIS_PROBE_BOUND).await;
                self.cluster()?.redis()?.resume().await?;
            }
            LabFault::RedisRestart => {
                self.cluster()?.redis()?.restart().await?;
            }
            LabFault::SentinelFailover | LabFault::SentinelFailoverWait => {
                // Over once a replica is promoted; the nodes find it on
                // their next reconnect.
                self.cluster()?.fail_over(Duration::from_secs(30)).await?;
            }
            LabFault::ClusterPrimaryKilled => {
                // Over once the replica serves the feed's slot.
                self.cluster()?.kill_feed_primary().await?;
            }
            LabFault::Resharding => {
                self.cluster()?.move_feed_slot().await?;
            }
        }
        Ok(Instant::now())
    }
}

/// A request answered.
fn answered(o: &Observation) -> bool {
    matches!(
        o,
        Observation::Settled {
            outcome: Outcome::Ok,
            ..
        }
    )
}

/// Run one repetition and measure it.
pub(crate) async fn repetition(plan: &RepPlan) -> Result<RepFigures, String> {
    let mut stage = Stage::build(plan).await?;
    let plan = &RepPlan {
        work: stage.workload(&plan.work),
        ..plan.clone()
    };
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
    if let Some(server) = stage.server.take() {
        server.kill().await;
    }
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
    if plan.work.call_host.is_some() {
        agent
            .wait_for(began, WARM_UP, answered)
            .await
            .ok_or_else(|| format!("{}'s calls to the host were never answered", plan.client))?;
    }
    sleep(STEADY).await;
    stage.prepare(plan).await?;
    let fault_at = Instant::now();
    let fault_end = stage.apply(plan).await?;
    // A client that recovers gets its chance; one that does not is measured as is.
    if !agent.ready_at(fault_end) {
        let _ = agent
            .wait_for(fault_end, RECOVERY, |o| *o == Observation::Ready)
            .await;
    }
    if plan.fault == LabFault::WebsocketBlocked && plan.client.is_belay() {
        // Measure once it has moved back (or could not), not mid-switch.
        let _ = agent
            .wait_for(
                fault_end,
                BACK_ON_WEBSOCKET,
                |o| matches!(o, Observation::Via { transport } if transport == "websocket"),
            )
            .await;
    }
    if plan.work.call_host.is_some() {
        // The host comes back on a living node; measured as is if not.
        let _ = agent.wait_for(fault_end, RECOVERY, answered).await;
    }
    let settle_window = plan.work.request_timeout + Duration::from_millis(500);
    sleep(settle_window).await;
    let conns = stage.connections_open().await.ok();
    let last = stage.position(&plan.work.channel).await.ok();
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
