//! One control-plane heartbeat: `POST /hosts/heartbeat` with the host's
//! token, on a connection of its own that is dropped after the answer (a
//! kept-alive connection would be exactly what a sleeping host must not
//! hold).

use std::time::Duration;

use belay_proto::host::Beat;
use bytes::Bytes;

use crate::sse::{post, Http};
use crate::transport::Target;

/// What a heartbeat learnt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) beat: Beat,
    /// The relay's interval, if it said.
    pub(crate) interval: Option<Duration>,
    /// The host's id as the relay knows it, if it said.
    pub(crate) host: Option<String>,
}

/// The longest heartbeat answer read.
const MAX_ANSWER: usize = 16 * 1024;

/// Call the heartbeat endpoint; any failure (no connection, a status
/// other than 200, a body that is not the answer) is [`Beat::Failed`].
pub(crate) async fn heartbeat(target: &Target, token: &str, timeout: Duration) -> Answer {
    match tokio::time::timeout(timeout, call(target, token)).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(why)) => {
            tracing::debug!(%why, "host heartbeat failed");
            failed()
        }
        Err(_) => failed(),
    }
}

fn failed() -> Answer {
    Answer {
        beat: Beat::Failed,
        interval: None,
        host: None,
    }
}

async fn call(target: &Target, token: &str) -> Result<Answer, String> {
    let mut http = Http::open(target).await.map_err(|f| format!("{f:?}"))?;
    let bearer = format!("Bearer {token}");
    let request = post(
        target,
        &target.heartbeat_path(),
        &[("authorization", &bearer)],
        Bytes::new(),
    );
    let (status, body) = http
        .fetch(request, MAX_ANSWER)
        .await
        .map_err(|f| format!("{f:?}"))?;
    if status != http::StatusCode::OK {
        return Err(format!("status {status}"));
    }
    // Dropping `http` closes the connection: a sleeping host holds none.
    parse(&body)
}

/// The answer's fields: `needed` is tri-state (absent from an older
/// relay), `interval_ms` and `host` optional.
pub(crate) fn parse(body: &[u8]) -> Result<Answer, String> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let object = value.as_object().ok_or("not an object")?;
    let needed = match object.get("needed") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Bool(needed)) => Some(*needed),
        Some(_) => return Err("`needed` is not a boolean".into()),
    };
    Ok(Answer {
        beat: Beat::Answered { needed },
        interval: object
            .get("interval_ms")
            .and_then(serde_json::Value::as_u64)
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis),
        host: object
            .get("host")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_without_the_field_is_unknown_not_false() {
        let answer = parse(br#"{"ok":true}"#).unwrap();
        assert_eq!(answer.beat, Beat::Answered { needed: None });
        assert!(answer.beat.wants_session());
    }

    #[test]
    fn the_relay_fields_are_read() {
        let answer = parse(br#"{"host":"pc-1","needed":false,"interval_ms":2000}"#).unwrap();
        assert_eq!(
            answer.beat,
            Beat::Answered {
                needed: Some(false)
            }
        );
        assert_eq!(answer.interval, Some(Duration::from_secs(2)));
        assert_eq!(answer.host.as_deref(), Some("pc-1"));
    }

    #[test]
    fn a_body_that_is_not_the_answer_is_an_error() {
        assert!(parse(b"<html>").is_err());
        assert!(parse(br#"{"needed":"yes"}"#).is_err());
    }
}
