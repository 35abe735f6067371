//! The node's one PUB/SUB connection to Redis, owned by one task: it
//! subscribes and unsubscribes channel names in the order the hub decided,
//! hands every live message to the hub (and every control message to the
//! control plane), and probes the connection with
//! `PING`. A connection that fails or stays silent past the command timeout
//! is replaced (with backoff while Redis is unreachable), and every
//! subscription on it is ended with `unavailable`, so clients resubscribe
//! from their positions and recover from the history: a publication that
//! went out while no connection listened is never skipped silently.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{Publication, RawJson};
use belay_server::broker::Delivery;
use futures_util::StreamExt;
use redis::aio::{PubSubSink, PubSubStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;

use crate::endpoint::Endpoint;
use crate::hub::{Hub, Interest};
use crate::keys::{channel_of, live_name, parse_live};

/// What the PUB/SUB task is asked to do.
#[derive(Debug)]
enum Command {
    /// Subscribe to a channel's live name; answered once Redis confirmed.
    Subscribe(String, oneshot::Sender<Result<(), String>>),
    Unsubscribe(String),
}

/// A handle on the PUB/SUB task.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    commands: mpsc::UnboundedSender<Command>,
    prefix: Arc<str>,
}

impl Link {
    /// Start the task on the primary `endpoint` names (asked again on every
    /// reconnect), delivering into `hub`.
    pub(crate) fn start(
        endpoint: Arc<Endpoint>,
        hub: Arc<Hub>,
        prefix: &str,
        timing: (Duration, Duration),
        control: ([String; 2], mpsc::Sender<Vec<u8>>),
    ) -> (Link, oneshot::Receiver<()>) {
        let (commands, queue) = mpsc::unbounded_channel();
        let prefix: Arc<str> = Arc::from(prefix);
        let (command_timeout, probe_every) = timing;
        let task = Task {
            endpoint,
            hub,
            prefix: Arc::clone(&prefix),
            command_timeout,
            probe_every,
            control_names: control.0,
            control_inbox: control.1,
        };
        let (ready, listening) = oneshot::channel();
        tokio::spawn(task.run(queue, ready));
        (Link { commands, prefix }, listening)
    }

    /// Subscribe to `channel` (again, if already): resolves when Redis has
    /// confirmed, so every later publication reaches the hub.
    pub(crate) fn subscribe(&self, channel: &str) -> oneshot::Receiver<Result<(), String>> {
        let (answer, confirmed) = oneshot::channel();
        let _ = self
            .commands
            .send(Command::Subscribe(live_name(&self.prefix, channel), answer));
        confirmed
    }

    /// Carry out what the hub decided for `channel`.
    pub(crate) fn follow(&self, channel: &str, interest: &Interest) {
        if *interest == Interest::Unsubscribe {
            let _ = self
                .commands
                .send(Command::Unsubscribe(live_name(&self.prefix, channel)));
        }
    }
}

struct Task {
    endpoint: Arc<Endpoint>,
    hub: Arc<Hub>,
    prefix: Arc<str>,
    command_timeout: Duration,
    probe_every: Duration,
    /// The node's control names, subscribed on every connection, and where
    /// their messages go.
    control_names: [String; 2],
    control_inbox: mpsc::Sender<Vec<u8>>,
}

/// Why a connection was given up.
const LOST: &str = "the broker lost its connection to Redis: resubscribe";

impl Task {
    /// `ready` is told once the first connection listens on the control
    /// names.
    async fn run(self, mut queue: mpsc::UnboundedReceiver<Command>, ready: oneshot::Sender<()>) {
        let mut ready = Some(ready);
        let mut backoff = Duration::from_millis(50);
        // Since when the connection is lost (for the line that says it is back).
        let mut lost_at: Option<tokio::time::Instant> = None;
        loop {
            let connected = timeout(self.command_timeout, async {
                self.endpoint.primary().await?.get_async_pubsub().await
            })
            .await;
            let Ok(Ok(pubsub)) = connected else {
                // Unreachable: refuse what waits, retry after a while.
                let wait = tokio::time::sleep(backoff);
                tokio::pin!(wait);
                loop {
                    tokio::select! {
                        () = &mut wait => break,
                        command = queue.recv() => match command {
                            Some(Command::Subscribe(_, answer)) => {
                                let _ = answer.send(Err("Redis is unreachable".into()));
                            }
                            Some(Command::Unsubscribe(_)) => {}
                            None => return,
                        },
                    }
                }
                backoff = (backoff * 2).min(Duration::from_millis(500));
                continue;
            };
            backoff = Duration::from_millis(50);
            if let Some(since) = lost_at.take() {
                tracing::info!(
                    down_ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX),
                    "PUB/SUB connection to Redis back"
                );
            }
            let (sink, stream) = pubsub.split();
            match self.serve(sink, stream, &mut queue, &mut ready).await {
                Served::Closed => return,
                Served::Lost => {
                    tracing::warn!("PUB/SUB connection to Redis lost; reconnecting");
                    lost_at = Some(tokio::time::Instant::now());
                    self.hub.end_all(LOST);
                }
            }
        }
    }

    async fn serve(
        &self,
        mut sink: PubSubSink,
        mut stream: PubSubStream,
        queue: &mut mpsc::UnboundedReceiver<Command>,
        ready: &mut Option<oneshot::Sender<()>>,
    ) -> Served {
        for name in &self.control_names {
            let done = timeout(self.command_timeout, sink.subscribe(name)).await;
            if !matches!(done, Ok(Ok(()))) {
                return Served::Lost;
            }
        }
        if let Some(ready) = ready.take() {
            let _ = ready.send(());
        }
        // The names this connection is subscribed to, confirmed. A join on
        // one of them needs no round trip: commands are served in order, so
        // an unsubscribe decided before it has already removed the name.
        // (One round trip per join, one at a time, made 10,000 clients
        // resubscribing to one channel wait behind each other past the
        // join's timeout, and their retries kept the queue full.)
        let mut subscribed: HashSet<String> = HashSet::new();
        // Any message from Redis is proof of life: only a connection quiet
        // for a probe interval is probed (a busy node probing a busy
        // connection mistook a late PONG for a lost Redis).
        // The probe is due a probe interval after the last message (not at
        // fixed ticks, which probed up to two intervals after it), so a
        // silent Redis is found within `probe_every + command_timeout`.
        let mut heard = tokio::time::Instant::now();
        let probe = tokio::time::sleep(self.probe_every);
        tokio::pin!(probe);
        loop {
            tokio::select! {
                command = queue.recv() => match command {
                    None => return Served::Closed,
                    Some(Command::Subscribe(name, answer)) => {
                        if subscribed.contains(&name) {
                            let _ = answer.send(Ok(()));
                            continue;
                        }
                        let done = timeout(self.command_timeout, sink.subscribe(&name)).await;
                        let ok = matches!(done, Ok(Ok(())));
                        let _ = answer.send(if ok { Ok(()) } else { Err("Redis did not confirm the subscription".into()) });
                        if !ok {
                            return Served::Lost;
                        }
                        subscribed.insert(name);
                    }
                    Some(Command::Unsubscribe(name)) => {
                        subscribed.remove(&name);
                        let done = timeout(self.command_timeout, sink.unsubscribe(&name)).await;
                        if !matches!(done, Ok(Ok(()))) {
                            return Served::Lost;
                        }
                    }
                },
                message = stream.next() => match message {
                    None => return Served::Lost,
                    Some(message) => {
                        heard = tokio::time::Instant::now();
                        let name = message.get_channel_name();
                        if self.control_names.iter().any(|own| own == name) {
                            // Full: dropped, and its sender times out.
                            if self.control_inbox.try_send(message.get_payload_bytes().to_vec()).is_err() {
                                tracing::warn!("control inbox full: message dropped");
                            }
                            continue;
                        }
                        if self.deliver(name, message.get_payload_bytes()) {
                            // Its last members ended or went: nobody here listens.
                            subscribed.remove(name);
                            let done = timeout(self.command_timeout, sink.unsubscribe(name)).await;
                            if !matches!(done, Ok(Ok(()))) {
                                return Served::Lost;
                            }
                        }
                    }
                },
                () = &mut probe => {
                    let due = heard + self.probe_every;
                    if tokio::time::Instant::now() < due {
                        probe.as_mut().reset(due);
                        continue;
                    }
                    let pong = timeout(self.command_timeout, sink.ping::<redis::Value>()).await;
                    if !matches!(pong, Ok(Ok(_))) {
                        return Served::Lost;
                    }
                    heard = tokio::time::Instant::now();
                    probe.as_mut().reset(heard + self.probe_every);
                }
            }
        }
    }

    /// A live message: encoded once for this node's members. Returns
    /// whether the channel has no member left here.
    fn deliver(&self, name: &str, payload: &[u8]) -> bool {
        let Some(channel) = channel_of(&self.prefix, name) else {
            return false;
        };
        let Some((offset, epoch, data)) = parse_live(payload) else {
            tracing::warn!(channel, "malformed live message from Redis, ignored");
            return false;
        };
        // A message whose data is not JSON is skipped here; the next one
        // shows the gap and the members resubscribe (the history then
        // refuses the same entry, as `unavailable`).
        let Ok(data) = RawJson::from_json(data.to_owned()) else {
            tracing::warn!(channel, offset, "live message with invalid JSON, skipped");
            return false;
        };
        let publication = Publication {
            channel: channel.to_owned(),
            epoch: epoch.to_owned(),
            offset,
            data,
        };
        self.hub
            .dispatch(channel, epoch, &Delivery::encode(&publication))
    }
}

enum Served {
    /// The broker is gone.
    Closed,
    /// The connection failed or went silent.
    Lost,
}
