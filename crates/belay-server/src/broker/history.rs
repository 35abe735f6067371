//! Reading a channel's retained history from outside a subscription (the
//! HTTP API's `/api/history`): [`HistoryQuery`] in, [`HistoryPage`] out.
//!
//! ```text
//!  held      3 4 5 6 7 8 9            top = 9
//!  forward   since 5, limit 2  ──▶ 6 7         (offsets after since, oldest first)
//!  reverse   since 5, limit 2  ──▶ 4 3         (offsets before since, newest first)
//!  forward   no since          ──▶ 3 4 5 …     (from the oldest held)
//!  reverse   no since          ──▶ 9 8 7 …     (from the top)
//! ```
//!
//! A `since` in another epoch, or beyond the top, is refused with the
//! current position ([`HistoryError::EpochChanged`],
//! [`HistoryError::BeyondTop`]): offsets are never compared across
//! epochs (spec/PROTOCOL.md §5.1), so nothing read would continue it.

use std::future::Future;
use std::pin::Pin;

use belay_proto::message::{Publication, RawJson, StreamPosition};

/// What to read of a channel's history.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoryQuery {
    /// Read after this position (forward) or before it (reverse); `None`:
    /// from the oldest held (forward) or from the top (reverse).
    pub since: Option<StreamPosition>,
    /// Publications at most (0: the position only).
    pub limit: usize,
    /// Newest first, from `since` (exclusive) or the top down.
    pub reverse: bool,
    /// Bytes of data at most over the page's publications; the first one
    /// is always given (a publication is bounded by the server's
    /// `max_publication_len`), so a caller can always move on.
    pub max_bytes: usize,
}

impl HistoryQuery {
    /// Up to `limit` publications, oldest first from the oldest held, with
    /// no byte bound.
    pub fn new(limit: usize) -> Self {
        HistoryQuery {
            since: None,
            limit,
            reverse: false,
            max_bytes: usize::MAX,
        }
    }

    /// Read after (or, reversed, before) `since`.
    pub fn since(mut self, since: StreamPosition) -> Self {
        self.since = Some(since);
        self
    }

    /// Newest first.
    pub fn reverse(mut self, reverse: bool) -> Self {
        self.reverse = reverse;
        self
    }

    /// At most `max_bytes` of data in one page (the first publication
    /// always fits).
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Refuse a `since` that is no position of `current` (another epoch,
    /// or beyond its top).
    pub fn check(&self, current: &StreamPosition) -> Result<(), HistoryError> {
        match &self.since {
            Some(since) if since.epoch != current.epoch => Err(HistoryError::EpochChanged {
                current: current.clone(),
            }),
            Some(since) if since.offset > current.offset => Err(HistoryError::BeyondTop {
                current: current.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// The page of `channel` at `current` from its `held` publications
    /// (`(offset, data)`, oldest first, consecutive): [`check`](Self::check)
    /// first, then the query's choice, in its order.
    pub fn select<'a>(
        &self,
        channel: &str,
        current: StreamPosition,
        held: impl DoubleEndedIterator<Item = (u64, &'a RawJson)>,
    ) -> Result<HistoryPage, HistoryError> {
        self.check(&current)?;
        let since = self.since.as_ref().map(|s| s.offset);
        let chosen: Box<dyn Iterator<Item = (u64, &RawJson)>> = if self.reverse {
            Box::new(
                held.rev()
                    .filter(move |(offset, _)| since.map_or(true, |s| *offset < s)),
            )
        } else {
            Box::new(held.filter(move |(offset, _)| since.map_or(true, |s| *offset > s)))
        };
        let mut page = HistoryPage::empty(current);
        for (offset, data) in chosen {
            if !page.fits(self, data.get().len()) {
                break;
            }
            page.publications.push(Publication {
                channel: channel.to_owned(),
                epoch: page.position.epoch.clone(),
                offset,
                data: data.clone(),
            });
        }
        Ok(page)
    }
}

/// One read of a channel's history.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HistoryPage {
    /// The publications read, in the query's order.
    pub publications: Vec<Publication>,
    /// The channel's position now: its epoch and top offset (0: nothing
    /// published in this epoch).
    pub position: StreamPosition,
    /// The byte bound ended the page before `limit` (more follow: read
    /// again from the last publication's offset).
    pub truncated: bool,
    /// Bytes of data in `publications`.
    bytes: usize,
}

/// One publication of an answer: the data is the publisher's JSON text,
/// sent unparsed.
#[derive(serde::Serialize)]
struct HeldOut<'a> {
    offset: u64,
    data: &'a belay_proto::message::RawJson,
}

/// The answer's shape, for `$history` and `POST /api/history`:
/// `{"publications": [{offset, data}], "epoch", "offset", "truncated"}`.
impl serde::Serialize for HistoryPage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let publications: Vec<HeldOut<'_>> = self
            .publications
            .iter()
            .map(|p| HeldOut {
                offset: p.offset,
                data: &p.data,
            })
            .collect();
        let mut page = serializer.serialize_struct("HistoryPage", 4)?;
        page.serialize_field("publications", &publications)?;
        page.serialize_field("epoch", &self.position.epoch)?;
        page.serialize_field("offset", &self.position.offset)?;
        page.serialize_field("truncated", &self.truncated)?;
        page.end()
    }
}

impl HistoryPage {
    /// No publication, at `position`.
    pub fn empty(position: StreamPosition) -> Self {
        HistoryPage {
            publications: Vec::new(),
            position,
            truncated: false,
            bytes: 0,
        }
    }

    /// Whether one more publication of `len` bytes of data goes in under
    /// `query`'s bounds (counting it when it does); a publication left
    /// out for bytes marks the page truncated.
    pub fn fits(&mut self, query: &HistoryQuery, len: usize) -> bool {
        if self.publications.len() >= query.limit {
            return false;
        }
        let bytes = self.bytes.saturating_add(len);
        if !self.publications.is_empty() && bytes > query.max_bytes {
            self.truncated = true;
            return false;
        }
        self.bytes = bytes;
        true
    }
}

/// Why a history read gave no page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// This broker cannot read history outside a subscription.
    #[error("this broker does not read history")]
    Unsupported,
    /// `since` names another epoch: the history it belonged to is gone.
    #[error("the channel's epoch changed: it is now {} (top offset {})", current.epoch, current.offset)]
    EpochChanged {
        /// The channel's position now.
        current: StreamPosition,
    },
    /// `since` is beyond the channel's top offset in its epoch.
    #[error("offset beyond the top {} of epoch {}", current.offset, current.epoch)]
    BeyondTop {
        /// The channel's position now.
        current: StreamPosition,
    },
    /// The broker cannot answer now (its store is unreachable); retry.
    #[error("broker unavailable: {0}")]
    Unavailable(String),
}

/// A history read on its way: resolves to the page or why not.
pub type HistoryFuture = Pin<Box<dyn Future<Output = Result<HistoryPage, HistoryError>> + Send>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn at(epoch: &str, offset: u64) -> StreamPosition {
        StreamPosition {
            epoch: epoch.into(),
            offset,
        }
    }

    /// Offsets 3..=9 held, each datum `"n"` (3 bytes).
    fn held() -> Vec<(u64, RawJson)> {
        (3..=9)
            .map(|n| (n, RawJson::from_value(&serde_json::json!(n.to_string()))))
            .collect()
    }

    fn offsets(query: &HistoryQuery) -> Result<(Vec<u64>, bool), HistoryError> {
        let held = held();
        let page = query.select("c", at("e", 9), held.iter().map(|(o, d)| (*o, d)))?;
        Ok((
            page.publications.iter().map(|p| p.offset).collect(),
            page.truncated,
        ))
    }

    #[test]
    fn forward_reads_after_since_and_reverse_before_it() {
        assert_eq!(
            offsets(&HistoryQuery::new(2).since(at("e", 5))),
            Ok((vec![6, 7], false))
        );
        assert_eq!(
            offsets(&HistoryQuery::new(2).since(at("e", 5)).reverse(true)),
            Ok((vec![4, 3], false))
        );
        assert_eq!(offsets(&HistoryQuery::new(3)), Ok((vec![3, 4, 5], false)));
        assert_eq!(
            offsets(&HistoryQuery::new(3).reverse(true)),
            Ok((vec![9, 8, 7], false))
        );
        assert_eq!(
            offsets(&HistoryQuery::new(10).since(at("e", 9))),
            Ok((vec![], false))
        );
        assert_eq!(offsets(&HistoryQuery::new(0)), Ok((vec![], false)));
    }

    #[test]
    fn the_byte_bound_ends_a_page_but_the_first_publication_always_fits() {
        assert_eq!(
            offsets(&HistoryQuery::new(10).max_bytes(7)),
            Ok((vec![3, 4], true))
        );
        assert_eq!(
            offsets(&HistoryQuery::new(10).max_bytes(1).reverse(true)),
            Ok((vec![9], true))
        );
    }

    #[test]
    fn a_position_of_another_epoch_or_beyond_the_top_is_refused_with_the_current_one() {
        assert_eq!(
            offsets(&HistoryQuery::new(1).since(at("old", 2))),
            Err(HistoryError::EpochChanged {
                current: at("e", 9)
            })
        );
        assert_eq!(
            offsets(&HistoryQuery::new(1).since(at("e", 10)).reverse(true)),
            Err(HistoryError::BeyondTop {
                current: at("e", 9)
            })
        );
    }
}
