//! The reserved methods the node decides, one file each (as mini-redis
//! keeps one file per command): their params parsed into the typed
//! [`message`](crate::message) structs, the refusals the rules make before
//! anyone is asked, and who decides the rest ([`AccessRoute`]).
//! `$history` has its own machine, and what follows a `$call` or an
//! `$answer` (wake, delivery, deadlines, matching the answer) is
//! [`HostCalls`](crate::server::HostCalls)'.

mod answer;
mod call;
mod presence;
mod publish;

use serde::de::DeserializeOwned;

use super::{AccessRoute, Caller, Node};
use crate::message::{AnswerParams, CallParams, ErrorBody, Payload, PresenceParams, PublishParams};

/// A client publishes with a request (spec/PROTOCOL.md §4.6).
pub const PUBLISH_METHOD: &str = "$publish";
/// The members of a channel's presence (spec/PROTOCOL.md §4.7).
pub const PRESENCE_METHOD: &str = "$presence";
/// The counts of a channel's presence: distinct clients and users.
pub const PRESENCE_STATS_METHOD: &str = "$presence_stats";
/// A client calls a resident host's method through the relay
/// (spec/PROTOCOL.md §10.3).
pub const CALL_METHOD: &str = "$call";
/// A host answers a call the relay delivered (spec/PROTOCOL.md §10.3).
pub const ANSWER_METHOD: &str = "$answer";

/// A reserved request the rules let through, and who decides it now.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ReservedCall {
    /// `$publish`: if `access` allows, check the publication
    /// ([`Node::check_publication`]) and publish it.
    Publish {
        /// The typed params.
        params: PublishParams,
        /// Who decides whether the caller may publish there.
        access: AccessRoute,
    },
    /// `$presence` (or `$presence_stats` when `stats`): if `access`
    /// allows, read the channel's members.
    Presence {
        /// The typed params.
        params: PresenceParams,
        /// Counts instead of members.
        stats: bool,
        /// Who decides whether the caller may read them (as a subscribe).
        access: AccessRoute,
    },
    /// `$call`: if `access` allows, start the call
    /// ([`HostCalls::handle_call`](crate::server::HostCalls::handle_call)).
    Call {
        /// The typed params (host id and method already checked).
        params: CallParams,
        /// Who decides whether the caller may call the host (as a
        /// subscribe to `$host:ID`).
        access: AccessRoute,
    },
    /// `$answer` from a host: hand the outcome to
    /// [`HostCalls::handle_answer`](crate::server::HostCalls::handle_answer),
    /// which knows whether the call waits for it.
    Answer {
        /// The typed params.
        params: AnswerParams,
    },
}

impl Node {
    /// `method` with `params` from `caller`, if it is one of the reserved
    /// methods the node decides: the call to carry out, or the error to
    /// answer at once (`bad_request`, `forbidden`). `None` for any other
    /// method.
    pub fn reserved_call(
        &self,
        caller: Caller<'_>,
        method: &str,
        params: &Payload,
    ) -> Option<Result<ReservedCall, ErrorBody>> {
        Some(match method {
            PUBLISH_METHOD => self.publish_call(caller, params),
            PRESENCE_METHOD => self.presence_call(caller, params, false),
            PRESENCE_STATS_METHOD => self.presence_call(caller, params, true),
            CALL_METHOD => self.call_call(caller, params),
            ANSWER_METHOD => self.answer_call(caller, params),
            _ => return None,
        })
    }
}

/// `params` as `T`, or `bad_request` naming `method`.
fn parse<T: DeserializeOwned>(method: &str, params: &Payload) -> Result<T, ErrorBody> {
    T::deserialize(params)
        .map_err(|e| ErrorBody::new("bad_request", format!("invalid {method} params: {e}")))
}
