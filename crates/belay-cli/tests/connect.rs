//! `belay connect` end to end: the built binary against servers scripted in
//! the test (127.0.0.1, port 0). Its stdin is a pipe the test keeps open, so
//! an exit proves it did not wait for stdin. Every wait is bounded; nothing
//! sleeps to synchronise.

// The scripted server of belay-client's tests, shared by path.
#[path = "../../belay-client/tests/common/scripted.rs"]
mod scripted;

use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use scripted::{
    accept, close_with, echo_until_closed, establish, listen, next_json, refuse, send_text, BOUND,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// A running `belay connect`, its stdin held open.
struct Belay {
    child: Child,
    stdin: ChildStdin,
    stdout: mpsc::UnboundedReceiver<String>,
    stderr: mpsc::UnboundedReceiver<String>,
}

impl Belay {
    fn spawn(url: &str, extra: &[&str]) -> Belay {
        let mut child = Command::new(env!("CARGO_BIN_EXE_belay"))
            .arg("connect")
            .arg(url)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run belay connect");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = lines(child.stdout.take().expect("stdout"));
        let stderr = lines(child.stderr.take().expect("stderr"));
        Belay {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    async fn type_line(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write stdin");
        self.stdin.flush().await.expect("flush stdin");
    }

    /// Wait for its exit (stdin still open), within the bound.
    async fn exit(&mut self, what: &str) -> ExitStatus {
        match tokio::time::timeout(BOUND, self.child.wait()).await {
            Ok(status) => status.expect("wait"),
            Err(_) => {
                let mut seen = Vec::new();
                while let Ok(line) = self.stderr.try_recv() {
                    seen.push(line);
                }
                panic!(
                    "belay connect did not exit within {BOUND:?} after {what}; stderr: {seen:#?}"
                )
            }
        }
    }
}

fn lines(
    pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
) -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(pipe).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The next line matching `pred`, within the bound.
async fn line_where(
    lines: &mut mpsc::UnboundedReceiver<String>,
    what: &str,
    mut pred: impl FnMut(&str) -> bool,
) -> String {
    tokio::time::timeout(BOUND, async {
        loop {
            let line = lines
                .recv()
                .await
                .unwrap_or_else(|| panic!("the output ended before {what}"));
            if pred(&line) {
                return line;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} within {BOUND:?}"))
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

#[tokio::test]
async fn request_lines_while_not_connected_answer_not_ready_at_once_and_the_status_keeps_printing()
{
    let (listener, url) = listen().await;
    let refusing = Arc::new(AtomicBool::new(true));
    let refuse_now = Arc::clone(&refusing);
    tokio::spawn(async move {
        loop {
            let tcp = accept(&listener).await;
            if refuse_now.load(Ordering::SeqCst) {
                refuse(tcp, "503 Service Unavailable", &["Retry-After: 1"]).await;
            } else {
                tokio::spawn(async move { echo_until_closed(&mut establish(tcp).await).await });
            }
        }
    });
    // A deadline far longer than the test: a request that waited for the
    // connection would show.
    let mut belay = Belay::spawn(&url, &["--timeout-ms", "60000"]);
    line_where(&mut belay.stderr, "the waiting status", |l| {
        l.contains("state=waiting")
    })
    .await;

    let typed = Instant::now();
    for n in 1..=3 {
        belay.type_line(&format!(r#"echo {{"n":{n}}}"#)).await;
    }
    for _ in 1..=3 {
        let answer = json(&line_where(&mut belay.stdout, "an answer", |_| true).await);
        assert_eq!(answer["type"], "error", "{answer}");
        assert_eq!(answer["error"]["kind"], "not_ready", "{answer}");
    }
    let took = typed.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "three not_ready answers took {took:?}"
    );
    // The status still prints: the redial after the Retry-After.
    line_where(&mut belay.stderr, "the redial's status", |l| {
        l.contains("state=connecting")
    })
    .await;

    refusing.store(false, Ordering::SeqCst);
    line_where(&mut belay.stderr, "READY", |l| l.contains("status: READY")).await;
    belay.type_line(r#"echo {"n":4}"#).await;
    let answer = json(&line_where(&mut belay.stdout, "the echo", |_| true).await);
    assert_eq!(answer["type"], "response", "{answer}");
    assert_eq!(answer["result"], serde_json::json!({"n": 4}), "{answer}");

    // The end of stdin still ends it, with 0.
    drop(belay.stdin);
    let status = tokio::time::timeout(BOUND, belay.child.wait())
        .await
        .expect("exit at the end of stdin")
        .expect("wait");
    assert_eq!(status.code(), Some(0), "{status}");
}

/// Run `belay connect` (stdin open) against one scripted connection and
/// return how it exited.
async fn exit_after<F, Fut>(script: F) -> ExitStatus
where
    F: FnOnce(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (listener, url) = listen().await;
    let server = tokio::spawn(async move { script(accept(&listener).await).await });
    let mut belay = Belay::spawn(&url, &[]);
    let status = belay.exit("the halt").await;
    let _ = tokio::time::timeout(BOUND, server).await;
    status
}

/// Establish the session, then close it with `code`.
async fn close_after_welcome(code: u16) -> ExitStatus {
    exit_after(move |tcp| async move {
        let ws = establish(tcp).await;
        close_with(ws, code, "scripted close").await;
    })
    .await
}

#[tokio::test]
async fn a_normal_close_1000_exits_0_with_stdin_open() {
    assert_eq!(close_after_welcome(1000).await.code(), Some(0));
}

#[tokio::test]
async fn a_policy_violation_close_1008_exits_4_with_stdin_open() {
    assert_eq!(close_after_welcome(1008).await.code(), Some(4));
}

#[tokio::test]
async fn a_forbidden_close_4003_exits_4_with_stdin_open() {
    assert_eq!(close_after_welcome(4003).await.code(), Some(4));
}

#[tokio::test]
async fn an_unauthorized_close_4001_exits_3_with_stdin_open() {
    // Refused in answer to `connect`, before any `welcome`.
    let status = exit_after(|tcp| async move {
        let mut ws = scripted::upgrade(tcp).await;
        let connect = next_json(&mut ws).await.expect("connect");
        assert_eq!(connect["type"], "connect");
        close_with(ws, 4001, "unauthorized").await;
    })
    .await;
    assert_eq!(status.code(), Some(3));
}

#[tokio::test]
async fn an_http_401_upgrade_exits_3_with_stdin_open() {
    let status = exit_after(|tcp| refuse(tcp, "401 Unauthorized", &[])).await;
    assert_eq!(status.code(), Some(3));
}

#[tokio::test]
async fn an_http_403_upgrade_exits_3_with_stdin_open() {
    let status = exit_after(|tcp| refuse(tcp, "403 Forbidden", &[])).await;
    assert_eq!(status.code(), Some(3));
}

#[tokio::test]
async fn payloads_a_value_cannot_hold_are_printed_as_the_server_sent_them() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let publication = format!(
        r#"{{"type":"publication","channel":"news","epoch":"e","offset":1,"data":{deep}}}"#
    );
    let (listener, url) = listen().await;
    tokio::spawn(async move {
        let mut ws = establish(accept(&listener).await).await;
        while let Some(frame) = next_json(&mut ws).await {
            match frame["type"].as_str() {
                Some("subscribe") => {
                    send_text(
                        &mut ws,
                        r#"{"type":"subscribed","channel":"news","epoch":"e","offset":0}"#,
                    )
                    .await;
                    send_text(&mut ws, &publication).await;
                }
                Some("request") => {
                    let id = frame["id"].as_u64().unwrap_or(0);
                    send_text(
                        &mut ws,
                        &format!(r#"{{"type":"response","id":{id},"result":{{"n":1e400}}}}"#),
                    )
                    .await;
                }
                _ => {}
            }
        }
    });
    let mut belay = Belay::spawn(&url, &[]);
    line_where(&mut belay.stderr, "READY", |l| l.contains("status: READY")).await;
    belay.type_line("sub news").await;
    let printed = line_where(&mut belay.stdout, "the publication", |l| {
        l.contains("publication")
    })
    .await;
    assert!(
        printed.contains(&format!(r#""data":{}"#, "[".repeat(200))),
        "{printed}"
    );
    belay.type_line("big").await;
    let printed = line_where(&mut belay.stdout, "the response", |l| {
        l.contains("response")
    })
    .await;
    assert!(printed.contains(r#""result":{"n":1e400}"#), "{printed}");
}
