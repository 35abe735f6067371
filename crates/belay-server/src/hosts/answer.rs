//! `$answer`: a host's outcome of a call the relay delivered on
//! `$host-calls:ID` (spec/PROTOCOL.md §10.3).
//!
//! Params `{"call": N, "result": <json>}` or `{"call": N, "error":
//! {"code": ..., "message": ..., "retry_after_ms"?: N}}`; result `{}`.
//! The params ([`AnswerParams`]) and the rule that only a host answers
//! are the node's
//! ([`Node::reserved_call`](belay_proto::server::Node::reserved_call));
//! whether the call waits for this host's answer is its
//! [`HostCalls`](belay_proto::server::HostCalls)': a call id that is not
//! waiting for this host (answered already, given up, another host's) is
//! `not_found`. In a cluster, a call of another node is handed to it
//! (`across_nodes`) and `not_found` only when no node took it.

use belay_proto::message::{AnswerParams, AnswerResult, ErrorBody, Payload, RawJson, Reply};
use belay_proto::server::{CallId, ReservedCall};

use crate::metrics::lock;
use crate::rpc::CallContext;

pub(crate) use belay_proto::server::ANSWER_METHOD as METHOD;

/// Run `$answer` for the caller in `ctx`.
pub(crate) async fn run(ctx: CallContext, params: Payload) -> Reply {
    let shared = &ctx.server.shared;
    let caller = crate::access::caller(&ctx.principal);
    let call = lock(&shared.node).reserved_call(caller, METHOD, &params);
    let params = match call {
        Some(Ok(ReservedCall::Answer { params })) => params,
        Some(Err(error)) => return Reply::Error(error),
        other => return unexpected(other.map(|c| c.map(|_| ()))),
    };
    answer(&ctx, params).await
}

/// Hand the host's outcome to the call waiting for it: here, or (in a
/// cluster) on the node that made the call.
async fn answer(ctx: &CallContext, params: AnswerParams) -> Reply {
    // The node let only a host through.
    let Some(host) = ctx.principal.host.as_deref() else {
        return refused("forbidden", "only a host answers calls".into());
    };
    let shared = &ctx.server.shared;
    let call = params.call;
    let reply = params.outcome.into_reply();
    let taken = shared
        .hosts
        .answer(shared, host, CallId::from_u64(call), reply.clone())
        || shared
            .hosts
            .forward_answer(host, CallId::from_u64(call), reply)
            .await;
    if taken {
        match RawJson::encode(&AnswerResult::new()) {
            Ok(result) => Reply::Result(result),
            Err(e) => refused("internal", e.to_string()),
        }
    } else {
        refused(
            "not_found",
            format!("no call {call} waits for an answer from this host"),
        )
    }
}

/// The node answered `$answer` with something else: a core newer than
/// this driver. Loud, and an `internal` answer rather than none.
fn unexpected(call: Option<Result<(), ErrorBody>>) -> Reply {
    tracing::error!(
        ?call,
        "the server does not handle the node's answer to $answer"
    );
    debug_assert!(false, "unhandled reserved call for $answer");
    refused("internal", "the server cannot carry out $answer".into())
}

fn refused(code: &str, message: String) -> Reply {
    Reply::Error(ErrorBody::new(code, message))
}
