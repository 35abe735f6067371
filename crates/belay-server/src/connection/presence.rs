//! Presence on the connection's side, carried out: the node decides
//! whether a granted subscription is a member, its key and whether joins
//! and leaves are announced ([`Node::presence_change`]), and parses the
//! reserved `$presence` / `$presence_stats` requests
//! ([`Node::reserved_call`]); this records and forgets members in the
//! store, publishes the announcements on `$presence:CHANNEL` and answers
//! the requests.
//!
//! Store operations are started on the connection's task in the order the
//! core decided them (so a join is recorded before its leave); the memory
//! store answers at once and its join/leave publication takes its offset
//! right then, so `join` precedes `leave` on `$presence:CHANNEL`.
//!
//! [`Node::presence_change`]: belay_proto::server::Node::presence_change
//! [`Node::reserved_call`]: belay_proto::server::Node::reserved_call

use std::sync::Arc;

use belay_proto::message::{
    ErrorBody, PresenceMember, PresenceMembers, PresenceStats, RawJson, Reply, Request,
};
use belay_proto::server::{Input, PresenceKind, ReservedCall, Ticket};
use futures_util::FutureExt;

use super::Driver;
use crate::auth::Verdict;
use crate::broker::{Member, PresenceError, SubscriberId};
use crate::mailbox::Control;
use crate::metrics::lock;
use crate::shared::Shared;

pub(crate) use belay_proto::server::{PRESENCE_METHOD, PRESENCE_STATS_METHOD};

impl Driver {
    fn member(&self) -> Member {
        Member::new(
            self.session.to_string(),
            self.principal.user.clone(),
            self.principal.info.clone(),
        )
    }

    /// A subscription to `channel` was granted.
    pub(super) fn presence_joined(&self, channel: &str, subscriber: SubscriberId) {
        let change =
            lock(&self.shared.node).presence_change(channel, &self.session, subscriber.get());
        let Some(change) = change else {
            return;
        };
        let member = self.member();
        let added = self
            .shared
            .presence
            .add(channel, &change.key, member.clone());
        let announce = change.announce_on.map(|on| (on, member));
        settle(
            &self.shared,
            added.map(|r| r.map(|()| true)),
            announce,
            PresenceKind::Join,
        );
    }

    /// A subscription to `channel` ended.
    pub(super) fn presence_left(&self, channel: &str, subscriber: SubscriberId) {
        let change =
            lock(&self.shared.node).presence_change(channel, &self.session, subscriber.get());
        let Some(change) = change else {
            return;
        };
        let removed = self.shared.presence.remove(channel, &change.key);
        let announce = change.announce_on.map(|on| (on, self.member()));
        settle(
            &self.shared,
            removed.map(|r| r.map(|was| was.is_some())),
            announce,
            PresenceKind::Leave,
        );
    }

    /// The `$presence` request: `{"channel": "..."}` → `{"members": [...]}`,
    /// or `$presence_stats` → `{"clients": N, "users": M}`; allowed iff
    /// the principal may subscribe to the channel.
    pub(super) fn presence_query(&mut self, ticket: Ticket, request: &Request) {
        let now = self.now();
        let caller = crate::access::caller(&self.principal);
        let call = lock(&self.shared.node).reserved_call(caller, &request.method, &request.params);
        let (params, stats, access) = match call {
            Some(Ok(ReservedCall::Presence {
                params,
                stats,
                access,
            })) => (params, stats, access),
            other => {
                let error = match other {
                    Some(Err(error)) => error,
                    other => {
                        crate::unhandled::Unhandled::new("reserved call for $presence", &other)
                            .report();
                        ErrorBody::new("internal", "the server cannot answer $presence")
                    }
                };
                let reply = Reply::Error(error);
                self.core.handle_input(now, Input::Reply { ticket, reply });
                return;
            }
        };
        let allowed: Verdict<()> = crate::access::subscribe_by(
            &self.shared,
            &self.principal,
            access,
            params.token.as_deref(),
        )
        .map(drop);
        let store = Arc::clone(&self.shared.presence);
        let control = self.control.clone();
        tokio::spawn(async move {
            let reply = match crate::access::settle(allowed).await {
                Err(denied) => Reply::Error(ErrorBody::new(denied.code(), denied.to_string())),
                Ok(()) => match store.members(&params.channel).await {
                    Ok(members) if stats => result(&PresenceStats::of(&typed(&members))),
                    Ok(members) => result(&PresenceMembers::new(typed(&members))),
                    Err(error) => Reply::Error(presence_error(&error)),
                },
            };
            let _ = control.send(Control::Reply(ticket, reply));
        });
    }
}

/// The store's members as the wire's.
fn typed(members: &[Member]) -> Vec<PresenceMember> {
    members
        .iter()
        .map(|m| {
            let info = m.info.as_ref().and_then(|i| i.to_value().ok());
            PresenceMember::new(m.client.clone(), m.user.clone(), info)
        })
        .collect()
}

fn result<T: serde::Serialize>(value: &T) -> Reply {
    match RawJson::encode(value) {
        Ok(json) => Reply::Result(json),
        Err(e) => Reply::Error(ErrorBody::new("internal", e.to_string())),
    }
}

/// The error a failed presence read answers.
pub(crate) fn presence_error(error: &PresenceError) -> ErrorBody {
    let code = match error {
        PresenceError::NotTracked(_) => "bad_request",
        _ => "unavailable",
    };
    ErrorBody::new(code, error.to_string())
}

impl crate::Server {
    /// The members of `channel` now (for the backend's HTTP API);
    /// [`PresenceError::NotTracked`] when its namespace has no presence,
    /// [`PresenceError::Unavailable`] when the shared store cannot answer.
    pub async fn presence(&self, channel: &str) -> Result<Vec<Member>, PresenceError> {
        if !self.shared.config.namespaces.options_for(channel).presence {
            return Err(PresenceError::NotTracked(channel.to_owned()));
        }
        self.shared.presence.members(channel).await
    }
}

/// Wait for a store operation (at once when it is ready, so the memory
/// store's publications take their offsets in the connection's order), then
/// publish the join or leave if it changed something.
fn settle(
    shared: &Arc<Shared>,
    changed: impl std::future::Future<Output = Result<bool, PresenceError>> + Send + 'static,
    announce: Option<(String, Member)>,
    kind: PresenceKind,
) {
    let mut changed = Box::pin(changed);
    let publish = {
        let shared = Arc::clone(shared);
        move |announce: Option<(String, Member)>| {
            let (channel, member) = announce?;
            let data = RawJson::from_value(&serde_json::json!({ kind.as_str(): member.to_json() }));
            Some(shared.broker.publish(&channel, data))
        }
    };
    if let Some(result) = changed.as_mut().now_or_never() {
        if let (Ok(true), Some(publishing)) = (result, publish(announce)) {
            tokio::spawn(async move {
                let _ = publishing.await;
            });
        }
        return;
    }
    tokio::spawn(async move {
        if let Ok(true) = changed.await {
            if let Some(publishing) = publish(announce) {
                let _ = publishing.await;
            }
        }
    });
}
