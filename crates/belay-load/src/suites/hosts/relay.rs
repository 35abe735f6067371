//! The relay the host benchmarks run: the benchmark server's config with
//! the given host timing, and tokens `host:ID` that name host `ID`.

use std::net::SocketAddr;
use std::time::Duration;

use belay_proto::host::HostTiming;
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{Server, ServerConfig};
use tokio::net::TcpListener;

/// `host:ID` names host `ID`; anything else is an anonymous client.
struct HostTokens;

impl Authenticator for HostTokens {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        Ok(match token.and_then(|t| t.strip_prefix("host:")) {
            Some(id) => Principal::user(id).hosting(id),
            None => Principal::anonymous(),
        })
    }
}

/// The relay's config: hosts on `timing`, the server's own pings every
/// `ping_interval`.
pub fn config(timing: HostTiming, ping_interval: Duration) -> ServerConfig {
    crate::servers::belay::config(ping_interval)
        .with_host_timing(timing)
        .with_host_limits(1_000_000, 64)
}

/// Serve a relay with `config` on a free loopback port.
pub async fn start(config: ServerConfig) -> std::io::Result<(Server, SocketAddr)> {
    let server = Server::builder()
        .config(config)
        .authenticator(HostTokens)
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let serving = server.clone();
    tokio::spawn(async move {
        let router = serving.router().merge(serving.admin_router());
        let _ = serving.serve(listener, router).await;
    });
    Ok((server, addr))
}
