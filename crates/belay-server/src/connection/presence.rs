//! Presence on the connection's side: recording a granted subscription as a
//! member, forgetting it when the subscription ends, publishing joins and
//! leaves on `$presence:CHANNEL`, and answering the reserved `$presence`
//! request.
//!
//! Store operations are started on the connection's task in the order the
//! core decided them (so a join is recorded before its leave); the memory
//! store answers at once and its join/leave publication takes its offset
//! right then, so `join` precedes `leave` on `$presence:CHANNEL`.

use std::sync::Arc;

use belay_proto::message::{ErrorBody, RawJson, Reply, Request};
use belay_proto::server::{Input, Ticket};
use futures_util::FutureExt;

use super::Driver;
use crate::auth::Verdict;
use crate::broker::{Member, PresenceError, PresenceStore, SubscriberId};
use crate::mailbox::Control;
use crate::shared::Shared;

/// The reserved method that lists a channel's members.
pub(crate) const PRESENCE_METHOD: &str = "$presence";
/// The reserved method that counts a channel's members: distinct clients
/// and distinct users.
pub(crate) const PRESENCE_STATS_METHOD: &str = "$presence_stats";
/// The prefix of the derived channels that carry joins and leaves.
pub(crate) const PRESENCE_CHANNEL_PREFIX: &str = "$presence:";

/// The channel whose permissions a subscription to `channel` needs:
/// `$presence:X` is authorized as `X`.
pub(crate) fn authorized_as(channel: &str) -> &str {
    channel
        .strip_prefix(PRESENCE_CHANNEL_PREFIX)
        .unwrap_or(channel)
}

impl Driver {
    fn presence_key(&self, subscriber: SubscriberId) -> String {
        format!("{}/{}", self.session, subscriber.get())
    }

    /// A subscription to `channel` was granted.
    pub(super) fn presence_joined(&self, channel: &str, subscriber: SubscriberId) {
        let options = self.shared.config.namespaces.options_for(channel);
        if !options.presence {
            return;
        }
        let member = Member::new(
            self.session.to_string(),
            self.principal.user.clone(),
            self.principal.info.clone(),
        );
        let added =
            self.shared
                .presence
                .add(channel, &self.presence_key(subscriber), member.clone());
        let announce = options.join_leave.then(|| (channel.to_owned(), member));
        settle(
            &self.shared,
            added.map(|r| r.map(|()| true)),
            announce,
            "join",
        );
    }

    /// A subscription to `channel` ended.
    pub(super) fn presence_left(&self, channel: &str, subscriber: SubscriberId) {
        let options = self.shared.config.namespaces.options_for(channel);
        if !options.presence {
            return;
        }
        let member = Member::new(
            self.session.to_string(),
            self.principal.user.clone(),
            self.principal.info.clone(),
        );
        let removed = self
            .shared
            .presence
            .remove(channel, &self.presence_key(subscriber));
        let announce = options.join_leave.then(|| (channel.to_owned(), member));
        settle(
            &self.shared,
            removed.map(|r| r.map(|was| was.is_some())),
            announce,
            "leave",
        );
    }

    /// The `$presence` request: `{"channel": "..."}` → `{"members": [...]}`,
    /// or `$presence_stats` → `{"clients": N, "users": M}`; allowed iff
    /// the principal may subscribe to the channel.
    pub(super) fn presence_query(&mut self, ticket: Ticket, request: &Request) {
        let stats = request.method == PRESENCE_STATS_METHOD;
        let now = self.now();
        let members = match self.presence_members(request) {
            Ok(members) => members,
            Err(error) => {
                self.core.handle_input(
                    now,
                    Input::Reply {
                        ticket,
                        reply: Reply::Error(error),
                    },
                );
                return;
            }
        };
        let control = self.control.clone();
        let PresenceAsk {
            allowed,
            store,
            channel,
        } = members;
        tokio::spawn(async move {
            let reply = match crate::access::settle(allowed).await {
                Err(denied) => Reply::Error(ErrorBody::new(denied.code(), denied.to_string())),
                Ok(()) => match store.members(&channel).await {
                    Ok(members) if stats => Reply::Result(stats_json(&members)),
                    Ok(members) => Reply::Result(members_json(&members)),
                    Err(error) => Reply::Error(presence_error(&error)),
                },
            };
            let _ = control.send(Control::Reply(ticket, reply));
        });
    }

    /// What the query needs, or why it is refused at once.
    fn presence_members(&self, request: &Request) -> Result<PresenceAsk, ErrorBody> {
        let Some(channel) = request.params.get("channel").and_then(|c| c.as_str()) else {
            return Err(ErrorBody::new(
                "bad_request",
                "params must be {\"channel\": \"...\"}",
            ));
        };
        if !self.shared.config.namespaces.options_for(channel).presence {
            let error = PresenceError::NotTracked(channel.to_owned());
            return Err(presence_error(&error));
        }
        // A channel that needs a subscription token: the query carries one.
        let token = request.params.get("token").and_then(|t| t.as_str());
        let allowed = crate::access::subscribe(&self.shared, &self.principal, channel, token);
        Ok(PresenceAsk {
            allowed,
            store: Arc::clone(&self.shared.presence),
            channel: channel.to_owned(),
        })
    }
}

/// A `$presence` query to run: whether the principal may ask (as for a
/// subscribe: the verdict may come later), the store and the channel.
struct PresenceAsk {
    allowed: Verdict<()>,
    store: Arc<dyn PresenceStore>,
    channel: String,
}

/// `{"members": [...]}`.
pub(crate) fn members_json(members: &[Member]) -> RawJson {
    let members: Vec<serde_json::Value> = members.iter().map(Member::to_json).collect();
    RawJson::from_value(&serde_json::json!({ "members": members }))
}

/// `{"clients": N, "users": M}`: distinct session ids and distinct users
/// among the members (a client subscribed once per channel is one member).
pub(crate) fn stats_json(members: &[Member]) -> RawJson {
    let clients: std::collections::HashSet<&str> =
        members.iter().map(|m| m.client.as_str()).collect();
    let users: std::collections::HashSet<&str> = members.iter().map(|m| m.user.as_str()).collect();
    RawJson::from_value(&serde_json::json!({ "clients": clients.len(), "users": users.len() }))
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
    kind: &'static str,
) {
    let mut changed = Box::pin(changed);
    let publish = {
        let shared = Arc::clone(shared);
        move |announce: Option<(String, Member)>| {
            let (channel, member) = announce?;
            let data = RawJson::from_value(&serde_json::json!({ kind: member.to_json() }));
            Some(
                shared
                    .broker
                    .publish(&format!("{PRESENCE_CHANNEL_PREFIX}{channel}"), data),
            )
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
