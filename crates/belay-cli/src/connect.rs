//! `belay connect URL`: a resilient websocat. Each stdin line is a command:
//! `METHOD JSON` calls a method (`echo {"a":1}`; the JSON may be omitted),
//! `sub CHANNEL` / `unsub CHANNEL` follow a channel. Responses and
//! publications go to stdout as JSON lines; the connection's status goes to
//! stderr. Exit code 0 at the end of stdin (after in-flight requests
//! settle), 2 when the connection halts (auth refused, server closed the
//! session, invalid URL …) or on a usage error.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use belay_client::{Client, Item, RequestError, RequestOptions, Status, TlsSettings};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::task::{AbortHandle, JoinSet};

/// Arguments of `belay connect`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The server's WebSocket URL (`ws://` or `wss://`), e.g. ws://127.0.0.1:8080/ws.
    url: String,
    /// Also trust the certificate(s) in this PEM file for wss:// (a self-signed server).
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// Token sent in `connect`.
    #[arg(long)]
    token: Option<String>,
    /// Deadline of each request, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
}

/// Run `belay connect` until stdin ends or the connection halts.
pub(crate) fn run(args: &Args) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(connect(args))
}

async fn connect(args: &Args) -> Result<(), String> {
    let mut tls = TlsSettings::default();
    if let Some(path) = &args.ca {
        let pem =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        tls.add_root_pem(&pem)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let mut builder = Client::builder(args.url.clone()).tls(tls);
    if let Some(token) = args.token.clone() {
        builder = builder.token_provider(move || Some(token.clone()));
    }
    let client = builder.connect();
    let options = RequestOptions::default().timeout(Duration::from_millis(args.timeout_ms));
    let live = std::io::stderr().is_terminal();

    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut status = client.status();
    let mut requests = JoinSet::new();
    let mut feeds = JoinSet::new();
    let mut channels: HashMap<String, AbortHandle> = HashMap::new();
    let ended = loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => {
                    command(&client, &options, line.trim(), &mut requests, &mut feeds, &mut channels)
                        .await;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(format!("cannot read stdin: {e}")),
            },
            changed = status.changed() => {
                if changed.is_err() {
                    break Err("the connection task ended".to_owned());
                }
                let now = status.borrow_and_update().clone();
                show(&now, live);
                if let Some(halt) = &now.halted {
                    break Err(format!("connection halted: {}", serde_json::to_string(halt).unwrap_or_default()));
                }
            }
            Some(_) = requests.join_next(), if !requests.is_empty() => {}
        }
    };
    if ended.is_ok() {
        // End of input: let the requests in flight settle (each has a deadline).
        while requests.join_next().await.is_some() {}
    }
    feeds.abort_all();
    client.close().await;
    if live {
        eprintln!();
    }
    ended
}

/// Handle one stdin line.
async fn command(
    client: &Client,
    options: &RequestOptions,
    line: &str,
    requests: &mut JoinSet<()>,
    feeds: &mut JoinSet<()>,
    channels: &mut HashMap<String, AbortHandle>,
) {
    if line.is_empty() || line.starts_with('#') {
        return;
    }
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    match word {
        "sub" if !rest.is_empty() => match client.subscribe(rest).await {
            Ok(mut subscription) => {
                let handle = feeds.spawn(async move {
                    while let Some(item) = subscription.next().await {
                        let line = match item {
                            Item::Publication(p) => json!({
                                "type": "publication", "channel": p.channel,
                                "epoch": p.epoch, "offset": p.offset, "data": p.data,
                            }),
                            Item::Resync => {
                                json!({"type": "resync", "channel": subscription.channel()})
                            }
                            Item::Refused { code } => json!({
                                "type": "refused", "channel": subscription.channel(), "code": code,
                            }),
                            _ => continue,
                        };
                        println!("{line}");
                    }
                });
                channels.insert(rest.to_owned(), handle);
            }
            Err(e) => println!(
                "{}",
                json!({"type": "error", "channel": rest, "error": e.to_string()})
            ),
        },
        "unsub" if !rest.is_empty() => match channels.remove(rest) {
            // Dropping the subscription (with its task) unsubscribes.
            Some(handle) => handle.abort(),
            None => println!(
                "{}",
                json!({"type": "error", "channel": rest, "error": "not subscribed"})
            ),
        },
        method => {
            let params = if rest.is_empty() {
                Ok(Value::Null)
            } else {
                serde_json::from_str::<Value>(rest)
            };
            let params = match params {
                Ok(params) => params,
                Err(e) => {
                    println!(
                        "{}",
                        json!({"type": "error", "method": method, "error": format!("invalid JSON: {e}")})
                    );
                    return;
                }
            };
            // Scripts pipe requests in before the session is up: wait for
            // the protocol level (bounded by the request deadline) so that
            // they are sent, in order, instead of refused as not ready.
            let mut status = client.status();
            let deadline = options.timeout.unwrap_or(Duration::from_secs(10));
            let _ = tokio::time::timeout(
                deadline,
                status.wait_for(|s| s.readiness.protocol || s.halted.is_some()),
            )
            .await;
            let client = client.clone();
            let options = options.clone();
            let method = method.to_owned();
            requests.spawn(async move {
                let line = match client.request_with(&method, params, options).await {
                    Ok(result) => json!({"type": "response", "method": method, "result": result}),
                    Err(error) => {
                        json!({"type": "error", "method": method, "error": error_json(&error)})
                    }
                };
                println!("{line}");
            });
        }
    }
}

fn error_json(error: &RequestError) -> Value {
    match error {
        RequestError::Server { code, message } => {
            json!({"kind": "server", "code": code, "message": message})
        }
        RequestError::NotReady => json!({"kind": "not_ready"}),
        RequestError::Timeout => json!({"kind": "timeout"}),
        RequestError::ConnectionClosed => json!({"kind": "connection_closed"}),
        other => json!({"kind": "closed", "message": other.to_string()}),
    }
}

/// The status on stderr: a live line on a terminal, one line per change otherwise.
fn show(status: &Status, live: bool) {
    let r = status.readiness;
    let mut line = format!(
        "status: {} transport={} protocol={} service={} state={}",
        if status.ready { "READY" } else { "not-ready" },
        r.transport,
        r.protocol,
        r.service,
        serde_json::to_string(&status.state)
            .unwrap_or_default()
            .trim_matches('"'),
    );
    if let Some(at) = status.next_attempt {
        let wait = at.saturating_duration_since(tokio::time::Instant::now());
        line.push_str(&format!(" retry-in={}ms", wait.as_millis()));
    }
    if let Some(last) = &status.last_disconnect {
        line.push_str(&format!(
            " last={}",
            serde_json::to_string(&last.reason).unwrap_or_default()
        ));
    }
    if live {
        eprint!("\r\x1b[K{line}");
    } else {
        eprintln!("{line}");
    }
}
