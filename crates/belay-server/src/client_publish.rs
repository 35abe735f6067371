//! The reserved method `$publish` (spec/PROTOCOL.md §4.6), carried out:
//! the node parses its params and names who decides
//! ([`Node::reserved_call`](belay_proto::server::Node::reserved_call));
//! this asks that hook, then publishes through
//! [`Server::publish`](crate::Server::publish) (whose checks apply), so
//! the request gets exactly one answer and its idempotency key is
//! honoured by the request path like any method's.

use belay_proto::message::{ErrorBody, Payload, PublishParams, PublishResult, RawJson, Reply};
use belay_proto::server::{AccessRoute, ReservedCall};

use crate::broker::PublishError;
use crate::metrics::lock;
use crate::rpc::CallContext;

pub(crate) use belay_proto::server::PUBLISH_METHOD as METHOD;

/// Run `$publish` for the caller in `ctx`.
pub(crate) async fn run(ctx: CallContext, params: Payload) -> Reply {
    let shared = &ctx.server.shared;
    let caller = crate::access::caller(&ctx.principal);
    let call = lock(&shared.node).reserved_call(caller, METHOD, &params);
    let (params, access) = match call {
        Some(Ok(ReservedCall::Publish { params, access })) => (params, access),
        Some(Err(error)) => return Reply::Error(error),
        other => return unexpected(other.map(|c| c.map(|_| ()))),
    };
    publish(ctx, params, access).await
}

async fn publish(ctx: CallContext, params: PublishParams, access: AccessRoute) -> Reply {
    let shared = &ctx.server.shared;
    let verdict = crate::access::publish_by(shared, &ctx.principal, access, &params.data);
    if let Err(e) = crate::access::settle(verdict).await {
        return refused(e.code(), e.to_string());
    }
    match ctx.server.publish(&params.channel, params.data).await {
        Ok(p) => match RawJson::encode(&PublishResult::new(p.offset, p.epoch.to_string())) {
            Ok(result) => Reply::Result(result),
            Err(e) => refused("internal", e.to_string()),
        },
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

/// The node answered `$publish` with something else: a core newer than
/// this driver. Loud, and an `internal` answer rather than none.
fn unexpected(call: Option<Result<(), ErrorBody>>) -> Reply {
    crate::unhandled::Unhandled::new("reserved call for $publish", &call).report();
    refused("internal", "the server cannot carry out $publish".into())
}

fn refused(code: &str, message: String) -> Reply {
    Reply::Error(ErrorBody::new(code, message))
}
