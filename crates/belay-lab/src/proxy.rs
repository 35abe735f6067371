//! The proxy itself: the loopback listener, its accept loop, and the
//! [`Proxy`] handle that switches faults at run time.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::counters::CountersSnapshot;
use crate::fault::Fault;
use crate::state::Shared;

/// Why the proxy cannot start or cannot take a fault.
#[derive(Debug, thiserror::Error)]
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
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Proxy {
    /// Listen on `listen` (port 0: any free port) and forward each
    /// connection to `upstream`, in [`Fault::Pass`]. Both must be loopback
    /// addresses. Must be called within a tokio runtime.
    pub async fn start(listen: SocketAddr, upstream: SocketAddr) -> Result<Proxy, ProxyError> {
        require_loopback("upstream", upstream)?;
        let listener = bind("listen", listen).await?;
        let local = listener.local_addr().map_err(|source| ProxyError::Bind {
            addr: listen,
            source,
        })?;
        let shared = Shared::new();
        let accept = tokio::spawn(accept_loop(listener, upstream, Arc::clone(&shared)));
        Ok(Proxy {
            inner: Arc::new(Inner {
                local,
                upstream,
                shared,
                accept,
            }),
        })
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local
    }

    /// The address connections are forwarded to.
    pub fn upstream(&self) -> SocketAddr {
        self.inner.upstream
    }

    /// Switch to `fault`. Takes effect at once for every open connection
    /// and every new one; [`Fault::Reset`] acts once and then leaves
    /// [`Fault::Pass`] in force (after its refusal window).
    pub fn set(&self, fault: Fault) -> Result<(), ProxyError> {
        fault.validate().map_err(ProxyError::InvalidFault)?;
        let now = Instant::now();
        self.inner.shared.state.send_modify(|s| s.apply(fault, now));
        self.inner.shared.counters.fault_set();
        tracing::info!(?fault, proxy = %self.inner.local, "fault set");
        Ok(())
    }

    /// The fault in force ([`Fault::Reset`] with the time left while a
    /// reset's refusal window lasts).
    pub fn fault(&self) -> Fault {
        self.inner.shared.state.borrow().reported(Instant::now())
    }

    /// The counters so far.
    pub fn counters(&self) -> CountersSnapshot {
        self.inner.shared.counters.snapshot()
    }
}

async fn accept_loop(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    loop {
        let client = match listener.accept().await {
            Ok((client, _)) => client,
            Err(e) => {
                // Out of descriptors and the like: back off briefly, keep serving.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        shared.counters.accepted();
        let state = *shared.state.borrow();
        if state.refusing(Instant::now()) {
            shared.counters.refused();
            reset(client);
        } else if state.fault == Fault::DropNew {
            shared.counters.dropped_new();
            drop(client);
        } else {
            let shared = Arc::clone(&shared);
            tokio::spawn(crate::pair::run(client, upstream, state.resets, shared));
        }
    }
}

/// Close `stream` with an RST.
fn reset(stream: TcpStream) {
    let _ = stream.set_zero_linger();
}
