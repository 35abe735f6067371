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
//! (see [`super`]). The params and the refusals before anyone is asked
//! (no host id, a method outside 1 to 128 bytes) are the node's
//! ([`Node::reserved_call`](belay_proto::server::Node::reserved_call),
//! which also names who decides the caller's access); this file asks that
//! hook, starts the call and waits.
//!
//! [`HostTiming::wake_bound`]: belay_proto::host::HostTiming::wake_bound
//! [`HostTiming::call_deadline`]: belay_proto::host::HostTiming::call_deadline

use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{CallParams, ErrorBody, Payload, Reply};
use belay_proto::server::{AccessRoute, CallId, CallRequest, ReservedCall};

use crate::metrics::lock;
use crate::rpc::CallContext;
use crate::shared::Shared;

pub(crate) use belay_proto::server::CALL_METHOD as METHOD;

/// Run `$call` for the caller in `ctx`.
pub(crate) async fn run(ctx: CallContext, params: Payload) -> Reply {
    let shared = &ctx.server.shared;
    let caller = crate::access::caller(&ctx.principal);
    let call = lock(&shared.node).reserved_call(caller, METHOD, &params);
    match call {
        Some(Ok(ReservedCall::Call { params, access })) => call_host(ctx, params, access).await,
        Some(Err(error)) => Reply::Error(error),
        other => unexpected(other.map(|c| c.map(|_| ()))),
    }
}

/// Ask `access` whether the caller may call the host, then start the call
/// and wait for how it settles.
async fn call_host(ctx: CallContext, params: CallParams, access: AccessRoute) -> Reply {
    let shared = &ctx.server.shared;
    let verdict = crate::access::subscribe_by(shared, &ctx.principal, access, None);
    if let Err(e) = crate::access::settle(verdict).await {
        return refused(e.code(), e.to_string(), None);
    }
    let host = params.host;
    // In a cluster the host may beat and connect on another node.
    shared.hosts.look_up_unless_held(shared, &host).await;
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

/// The node answered `$call` with something else: a core newer than this
/// driver. Loud, and an `internal` answer rather than none.
fn unexpected(call: Option<Result<(), ErrorBody>>) -> Reply {
    tracing::error!(
        ?call,
        "the server does not handle the node's answer to $call"
    );
    debug_assert!(false, "unhandled reserved call for $call");
    refused("internal", "the server cannot carry out $call".into(), None)
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
