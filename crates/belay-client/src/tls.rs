//! Which servers a `wss://` connection trusts.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::error::TlsError;

/// Trust anchors for `wss://`: the Mozilla roots (webpki-roots) unless
/// disabled, plus any custom roots (e.g. a self-signed test server's
/// certificate). TLS uses rustls with the *ring* provider.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    webpki_roots: bool,
    custom: Vec<CertificateDer<'static>>,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            webpki_roots: true,
            custom: Vec::new(),
        }
    }
}

impl TlsSettings {
    /// Also trust this DER certificate as a root.
    pub fn add_root_der(&mut self, der: impl Into<Vec<u8>>) -> &mut Self {
        self.custom.push(CertificateDer::from(der.into()));
        self
    }

    /// Also trust every certificate in this PEM text as a root.
    pub fn add_root_pem(&mut self, pem: &[u8]) -> Result<&mut Self, TlsError> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::Pem(e.to_string()))?;
        if certs.is_empty() {
            return Err(TlsError::Pem("no CERTIFICATE block".into()));
        }
        self.custom.extend(certs);
        Ok(self)
    }

    /// Whether to trust the Mozilla root set (default: yes). Turn it off to
    /// trust only the custom roots.
    pub fn set_webpki_roots(&mut self, enabled: bool) -> &mut Self {
        self.webpki_roots = enabled;
        self
    }

    /// The rustls configuration these settings describe.
    pub(crate) fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        if self.webpki_roots {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        for cert in &self.custom {
            roots.add(cert.clone())?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        // WebSocket upgrades are HTTP/1.1.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}
