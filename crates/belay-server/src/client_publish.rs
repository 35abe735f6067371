//! The reserved method `$publish`: a client publishes to a channel with a
//! request (spec/PROTOCOL.md §4.6), so it gets exactly one answer and its
//! idempotency key is honoured by the request path like any method's.
//!
//! Params `{"channel": "...", "data": <json>}`; result
//! `{"offset": N, "epoch": "..."}`. The caller must be allowed as the
//! channel's namespace says ([`Access`](crate::Access): by its grant,
//! through [`Authenticator::authorize_publish`](crate::auth::Authenticator::authorize_publish),
//! or by the backend, through [`Authenticator::check_publish`](crate::auth::Authenticator::check_publish)),
//! then the checks of [`Server::publish`](crate::Server::publish) apply.

use belay_proto::message::{ErrorBody, Payload, Reply};
use serde::Deserialize;

use crate::broker::PublishError;
use crate::rpc::CallContext;

/// The reserved method's name.
pub(crate) const METHOD: &str = "$publish";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    channel: String,
    data: Payload,
}

/// Run `$publish` for the caller in `ctx`.
pub(crate) async fn run(ctx: CallContext, params: Payload) -> Reply {
    let params: Params = match serde_json::from_value(params) {
        Ok(p) => p,
        Err(e) => return refused("bad_request", format!("invalid $publish params: {e}")),
    };
    // Joins and leaves are the server's to publish (spec/PROTOCOL.md §4.7).
    if params
        .channel
        .starts_with(crate::connection::PRESENCE_CHANNEL_PREFIX)
    {
        return refused("forbidden", "$presence: channels are the server's".into());
    }
    let shared = &ctx.server.shared;
    let verdict = crate::access::publish(shared, &ctx.principal, &params.channel, &params.data);
    if let Err(e) = crate::access::settle(verdict).await {
        return refused(e.code(), e.to_string());
    }
    match ctx.server.publish(&params.channel, params.data).await {
        Ok(p) => Reply::Result(
            serde_json::json!({ "offset": p.offset, "epoch": p.epoch.to_string() }).into(),
        ),
        Err(e) => {
            let code = match &e {
                PublishError::InvalidChannel(_) | PublishError::TooDeep { .. } => "bad_request",
                PublishError::TooLarge { .. } => "too_large",
                _ => "unavailable",
            };
            refused(code, e.to_string())
        }
    }
}

fn refused(code: &str, message: String) -> Reply {
    Reply::Error(ErrorBody::new(code, message))
}
