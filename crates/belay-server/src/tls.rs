//! Optional TLS: a rustls listener so `wss://` works without a proxy in
//! front.
//!
//! [`load_pem`] (or [`server_config`] for certificates already in memory)
//! builds a [`rustls::ServerConfig`] with the *ring* provider passed
//! explicitly, so nothing depends on a process-wide default provider being
//! installed (and two servers in one process cannot race to install one).
//! [`Server::serve_tls`](crate::Server::serve_tls) then accepts TCP
//! connections, completes the TLS handshake within the configured handshake
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

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tower_service::Service;

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
/// [`Server::serve_tls`]. Each connection is served by hyper's HTTP/1.1
/// connection directly (no protocol sniffing wrapper), so a WebSocket
/// upgrade can take the bare socket back out of hyper and free hyper's
/// buffers (see `upgrade::WsIo`).
pub(crate) async fn serve(
    server: &Server,
    listener: TcpListener,
    router: Router,
    config: Option<Arc<rustls::ServerConfig>>,
) -> io::Result<()> {
    let acceptor = config.map(TlsAcceptor::from);
    let handshake_timeout = server.shared.config.limits.handshake_timeout();
    let mut make_service = router.into_make_service_with_connect_info::<SocketAddr>();
    // `stop` tells connections to finish gracefully; every connection task
    // holds a `done` receiver, so `done_tx.closed()` resolves when all ended.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, done_rx) = watch::channel(());
    let mut drained = pin!(server.drained());
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut drained => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors and the like: back off, as axum does.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        std::future::poll_fn(|cx| <_ as Service<SocketAddr>>::poll_ready(&mut make_service, cx))
            .await
            .unwrap_or_else(|e: Infallible| match e {});
        let service = make_service
            .call(peer)
            .await
            .unwrap_or_else(|e: Infallible| match e {});
        let acceptor = acceptor.clone();
        let mut stop = stop_rx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            let _done = done;
            let Some(acceptor) = acceptor else {
                serve_http(TokioIo::new(tcp), service, peer, stop).await;
                return;
            };
            let tls = tokio::select! {
                _ = stop.wait_for(|stop| *stop) => return,
                tls = tokio::time::timeout(handshake_timeout, acceptor.accept(tcp)) => tls,
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
            serve_http(TokioIo::new(tls), service, peer, stop).await;
        });
    }
    drop(listener);
    drop(done_rx);
    let _ = stop_tx.send(true);
    done_tx.closed().await;
    Ok(())
}

/// Serve HTTP/1.1 with upgrades on one connection until it ends; `stop`
/// asks it to finish gracefully.
async fn serve_http<I>(
    io: TokioIo<I>,
    service: axum::middleware::AddExtension<Router, axum::extract::ConnectInfo<SocketAddr>>,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The timer enables hyper's header read timeout (slow requests).
    builder.timer(TokioTimer::new());
    let mut conn = pin!(builder
        .serve_connection(io, TowerToHyperService::new(service))
        .with_upgrades());
    let mut stopping = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
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
