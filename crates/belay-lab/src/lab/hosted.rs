//! The resident host of the `host-node-kill` fault: the nodes' config file
//! (JWT auth, a heartbeat of [`HOST_BEAT`]), the tokens (minted by
//! `belay token mint` against that file), and the host itself: the Rust
//! client's [`HostBuilder`] in the lab's own process, answering `echo`
//! after [`HOST_WORK`] so that calls are in flight whenever its node dies,
//! and coming back [`HOST_RECONNECT`] after its session dropped.

use std::path::Path;
use std::time::Duration;

use belay_client::host::{Host, HostBuilder, HostError};
use belay_proto::backoff::BackoffPolicy;
use tokio::process::Command;

use super::server::{NodeSetup, ServerSetup};

/// The host's id (its token's `host` claim).
pub(crate) const HOST_ID: &str = "lab-host";
/// How long the host works on each call before it answers.
pub(crate) const HOST_WORK: Duration = Duration::from_secs(1);
/// The hosts' heartbeat interval the nodes name (`hosts.heartbeat_interval_ms`):
/// a host whose node died is connected again within about one.
const HOST_BEAT: Duration = Duration::from_secs(1);
/// How long the host's session takes to come back after it dropped: longer
/// than [`HOST_WORK`], so every answer the host had in hand when its node
/// died is sent while it has no session, and each call the kill caught
/// settles `host_lost`, the path this fault is for. (A host that comes back
/// sooner answers those calls on its new session: the core's tests, and
/// the first runs of this fault, show that too.)
const HOST_RECONNECT: Duration = Duration::from_secs(2);
/// A caller's deadline for a call: longer than [`HOST_LOST_BOUND`], so
/// that a call the kill cuts settles `host_lost`, not `timeout`.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long after its host's node is killed a call in flight may take to
/// settle: `node_ttl + node_ttl / 3 + command_timeout` (docs/HOSTS.md;
/// belay-redis's defaults: 3 s, 1 s, 2 s), plus 500 ms for timers and the
/// observation path.
pub(crate) const HOST_LOST_BOUND: Duration = Duration::from_millis(6_500);

/// A node's config file: the flags the other cluster faults give, in the
/// file's keys (a config file holds every setting), with JWT auth
/// (`jwt_missing_channels = "any"`: the caller's token needs no grants)
/// and the host timings.
pub(crate) fn node_config(setup: &ServerSetup, node: &NodeSetup, secret: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n\
         [heartbeat]\nping_interval_ms = {}\npong_timeout_ms = {}\n\n\
         [drain]\nlb_delay_secs = {}\nspread_ms = {}\n\n\
         [hosts]\nheartbeat_interval_ms = {}\nconnect_allowance_ms = 2000\nmax_calls_per_host = 256\n\n\
         [network]\ntrusted_proxies = [\"127.0.0.1\"]\nproxy_protocol = true\n\n\
         [broker]\nurl = \"{}\"\n\n\
         [auth]\nmode = \"jwt\"\njwt_secret = \"{secret}\"\njwt_missing_channels = \"any\"\n",
        setup.ping_interval.as_millis(),
        setup.pong_timeout.as_millis(),
        node.lb_delay_secs,
        setup.drain_spread.as_millis(),
        HOST_BEAT.as_millis(),
        node.broker,
    )
}

/// A secret of this lab run's own.
pub(crate) fn secret() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("belay-lab-{}-{nanos}", std::process::id())
}

/// A token for `user` (and for the host when `host`), from
/// `belay token mint --config FILE`.
pub(crate) async fn mint(
    exe: &Path,
    config: &Path,
    user: &str,
    host: bool,
) -> Result<String, String> {
    let mut command = Command::new(exe);
    command
        .args(["token", "mint", "--user", user, "--ttl", "1h", "--config"])
        .arg(config);
    if host {
        command.args(["--host", user]);
    }
    let out = command
        .output()
        .await
        .map_err(|e| format!("cannot run {} token mint: {e}", exe.display()))?;
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && !token.is_empty() {
        Ok(token)
    } else {
        Err(format!(
            "belay token mint --user {user}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Start the host on `url` (a node's pinned front) with `token`.
pub(crate) fn start_host(url: String, token: String) -> Host {
    HostBuilder::new(url, token)
        .session(|session| {
            session.configure(|config| {
                config.set_backoff(BackoffPolicy::fixed(HOST_RECONNECT));
            })
        })
        .interval(HOST_BEAT)
        .heartbeat_timeout(Duration::from_secs(1))
        .method("echo", |params| async move {
            tokio::time::sleep(HOST_WORK).await;
            Ok::<_, HostError>(params)
        })
        .start()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_config_checks_jwts_and_names_the_broker_and_the_heartbeat() {
        let node = NodeSetup {
            broker: "redis://127.0.0.1:6390".into(),
            sentinel: None,
            wait_replicas: 0,
            cluster: None,
            lb_delay_secs: 1,
            config: None,
        };
        let text = node_config(&ServerSetup::default(), &node, "s3cret");
        assert!(text.contains("mode = \"jwt\"\njwt_secret = \"s3cret\"\n"));
        assert!(text.contains("url = \"redis://127.0.0.1:6390\"\n"));
        assert!(text.contains("heartbeat_interval_ms = 1000\n"));
        assert!(text.contains("ping_interval_ms = 1000\n"));
        assert!(text.contains("proxy_protocol = true\n"));
        assert!(HOST_LOST_BOUND < CALL_TIMEOUT);
    }
}
