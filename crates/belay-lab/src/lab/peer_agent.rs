//! The real peers as agents: `node peers/lab/agent.mjs --client NAME` runs
//! socket.io-client, partysocket or reconnecting-websocket (in Node, or in
//! headless Chromium with `--browser`) and prints the lab's observation
//! lines, as the browser agent does.

use tokio::process::Command;

use super::agent::{
    start, workload_args, AgentError, BrowserSetup, ClientKind, Emitter, Runner, Workload,
};

/// Start the peer agent for `kind` against `url`.
pub(super) fn spawn(
    kind: ClientKind,
    url: &str,
    work: &Workload,
    setup: &BrowserSetup,
    out: Emitter,
) -> Result<Runner, AgentError> {
    let peer = kind.peer().ok_or_else(|| AgentError::Spawn {
        node: setup.node.display().to_string(),
        script: setup.peer_agent.display().to_string(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{kind} is not a peer"),
        ),
    })?;
    let mut command = Command::new(&setup.node);
    command
        .arg(&setup.peer_agent)
        .args(["--client", peer])
        .args(workload_args(url, work));
    if kind.in_browser() {
        command
            .arg("--browser")
            .arg("--chromium")
            .arg(&setup.chromium);
    }
    start(&mut command, &setup.node, &setup.peer_agent, out)
}
