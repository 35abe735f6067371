//! The lab's socket.io app (`peers/lab/server.mjs`), which mirrors
//! `belay serve --demo` for socket.io: how it is started, where it says it
//! listens, and how the feed's position is read from its admin API.

use std::net::SocketAddr;

use super::probe::Position;
use super::server::ServerSetup;

/// Which app a lab server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerApp {
    /// `belay serve --demo`.
    BelayDemo,
    /// The socket.io app with socket.io's defaults (pingInterval 25 s,
    /// pingTimeout 20 s, no connection state recovery).
    SocketIoDefault,
    /// The socket.io app as socket.io's docs recommend for reliability,
    /// with the lab's heartbeat: pingInterval and pingTimeout 1 s,
    /// `connectionStateRecovery`.
    SocketIoTuned,
}

impl ServerApp {
    /// `--profile` of `peers/lab/server.mjs` (none for Belay).
    pub(crate) fn socketio_profile(self) -> Option<&'static str> {
        match self {
            ServerApp::BelayDemo => None,
            ServerApp::SocketIoDefault => Some("default"),
            ServerApp::SocketIoTuned => Some("tuned"),
        }
    }

    /// The `/metrics` sample that counts the server's open connections.
    pub(crate) fn connections_metric(self) -> &'static str {
        match self {
            ServerApp::BelayDemo => "belay_connections_open",
            _ => "socketio_connections_open",
        }
    }
}

/// The arguments after `node`: the script and its options.
pub(crate) fn args(setup: &ServerSetup, profile: &str, listen: SocketAddr) -> Vec<String> {
    vec![
        setup.socketio_script.display().to_string(),
        "--listen".into(),
        listen.to_string(),
        "--profile".into(),
        profile.into(),
        "--feed-every-ms".into(),
        setup.feed_every.as_millis().to_string(),
    ]
}

/// The admin address in the app's banner
/// ("socket.io lab server: front ws://A/ admin http://B/ …").
pub(crate) fn admin_address(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("admin http://")? + "admin http://".len()..];
    let end = rest.find('/').unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The body of `GET /admin/position`: `{"epoch":E,"offset":N}`.
pub(crate) fn position(body: &str) -> Result<Position, String> {
    let value: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("position: {e}: {body:.80}"))?;
    match (value["epoch"].as_str(), value["offset"].as_u64()) {
        (Some(epoch), Some(offset)) => Ok(Position {
            epoch: epoch.to_owned(),
            offset,
        }),
        _ => Err(format!("position: no epoch or offset in {body:.80}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_banner_and_the_position() {
        let line = "socket.io lab server: front ws://127.0.0.1:4001/ admin http://127.0.0.1:4002/ (tuned, epoch sio-1)";
        assert_eq!(admin_address(line), Some("127.0.0.1:4002".parse().unwrap()));
        assert_eq!(
            admin_address("belay demo server: open http://127.0.0.1:1/"),
            None
        );
        let p = position(r#"{"epoch":"sio-1","offset":42}"#).unwrap();
        assert_eq!((p.epoch.as_str(), p.offset), ("sio-1", 42));
        assert!(position("{}").is_err());
    }
}
