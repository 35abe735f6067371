//! `$answer`: a host's outcome of a call the relay delivered on
//! `$host-calls:ID` (spec/PROTOCOL.md §10.3). Only a host answers
//! (`forbidden` for anyone else, before the params are read); the params
//! are typed ([`AnswerParams`]: exactly one of `result` and `error`, a
//! `null` result is a result). Whether the call waits for this host's
//! answer is [`HostCalls`](crate::server::HostCalls)' to say
//! (`not_found` when it does not).

use super::{parse, ReservedCall, ANSWER_METHOD};
use crate::message::{AnswerParams, ErrorBody, Payload};
use crate::server::node::{Caller, Node};

impl Node {
    pub(super) fn answer_call(
        &self,
        caller: Caller<'_>,
        params: &Payload,
    ) -> Result<ReservedCall, ErrorBody> {
        if caller.host.is_none() {
            return Err(ErrorBody::new("forbidden", "only a host answers calls"));
        }
        let params: AnswerParams = parse(ANSWER_METHOD, params)?;
        Ok(ReservedCall::Answer { params })
    }
}
