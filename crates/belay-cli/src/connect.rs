//! `belay connect URL`: a resilient websocat. Each stdin line is a command:
//! `METHOD JSON` calls a method (`echo {"a":1}`; the JSON may be omitted),
//! `sub CHANNEL` / `unsub CHANNEL` follow a channel. Responses and
//! publications go to stdout as JSON lines; the connection's status goes to
//! stderr, every change, whatever is pending, and so does each loss of an
//! established connection (`disconnected: {"kind":…}`), one line per loss:
//! the status coalesces changes that come together (a loss and the failed
//! dial right after it), the loss lines never do. The status line shows
//! both: `last=` the last disconnect or failed attempt, `lost=` the last
//! loss of an established session (`Status::last_loss`), which a failed
//! redial does not replace.
//!
//! A request is handed to the client at once, like any caller's: while the
//! session is not up it is answered `not_ready` at once (never sent), as the
//! core decides. Nothing waits in the main loop.
//!
//! The process ends at the end of stdin (after the requests in flight
//! settle) or as soon as the connection halts, whether stdin is open or not.
//! Exit codes:
//!
//! | code | when |
//! |------|------|
//! | 0 | end of stdin; or the server ended the session normally (close 1000) |
//! | 1 | stdin unreadable, retries exhausted, another protocol version |
//! | 2 | usage error, unusable URL or `--ca` file |
//! | 3 | credentials refused: close 4001, HTTP 401 or 403 on the upgrade |
//! | 4 | the server refused the session: close 1008, 4003 (or another terminal close) |

use std::collections::HashMap;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use belay_client::belay_proto::{CloseCode, DisconnectReason, Event, HaltReason};
use belay_client::{Client, ClientEvent, Item, RequestError, RequestOptions, Status, TlsSettings};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

/// Arguments of `belay connect`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_CODES)]
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

/// The exit codes, for `--help` (the table in the module docs).
const EXIT_CODES: &str = "\
Requests are answered `not_ready` at once while the session is not up.
Exit codes (the process exits on a halt even with stdin open):
  0  end of stdin (after in-flight requests settle), or close 1000 from the server
  1  stdin unreadable, retries exhausted, another protocol version
  2  usage error, unusable URL or --ca file
  3  credentials refused: close 4001, HTTP 401/403 on the upgrade
  4  session refused by the server: close 1008, 4003 (or another terminal close)";

/// How a run ended.
#[derive(Debug)]
enum Ending {
    /// stdin ended and every request settled.
    EndOfInput,
    /// The connection halted.
    Halted(HaltReason),
    /// Something else went wrong (the message), with the exit code.
    Failed(u8, String),
}

impl Ending {
    /// Say why on stderr, and the exit code (see the module docs).
    fn exit_code(&self) -> ExitCode {
        let (code, message) = match self {
            Ending::EndOfInput => return ExitCode::SUCCESS,
            Ending::Failed(code, message) => (*code, message.clone()),
            Ending::Halted(halt) => {
                let text = serde_json::to_string(halt).unwrap_or_default();
                let code = match halt {
                    HaltReason::ServerClosed { close } if close.code == Some(CloseCode::NORMAL) => {
                        0
                    }
                    HaltReason::ServerClosed { .. } => 4,
                    HaltReason::AuthFailed => 3,
                    HaltReason::InvalidConfig { .. } => 2,
                    _ => 1,
                };
                (code, format!("connection halted: {text}"))
            }
        };
        eprintln!("belay: {message}");
        ExitCode::from(code)
    }
}

/// Run `belay connect` until stdin ends or the connection halts.
pub(crate) fn run(args: &Args) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return Ending::Failed(1, format!("cannot start the runtime: {e}")).exit_code(),
    };
    let ending = runtime.block_on(connect(args));
    // stdin is read on a thread of its own (see `stdin_lines`), so dropping
    // the runtime does not wait for a read that may never return.
    drop(runtime);
    ending.exit_code()
}

/// stdin's lines, read on a plain thread. tokio's stdin reads on the
/// runtime's blocking pool, and a blocked read there keeps the runtime (and
/// the process) from ending until the next line: a halt would wait for stdin.
/// This thread is simply left behind when the process exits.
fn stdin_lines() -> Result<mpsc::Receiver<std::io::Result<String>>, String> {
    let (tx, rx) = mpsc::channel(16);
    std::thread::Builder::new()
        .name("stdin".to_owned())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let failed = line.is_err();
                if tx.blocking_send(line).is_err() || failed {
                    return;
                }
            }
        })
        .map_err(|e| format!("cannot start the stdin reader: {e}"))?;
    Ok(rx)
}

async fn connect(args: &Args) -> Ending {
    let mut tls = TlsSettings::default();
    if let Some(path) = &args.ca {
        let pem = match std::fs::read(path) {
            Ok(pem) => pem,
            Err(e) => return Ending::Failed(2, format!("cannot read {}: {e}", path.display())),
        };
        if let Err(e) = tls.add_root_pem(&pem) {
            return Ending::Failed(2, format!("{}: {e}", path.display()));
        }
    }
    let mut lines = match stdin_lines() {
        Ok(lines) => lines,
        Err(message) => return Ending::Failed(1, message),
    };
    let mut builder = Client::builder(args.url.clone()).tls(tls);
    if let Some(token) = args.token.clone() {
        builder = builder.token(token);
    }
    let client = match builder.connect() {
        Ok(client) => client,
        Err(unusable) => return Ending::Failed(2, unusable.to_string()),
    };
    let options = RequestOptions::default().timeout(Duration::from_millis(args.timeout_ms));
    let live = std::io::stderr().is_terminal();

    let mut status = client.status();
    let mut events = client.events();
    let mut events_open = true;
    let mut requests = JoinSet::new();
    let mut feeds = JoinSet::new();
    let mut channels: HashMap<String, AbortHandle> = HashMap::new();
    let mut input_open = true;
    let ending = loop {
        if !input_open && requests.is_empty() {
            break Ending::EndOfInput;
        }
        tokio::select! {
            line = lines.recv(), if input_open => match line {
                Some(Ok(line)) => {
                    command(&client, &options, line.trim(), &mut requests, &mut feeds, &mut channels)
                        .await;
                }
                // End of input: the requests in flight settle (each has a
                // deadline) while the status keeps printing.
                None => input_open = false,
                Some(Err(e)) => break Ending::Failed(1, format!("cannot read stdin: {e}")),
            },
            changed = status.changed() => {
                if changed.is_err() {
                    break Ending::Failed(1, "the connection task ended".to_owned());
                }
                let now = status.borrow_and_update().clone();
                show(&now, live);
                if let Some(halt) = now.halted {
                    break Ending::Halted(halt);
                }
            }
            event = events.recv(), if events_open => match event {
                Ok(ClientEvent::Session(Event::Disconnected { reason, .. })) => {
                    show_loss(&reason, live);
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => events_open = false,
            },
            Some(_) = requests.join_next(), if !requests.is_empty() => {}
        }
    };
    feeds.abort_all();
    // After a halt the core has already settled what was in flight; closing
    // settles anything left at once, and the answers are printed.
    client.close().await;
    while requests.join_next().await.is_some() {}
    if live {
        eprintln!();
    }
    ending
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
                            // `data` is written as the server sent it: it may hold
                            // what a `Value` cannot (1e400, 200 levels of nesting).
                            Item::Publication(p) => {
                                println!(
                                    r#"{{"channel":{},"data":{},"epoch":{},"offset":{},"type":"publication"}}"#,
                                    json!(p.channel),
                                    p.data.get(),
                                    json!(p.epoch),
                                    p.offset
                                );
                                continue;
                            }
                            Item::Resync => {
                                json!({"type": "resync", "channel": subscription.channel()})
                            }
                            Item::Refused { code } => json!({
                                "type": "refused", "channel": subscription.channel(), "code": code.as_str(),
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
            // Handed over at once and awaited in a task of its own: while the
            // session is not up the client answers `not_ready` at once, and a
            // pending request never holds up the next line or the status.
            let client = client.clone();
            let options = options.clone();
            let method = method.to_owned();
            requests.spawn(async move {
                let line = match client.request_with(&method, params, options).await {
                    Ok(result) => {
                        // The result as the server sent it (see publications).
                        println!(
                            r#"{{"method":{},"result":{},"type":"response"}}"#,
                            json!(method),
                            result.get()
                        );
                        return;
                    }
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
        RequestError::Server {
            code,
            message,
            retry_after_ms,
            ..
        } => {
            let mut error = json!({"kind": "server", "code": code.as_str(), "message": message});
            if let Some(ms) = retry_after_ms {
                error["retry_after_ms"] = json!(ms);
            }
            error
        }
        RequestError::NotReady => json!({"kind": "not_ready"}),
        RequestError::Timeout => json!({"kind": "timeout"}),
        RequestError::ConnectionClosed => json!({"kind": "connection_closed"}),
        RequestError::TooLarge { len, max } => json!({"kind": "too_large", "len": len, "max": max}),
        other => json!({"kind": "closed", "message": other.to_string()}),
    }
}

/// A lost connection on stderr, on a line of its own (above the live
/// status line on a terminal).
fn show_loss(reason: &DisconnectReason, live: bool) {
    let line = format!(
        "disconnected: {}",
        serde_json::to_string(reason).unwrap_or_default()
    );
    if live {
        eprintln!("\r\x1b[K{line}");
    } else {
        eprintln!("{line}");
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
    // Why the session was lost, kept apart from the failed redials after it.
    if let Some(loss) = &status.last_loss {
        line.push_str(&format!(
            " lost={}",
            serde_json::to_string(&loss.reason).unwrap_or_default()
        ));
    }
    if live {
        eprint!("\r\x1b[K{line}");
    } else {
        eprintln!("{line}");
    }
}
