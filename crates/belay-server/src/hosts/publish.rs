//! What the registry asks the broker to carry: a call to its host's
//! `$host-calls:ID`, a host's state to `$host-state:ID`. Both are spawned
//! and not waited for by the input that caused them.

use std::sync::Arc;

use belay_proto::host::{HostState, CALLS_CHANNEL_PREFIX, STATE_CHANNEL_PREFIX};
use belay_proto::message::{ErrorBody, HostCallDelivery, Reply};
use belay_proto::server::Delivery;

use crate::shared::Shared;

/// Publish a call on `$host-calls:ID`; if the broker refuses it, the call
/// ends and its caller is told why.
pub(super) fn deliver(shared: &Arc<Shared>, delivery: Delivery) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let server = crate::Server {
        shared: Arc::clone(shared),
    };
    let call = delivery.call;
    let data = HostCallDelivery::new(call.as_u64(), delivery.method, delivery.params);
    // A struct of a string, a number and a `Value` always serializes.
    let data = serde_json::to_value(data).unwrap_or_default();
    let publishing = server.publish(&format!("{CALLS_CHANNEL_PREFIX}{}", delivery.host), data);
    let shared = Arc::clone(shared);
    runtime.spawn(async move {
        if let Err(e) = publishing.await {
            let code = match e {
                crate::broker::PublishError::TooLarge { .. } => "too_large",
                _ => "unavailable",
            };
            let body = ErrorBody::new(code, format!("the call could not be delivered: {e}"));
            shared
                .hosts
                .end_call(&shared, call, Some(Reply::Error(body)));
        }
    });
}

/// Publish a changed state on `$host-state:ID`. The broker takes the
/// publication in the order of these calls; its outcome is not waited for
/// (a state nobody could be told is told at the next change).
pub(super) fn announce(shared: &Arc<Shared>, host: &Arc<str>, state: HostState) {
    // A call ending while the runtime shuts down has nobody left to tell.
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let server = crate::Server {
        shared: Arc::clone(shared),
    };
    let publishing = server.publish(
        &format!("{STATE_CHANNEL_PREFIX}{host}"),
        serde_json::json!({ "state": state.as_str() }),
    );
    let host = Arc::clone(host);
    runtime.spawn(async move {
        if let Err(error) = publishing.await {
            tracing::debug!(%host, %error, "host state not published");
        }
    });
}
