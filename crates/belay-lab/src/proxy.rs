//! The proxy itself: the loopback listener and the [`Proxy`] handle that
//! switches faults and toxics at run time.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::accept::accept_loop;
use crate::counters::CountersSnapshot;
use crate::fault::Fault;
use crate::state::Shared;
use crate::timeline::Timeline;
use crate::toxic::Toxic;

/// Why the proxy cannot start, or cannot take a fault, a toxic or a timeline.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The lab only touches loopback addresses.
    #[error(
        "the {role} address {addr} is not a loopback address (the fault proxy is loopback only)"
    )]
    NotLoopback {
        /// Which address: `listen`, `upstream` or `admin`.
        role: &'static str,
        /// The address refused.
        addr: SocketAddr,
    },
    /// The listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the OS said.
        source: io::Error,
    },
    /// The fault's parameters are out of range.
    #[error("invalid fault: {0}")]
    InvalidFault(String),
    /// The toxic's name, toxicity or parameters are out of range.
    #[error("invalid toxic: {0}")]
    InvalidToxic(String),
    /// The timeline cannot be run.
    #[error("invalid timeline: {0}")]
    InvalidTimeline(String),
    /// A toxic of that name is already in force on the proxy.
    #[error("a toxic named {0:?} already exists")]
    DuplicateToxic(String),
    /// No toxic of that name is in force on the proxy.
    #[error("no toxic named {0:?}")]
    NoSuchToxic(String),
    /// A proxy of that name already exists in the registry.
    #[error("a proxy named {0:?} already exists")]
    DuplicateProxy(String),
    /// No proxy of that name exists in the registry.
    #[error("no proxy named {0:?}")]
    NoSuchProxy(String),
    /// The proxy's name is not acceptable.
    #[error("invalid proxy name: {0}")]
    InvalidName(String),
}

/// Refuse anything but a loopback address.
pub(crate) fn require_loopback(role: &'static str, addr: SocketAddr) -> Result<(), ProxyError> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(ProxyError::NotLoopback { role, addr })
    }
}

/// Bind a loopback listener.
pub(crate) async fn bind(role: &'static str, addr: SocketAddr) -> Result<TcpListener, ProxyError> {
    require_loopback(role, addr)?;
    TcpListener::bind(addr)
        .await
        .map_err(|source| ProxyError::Bind { addr, source })
}

/// How to start a [`Proxy`]: [`Proxy::builder`], then [`ProxyBuilder::start`].
///
/// ```no_run
/// # async fn demo() -> Result<(), belay_lab::ProxyError> {
/// use belay_lab::{Proxy, Toxic, ToxicKind};
/// let proxy = Proxy::builder("127.0.0.1:8080".parse().unwrap())
///     .seed(42)
///     .toxic(Toxic::new(ToxicKind::Latency { latency_ms: 100, jitter_ms: 20 }))
///     .start()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ProxyBuilder {
    listen: SocketAddr,
    upstream: SocketAddr,
    seed: u64,
    toxics: Vec<Toxic>,
    /// The upstream is in a network namespace the lab itself created (the
    /// link cut's), not on loopback.
    own_namespace: bool,
}

impl ProxyBuilder {
    /// Let the upstream be the server in a network namespace the lab
    /// created for this repetition (the link cut over the fallback): the
    /// only upstream off loopback a proxy may have, and only the lab's.
    pub(crate) fn upstream_in_own_namespace(mut self) -> ProxyBuilder {
        self.own_namespace = true;
        self
    }

    /// Listen on `listen` (default `127.0.0.1:0`: any free port).
    pub fn listen(mut self, listen: SocketAddr) -> ProxyBuilder {
        self.listen = listen;
        self
    }

    /// Seed every random draw (toxicity, jitter, slice sizes); default 0.
    /// The same seed and the same sequence of connections and toxics give
    /// the same draws.
    pub fn seed(mut self, seed: u64) -> ProxyBuilder {
        self.seed = seed;
        self
    }

    /// Start with `toxic` in force.
    pub fn toxic(mut self, toxic: Toxic) -> ProxyBuilder {
        self.toxics.push(toxic);
        self
    }

    /// Check everything, bind, and start accepting. Must be called within
    /// a tokio runtime.
    pub async fn start(self) -> Result<Proxy, ProxyError> {
        if !self.own_namespace {
            require_loopback("upstream", self.upstream)?;
        }
        let shared = Shared::new(self.seed);
        for toxic in self.toxics {
            shared.add(toxic)?;
        }
        let listener = bind("listen", self.listen).await?;
        let local = listener.local_addr().map_err(|source| ProxyError::Bind {
            addr: self.listen,
            source,
        })?;
        let accept = tokio::spawn(accept_loop(listener, self.upstream, Arc::clone(&shared)));
        Ok(Proxy {
            inner: Arc::new(Inner {
                local,
                upstream: self.upstream,
                seed: self.seed,
                shared,
                accept,
                timeline: Mutex::new(None),
            }),
        })
    }
}

/// A running fault proxy. Cheap to clone; the accept loop stops when the
/// last clone is dropped (connections already open run on until they end).
#[derive(Debug, Clone)]
pub struct Proxy {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    local: SocketAddr,
    upstream: SocketAddr,
    seed: u64,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
    timeline: Mutex<Option<JoinHandle<()>>>,
}

impl Inner {
    fn stop_timeline(&self) {
        let mut running = self.timeline.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(task) = running.take() {
            task.abort();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.accept.abort();
        self.stop_timeline();
    }
}

impl Proxy {
    /// Listen on `listen` (port 0: any free port) and forward each
    /// connection to `upstream`, with no toxic and seed 0. Both must be
    /// loopback addresses. Must be called within a tokio runtime.
    pub async fn start(listen: SocketAddr, upstream: SocketAddr) -> Result<Proxy, ProxyError> {
        Proxy::builder(upstream).listen(listen).start().await
    }

    /// A proxy to `upstream`, to configure before [`ProxyBuilder::start`].
    pub fn builder(upstream: SocketAddr) -> ProxyBuilder {
        ProxyBuilder {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            upstream,
            seed: 0,
            toxics: Vec::new(),
            own_namespace: false,
        }
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local
    }

    /// The address connections are forwarded to.
    pub fn upstream(&self) -> SocketAddr {
        self.inner.upstream
    }

    /// The seed of its random draws.
    pub fn seed(&self) -> u64 {
        self.inner.seed
    }

    /// Switch to `fault`: its toxics ([`Fault::toxics`]) replace all the
    /// proxy's toxics. Takes effect at once for every open connection and
    /// every new one; [`Fault::Reset`] acts once and then leaves no toxic in
    /// force (after its refusal window).
    pub fn set(&self, fault: Fault) -> Result<(), ProxyError> {
        self.inner.shared.set(fault)?;
        tracing::info!(?fault, proxy = %self.inner.local, "fault set");
        Ok(())
    }

    /// The fault in force ([`Fault::Reset`] with the time left while a
    /// reset's refusal window lasts; [`Fault::Toxics`] once toxics were
    /// added or removed since the last [`set`](Proxy::set)).
    pub fn fault(&self) -> Fault {
        self.inner.shared.state.borrow().reported(Instant::now())
    }

    /// Add `toxic` to those in force; it acts at once on every open
    /// connection and every new one. Its name must be free.
    pub fn add_toxic(&self, toxic: Toxic) -> Result<(), ProxyError> {
        let name = toxic.name().to_owned();
        self.inner.shared.add(toxic)?;
        tracing::info!(toxic = %name, proxy = %self.inner.local, "toxic added");
        Ok(())
    }

    /// Remove the toxic named `name`; held bytes then flow again.
    pub fn remove_toxic(&self, name: &str) -> Result<Toxic, ProxyError> {
        let removed = self.inner.shared.remove(name)?;
        tracing::info!(toxic = %name, proxy = %self.inner.local, "toxic removed");
        Ok(removed)
    }

    /// Remove every toxic.
    pub fn clear_toxics(&self) {
        self.inner.shared.clear();
        tracing::info!(proxy = %self.inner.local, "toxics cleared");
    }

    /// The toxics in force, in order of addition.
    pub fn toxics(&self) -> Vec<Toxic> {
        let state = self.inner.shared.state.borrow();
        state.toxics.iter().map(|a| a.toxic.clone()).collect()
    }

    /// Run `timeline` from now, replacing any timeline still running. Its
    /// steps act through this proxy's toxics; it stops early when the proxy
    /// is dropped or [`closed`](Proxy::close).
    pub fn run_timeline(&self, timeline: Timeline) -> Result<(), ProxyError> {
        timeline.validate().map_err(ProxyError::InvalidTimeline)?;
        let task = tokio::spawn(crate::timeline::run(
            timeline,
            Arc::clone(&self.inner.shared),
            Instant::now(),
        ));
        let mut running = self
            .inner
            .timeline
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(previous) = running.replace(task) {
            previous.abort();
        }
        Ok(())
    }

    /// Stop the running timeline, if any (its toxics stay in force).
    pub fn stop_timeline(&self) {
        self.inner.stop_timeline();
    }

    /// Whether a timeline is still running.
    pub fn timeline_running(&self) -> bool {
        let running = self
            .inner
            .timeline
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        running.as_ref().is_some_and(|task| !task.is_finished())
    }

    /// Stop accepting (the port is released), stop the timeline and close
    /// every open connection.
    pub fn close(&self) {
        self.inner.accept.abort();
        self.inner.stop_timeline();
        self.inner.shared.state.send_modify(|s| s.closed = true);
    }

    /// The counters so far.
    pub fn counters(&self) -> CountersSnapshot {
        self.inner.shared.counters.snapshot()
    }
}
