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
//! [`HostTiming::call_deadline`]`(answer_timeout)` from its start.

use std::sync::Arc;
use std::time::Duration;

use belay_proto::host::{valid_host_id, HostTiming, CALLS_CHANNEL_PREFIX, HOST_CHANNEL_PREFIX};
use belay_proto::message::{ErrorBody, Payload, Reply};
use serde::Deserialize;
use tokio::time::Instant;

use super::CallRefusal;
use crate::rpc::CallContext;
use crate::shared::Shared;

/// The reserved method's name.
pub(crate) const METHOD: &str = "$call";

/// How long a woken host may take to answer a call, beyond the wake.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

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
    let timing = &shared.config.host_timing;
    let ticket = match shared.hosts.start_call(shared, &params.host, &ctx.session) {
        Ok(ticket) => ticket,
        Err(refusal) => return refusal_reply(&refusal, &params.host, timing),
    };
    let _ending = Ending {
        shared: Arc::clone(shared),
        host: params.host.clone(),
        call: ticket.id,
        caller: Arc::clone(&ctx.session),
    };
    let started = Instant::now();
    // Wait for the host to hold its calls channel, up to the wake bound.
    let woken_by = started + timing.wake_bound();
    loop {
        let notified = ticket.ready.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if shared.hosts.is_attached(&params.host) {
            break;
        }
        if tokio::time::timeout_at(woken_by, notified).await.is_err() {
            return refused(
                "host_asleep",
                format!(
                    "host {:?} did not wake within {} ms (one heartbeat interval plus the connect allowance)",
                    params.host,
                    timing.wake_bound().as_millis()
                ),
                Some(timing.heartbeat_interval),
            );
        }
    }
    let Some(answer) = shared.hosts.expect_answer(&params.host, ticket.id) else {
        return lost();
    };
    let call = serde_json::json!({
        "call": ticket.id,
        "method": params.method,
        "params": params.params,
    });
    let channel = format!("{CALLS_CHANNEL_PREFIX}{}", params.host);
    if let Err(e) = ctx.server.publish(&channel, call).await {
        let code = match e {
            crate::broker::PublishError::TooLarge { .. } => "too_large",
            _ => "unavailable",
        };
        return refused(code, format!("the call could not be delivered: {e}"), None);
    }
    let deadline = started + timing.call_deadline(ANSWER_TIMEOUT);
    match tokio::time::timeout_at(deadline, answer).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(_)) => lost(),
        Err(_) => refused(
            "timeout",
            format!("host {:?} did not answer in time", params.host),
            None,
        ),
    }
}

/// Ends the call in the registry however `run` returns (or is dropped,
/// when the caller's connection closes).
struct Ending {
    shared: Arc<Shared>,
    host: String,
    call: u64,
    caller: Arc<str>,
}

impl Drop for Ending {
    fn drop(&mut self) {
        self.shared
            .hosts
            .end_call(&self.shared, &self.host, self.call, &self.caller);
    }
}

fn refusal_reply(refusal: &CallRefusal, host: &str, timing: &HostTiming) -> Reply {
    match refusal {
        CallRefusal::Unknown => refused(
            "not_found",
            format!("no host {host:?} has registered"),
            None,
        ),
        CallRefusal::Offline => refused(
            "host_offline",
            format!(
                "host {host:?} has not called the heartbeat endpoint for {} ms",
                timing.offline_after().as_millis()
            ),
            None,
        ),
        CallRefusal::Busy => refused(
            "rate_limited",
            format!("host {host:?} has as many calls as it may"),
            Some(Duration::from_secs(1)),
        ),
        CallRefusal::CallerBusy => refused(
            "rate_limited",
            format!("this connection holds its share of host {host:?}'s calls"),
            Some(Duration::from_secs(1)),
        ),
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
