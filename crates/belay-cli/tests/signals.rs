//! `belay serve` and its signals, sent to a real process: the first SIGTERM
//! or SIGINT drains (advice, close 1012, exit once drained; the demo in
//! under a second), a second closes what is left 1001 at once.

use std::time::{Duration, Instant};

use belay_proto::message::ServerMessage;
use belay_test_support::serving::spawn_listening;
use belay_test_support::sockets::{http_call, Closed, Raw};
use tokio::process::{Child, Command};

/// Generous: the drain itself is due within a second.
const EXIT_BOUND: Duration = Duration::from_secs(10);

fn serve(extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_belay"));
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra);
    command
}

fn send(child: &Child, signal: &str) {
    let pid = child.id().expect("the server runs").to_string();
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid}");
}

async fn exited_within(child: &mut Child, bound: Duration) -> std::process::ExitStatus {
    tokio::time::timeout(bound, child.wait())
        .await
        .expect("the process exits within the bound")
        .expect("wait")
}

#[tokio::test]
async fn the_demo_drains_on_sigterm_advising_then_closing_1012_and_exits() {
    let (mut child, addr) = spawn_listening(&mut serve(&["--demo"])).await;
    let (mut client, _) = Raw::connected(addr, None).await;
    let signalled = Instant::now();
    send(&child, "TERM");
    let advice = loop {
        match client.recv_skipping_pings().await {
            Some(ServerMessage::Reconnect(advice)) => break advice,
            Some(_) => {}
            None => panic!("closed before any advice"),
        }
    };
    assert_eq!(advice.reason, "deploy");
    match client.closed_within(EXIT_BOUND).await {
        Closed::Frame(code, _) => assert_eq!(code, 1012, "the drain's close"),
        other => panic!("expected a close frame, got {other:?}"),
    }
    let status = exited_within(&mut child, EXIT_BOUND).await;
    assert!(status.success(), "a drained server exits 0: {status}");
    eprintln!(
        "the demo drained and exited {:?} after SIGTERM",
        signalled.elapsed()
    );
}

#[tokio::test]
async fn a_second_signal_closes_what_is_left_1001_at_once() {
    // The production drain waits 25 s for the balancer before advising.
    let (mut child, addr) = spawn_listening(&mut serve(&[])).await;
    let (mut client, _) = Raw::connected(addr, None).await;
    send(&child, "TERM");
    // The signal is handled on the server's own time: poll its readiness.
    let ready = tokio::time::timeout(EXIT_BOUND, async {
        loop {
            let answer = http_call(addr, "GET", "/readyz", None).await;
            if answer.status == 503 {
                return answer;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("draining within the bound: /readyz 503");
    assert_eq!(ready.status, 503);
    send(&child, "INT");
    match client.closed_within(EXIT_BOUND).await {
        Closed::Frame(code, reason) => {
            assert_eq!((code, reason.as_str()), (1001, "server shutting down"));
        }
        other => panic!("expected a close frame, got {other:?}"),
    }
    let status = exited_within(&mut child, EXIT_BOUND).await;
    assert!(status.success(), "drained by the second signal: {status}");
}
