//! The naive baseline: a WebSocket client that trusts socket events.
//!
//! It is what the seed's first row measures and what most hand-written
//! clients do: the socket's `open` means ready and its `close` means lost;
//! it reconnects every 1 s; it answers the server's pings (as every socket
//! library does) but has no heartbeat of its own; it keeps no request
//! registry (a request with no answer stays pending forever, one sent with
//! no open socket is dropped), subscribes without waiting for confirmation
//! and without a recovery position, and has no connect timeout.

use std::time::Duration;

use belay_proto::message::{
    decode_server, encode_client, ClientMessage, Connect, Reply, Request, ServerMessage, Subscribe,
};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_websockets::{ClientBuilder, MaybeTlsStream, Message, WebSocketStream};

use super::agent::{stopped, Emitter, Workload};
use super::observation::{Observation, Outcome};

/// The naive client's fixed reconnect delay.
pub const NAIVE_RECONNECT: Duration = Duration::from_secs(1);

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Run the naive client against `url` until `stop` turns true.
pub(crate) async fn run(
    url: http::Uri,
    work: Workload,
    out: Emitter,
    mut stop: watch::Receiver<bool>,
) {
    out.emit(Observation::Started);
    let (tick_tx, mut ticks) = mpsc::unbounded_channel();
    let ticker = tokio::spawn(tick(work.request_every, tick_tx));
    let mut next_id = 0_u64;
    'life: loop {
        out.emit(Observation::Dial);
        let builder = ClientBuilder::from_uri(url.clone());
        let connected = tokio::select! {
            () = stopped(&mut stop) => break 'life,
            connected = builder.connect() => connected,
        };
        // Ticks while no socket is open: the request is dropped on the floor,
        // which is what `send` on a closed browser socket does.
        while let Ok(()) = ticks.try_recv() {
            next_id += 1;
            out.emit(Observation::Sent { id: next_id });
        }
        if let Ok((socket, _)) = connected {
            out.emit(Observation::Ready);
            let why = session(socket, &work, &out, &mut ticks, &mut next_id, &mut stop).await;
            match why {
                End::Stopped => break 'life,
                End::Lost(why) => out.emit(Observation::Lost { why }),
            }
        } else {
            out.emit(Observation::Lost {
                why: "connect failed".into(),
            });
        }
        tokio::select! {
            () = stopped(&mut stop) => break 'life,
            () = tokio::time::sleep(NAIVE_RECONNECT) => {}
        }
        while let Ok(()) = ticks.try_recv() {
            next_id += 1;
            out.emit(Observation::Sent { id: next_id });
        }
    }
    ticker.abort();
}

enum End {
    Stopped,
    Lost(String),
}

async fn tick(every: Duration, tx: mpsc::UnboundedSender<()>) {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        if tx.send(()).is_err() {
            return;
        }
    }
}

async fn send(socket: &mut Socket, message: &ClientMessage) -> Result<(), String> {
    socket
        .send(Message::text(encode_client(message)))
        .await
        .map_err(|e| format!("send failed: {e}"))
}

async fn session(
    mut socket: Socket,
    work: &Workload,
    out: &Emitter,
    ticks: &mut mpsc::UnboundedReceiver<()>,
    next_id: &mut u64,
    stop: &mut watch::Receiver<bool>,
) -> End {
    let hello = ClientMessage::Connect(Connect {
        protocol: 1,
        token: None,
        session: None,
    });
    let subscribe = ClientMessage::Subscribe(Subscribe {
        channel: work.channel.clone(),
        since: None,
        token: None,
    });
    for message in [hello, subscribe] {
        if let Err(why) = send(&mut socket, &message).await {
            return End::Lost(why);
        }
    }
    loop {
        tokio::select! {
            () = stopped(stop) => {
                let _ = socket.close().await;
                return End::Stopped;
            }
            Some(()) = ticks.recv() => {
                *next_id += 1;
                let id = *next_id;
                out.emit(Observation::Sent { id });
                let request = ClientMessage::Request(Request {
                    id,
                    method: "echo".into(),
                    params: json!({ "k": id }),
                    idem: None,
                    timeout_ms: None,
                });
                if let Err(why) = send(&mut socket, &request).await {
                    return End::Lost(why);
                }
            }
            frame = socket.next() => match frame {
                None => return End::Lost("socket closed".into()),
                Some(Err(e)) => return End::Lost(format!("socket error: {e}")),
                Some(Ok(message)) => {
                    if message.is_close() {
                        return End::Lost("close frame".into());
                    }
                    let Some(text) = message.as_text() else { continue };
                    if let Err(why) = on_text(&mut socket, text, work, out).await {
                        return End::Lost(why);
                    }
                }
            },
        }
    }
}

async fn on_text(
    socket: &mut Socket,
    text: &str,
    work: &Workload,
    out: &Emitter,
) -> Result<(), String> {
    match decode_server(text) {
        Ok(ServerMessage::Ping) => send(socket, &ClientMessage::Pong).await?,
        Ok(ServerMessage::Publication(p)) if p.channel == work.channel => {
            out.emit(Observation::Pub {
                epoch: p.epoch,
                offset: p.offset,
            });
        }
        Ok(ServerMessage::Response(r)) => {
            let outcome = match r.reply {
                Reply::Result(_) => Outcome::Ok,
                _ => Outcome::Error,
            };
            out.emit(Observation::Settled { id: r.id, outcome });
        }
        // Confirmations, losses and advice mean nothing to a naive client.
        _ => {}
    }
    Ok(())
}
