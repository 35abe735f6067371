//! The SSE + HTTP fallback's transport (spec/PROTOCOL.md §1.7): the same
//! facts and commands as a WebSocket transport ([`crate::transport`]), over
//! an event stream (`POST /sse`) and numbered sends (`POST /sse/send`), one
//! in flight at a time, with what was queued meanwhile batched into the
//! next; each send retried as `belay_proto::SendRetry` decides (`send.rs`).
//! It decides nothing either.
//!
//! ```text
//!   POST /sse ──▶ 200 text/event-stream: open → Opened; messages → Frame; close → Closed
//!   Outgoing::Message ──▶ queue ──▶ POST /sse/send (Belay-Seq n) ──▶ 204 ──▶ the next
//!   Outgoing::Close ──▶ POST /sse/close
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{encode_client, MAX_FRAME_LEN};
use belay_proto::{CloseCode, CloseInfo, Failure, TransportId};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;

use crate::transport::{self, Fact, Outgoing, Target};
use events::{EventReader, StreamEvent};

mod events;
mod send;

use send::send;

/// A send body's size beyond which what is queued waits for the next send
/// (a body that may be relayed between nodes fits one control message);
/// one message larger than this still goes alone.
const BATCH_BYTES: usize = 60 * 1024;
/// How long the close POST may take before the transport just ends.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

type Connection = Pin<Box<dyn Future<Output = Result<(), hyper::Error>> + Send>>;

/// A send on its way: the connection back for the next one, and how it went.
type Sending = Pin<Box<dyn Future<Output = (Option<Http>, Result<(), Failure>)> + Send>>;

/// One HTTP/1.1 connection: its request sender and the connection future,
/// polled while a request is out.
pub(crate) struct Http {
    sender: SendRequest<Full<Bytes>>,
    conn: Connection,
}

impl Http {
    pub(crate) async fn open(target: &Target) -> Result<Http, Failure> {
        let io = transport::connect(target).await?;
        let (sender, conn) = http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| Failure::network(format!("HTTP handshake failed: {e}")))?;
        Ok(Http {
            sender,
            conn: Box::pin(conn),
        })
    }

    /// Send `request`; the response head (the connection is polled
    /// meanwhile).
    pub(crate) async fn call(
        &mut self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<Incoming>, Failure> {
        let Http { sender, conn } = self;
        tokio::select! {
            response = sender.send_request(request) => {
                response.map_err(|e| Failure::network(format!("HTTP request failed: {e}")))
            }
            ended = conn.as_mut() => Err(Failure::network(match ended {
                Ok(()) => "the server closed the connection".to_owned(),
                Err(e) => format!("HTTP connection failed: {e}"),
            })),
        }
    }
}

impl Http {
    /// Send `request` and read its whole body, up to `limit` bytes (the
    /// connection is polled meanwhile): its status and body.
    pub(crate) async fn fetch(
        &mut self,
        request: http::Request<Full<Bytes>>,
        limit: usize,
    ) -> Result<(http::StatusCode, Bytes), Failure> {
        let response = self.call(request).await?;
        let status = response.status();
        let body = http_body_util::Limited::new(response.into_body(), limit).collect();
        tokio::select! {
            biased;
            body = body => body
                .map(|b| (status, b.to_bytes()))
                .map_err(|e| Failure::network(format!("reading the body: {e}"))),
            _ = self.conn.as_mut() => Err(Failure::network("the connection ended in the body".to_owned())),
        }
    }
}

pub(crate) fn post(
    target: &Target,
    path: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> http::Request<Full<Bytes>> {
    let mut request = http::Request::post(path)
        .header(http::header::HOST, target.authority())
        .header(http::header::CONTENT_TYPE, "text/plain");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
        .body(Full::new(body))
        .unwrap_or_else(|_| http::Request::new(Full::new(Bytes::new())))
}

/// The transport task for the fallback. Ends when the driver closes it (or
/// drops its sender), or when the stream ends.
pub(crate) async fn run(
    id: TransportId,
    target: Arc<Target>,
    mut outgoing: mpsc::UnboundedReceiver<Outgoing>,
    facts: mpsc::UnboundedSender<(TransportId, Fact)>,
) {
    let report = |fact: Fact| {
        let _ = facts.send((id, fact));
    };
    let opened = tokio::select! {
        opened = open(&target) => opened,
        () = transport::wait_for_close(&mut outgoing) => return,
    };
    let Opened {
        mut stream_http,
        mut body,
        mut reader,
        stream,
        early,
    } = match opened {
        Ok(opened) => opened,
        Err(failure) => return report(Fact::Failed(failure)),
    };
    report(Fact::Opened(belay_proto::message::Codec::Json));
    for event in early {
        if let Some(end) = on_event(event, &report) {
            return end;
        }
    }
    let base = target.sse_path();
    let send_path = format!("{base}/send");
    let mut queue: Vec<String> = Vec::new();
    let mut seq: u64 = 1;
    let mut sends: Option<Http> = None;
    let mut in_flight: Option<Sending> = None;
    loop {
        if in_flight.is_none() && !queue.is_empty() {
            let batch = take_batch(&mut queue);
            let request = post(
                &target,
                &send_path,
                &[("belay-stream", &stream), ("belay-seq", &seq.to_string())],
                Bytes::from(batch),
            );
            seq += 1;
            in_flight = Some(Box::pin(send(Arc::clone(&target), sends.take(), request)));
        }
        tokio::select! {
            command = outgoing.recv() => match command {
                // The fallback carries JSON only (spec/PROTOCOL.md §1.8).
                Some(Outgoing::Message(message)) => queue.push(encode_client(&message)),
                Some(Outgoing::Close(code, reason)) => {
                    return close(&target, &base, &stream, code, &reason).await;
                }
                None => return close(&target, &base, &stream, CloseCode::GOING_AWAY, "client gone").await,
            },
            (http, sent) = async { in_flight.as_mut().expect("polled only when some").await }, if in_flight.is_some() => {
                in_flight = None;
                if let Err(failure) = sent {
                    return report(Fact::Failed(failure));
                }
                sends = http;
            }
            frame = body.frame() => match frame {
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else { continue };
                    match reader.push(&data) {
                        Ok(events) => {
                            for event in events {
                                if let Some(end) = on_event(event, &report) {
                                    return end;
                                }
                            }
                        }
                        Err(events::StreamError::TooLarge) => {
                            return report(Fact::Failed(Failure::network(format!(
                                "an event from the server is over the {MAX_FRAME_LEN}-byte frame limit"
                            ))));
                        }
                        Err(events::StreamError::Malformed(why)) => {
                            return report(Fact::Failed(Failure::network(format!("the event stream broke: {why}"))));
                        }
                    }
                }
                Some(Err(e)) => return report(Fact::Failed(Failure::network(format!("the event stream failed: {e}")))),
                None => return report(Fact::Closed(CloseInfo::abnormal())),
            },
            ended = stream_http.conn.as_mut() => {
                let _ = ended;
                return report(Fact::Closed(CloseInfo::abnormal()));
            }
        }
    }
}

/// Report one event; `Some` when it ends the transport.
fn on_event(event: StreamEvent, report: &impl Fn(Fact)) -> Option<()> {
    match event {
        StreamEvent::Message(text) => {
            report(Fact::Frame(text));
            None
        }
        StreamEvent::Close(code, reason) => {
            report(Fact::Closed(CloseInfo::new(CloseCode(code), reason)));
            Some(())
        }
        // Only the first names the stream.
        StreamEvent::Open(_) => None,
    }
}

/// The stream, once its `open` event arrived.
struct Opened {
    stream_http: Http,
    body: Incoming,
    reader: EventReader,
    stream: String,
    /// Events that came in the same chunk as `open`.
    early: Vec<StreamEvent>,
}

async fn open(target: &Target) -> Result<Opened, Failure> {
    let mut http = Http::open(target).await?;
    let request = post(
        target,
        &target.sse_path(),
        &[("accept", "text/event-stream")],
        Bytes::new(),
    );
    let response = http.call(request).await?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(Failure::Rejected {
            status,
            retry_after_ms: response
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|secs| secs.min(belay_proto::backoff::MAX_HINT_DELAY.as_secs()) * 1000),
        });
    }
    let mut body = response.into_body();
    let mut reader = EventReader::default();
    loop {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            _ = http.conn.as_mut() => None,
        };
        let data = match frame {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
            Some(Err(e)) => return Err(Failure::network(format!("the event stream failed: {e}"))),
            None => return Err(Failure::network("the event stream ended before it opened")),
        };
        let mut events = reader
            .push(&data)
            .map_err(|_| Failure::network("the event stream broke before it opened"))?
            .into_iter();
        match events.next() {
            Some(StreamEvent::Open(stream)) => {
                return Ok(Opened {
                    stream_http: http,
                    body,
                    reader,
                    stream,
                    early: events.collect(),
                });
            }
            Some(_) => {
                return Err(Failure::network(
                    "the event stream did not open with `open`",
                ))
            }
            None => {}
        }
    }
}

/// What is queued, up to [`BATCH_BYTES`] (at least one message), one per
/// line.
fn take_batch(queue: &mut Vec<String>) -> String {
    let mut len = 0;
    let mut take = 0;
    for message in queue.iter() {
        if take > 0 && len + message.len() + 1 > BATCH_BYTES {
            break;
        }
        len += message.len() + 1;
        take += 1;
    }
    queue.drain(..take).collect::<Vec<_>>().join("\n")
}

/// Tell the server (best effort, briefly), then end.
async fn close(target: &Target, base: &str, stream: &str, code: CloseCode, reason: &str) {
    let body = serde_json::json!({ "code": code.0, "reason": reason }).to_string();
    let request = post(
        target,
        &format!("{base}/close"),
        &[("belay-stream", stream)],
        Bytes::from(body),
    );
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        let mut http = Http::open(target).await?;
        http.call(request).await.map(|_| ())
    })
    .await;
}
