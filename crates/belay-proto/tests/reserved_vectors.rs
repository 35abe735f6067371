//! Runs `spec/vectors/reserved.json`, the reserved methods' params and
//! results as the typed structs of `belay_proto::message` read and write
//! them; the TypeScript client runs it too
//! (`clients/js/test/reserved_vectors.test.ts`). The format is described
//! in `spec/vectors/README.md`, section `reserved.json`.
//!
//! One test per section. Each vector's JSON text is decoded into its
//! typed struct, whose fields (read one by one here, not through serde)
//! must be the vector's `fields` and whose encoding must be its `encoded`
//! value (its own JSON when it has none). Params also go through
//! [`Node::reserved_call`]: valid ones come back as the same typed params,
//! invalid ones as the stated error code. Every vector runs even if an
//! earlier one fails, and a failure names the section and the vector.

use belay_proto::message::{
    AnswerOutcome, AnswerParams, AnswerResult, CallParams, ErrorBody, HostCallDelivery,
    PresenceMember, PresenceMembers, PresenceParams, PresenceStats, PublishParams, PublishResult,
};
use belay_proto::server::{Caller, ChannelOptions, Namespaces, Node, NodeConfig, ReservedCall};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

mod vector_file;

use vector_file::Check;

/// Run `check` on every vector of `section` of reserved.json.
fn run(section: &str, check: impl Fn(&Value) -> Check) {
    vector_file::run("reserved.json", section, check);
}

fn text(case: &Value, key: &str) -> Result<String, String> {
    case[key]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no string {key:?}"))
}

/// The node the params vectors run against: `room:*` keeps presence.
fn node() -> Node {
    let mut config = NodeConfig::default();
    config.set_namespaces(
        Namespaces::new().with("room:*", ChannelOptions::default().with_presence(true)),
    );
    Node::new(config, belay_proto::Instant::ZERO)
}

fn caller(case: &Value) -> Caller<'_> {
    match case["caller_host"].as_str() {
        Some(host) => Caller::host(host),
        None => Caller::client(),
    }
}

/// Decode `json` as `T`; check its fields (as `fields_of` reads them) and
/// its encoding against the vector. Returns the typed value.
fn typed<T: DeserializeOwned + Serialize>(
    case: &Value,
    fields_of: impl Fn(&T) -> Value,
) -> Result<T, String> {
    let json = text(case, "json")?;
    let value: T = serde_json::from_str(&json).map_err(|e| format!("does not decode: {e}"))?;
    let fields = fields_of(&value);
    if fields != case["fields"] {
        return Err(format!("fields {fields}, expected {}", case["fields"]));
    }
    let encoded = serde_json::to_value(&value).map_err(|e| format!("does not encode: {e}"))?;
    let expected = match case.get("encoded") {
        Some(encoded) => encoded.clone(),
        None => serde_json::from_str(&json).map_err(|e| e.to_string())?,
    };
    if encoded != expected {
        return Err(format!("encodes as {encoded}, expected {expected}"));
    }
    Ok(value)
}

fn error_fields(error: &ErrorBody) -> Value {
    json!({"code": error.code, "message": error.message, "retry_after_ms": error.retry_after_ms})
}

fn presence_fields(p: &PresenceParams) -> Value {
    json!({"channel": p.channel, "token": p.token})
}

fn member_fields(m: &PresenceMember) -> Value {
    json!({"client": m.client, "user": m.user, "info": m.info})
}

/// The typed params of `case` and the node's verdict on its JSON, which
/// must hold the same params.
fn params_case(case: &Value) -> Check {
    let method = text(case, "method")?;
    let json: Value = serde_json::from_str(&text(case, "json")?).map_err(|e| e.to_string())?;
    let call = node()
        .reserved_call(caller(case), &method, &json)
        .ok_or("the node does not know the method")?
        .map_err(|e| format!("the node refused it: {e:?}"))?;
    let same = match (method.as_str(), call) {
        ("$publish", ReservedCall::Publish { params, .. }) => {
            params
                == typed(
                    case,
                    |p: &PublishParams| json!({"channel": p.channel, "data": p.data}),
                )?
        }
        ("$presence" | "$presence_stats", ReservedCall::Presence { params, stats, .. }) => {
            stats == (method == "$presence_stats") && params == typed(case, presence_fields)?
        }
        ("$call", ReservedCall::Call { params, .. }) => {
            params
                == typed(
                    case,
                    |p: &CallParams| json!({"host": p.host, "method": p.method, "params": p.params}),
                )?
        }
        ("$answer", ReservedCall::Answer { params }) => {
            params
                == typed(case, |p: &AnswerParams| match &p.outcome {
                    AnswerOutcome::Result(result) => json!({"call": p.call, "result": result}),
                    AnswerOutcome::Error(error) => {
                        json!({"call": p.call, "error": error_fields(error)})
                    }
                    other => json!({"call": p.call, "unknown": format!("{other:?}")}),
                })?
        }
        (_, call) => return Err(format!("the node answered {call:?}")),
    };
    if same {
        Ok(())
    } else {
        Err("the node's params differ from the decoded ones".into())
    }
}

#[test]
fn params() {
    run("params", params_case);
}

#[test]
fn invalid_params() {
    run("invalid_params", |case| {
        let method = text(case, "method")?;
        let json: Value = serde_json::from_str(&text(case, "json")?).map_err(|e| e.to_string())?;
        let expected = text(case, "error")?;
        match node().reserved_call(caller(case), &method, &json) {
            Some(Err(error)) if error.code == expected => Ok(()),
            other => Err(format!("expected {expected}, got {other:?}")),
        }
    });
}

#[test]
fn results() {
    run("results", |case| {
        match text(case, "method")?.as_str() {
            "$publish" => drop(typed(
                case,
                |r: &PublishResult| json!({"offset": r.offset, "epoch": r.epoch}),
            )?),
            "$presence" => drop(typed(
                case,
                |r: &PresenceMembers| json!({"members": r.members.iter().map(member_fields).collect::<Vec<_>>()}),
            )?),
            "$presence_stats" => drop(typed(
                case,
                |r: &PresenceStats| json!({"clients": r.clients, "users": r.users}),
            )?),
            "$answer" => drop(typed(case, |_: &AnswerResult| json!({}))?),
            other => return Err(format!("no result type for {other}")),
        }
        Ok(())
    });
}

#[test]
fn deliveries() {
    run("deliveries", |case| {
        typed(
            case,
            |d: &HostCallDelivery| json!({"call": d.call, "method": d.method, "params": d.params}),
        )
        .map(drop)
    });
}
