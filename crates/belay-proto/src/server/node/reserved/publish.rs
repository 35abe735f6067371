//! `$publish`: a client publishes to a channel with a request, so it gets
//! exactly one answer and its idempotency key is honoured like any
//! method's. Params `{"channel": "...", "data": <json>}`; result
//! `{"offset": N, "epoch": "..."}`. Joins and leaves are the server's to
//! publish; everything else is decided by [`Node::publish_access`].

use super::super::presence::PRESENCE_CHANNEL_PREFIX;
use super::{parse, ReservedCall, PUBLISH_METHOD};
use crate::message::{ErrorBody, Payload, PublishParams};
use crate::server::node::{Caller, Node};

impl Node {
    pub(super) fn publish_call(
        &self,
        caller: Caller<'_>,
        params: &Payload,
    ) -> Result<ReservedCall, ErrorBody> {
        let params: PublishParams = parse(PUBLISH_METHOD, params)?;
        if params.channel.starts_with(PRESENCE_CHANNEL_PREFIX) {
            return Err(ErrorBody::new(
                "forbidden",
                "$presence: channels are the server's",
            ));
        }
        let access = self.publish_access(caller, &params.channel);
        Ok(ReservedCall::Publish { params, access })
    }
}
