//! A request's body read whole under the server's bounds: at most a
//! number of bytes of UTF-8, in full within the body timeout, the rest of
//! a body over the limit read and dropped within bounds of its own. The
//! SSE fallback's routes and the admin routes read their bodies so, and
//! routes an extension merges into the server's router can too
//! ([`read_body`] with [`Server::body_timeout`](crate::Server::body_timeout)).

use std::time::Duration;

use axum::body::Body;
use belay_proto::server::BadBody;
use bytes::Bytes;

/// The whole body, at most `limit` bytes of UTF-8, in full within
/// `timeout`. A body that fails to arrive counts as too large (its sender
/// is gone or sent more). Past the limit, the rest is read and dropped
/// (at most 8 MiB within 2 s) before the answer, so that a client that
/// writes its whole body before it reads gets the refusal, not a reset.
pub async fn read_body(body: Body, limit: usize, timeout: Duration) -> Result<Bytes, BadBody> {
    let bytes = match tokio::time::timeout(timeout, collect(body, limit)).await {
        Err(_) => return Err(BadBody::TimedOut),
        Ok(Collected::Whole(bytes)) => bytes,
        Ok(Collected::Broken) => return Err(BadBody::TooLarge),
        Ok(Collected::Over(rest)) => {
            drain(rest).await;
            return Err(BadBody::TooLarge);
        }
    };
    std::str::from_utf8(&bytes).map_err(|_| BadBody::NotUtf8)?;
    Ok(bytes)
}

/// How long the rest of a refused body may take to be read and dropped.
const DRAIN_LINGER: Duration = Duration::from_secs(2);

/// How reading a body ended.
enum Collected {
    /// All of it, within the limit.
    Whole(Bytes),
    /// It broke off (its sender is gone).
    Broken,
    /// Past the limit: the rest, still to be drained.
    Over(Body),
}

/// Read `body` while it stays within `limit` bytes.
async fn collect(mut body: Body, limit: usize) -> Collected {
    use http_body_util::BodyExt;
    let mut collected = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Collected::Broken;
        };
        let Ok(data) = frame.into_data() else {
            // Trailers: nothing to keep.
            continue;
        };
        if collected.len().saturating_add(data.len()) > limit {
            return Collected::Over(body);
        }
        collected.extend_from_slice(&data);
    }
    Collected::Whole(collected.freeze())
}

/// Read and drop the rest of a refused body, at most
/// [`ws::LINGER_BYTES`](crate::ws::LINGER_BYTES) within [`DRAIN_LINGER`]
/// (the WebSocket's lingering close, for a POST): a client that writes its
/// whole body before it reads would otherwise have the unread bytes turn
/// the connection's end into a reset, failing its write before it reads
/// the 413. Past either bound, the connection ends as hyper ends it.
async fn drain(mut body: Body) {
    use http_body_util::BodyExt;
    let mut read = 0usize;
    let _ = tokio::time::timeout(DRAIN_LINGER, async {
        while read < crate::ws::LINGER_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    read = read.saturating_add(frame.data_ref().map_or(0, Bytes::len));
                }
                _ => return,
            }
        }
    })
    .await;
}
