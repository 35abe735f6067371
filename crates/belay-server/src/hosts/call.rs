//! `$call`: a client calls a method of a resident host through the relay
//! (spec/PROTOCOL.md §10.3).
//!
//! Params `{"host": ID, "method": NAME, "params": <json>}` (`params`
//! optional); the result is the host's. The caller must be allowed to
//! subscribe to `$host:ID`. A sleeping host is not a failure: the call
//! waits for it to wake, up to the wake bound (one heartbeat interval plus
//! the connect allowance, [`HostTiming::wake_bound`]); past that it
//! settles `host_asleep`. Once published on `$host-calls:ID` the call
//! waits for the host's `$answer` up to
//! [`HostTiming::call_deadline`]`(answer_timeout)` from its start. Those
//! decisions are the core's [`HostCalls`](belay_proto::server::HostCalls)
//! (see [`super`]); this file checks the params and the caller's access,
//! and waits.
//!
//! [`HostTiming::wake_bound`]: belay_proto::host::HostTiming::wake_bound
//! [`HostTiming::call_deadline`]: belay_proto::host::HostTiming::call_deadline

use std::sync::Arc;
use std::time::Duration;

use belay_proto::host::{valid_host_id, HOST_CHANNEL_PREFIX};
use belay_proto::message::{ErrorBody, Payload, Reply};
use belay_proto::server::{CallId, CallRequest};
use serde::Deserialize;

use crate::rpc::CallContext;
use crate::shared::Shared;

/// The reserved method's name.
pub(crate) const METHOD: &str = "$call";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    host: String,
    method: String,
    #[serde(default)]
    params: Payload,
}

/// Run `$call` for the caller in `ctx`.
pub(crate) async fn run(ctx: CallContext, params: Payload) -> Reply {
    let params: Params = match serde_json::from_value(params) {
        Ok(p) => p,
        Err(e) => return refused("bad_request", format!("invalid $call params: {e}"), None),
    };
    if !valid_host_id(&params.host) {
        return refused("bad_request", "`host` is not a host id".into(), None);
    }
    if params.method.is_empty() || params.method.len() > 128 {
        return refused(
            "bad_request",
            "`method` must be 1 to 128 bytes".into(),
            None,
        );
    }
    let shared = &ctx.server.shared;
    let channel = format!("{HOST_CHANNEL_PREFIX}{}", params.host);
    let verdict = crate::access::subscribe(shared, &ctx.principal, &channel, None);
    if let Err(e) = crate::access::settle(verdict).await {
        return refused(e.code(), e.to_string(), None);
    }
    let host = params.host;
    let request = CallRequest::new(
        host.as_str(),
        Arc::clone(&ctx.session),
        params.method,
        params.params,
    );
    let (call, mut reply) = match shared.hosts.start_call(shared, request) {
        Ok(started) => started,
        Err(refusal) => {
            return Reply::Error(refusal.error_body(&host, &shared.config.host_timing));
        }
    };
    let _ending = Ending {
        shared: Arc::clone(shared),
        call,
    };
    // The core settles the call (answered, host_asleep, host_lost,
    // timeout); this task only wakes it at the call's deadlines.
    while let Some(deadline) = crate::hosts::HostRegistry::call_timeout(shared, call) {
        tokio::select! {
            settled = &mut reply => return settled.unwrap_or_else(|_| lost()),
            () = tokio::time::sleep_until(shared.clock.to_std(deadline).into()) => {
                shared.hosts.timeout(shared);
            }
        }
    }
    reply.await.unwrap_or_else(|_| lost())
}

/// Ends the call in the registry when `run` is dropped before it settles
/// (the caller's connection closed); a no-op once it settled.
struct Ending {
    shared: Arc<Shared>,
    call: CallId,
}

impl Drop for Ending {
    fn drop(&mut self) {
        self.shared.hosts.end_call(&self.shared, self.call, None);
    }
}

fn lost() -> Reply {
    refused(
        "host_lost",
        "the host's session ended during the call; it may have run".into(),
        None,
    )
}

fn refused(code: &str, message: String, retry_after: Option<Duration>) -> Reply {
    let mut body = ErrorBody::new(code, message);
    body.retry_after_ms = retry_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Reply::Error(body)
}
