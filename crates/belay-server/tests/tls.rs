//! wss:// without a proxy: `Server::serve_tls` with a self-signed
//! certificate generated here (rcgen), a tokio-websockets client over rustls
//! that trusts exactly that certificate.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use belay_proto::server::DrainConfig;
use belay_server::tls::{self, TlsError};
use belay_server::{Server, ServerConfig};
use futures_util::{SinkExt, StreamExt};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use tokio_websockets::{ClientBuilder, Message, WebSocketStream};

const SOON: Duration = Duration::from_secs(5);

/// A self-signed certificate for `localhost` and 127.0.0.1.
struct SelfSigned {
    cert: CertificateDer<'static>,
    key_der: Vec<u8>,
    cert_pem: String,
    key_pem: String,
}

fn self_signed() -> SelfSigned {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("a certificate");
    SelfSigned {
        cert: certified.cert.der().clone(),
        key_der: certified.signing_key.serialize_der(),
        cert_pem: certified.cert.pem(),
        key_pem: certified.signing_key.serialize_pem(),
    }
}

/// A client TLS connector that trusts only `cert`.
fn connector(cert: &CertificateDer<'static>) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).expect("a valid root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

/// Serve `server` over TLS on 127.0.0.1 with a port of the OS's choosing.
async fn start_tls(
    server: &Server,
    config: Arc<rustls::ServerConfig>,
) -> (SocketAddr, JoinHandle<std::io::Result<()>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = server.clone();
    let task =
        tokio::spawn(async move { serving.serve_tls(listener, serving.router(), config).await });
    (addr, task)
}

/// Open `wss://{name}:{port}/ws` over rustls.
async fn connect_wss(
    addr: SocketAddr,
    name: &str,
    connector: &TlsConnector,
) -> WebSocketStream<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let server_name = ServerName::try_from(name.to_owned()).unwrap();
    let tls = tokio::time::timeout(SOON, connector.connect(server_name, tcp))
        .await
        .expect("TLS handshake in time")
        .expect("the certificate is trusted");
    let uri = format!("wss://{name}:{}/ws", addr.port());
    let (ws, response) = tokio::time::timeout(
        SOON,
        ClientBuilder::new().uri(&uri).unwrap().connect_on(tls),
    )
    .await
    .expect("upgrade in time")
    .expect("upgraded");
    assert_eq!(response.status(), 101);
    ws
}

/// Send `connect` and return the `welcome`.
async fn belay_handshake<S>(ws: &mut WebSocketStream<S>) -> Value
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let connect = json!({"type": "connect", "protocol": 1}).to_string();
    ws.send(Message::text(connect)).await.unwrap();
    loop {
        let message = tokio::time::timeout(SOON, ws.next())
            .await
            .expect("a reply in time")
            .expect("the connection stays open")
            .expect("a valid frame");
        if let Some(text) = message.as_text() {
            return serde_json::from_str(text).expect("JSON");
        }
    }
}

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("belay-tls-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn a_wss_client_trusting_the_certificate_completes_the_belay_handshake() {
    let cert = self_signed();
    let dir = temp_dir("pem");
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, &cert.cert_pem).unwrap();
    std::fs::write(&key_path, &cert.key_pem).unwrap();
    let config = tls::load_pem(&cert_path, &key_path).expect("the PEM files load");
    std::fs::remove_dir_all(&dir).ok();

    let server = Server::builder().build();
    let (addr, _task) = start_tls(&server, config).await;
    let connector = connector(&cert.cert);
    // By name and by address: the certificate covers both.
    for name in ["localhost", "127.0.0.1"] {
        let mut ws = connect_wss(addr, name, &connector).await;
        let welcome = belay_handshake(&mut ws).await;
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        assert_eq!(welcome["protocol"], 1, "{welcome}");
    }
}

#[tokio::test]
async fn a_plain_ws_client_cannot_talk_to_the_tls_port() {
    let cert = self_signed();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_der.clone()));
    let config = tls::server_config(vec![cert.cert.clone()], key).unwrap();
    let server = Server::builder().build();
    let (addr, _task) = start_tls(&server, config).await;

    let plain = tokio::time::timeout(
        SOON,
        ClientBuilder::new()
            .uri(&format!("ws://127.0.0.1:{}/ws", addr.port()))
            .unwrap()
            .connect(),
    )
    .await
    .expect("refused promptly, not left hanging");
    assert!(
        plain.is_err(),
        "a plain WebSocket upgrade over the TLS port"
    );
    assert_eq!(server.metrics().open_connections(), 0);

    // A client that does not trust the certificate is refused too.
    let stranger = connector(&self_signed().cert);
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    assert!(stranger.connect(name, tcp).await.is_err());

    // And the port still serves wss afterwards.
    let mut ws = connect_wss(addr, "localhost", &connector(&cert.cert)).await;
    assert_eq!(belay_handshake(&mut ws).await["type"], "welcome");
}

#[tokio::test]
async fn serve_tls_returns_once_the_drain_completes() {
    let cert = self_signed();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_der.clone()));
    let config = tls::server_config(vec![cert.cert.clone()], key).unwrap();
    let mut drain = DrainConfig::default();
    drain
        .set_lb_delay(Duration::from_millis(10))
        .set_linger(Duration::from_millis(50))
        .set_deadline(Duration::from_secs(5));
    let server = Server::builder()
        .config(ServerConfig::default().with_drain(drain))
        .build();
    let (addr, task) = start_tls(&server, config).await;
    let mut ws = connect_wss(addr, "localhost", &connector(&cert.cert)).await;
    assert_eq!(belay_handshake(&mut ws).await["type"], "welcome");

    server.drain();
    // The session hears the drain (advice, then close 1012) over TLS.
    let mut code = None;
    while let Ok(Some(Ok(message))) = tokio::time::timeout(SOON, ws.next()).await {
        if let Some((close, _)) = message.as_close() {
            code = Some(u16::from(close));
            break;
        }
    }
    assert_eq!(code, Some(1012));
    // Polling on sends the client's close reply, completing the handshake.
    while let Ok(Some(Ok(_))) = tokio::time::timeout(SOON, ws.next()).await {}
    let served = tokio::time::timeout(SOON, task)
        .await
        .expect("serve_tls returns after the drain")
        .unwrap();
    assert!(served.is_ok());
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the listener is closed"
    );
}

#[test]
fn load_pem_reports_what_is_wrong() {
    let dir = temp_dir("errors");
    let missing = dir.join("missing.pem");
    let cert = self_signed();
    let cert_path = dir.join("cert.pem");
    std::fs::write(&cert_path, &cert.cert_pem).unwrap();
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "").unwrap();

    let err = tls::load_pem(&missing, &cert_path).unwrap_err();
    assert!(matches!(err, TlsError::Certificate { .. }), "{err}");
    assert!(err.to_string().contains("missing.pem"), "{err}");
    let err = tls::load_pem(&empty, &cert_path).unwrap_err();
    assert!(matches!(err, TlsError::NoCertificate { .. }), "{err}");
    // The certificate file holds no private key.
    let err = tls::load_pem(&cert_path, &cert_path).unwrap_err();
    assert!(matches!(err, TlsError::NoKey { .. }), "{err}");
    // A key that does not belong to the certificate.
    let other_key = dir.join("other-key.pem");
    std::fs::write(&other_key, self_signed().key_pem).unwrap();
    let err = tls::load_pem(&cert_path, &other_key).unwrap_err();
    assert!(matches!(err, TlsError::Rustls(_)), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Security review of the TLS listener (docs/SECURITY.md): a TLS handshake
/// that never completes holds its pending-upgrade slot only until the
/// handshake timeout, then the connection is dropped, so stalled peers
/// cannot keep a wss client out.
#[tokio::test]
async fn stalled_tls_handshakes_end_at_the_timeout_and_free_their_slots() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let cert = self_signed();
    let dir = temp_dir("stalled");
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, &cert.cert_pem).unwrap();
    std::fs::write(&key_path, &cert.key_pem).unwrap();
    let config = tls::load_pem(&cert_path, &key_path).expect("the PEM files load");
    std::fs::remove_dir_all(&dir).ok();
    let server_config = ServerConfig::default()
        .with_pending_upgrades(4, 4)
        .with_upgrade_timeout(Duration::from_millis(500));
    let server = Server::builder().config(server_config).build();
    let (addr, _task) = start_tls(&server, config).await;
    // As many stalled handshakes as there are pending slots: the first
    // bytes of a ClientHello record, then nothing.
    let mut stalled = Vec::new();
    for _ in 0..4 {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
            .await
            .unwrap();
        stalled.push(tcp);
    }
    for tcp in &mut stalled {
        let mut buf = [0u8; 64];
        let ended = tokio::time::timeout(SOON, tcp.read(&mut buf))
            .await
            .expect("the server drops a stalled handshake within the bound");
        assert!(matches!(ended, Ok(0) | Err(_)), "{ended:?}");
    }
    let connector = connector(&cert.cert);
    let mut ws = connect_wss(addr, "localhost", &connector).await;
    let welcome = belay_handshake(&mut ws).await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
}
