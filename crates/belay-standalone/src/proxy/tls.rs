//! The proxies' connections to the backend: plain TCP for `http://`,
//! rustls over it for `https://` ([`BackendTls`] says which certificates
//! the backend's must chain to). The connector is what hyper's pooled
//! client calls to open a connection; the TLS handshake runs inside the
//! call's own timeout, and a handshake that fails (an untrusted
//! certificate) is a connect error: the call was never sent.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use tower_service::Service;

use super::ProxyError;

/// Which certificates an `https://` backend's must chain to: the Mozilla
/// roots (webpki-roots, the default), or exactly the CA certificates of a
/// PEM file (`[proxy] ca`: a private CA, or a self-signed backend).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct BackendTls {
    /// `None`: the Mozilla roots.
    ca: Option<Vec<CertificateDer<'static>>>,
}

impl BackendTls {
    /// Trust exactly the certificates in `pem` (one or more `CERTIFICATE`
    /// blocks), not the Mozilla roots.
    pub fn from_ca_pem(pem: &[u8]) -> Result<BackendTls, ProxyError> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ProxyError::Ca(e.to_string()))?;
        if certs.is_empty() {
            return Err(ProxyError::Ca("no CERTIFICATE block".into()));
        }
        Ok(BackendTls { ca: Some(certs) })
    }

    /// The rustls client configuration: these roots, HTTP/1.1 (the
    /// proxies speak nothing else).
    fn client_config(&self) -> Result<rustls::ClientConfig, ProxyError> {
        let mut roots = rustls::RootCertStore::empty();
        match &self.ca {
            Some(certs) => {
                for cert in certs {
                    roots
                        .add(cert.clone())
                        .map_err(|e| ProxyError::Ca(e.to_string()))?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ProxyError::Ca(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

/// Opens the connections of one backend: TCP, then TLS for `https://`.
#[derive(Clone)]
pub(crate) struct BackendConnector {
    tcp: HttpConnector,
    tls: TlsConnector,
}

impl BackendConnector {
    /// TCP as `tcp` connects (its connect timeout, nodelay), TLS as `tls`
    /// says.
    pub(crate) fn new(
        mut tcp: HttpConnector,
        tls: &BackendTls,
    ) -> Result<BackendConnector, ProxyError> {
        // The scheme is this connector's business, not the TCP part's.
        tcp.enforce_http(false);
        Ok(BackendConnector {
            tcp,
            tls: TlsConnector::from(Arc::new(tls.client_config()?)),
        })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Service<Uri> for BackendConnector {
    type Response = TokioIo<BackendStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.tcp.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let mut tcp = self.tcp.clone();
        let tls = self.tls.clone();
        Box::pin(async move {
            let https = uri.scheme_str() == Some("https");
            // An IPv6 literal comes bracketed in the URI, not in a name.
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let stream = tcp.call(uri).await?.into_inner();
            if !https {
                return Ok(TokioIo::new(BackendStream::Plain(stream)));
            }
            let name = ServerName::try_from(host)?;
            let stream = tls.connect(name, stream).await?;
            Ok(TokioIo::new(BackendStream::Tls(Box::new(stream))))
        })
    }
}

/// One connection to the backend, with or without TLS.
pub(crate) enum BackendStream {
    /// `http://`.
    Plain(TcpStream),
    /// `https://` (boxed: a TLS stream carries its buffers).
    Tls(Box<TlsStream<TcpStream>>),
}

impl Connection for BackendStream {
    fn connected(&self) -> Connected {
        match self {
            BackendStream::Plain(tcp) => tcp.connected(),
            BackendStream::Tls(tls) => tls.get_ref().0.connected(),
        }
    }
}

impl AsyncRead for BackendStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            BackendStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            BackendStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for BackendStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            BackendStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            BackendStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            BackendStream::Plain(s) => Pin::new(s).poll_flush(cx),
            BackendStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            BackendStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            BackendStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
