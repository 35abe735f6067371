//! Optional TLS: a rustls listener so `wss://` works without a proxy in
//! front.
//!
//! [`load_pem`] (or [`server_config`] for certificates already in memory)
//! builds a [`rustls::ServerConfig`] with the *ring* provider passed
//! explicitly, so nothing depends on a process-wide default provider being
//! installed (and two servers in one process cannot race to install one).
//! [`Server::serve_tls`](crate::Server::serve_tls) then accepts TCP
//! connections, completes the TLS handshake within the configured upgrade
//! timeout, and serves the router over HTTP/1.1 with upgrades, exactly as
//! [`Server::serve`](crate::Server::serve) does over plain TCP.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = belay_server::Server::builder().build();
//! let tls = belay_server::tls::load_pem("cert.pem", "key.pem")?;
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:8443").await?;
//! server.serve_tls(listener, server.router(), tls).await?;
//! # Ok(())
//! # }
//! ```

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use belay_proto::server::{parse_proxy_header, ProxyHeader, MAX_PROXY_HEADER};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::metrics::Metrics;
use crate::peer_limits::{refusal_bytes, ConnectionService, PeerSlot, SlotCell};
use crate::Server;

/// The rustls this crate builds with, so callers can name
/// [`rustls::ServerConfig`] without depending on a matching version.
pub use rustls;

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate file could not be read or is not valid PEM.
    #[error("cannot read the certificate file {path}: {source}")]
    Certificate {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: pem::Error,
    },
    /// The certificate file holds no `CERTIFICATE` section.
    #[error("no certificate in {path}")]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file could not be read or is not valid PEM.
    #[error("cannot read the private key file {path}: {source}")]
    Key {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: pem::Error,
    },
    /// The key file holds no PKCS#8, PKCS#1 or SEC1 private key.
    #[error("no private key in {path}")]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// rustls refused the certificate chain and key (for example, the key
    /// does not match the certificate, or its algorithm is unsupported).
    #[error("invalid certificate or key: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Read a PEM certificate chain (leaf first) and a PEM private key and build
/// the server's TLS configuration (TLS 1.2 and 1.3, ALPN `http/1.1`).
pub fn load_pem(
    cert_path: impl AsRef<Path>,
    key_path: impl AsRef<Path>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let cert_path = cert_path.as_ref();
    let key_path = key_path.as_ref();
    let certs = CertificateDer::pem_file_iter(cert_path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|source| TlsError::Certificate {
            path: cert_path.to_owned(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: cert_path.to_owned(),
        });
    }
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|source| match source {
        pem::Error::NoItemsFound => TlsError::NoKey {
            path: key_path.to_owned(),
        },
        source => TlsError::Key {
            path: key_path.to_owned(),
            source,
        },
    })?;
    server_config(certs, key)
}

/// Build the server's TLS configuration from a DER certificate chain (leaf
/// first) and its private key, with the *ring* crypto provider.
pub fn server_config(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    // Only HTTP/1.1 is served (WebSocket upgrades are HTTP/1.1).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The accept loop behind [`Server::serve`] (`config` is `None`) and
/// [`Server::serve_tls`]. Each connection is counted against its source at
/// once (see `peer_limits`): over a limit, it is answered with a canned
/// status and closed before anything else is spent on it. From a trusted
/// proxy with the PROXY protocol enabled, the header is read first and the
/// client's address taken from it. TLS, if any, and the request headers
/// must then arrive within the upgrade timeout. Each connection is served
/// by hyper's HTTP/1.1 connection directly (no protocol sniffing wrapper),
/// so a WebSocket upgrade can take the bare socket back out of hyper and
/// free hyper's buffers (see `upgrade::WsIo`).
pub(crate) async fn serve(
    server: &Server,
    listener: TcpListener,
    router: Router,
    config: Option<Arc<rustls::ServerConfig>>,
) -> io::Result<()> {
    let acceptor = config.map(TlsAcceptor::from);
    // `stop` tells connections to finish gracefully; every connection task
    // holds a `done` receiver, so `done_tx.closed()` resolves when all ended.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, done_rx) = watch::channel(());
    let mut drained = pin!(server.drained());
    // Housekeeping for as long as this server serves.
    let expiry = tokio::spawn(crate::idempotency_expiry::run(Arc::clone(&server.shared)));
    let _expiry = AbortOnDrop(expiry.abort_handle());
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut drained => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors and the like: back off, as axum does.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let shared = Arc::clone(&server.shared);
        let router = router.clone();
        let acceptor = acceptor.clone();
        let stop = stop_rx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            let _done = done;
            let timeout = shared.config.upgrade_timeout;
            let deadline = crate::clock::deadline_in(timeout);
            let trusted = shared.config.trusted_proxies.trusts(peer.ip());
            let (tcp, source) = if trusted && shared.config.proxy_protocol {
                match tokio::time::timeout_at(deadline, read_proxy_header(tcp, peer)).await {
                    Ok(Some(read)) => read,
                    _ => {
                        tracing::debug!(%peer, "no valid PROXY header in time");
                        return;
                    }
                }
            } else {
                (tcp, peer)
            };
            // A trusted proxy is not one source: its clients are counted
            // when the upgrade names them (X-Forwarded-For / Forwarded).
            let counted = (!shared.config.trusted_proxies.trusts(source.ip())).then(|| source.ip());
            let slot = match PeerSlot::acquire(&shared, counted) {
                Ok(slot) => slot,
                Err(violation) => {
                    Metrics::add(&shared.metrics.connection_refusals);
                    let _ = tcp.try_write(&refusal_bytes(violation));
                    return;
                }
            };
            let spoke = Arc::new(AtomicBool::new(false));
            let service = ConnectionService {
                inner: router,
                peer: source,
                slot: SlotCell::new(slot),
                spoke: Arc::clone(&spoke),
            };
            let Some(acceptor) = acceptor else {
                serve_http(TokioIo::new(tcp), service, source, stop, deadline, spoke).await;
                return;
            };
            let mut stop_tls = stop.clone();
            let tls = tokio::select! {
                _ = stop_tls.wait_for(|stop| *stop) => return,
                tls = tokio::time::timeout_at(deadline, acceptor.accept(tcp)) => tls,
            };
            let tls = match tls {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            serve_http(TokioIo::new(tls), service, source, stop, deadline, spoke).await;
        });
    }
    drop(listener);
    drop(done_rx);
    let _ = stop_tx.send(true);
    done_tx.closed().await;
    Ok(())
}

/// Read a PROXY protocol header (v1 or v2) off `tcp`, consuming exactly
/// its bytes; the client's address, or `peer` for `LOCAL`/`UNKNOWN`.
/// `None` if the stream ends or does not start with a valid header.
async fn read_proxy_header(
    mut tcp: TcpStream,
    peer: SocketAddr,
) -> Option<(TcpStream, SocketAddr)> {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; MAX_PROXY_HEADER];
    loop {
        let seen = tcp.peek(&mut buf).await.ok()?;
        if seen == 0 {
            return None;
        }
        match parse_proxy_header(&buf[..seen]) {
            ProxyHeader::Done { len, source } => {
                tcp.read_exact(&mut buf[..len]).await.ok()?;
                return Some((tcp, source.unwrap_or(peer)));
            }
            ProxyHeader::Incomplete if seen < buf.len() => {
                // The rest of the header is on its way (a proxy sends it in
                // one write, so this is rare); the caller's deadline bounds it.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            _ => return None,
        }
    }
}

/// Serve HTTP/1.1 with upgrades on one connection until it ends; `stop`
/// asks it to finish gracefully. A connection that has not completed a
/// request's headers by `deadline` is closed (hyper's header timeout
/// covers each later request on a kept-alive connection).
async fn serve_http<I>(
    io: TokioIo<I>,
    service: ConnectionService<Router>,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
    deadline: tokio::time::Instant,
    spoke: Arc<AtomicBool>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let abort = service.slot.clone();
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The timer enables hyper's header read timeout (slow requests).
    builder.timer(TokioTimer::new());
    builder.header_read_timeout(crate::clock::left_until(deadline).max(Duration::from_millis(1)));
    // hyper's read buffer, per connection not yet upgraded (its default
    // allows about 400 KB); request heads are small.
    builder.max_buf_size(32 * 1024);
    let mut conn = pin!(builder
        .serve_connection(io, TowerToHyperService::new(service))
        .with_upgrades());
    let mut stopping = false;
    let first_request = tokio::time::sleep_until(deadline);
    tokio::pin!(first_request);
    let mut waiting_first = true;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                break;
            }
            () = &mut first_request, if waiting_first => {
                waiting_first = false;
                if !spoke.load(Ordering::Acquire) {
                    tracing::debug!(%peer, "no request within the upgrade timeout");
                    break;
                }
            }
            () = abort.aborted() => {
                tracing::debug!(%peer, "connection dropped by its session");
                break;
            }
            _ = stop.wait_for(|stop| *stop), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Errors of one connection, not of the listener: accept again at once.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Aborts a background task when the `serve` call that started it returns.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
