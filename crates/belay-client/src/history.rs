//! [`Client::history`]: the `$history` request (spec/PROTOCOL.md §4.8),
//! with its answer typed.

use belay_proto::message::{RawJson, StreamPosition};
use serde_json::{json, Map, Value};

use crate::{Client, RequestError, RequestOptions};

/// What to read of a channel's history: by default everything the server
/// holds for it (up to the channel's history size), oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoryOptions {
    /// Read after this position (or, [`reverse`](Self::reverse), before it).
    pub since: Option<StreamPosition>,
    /// Publications at most (the server caps it at the channel's history size).
    pub limit: Option<u64>,
    /// Newest first.
    pub reverse: bool,
    /// The channel's subscription token, for a channel whose server asks
    /// for one (spec/PROTOCOL.md §4.6).
    pub token: Option<String>,
    /// The request's own options (deadline, waiting for readiness).
    pub request: RequestOptions,
}

impl HistoryOptions {
    /// Read after `since` (or before it, reversed).
    pub fn since(mut self, since: StreamPosition) -> Self {
        self.since = Some(since);
        self
    }

    /// At most `limit` publications.
    pub fn limit(mut self, limit: u64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Newest first.
    pub fn reverse(mut self, reverse: bool) -> Self {
        self.reverse = reverse;
        self
    }

    /// Send the channel's subscription token.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The request's options.
    pub fn request(mut self, request: RequestOptions) -> Self {
        self.request = request;
        self
    }

    fn params(&self, channel: &str) -> Value {
        let mut params = Map::new();
        params.insert("channel".into(), json!(channel));
        if let Some(since) = &self.since {
            params.insert(
                "since".into(),
                json!({ "epoch": since.epoch, "offset": since.offset }),
            );
        }
        if let Some(limit) = self.limit {
            params.insert("limit".into(), json!(limit));
        }
        if self.reverse {
            params.insert("reverse".into(), json!(true));
        }
        if let Some(token) = &self.token {
            params.insert("token".into(), json!(token));
        }
        Value::Object(params)
    }
}

/// One publication read from the history.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HistoryPublication {
    /// Its offset in [`History::position`]'s epoch.
    pub offset: u64,
    /// Its data.
    pub data: RawJson,
}

/// A read of a channel's history.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct History {
    /// The publications, in the order asked.
    pub publications: Vec<HistoryPublication>,
    /// The channel's position at the read (its epoch and top offset):
    /// subscribe from here to miss nothing published after it.
    pub position: StreamPosition,
    /// The server's byte bound ended the answer: read again after the last
    /// offset given.
    pub truncated: bool,
}

/// Why [`Client::history`] has nothing to give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The request failed: `bad_request`, `forbidden`, `unauthorized` (as a
    /// subscribe would be refused), `not_found` (`since` is no position of
    /// the channel now: read again without it), `unavailable`, or the
    /// connection's own failures.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The server's answer was not a history page.
    #[error("malformed history answer: {0}")]
    Malformed(String),
}

impl Client {
    /// Read `channel`'s retained history, authorized as a subscribe to it.
    ///
    /// ```no_run
    /// use belay_client::{Client, HistoryOptions};
    ///
    /// # async fn run(client: Client) -> Result<(), Box<dyn std::error::Error>> {
    /// // The last 20 messages, newest first, then follow from the top.
    /// let history = client
    ///     .history("chat:lobby", HistoryOptions::default().limit(20).reverse(true))
    ///     .await?;
    /// for p in &history.publications {
    ///     println!("#{}: {}", p.offset, p.data.get());
    /// }
    /// let _live = client.subscribe("chat:lobby").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn history(
        &self,
        channel: &str,
        options: HistoryOptions,
    ) -> Result<History, HistoryError> {
        let params = options.params(channel);
        let answer = self
            .request_with("$history", params, options.request)
            .await?;
        parse(answer.get())
    }
}

fn parse(text: &str) -> Result<History, HistoryError> {
    let malformed = |what: &str| HistoryError::Malformed(what.to_owned());
    let value: Value = serde_json::from_str(text).map_err(|e| malformed(&e.to_string()))?;
    let epoch = value
        .get("epoch")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("no epoch"))?;
    let offset = value
        .get("offset")
        .and_then(Value::as_u64)
        .ok_or_else(|| malformed("no offset"))?;
    let publications = value
        .get("publications")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no publications array"))?
        .iter()
        .map(|p| {
            Ok(HistoryPublication {
                offset: p
                    .get("offset")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| malformed("a publication without offset"))?,
                data: RawJson::from_value(p.get("data").unwrap_or(&Value::Null)),
            })
        })
        .collect::<Result<_, HistoryError>>()?;
    Ok(History {
        publications,
        position: StreamPosition {
            epoch: epoch.to_owned(),
            offset,
        },
        truncated: value.get("truncated").and_then(Value::as_bool) == Some(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_params_carry_only_what_was_set() {
        assert_eq!(
            HistoryOptions::default().params("c"),
            json!({ "channel": "c" })
        );
        let options = HistoryOptions::default()
            .since(StreamPosition {
                epoch: "e".into(),
                offset: 4,
            })
            .limit(2)
            .reverse(true)
            .token("t");
        assert_eq!(
            options.params("c"),
            json!({ "channel": "c", "since": { "epoch": "e", "offset": 4 }, "limit": 2, "reverse": true, "token": "t" })
        );
    }

    #[test]
    fn an_answer_is_typed_and_a_malformed_one_refused() {
        let page = parse(r#"{"publications":[{"offset":4,"data":{"a":1}}],"epoch":"e","offset":5,"truncated":false}"#)
            .expect("a page");
        assert_eq!(page.position.offset, 5);
        assert_eq!(page.publications[0].offset, 4);
        assert_eq!(page.publications[0].data.get(), r#"{"a":1}"#);
        assert!(!page.truncated);
        assert!(matches!(
            parse(r#"{"publications":[],"offset":5}"#),
            Err(HistoryError::Malformed(_))
        ));
        assert!(matches!(
            parse(r#"{"publications":[{"data":1}],"epoch":"e","offset":5}"#),
            Err(HistoryError::Malformed(_))
        ));
    }
}
