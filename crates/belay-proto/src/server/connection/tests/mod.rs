//! The server connection's behaviours, one file each; the helpers every file uses.

pub(super) use std::time::Duration;

pub(super) use serde_json::json;

pub(super) use super::*;
pub(super) use crate::message::RawJson;
pub(super) use crate::message::{ErrorBody, Payload, Reply, StreamPosition, Subscribed};

pub(super) type Conn = Connection<&'static str>;

pub(super) const T0: Instant = Instant::ZERO;

pub(super) fn at(ms: u64) -> Instant {
    T0 + Duration::from_millis(ms)
}

pub(super) fn drain(conn: &mut Conn) -> Vec<Output<&'static str>> {
    std::iter::from_fn(|| conn.poll_output()).collect()
}

/// What the client would receive and how the connection ends, without the
/// driver's questions and events.
pub(super) fn sent(outputs: &[Output<&'static str>]) -> Vec<String> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Send(message) => Some(crate::message::encode_server(message)),
            Output::SendEncoded(frame) => Some(frame.to_string()),
            Output::Close { code, reason, .. } => Some(format!("close {} {reason}", code.0)),
            Output::PeerGone { code } => Some(format!("peer gone {code:?}")),
            _ => None,
        })
        .collect()
}

pub(super) fn text(conn: &mut Conn, now: Instant, frame: serde_json::Value) {
    conn.handle_input(now, Input::Frame(Frame::Text(&frame.to_string())));
}

/// A connection through `welcome`, its outputs so far drained.
pub(super) fn open() -> Conn {
    open_with(Limits::default())
}

/// The same under `limits`.
pub(super) fn open_with(limits: Limits) -> Conn {
    let mut conn = Conn::new(limits, T0, 42);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    let Some(Output::Authenticate { ticket, .. }) = conn.poll_output() else {
        panic!("connect must be authenticated")
    };
    conn.handle_input(
        T0,
        Input::Auth {
            ticket,
            verdict: AuthVerdict::accepted(),
        },
    );
    drain(&mut conn);
    conn
}

pub(super) fn closed_with(outputs: &[Output<&'static str>]) -> Option<(u16, String)> {
    outputs.iter().find_map(|o| match o {
        Output::Close { code, reason, .. } => Some((code.0, reason.clone())),
        _ => None,
    })
}

pub(super) fn ticket_of(outputs: &[Output<&'static str>]) -> Ticket {
    outputs
        .iter()
        .find_map(|o| match o {
            Output::Authenticate { ticket, .. }
            | Output::AuthorizeSubscribe { ticket, .. }
            | Output::AuthorizeRequest { ticket, .. }
            | Output::Join { ticket, .. }
            | Output::Call { ticket, .. } => Some(*ticket),
            _ => None,
        })
        .expect("a question")
}

/// Send request `id` for `method`, authorize it: the `Call`'s ticket.
pub(super) fn called(conn: &mut Conn, id: u64, method: &str) -> Ticket {
    text(
        conn,
        T0,
        json!({"type": "request", "id": id, "method": method}),
    );
    let ask = ticket_of(&drain(conn));
    conn.handle_input(
        T0,
        Input::RequestAuthorized {
            ticket: ask,
            verdict: Ok(()),
        },
    );
    ticket_of(&drain(conn))
}

pub(super) fn subscribe(conn: &mut Conn, now: Instant, channel: &str, subscription: u64, top: u64) {
    text(conn, now, json!({"type": "subscribe", "channel": channel}));
    let ask = ticket_of(&drain(conn));
    conn.handle_input(
        now,
        Input::SubscribeAuthorized {
            ticket: ask,
            verdict: Ok(None),
        },
    );
    let join = ticket_of(&drain(conn));
    conn.handle_input(
        now,
        Input::Joined {
            ticket: join,
            answer: joined(channel, subscription, top, vec![]),
            room: None,
        },
    );
    drain(conn);
}

pub(super) fn joined(
    channel: &str,
    subscription: u64,
    offset: u64,
    replay: Vec<(u64, &'static str)>,
) -> JoinAnswer<&'static str> {
    JoinAnswer::Joined {
        subscribed: Subscribed {
            channel: channel.into(),
            epoch: "e".into(),
            offset,
            recovered: false,
        },
        subscription,
        replay,
    }
}

mod closing;
mod codec;
mod frames;
mod handshake;
mod requests;
mod sub_refresh;
mod subscriptions;
