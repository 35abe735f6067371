//! The Belay Rust client as an agent: `belay-client` with its default
//! policy and its SSE fallback; only the connect timeout, the request
//! deadline, how often a WebSocket is tried again on the fallback, the
//! token and whether requests go to a resident host come from the
//! workload.

use belay_client::{Client, ErrorCode, Item, RequestError, RequestOptions, Status};
use belay_proto::message::Codec;
use belay_proto::{FallbackConfig, TransportKind};
use serde_json::json;
use tokio::sync::watch;

use super::agent::{stopped, Emitter, Workload};
use super::observation::{Observation, Outcome};

pub(crate) async fn run(
    url: String,
    work: Workload,
    out: Emitter,
    mut stop: watch::Receiver<bool>,
) {
    let (connect_timeout, request_timeout) = (work.connect_timeout, work.request_timeout);
    let mut builder = Client::builder(url);
    if let Some(token) = &work.token {
        builder = builder.token(token.clone());
    }
    let client = builder
        .configure(move |c| {
            c.set_connect_timeout(connect_timeout)
                .set_request_timeout(request_timeout);
        })
        .fallback(Some({
            let mut fallback = FallbackConfig::default();
            fallback.set_retry_websocket_every(work.retry_websocket_every);
            fallback
        }))
        .seed(work.seed)
        .codec(work.codec)
        .connect();
    let client = match client {
        Ok(client) => client,
        Err(unusable) => {
            // Never started: the lab sees why.
            out.emit(Observation::Lost {
                why: unusable.to_string(),
            });
            return;
        }
    };
    out.emit(Observation::Started);
    let report_codec = work.codec == Codec::Binary;
    let status = tokio::spawn(watch_status(client.status(), out.clone(), report_codec));
    let feed = tokio::spawn(watch_feed(
        client.clone(),
        work.channel.clone(),
        out.clone(),
    ));
    let mut interval = tokio::time::interval(work.request_every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_id = 0_u64;
    loop {
        tokio::select! {
            () = stopped(&mut stop) => break,
            _ = interval.tick() => {
                next_id += 1;
                let id = next_id;
                out.emit(Observation::Sent { id });
                let client = client.clone();
                let out = out.clone();
                let timeout = work.request_timeout;
                let (method, params) = match &work.call_host {
                    Some(host) => ("$call", json!({ "host": host, "method": "echo", "params": { "k": id } })),
                    None => ("echo", json!({ "k": id })),
                };
                tokio::spawn(async move {
                    let options = RequestOptions::default().timeout(timeout);
                    let result = client.request_with(method, params, options).await;
                    out.emit(Observation::Settled { id, outcome: outcome(&result) });
                });
            }
        }
    }
    client.close().await;
    status.abort();
    feed.abort();
}

fn outcome(result: &Result<belay_proto::message::RawJson, RequestError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Ok,
        Err(RequestError::NotReady) => Outcome::NotReady,
        Err(RequestError::Timeout) => Outcome::Timeout,
        Err(RequestError::ConnectionClosed | RequestError::Closed) => Outcome::Closed,
        Err(RequestError::Server {
            code: ErrorCode::HostLost,
            ..
        }) => Outcome::HostLost,
        Err(_) => Outcome::Error,
    }
}

/// Report every change of readiness (and, with `report_codec`, the codec
/// of each connection the client became ready on).
async fn watch_status(mut status: watch::Receiver<Status>, out: Emitter, report_codec: bool) {
    let mut attempts = 0_u64;
    let mut ready = false;
    loop {
        let now = status.borrow_and_update().clone();
        for _ in attempts..now.attempts {
            out.emit(Observation::Dial);
        }
        attempts = attempts.max(now.attempts);
        if now.ready != ready {
            ready = now.ready;
            if ready {
                out.emit(Observation::Ready);
                let transport = match now.transport {
                    TransportKind::Sse => "sse",
                    _ => "websocket",
                };
                out.emit(Observation::Via {
                    transport: transport.into(),
                });
                if report_codec {
                    let codec = match now.codec {
                        Codec::Binary => "binary",
                        _ => "json",
                    };
                    out.emit(Observation::Codec {
                        codec: codec.into(),
                    });
                }
            } else {
                out.emit(Observation::Lost { why: why(&now) });
            }
        }
        if status.changed().await.is_err() {
            return;
        }
    }
}

fn why(status: &Status) -> String {
    let r = status.readiness;
    if !r.transport || !r.protocol {
        status
            .last_disconnect
            .as_ref()
            .map_or_else(|| "disconnected".into(), |d| format!("{:?}", d.reason))
    } else if !r.service {
        "service down".into()
    } else {
        "subscription not confirmed".into()
    }
}

async fn watch_feed(client: Client, channel: String, out: Emitter) {
    let Ok(mut feed) = client.subscribe(&channel).await else {
        return;
    };
    while let Some(item) = feed.next().await {
        match item {
            Item::Publication(p) => out.emit(Observation::Pub {
                epoch: p.epoch,
                offset: p.offset,
            }),
            Item::Resync => out.emit(Observation::Resync),
            _ => {}
        }
    }
}
