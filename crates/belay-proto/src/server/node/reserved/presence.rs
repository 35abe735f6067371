//! `$presence` and `$presence_stats`: a channel's members, or their counts
//! (distinct clients and users). Params `{"channel": "...", "token"?:
//! "..."}` (the token for a channel that needs one to subscribe); allowed
//! as a subscribe to the channel; `bad_request` for a channel whose
//! namespace keeps no presence.

use super::{parse, ReservedCall, PRESENCE_METHOD, PRESENCE_STATS_METHOD};
use crate::message::{ErrorBody, Payload, PresenceParams};
use crate::server::node::{Caller, Node};

impl Node {
    pub(super) fn presence_call(
        &self,
        caller: Caller<'_>,
        params: &Payload,
        stats: bool,
    ) -> Result<ReservedCall, ErrorBody> {
        let method = if stats {
            PRESENCE_STATS_METHOD
        } else {
            PRESENCE_METHOD
        };
        let params: PresenceParams = parse(method, params)?;
        if !self.tracks_presence(&params.channel) {
            return Err(ErrorBody::new(
                "bad_request",
                format!("channel {:?} does not track presence", params.channel),
            ));
        }
        let access = self.subscribe_access(caller, &params.channel);
        Ok(ReservedCall::Presence {
            params,
            stats,
            access,
        })
    }
}
