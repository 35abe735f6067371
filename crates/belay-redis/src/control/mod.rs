//! [`ControlPlane`]: node-to-node messages over Redis, built once for every
//! feature that needs another node (a user's connections elsewhere, a
//! fallback POST that lands on the wrong node, cluster-wide stats).
//!
//! Each node has an id and two PUB/SUB names on the broker's one PUB/SUB
//! connection: its own, `PREFIX.control.ID`, and the broadcast
//! `PREFIX.control.all`. [`request`](ControlPlane::request) sends to one
//! node and waits, within a timeout, for its answer on the sender's own
//! name; [`notify_all`](ControlPlane::notify_all) reaches every node (this
//! one too) without answers. Each node renews its entry in the registry
//! (`PREFIX.nodes`) every third of the node TTL, so
//! [`alive`](ControlPlane::alive) lists the nodes that beat within it.
//!
//! Bounds: a message is at most [`MAX_CONTROL_MESSAGE`] bytes; requests
//! waiting for answers and handlers running are capped per node, so a
//! flood of control traffic is refused ([`ControlError::Busy`]) rather
//! than held.

mod load;
mod registry;
mod wire;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use crate::commands::Commands;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::timeout;

use load::{load_reply, rate_arg, MAX_NODE_OPEN, MAX_NODE_RATE};
pub(crate) use load::{ClusterLoad, LoadHooks, NodeLoad};
use registry::{alive_reply, RegistryScripts};
use wire::Wire;
pub use wire::MAX_CONTROL_MESSAGE;

/// Requests this node may wait on at once.
const MAX_PENDING: usize = 4_096;
/// Handlers this node runs at once for other nodes.
const MAX_RUNNING: usize = 64;

/// Why a control message got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// No answer within the timeout (the node is gone, cut off, or slow).
    #[error("no answer in time")]
    Timeout,
    /// Redis did not take the message.
    #[error("Redis: {0}")]
    Unavailable(String),
    /// The message is longer than [`MAX_CONTROL_MESSAGE`].
    #[error("control message too large: {0} bytes")]
    TooLarge(usize),
    /// Too many requests wait for answers, or the other node runs too many
    /// handlers.
    #[error("too many control requests at once")]
    Busy,
    /// The other node answered with an error (no such method, or the
    /// handler failed).
    #[error("refused: {0}")]
    Refused(String),
}

/// What a handler returns: its answer, or why not.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;
type Handler = Arc<dyn Fn(Value) -> HandlerFuture + Send + Sync>;

/// This node's end of the cluster's control messages. Cheap to clone.
#[derive(Clone)]
pub struct ControlPlane {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("node", &self.inner.node)
            .finish_non_exhaustive()
    }
}

struct Inner {
    node: String,
    prefix: String,
    commands: Commands,
    command_timeout: Duration,
    scripts: RegistryScripts,
    handlers: RwLock<HashMap<String, Handler>>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, ControlError>>>>,
    next_id: AtomicU64,
    running: Arc<Semaphore>,
    /// Whether the node still renews its registry entry; held across each
    /// renewal, so a leave waits for one in flight and no renewal lands
    /// after it (one did, listing a node that had left).
    beating: tokio::sync::Mutex<bool>,
    /// The node's load reported with each heartbeat and the totals heard
    /// back, once a server is planned with the cluster.
    load: Mutex<Option<Arc<LoadHooks>>>,
}

/// The PUB/SUB names of a node's control messages: its own and the
/// broadcast.
pub(crate) fn control_names(prefix: &str, node: &str) -> [String; 2] {
    [node_name(prefix, node), format!("{prefix}.control.all")]
}

fn node_name(prefix: &str, node: &str) -> String {
    format!("{prefix}.control.{node}")
}

impl ControlPlane {
    /// Start the control plane of `node`: its heartbeat and the task that
    /// reads `inbox` (what the PUB/SUB connection received on the node's
    /// control names).
    pub(crate) fn start(
        node: String,
        prefix: &str,
        commands: Commands,
        command_timeout: Duration,
        node_ttl: Duration,
        inbox: mpsc::Receiver<Vec<u8>>,
    ) -> ControlPlane {
        let inner = Arc::new(Inner {
            node,
            prefix: prefix.to_owned(),
            commands,
            command_timeout,
            scripts: RegistryScripts::new(),
            handlers: RwLock::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            running: Arc::new(Semaphore::new(MAX_RUNNING)),
            beating: tokio::sync::Mutex::new(true),
            load: Mutex::new(None),
        });
        tokio::spawn(beat(Arc::downgrade(&inner), node_ttl));
        tokio::spawn(read(Arc::downgrade(&inner), inbox));
        ControlPlane { inner }
    }

    /// Report `hooks`' load with every heartbeat from now on, and hand it
    /// the live nodes' totals each time.
    pub(crate) fn report_load(&self, hooks: LoadHooks) {
        *self
            .inner
            .load
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(hooks));
    }

    /// Write the node's registry entry now (at start, so a node is listed
    /// as soon as it serves; the heartbeat renews it from then on).
    pub(crate) async fn announce(&self, ttl: Duration) {
        if let Renewed::Failed = self.inner.renew(ttl).await {
            tracing::warn!(
                node = self.inner.node,
                "node heartbeat not written to Redis"
            );
        }
    }

    /// This node's id.
    pub fn node(&self) -> &str {
        &self.inner.node
    }

    /// Answer `method` from other nodes (and notices to every node) with
    /// `handler`; replaces an earlier handler of the name.
    pub fn handle<F, Fut>(&self, method: &str, handler: F)
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, String>> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |body| Box::pin(handler(body)));
        self.inner
            .handlers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(method.to_owned(), handler);
    }

    /// Ask `node` to run `method` with `body`; its answer, within `within`.
    pub async fn request(
        &self,
        node: &str,
        method: &str,
        body: Value,
        within: Duration,
    ) -> Result<Value, ControlError> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        {
            let mut pending = self
                .inner
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if pending.len() >= MAX_PENDING {
                return Err(ControlError::Busy);
            }
            pending.insert(id, answer);
        }
        let ask = Wire::Ask {
            from: self.inner.node.clone(),
            id,
            method: method.to_owned(),
            body,
        };
        let sent = self
            .inner
            .publish(&node_name(&self.inner.prefix, node), &ask)
            .await;
        let outcome = match sent {
            Err(error) => Err(error),
            Ok(()) => match timeout(within, answered).await {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(_)) | Err(_) => Err(ControlError::Timeout),
            },
        };
        self.inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        outcome
    }

    /// Send `method` with `body` to every node, this one included, without
    /// answers.
    pub async fn notify_all(&self, method: &str, body: Value) -> Result<(), ControlError> {
        let notice = Wire::Notice {
            from: self.inner.node.clone(),
            method: method.to_owned(),
            body,
        };
        let [_, all] = control_names(&self.inner.prefix, &self.inner.node);
        self.inner.publish(&all, &notice).await
    }

    /// The nodes whose heartbeat is current, sorted by id.
    pub async fn alive(&self) -> Result<Vec<String>, ControlError> {
        let mut commands = self.inner.commands.clone();
        let mut call = self.inner.scripts.alive.prepare_invoke();
        call.key(registry_key(&self.inner.prefix));
        let reply = timeout(self.inner.command_timeout, call.invoke_async(&mut commands))
            .await
            .map_err(|_| ControlError::Unavailable("timed out".into()))?
            .map_err(|e: redis::RedisError| ControlError::Unavailable(e.to_string()))?;
        alive_reply(reply).ok_or_else(|| ControlError::Unavailable("unexpected registry".into()))
    }

    /// Ask every live node (this one too) to run `method`; each node's id
    /// and answer, within `within` for all of them.
    pub async fn ask_all(
        &self,
        method: &str,
        body: Value,
        within: Duration,
    ) -> Result<Vec<(String, Result<Value, ControlError>)>, ControlError> {
        let nodes = self.alive().await?;
        let asks = nodes.iter().map(|node| {
            let body = body.clone();
            async move { self.request(node, method, body, within).await }
        });
        let answers = futures_util::future::join_all(asks).await;
        Ok(nodes.into_iter().zip(answers).collect())
    }

    /// Leave the registry now (a node stopping on purpose), rather than
    /// when its heartbeat expires.
    pub async fn leave(&self) -> Result<(), ControlError> {
        *self.inner.beating.lock().await = false;
        let mut commands = self.inner.commands.clone();
        let mut call = self.inner.scripts.leave.prepare_invoke();
        call.key(registry_key(&self.inner.prefix))
            .arg(&self.inner.node);
        timeout(
            self.inner.command_timeout,
            call.invoke_async::<redis::Value>(&mut commands),
        )
        .await
        .map_err(|_| ControlError::Unavailable("timed out".into()))?
        .map_err(|e| ControlError::Unavailable(e.to_string()))?;
        Ok(())
    }
}

fn registry_key(prefix: &str) -> String {
    format!("{prefix}.nodes")
}

impl Inner {
    async fn publish(&self, name: &str, message: &Wire) -> Result<(), ControlError> {
        let text = message.encode();
        if text.len() > MAX_CONTROL_MESSAGE {
            return Err(ControlError::TooLarge(text.len()));
        }
        let mut commands = self.commands.clone();
        let publish = redis::cmd("PUBLISH").arg(name).arg(text).to_owned();
        timeout(
            self.command_timeout,
            publish.query_async::<redis::Value>(&mut commands),
        )
        .await
        .map_err(|_| ControlError::Unavailable("timed out".into()))?
        .map_err(|e| ControlError::Unavailable(e.to_string()))?;
        Ok(())
    }

    fn handler(&self, method: &str) -> Option<Handler> {
        self.handlers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(method)
            .cloned()
    }

    /// One message from another node (or this one).
    fn receive(self: &Arc<Self>, bytes: &[u8]) {
        let Some(message) = Wire::decode(bytes) else {
            tracing::warn!(len = bytes.len(), "unreadable control message dropped");
            return;
        };
        match message {
            Wire::Answer { id, ok, err } => {
                let waiting = self
                    .pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
                if let Some(waiting) = waiting {
                    let _ = waiting.send(match (ok, err) {
                        (_, Some(reason)) => Err(refusal(reason)),
                        (ok, None) => Ok(ok.unwrap_or(Value::Null)),
                    });
                }
            }
            Wire::Ask {
                from,
                id,
                method,
                body,
            } => {
                let reply_to = node_name(&self.prefix, &from);
                let Ok(permit) = Arc::clone(&self.running).try_acquire_owned() else {
                    let busy = answer(id, Err(BUSY.into()));
                    let inner = Arc::clone(self);
                    tokio::spawn(async move { inner.publish(&reply_to, &busy).await });
                    return;
                };
                let handler = self.handler(&method);
                let inner = Arc::clone(self);
                tokio::spawn(async move {
                    let outcome = match handler {
                        Some(handler) => handler(body).await,
                        None => Err(format!("no control method {method:?}")),
                    };
                    drop(permit);
                    let sent = inner.publish(&reply_to, &answer(id, outcome)).await;
                    if let Err(error) = sent {
                        tracing::warn!(%error, "control answer not sent");
                    }
                });
            }
            Wire::Notice { method, body, .. } => {
                let (Some(handler), Ok(permit)) = (
                    self.handler(&method),
                    Arc::clone(&self.running).try_acquire_owned(),
                ) else {
                    return;
                };
                tokio::spawn(async move {
                    let _ = handler(body).await;
                    drop(permit);
                });
            }
        }
    }
}

/// The reason a busy node gives.
const BUSY: &str = "busy: too many control requests running";

fn refusal(reason: String) -> ControlError {
    if reason == BUSY {
        ControlError::Busy
    } else {
        ControlError::Refused(reason)
    }
}

fn answer(id: u64, outcome: Result<Value, String>) -> Wire {
    match outcome {
        Ok(value) => Wire::Answer {
            id,
            ok: Some(value),
            err: None,
        },
        Err(reason) => Wire::Answer {
            id,
            ok: None,
            err: Some(reason),
        },
    }
}

/// Renew the node's registry entry every third of `ttl` until the control
/// plane is dropped or the node leaves.
async fn beat(inner: Weak<Inner>, ttl: Duration) {
    let mut every = tokio::time::interval((ttl / 3).max(Duration::from_millis(10)));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        match inner.renew(ttl).await {
            Renewed::Yes => {}
            Renewed::Failed => {
                tracing::warn!(node = inner.node, "node heartbeat not written to Redis");
            }
            Renewed::Left => return,
        }
    }
}

/// What one renewal of the registry entry did.
enum Renewed {
    Yes,
    /// Redis did not take it in time.
    Failed,
    /// The node left the registry: no more renewals.
    Left,
}

impl Inner {
    /// Write this node's registry entry (expiring after `ttl`).
    async fn renew(&self, ttl: Duration) -> Renewed {
        let beating = self.beating.lock().await;
        if !*beating {
            return Renewed::Left;
        }
        let hooks = self
            .load
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let load = hooks
            .as_ref()
            .map_or(NodeLoad { rate: 0.0, open: 0 }, |hooks| (hooks.report)());
        let mut commands = self.commands.clone();
        let mut call = self.scripts.beat.prepare_invoke();
        call.key(registry_key(&self.prefix))
            .arg(&self.node)
            .arg(ttl.as_millis().max(1).to_string())
            .arg(rate_arg(load.rate))
            .arg(load.open)
            .arg(MAX_NODE_RATE)
            .arg(MAX_NODE_OPEN);
        let beat = timeout(
            self.command_timeout,
            call.invoke_async::<redis::Value>(&mut commands),
        )
        .await;
        drop(beating);
        match beat {
            Ok(Ok(reply)) => {
                if let (Some(hooks), Some(totals)) = (hooks, load_reply(reply)) {
                    (hooks.heard)(totals);
                }
                Renewed::Yes
            }
            _ => Renewed::Failed,
        }
    }
}

/// Hand every control message that arrives to the control plane.
async fn read(inner: Weak<Inner>, mut inbox: mpsc::Receiver<Vec<u8>>) {
    while let Some(bytes) = inbox.recv().await {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        inner.receive(&bytes);
    }
}
