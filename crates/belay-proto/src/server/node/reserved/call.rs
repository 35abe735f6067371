//! `$call`: a client calls a method of a resident host through the relay
//! (spec/PROTOCOL.md §10.3). Params `{"host": ID, "method": NAME,
//! "params"?: <json>}`; refused at once for a host id that is none
//! ([`valid_host_id`]) or a method outside 1 to 128 bytes; allowed as a
//! subscribe to `$host:ID`. What follows (wake, delivery, answer,
//! deadlines) is [`HostCalls`](crate::server::HostCalls)'.

use super::{parse, ReservedCall, CALL_METHOD};
use crate::host::{valid_host_id, HOST_CHANNEL_PREFIX};
use crate::message::{CallParams, ErrorBody, Payload};
use crate::server::node::{Caller, Node};

/// The longest method name a call may carry, in bytes.
const MAX_METHOD_LEN: usize = 128;

impl Node {
    pub(super) fn call_call(
        &self,
        caller: Caller<'_>,
        params: &Payload,
    ) -> Result<ReservedCall, ErrorBody> {
        let params: CallParams = parse(CALL_METHOD, params)?;
        if !valid_host_id(&params.host) {
            return Err(ErrorBody::new("bad_request", "`host` is not a host id"));
        }
        if params.method.is_empty() || params.method.len() > MAX_METHOD_LEN {
            return Err(ErrorBody::new(
                "bad_request",
                "`method` must be 1 to 128 bytes",
            ));
        }
        let access =
            self.subscribe_access(caller, &format!("{HOST_CHANNEL_PREFIX}{}", params.host));
        Ok(ReservedCall::Call { params, access })
    }
}
