//! `$answer`: a host's outcome of a call the relay delivered on
//! `$host-calls:ID` (spec/PROTOCOL.md §10.3).
//!
//! Params `{"call": N, "result": <json>}` or `{"call": N, "error":
//! {"code": ..., "message": ..., "retry_after_ms"?: N}}`; result `{}`.
//! Only a host may answer, and only its own calls: a call id that is not
//! waiting for this host (answered already, given up, another host's) is
//! `not_found`.

use belay_proto::message::{ErrorBody, Payload, Reply};
use belay_proto::server::CallId;

use crate::rpc::CallContext;

/// The reserved method's name.
pub(crate) const METHOD: &str = "$answer";

/// Run `$answer` for the caller in `ctx`.
pub(crate) async fn run(ctx: CallContext, params: Payload) -> Reply {
    let Some(host) = ctx.principal.host.as_deref() else {
        return refused("forbidden", "only a host answers calls".into());
    };
    let (call, reply) = match parse(params) {
        Ok(parsed) => parsed,
        Err(why) => return refused("bad_request", format!("invalid $answer params: {why}")),
    };
    let shared = &ctx.server.shared;
    if shared
        .hosts
        .answer(shared, host, CallId::from_u64(call), reply)
    {
        Reply::Result(serde_json::json!({}).into())
    } else {
        refused(
            "not_found",
            format!("no call {call} waits for an answer from this host"),
        )
    }
}

fn refused(code: &str, message: String) -> Reply {
    Reply::Error(ErrorBody::new(code, message))
}

/// The call id and the host's outcome; a `result` of `null` is a result.
fn parse(params: Payload) -> Result<(u64, Reply), String> {
    let Payload::Object(mut fields) = params else {
        return Err("an object is required".into());
    };
    let call = fields
        .remove("call")
        .and_then(|call| call.as_u64())
        .ok_or("`call` must be a call id")?;
    let reply = match (fields.remove("result"), fields.remove("error")) {
        (Some(result), None) => Reply::Result(result.into()),
        (None, Some(error)) => {
            Reply::Error(serde_json::from_value(error).map_err(|e| format!("`error`: {e}"))?)
        }
        _ => return Err("exactly one of `result` and `error` is required".into()),
    };
    if let Some(field) = fields.keys().next() {
        return Err(format!("unknown field `{field}`"));
    }
    Ok((call, reply))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_null_result_is_a_result_and_an_error_is_the_hosts() {
        let (call, reply) = parse(json!({"call": 3, "result": null})).unwrap();
        assert_eq!(call, 3);
        assert!(matches!(reply, Reply::Result(r) if r.get() == "null"));
        let (_, reply) =
            parse(json!({"call": 4, "error": {"code": "not_found", "message": "no"}})).unwrap();
        assert!(matches!(reply, Reply::Error(e) if e.code == "not_found"));
    }

    #[test]
    fn malformed_answers_are_refused_with_a_reason() {
        for bad in [
            json!(null),
            json!({"result": 1}),
            json!({"call": -1, "result": 1}),
            json!({"call": 1}),
            json!({"call": 1, "result": 1, "error": {"code": "x"}}),
            json!({"call": 1, "error": {"message": "no code"}}),
            json!({"call": 1, "result": 1, "extra": true}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }
}
