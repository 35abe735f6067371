//! One send of the fallback (`POST /sse/send`, spec/PROTOCOL.md §1.7):
//! its attempts, as [`SendRetry`] (belay-proto) decides. A retry repeats
//! the body with the same `Belay-Seq`, so the server reads it at most once.

use std::sync::Arc;

use belay_proto::{Failure, Instant, SendOutcome, SendRetry, SendRetryPolicy, SendStep};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use super::Http;
use crate::transport::Target;

/// A send's answer body is short (none for a `204`); more is not read.
const ANSWER_LIMIT: usize = 16 * 1024;

/// Send `request` on `http` if it is still open (else on a new
/// connection), retrying as [`SendRetry`] says. Gives the connection back
/// for the next send once the server has the body.
pub(crate) async fn send(
    target: Arc<Target>,
    mut http: Option<Http>,
    request: http::Request<Full<Bytes>>,
) -> (Option<Http>, Result<(), Failure>) {
    let origin = tokio::time::Instant::now();
    let now = || Instant::from_elapsed(origin.elapsed());
    let wall = |at: Instant| origin + at.elapsed_since_origin();
    let mut retry = SendRetry::new(SendRetryPolicy::default(), Instant::ZERO);
    let deadline = wall(retry.deadline());
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    loop {
        let copy = http::Request::from_parts(parts.clone(), Full::new(body.clone()));
        let outcome = tokio::time::timeout_at(deadline, attempt(&target, &mut http, copy))
            .await
            .unwrap_or(SendOutcome::TimedOut);
        match retry.handle_outcome(now(), outcome) {
            SendStep::Sent => return (http, Ok(())),
            SendStep::RetryAt(at) => tokio::time::sleep_until(wall(at)).await,
            SendStep::GiveUp(failure) => return (None, Err(failure)),
            _ => return (None, Err(Failure::network("a send failed"))),
        }
    }
}

/// One attempt. A connection that failed is dropped (the next attempt
/// opens a new one); one that answered is kept.
async fn attempt(
    target: &Target,
    http: &mut Option<Http>,
    request: http::Request<Full<Bytes>>,
) -> SendOutcome {
    let mut conn = match http.take() {
        Some(conn) => conn,
        None => match Http::open(target).await {
            Ok(conn) => conn,
            Err(_) => return SendOutcome::NoAnswer,
        },
    };
    let Ok(response) = conn.call(request).await else {
        return SendOutcome::NoAnswer;
    };
    let status = response.status().as_u16();
    let retry_after_ms = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|secs| secs.saturating_mul(1000));
    // Read the (short) answer, polling the connection meanwhile, so the
    // connection is free for the next send.
    let answer = http_body_util::Limited::new(response.into_body(), ANSWER_LIMIT).collect();
    let read = tokio::select! {
        biased;
        body = answer => body.is_ok(),
        _ = conn.conn.as_mut() => false,
    };
    if read {
        *http = Some(conn);
    }
    SendOutcome::Answered {
        status,
        retry_after_ms,
    }
}
