//! Listing the channels this node's subscribers are on (the HTTP API's
//! `/api/channels`): [`ChannelQuery`] in, [`ChannelList`] out.
//!
//! A list is a page in name order: the first channels after `after` that
//! match the pattern, at most `max_count` of them and `max_bytes` of names,
//! so a node with a hundred thousand channels answers in bounded memory
//! and size; [`ChannelList::truncated`] says more follow (ask again with
//! `after` = the last name). [`ChannelTally`] builds one from channels
//! offered in any order, holding at most `max_count` names meanwhile.

use std::collections::BTreeMap;

use belay_proto::server::ChannelPattern;

/// Which channels to list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelQuery {
    /// Channels this covers (`*`: every one).
    pub pattern: ChannelPattern,
    /// Only names after this one (in byte order).
    pub after: Option<String>,
    /// Channels at most in the page.
    pub max_count: usize,
    /// Bytes of names at most in the page (the first name always fits).
    pub max_bytes: usize,
}

impl ChannelQuery {
    /// Every channel `pattern` covers, without bounds.
    pub fn new(pattern: ChannelPattern) -> Self {
        ChannelQuery {
            pattern,
            after: None,
            max_count: usize::MAX,
            max_bytes: usize::MAX,
        }
    }

    /// Only names after `after`.
    pub fn after(mut self, after: Option<String>) -> Self {
        self.after = after;
        self
    }

    /// At most `max_count` channels and `max_bytes` of names per page.
    pub fn bounded(mut self, max_count: usize, max_bytes: usize) -> Self {
        self.max_count = max_count;
        self.max_bytes = max_bytes;
        self
    }
}

/// One channel and its subscribers on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelCount {
    /// The channel.
    pub channel: String,
    /// Its subscriptions on this node (at least one).
    pub subscribers: usize,
}

impl ChannelCount {
    /// `channel` with `subscribers`.
    pub fn new(channel: impl Into<String>, subscribers: usize) -> Self {
        ChannelCount {
            channel: channel.into(),
            subscribers,
        }
    }
}

/// A page of channels with subscribers, in name order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ChannelList {
    /// The page.
    pub channels: Vec<ChannelCount>,
    /// More channels follow the page (it was cut by a bound).
    pub truncated: bool,
    /// Channels the pattern covers, whatever `after` and the bounds.
    pub matched: usize,
    /// Their subscriptions, in total.
    pub subscriptions: usize,
}

/// Why channels could not be listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// This broker does not list its channels.
    #[error("this broker does not list channels")]
    Unsupported,
}

/// Builds a [`ChannelList`] from channels offered in any order.
#[derive(Debug)]
pub struct ChannelTally<'q> {
    query: &'q ChannelQuery,
    kept: BTreeMap<String, usize>,
    /// A matching name after `after` was dropped for the count bound.
    dropped: bool,
    matched: usize,
    subscriptions: usize,
}

impl<'q> ChannelTally<'q> {
    /// An empty tally for `query`.
    pub fn new(query: &'q ChannelQuery) -> Self {
        ChannelTally {
            query,
            kept: BTreeMap::new(),
            dropped: false,
            matched: 0,
            subscriptions: 0,
        }
    }

    /// `channel` has `subscribers` here (a channel with none is not
    /// active, and not counted). Offer each channel once.
    pub fn offer(&mut self, channel: &str, subscribers: usize) {
        if subscribers == 0 || !self.query.pattern.matches(channel) {
            return;
        }
        self.matched += 1;
        self.subscriptions = self.subscriptions.saturating_add(subscribers);
        if self
            .query
            .after
            .as_deref()
            .is_some_and(|after| channel <= after)
        {
            return;
        }
        if let Some(kept) = self.kept.get_mut(channel) {
            *kept = kept.saturating_add(subscribers);
            return;
        }
        if self.kept.len() >= self.query.max_count {
            // Full: keep it only if it comes before the last one kept
            // (names are allocated only when kept).
            match self.kept.last_key_value() {
                Some((last, _)) if channel < last.as_str() => {
                    self.kept.pop_last();
                }
                _ => {
                    self.dropped = true;
                    return;
                }
            }
            self.dropped = true;
        }
        self.kept.insert(channel.to_owned(), subscribers);
    }

    /// The page: the first names within the bounds.
    pub fn finish(self) -> ChannelList {
        let mut list = ChannelList {
            channels: Vec::with_capacity(self.kept.len()),
            truncated: self.dropped,
            matched: self.matched,
            subscriptions: self.subscriptions,
        };
        let mut bytes = 0usize;
        for (channel, subscribers) in self.kept {
            bytes = bytes.saturating_add(channel.len());
            if !list.channels.is_empty() && bytes > self.query.max_bytes {
                list.truncated = true;
                break;
            }
            list.channels.push(ChannelCount {
                channel,
                subscribers,
            });
        }
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &ChannelList) -> Vec<(&str, usize)> {
        list.channels
            .iter()
            .map(|c| (c.channel.as_str(), c.subscribers))
            .collect()
    }

    fn tally(query: &ChannelQuery) -> ChannelList {
        let mut tally = ChannelTally::new(query);
        for (name, n) in [
            ("d", 1),
            ("b", 2),
            ("chat:2", 1),
            ("a", 0),
            ("chat:1", 3),
            ("c", 1),
        ] {
            tally.offer(name, n);
        }
        tally.finish()
    }

    #[test]
    fn a_page_is_in_name_order_matching_the_pattern() {
        let list = tally(&ChannelQuery::new(ChannelPattern::new("chat:*")));
        assert_eq!(names(&list), [("chat:1", 3), ("chat:2", 1)]);
        assert_eq!(
            (list.truncated, list.matched, list.subscriptions),
            (false, 2, 4)
        );
        let all = tally(&ChannelQuery::new(ChannelPattern::new("*")));
        assert_eq!(
            all.channels.len(),
            5,
            "a channel without subscribers is not listed"
        );
    }

    #[test]
    fn the_bounds_cut_a_page_and_after_resumes_it() {
        let query = ChannelQuery::new(ChannelPattern::new("*")).bounded(2, usize::MAX);
        let first = tally(&query);
        assert_eq!(names(&first), [("b", 2), ("c", 1)]);
        assert!(first.truncated);
        assert_eq!((first.matched, first.subscriptions), (5, 8));
        let next = tally(&query.clone().after(Some("c".into())));
        assert_eq!(names(&next), [("chat:1", 3), ("chat:2", 1)]);
        assert!(next.truncated, "d follows");
        let last = tally(&query.after(Some("chat:2".into())));
        assert_eq!((names(&last), last.truncated), (vec![("d", 1)], false));

        let by_bytes = ChannelQuery::new(ChannelPattern::new("*")).bounded(10, 2);
        let list = tally(&by_bytes);
        assert_eq!(
            (names(&list), list.truncated),
            (vec![("b", 2), ("c", 1)], true)
        );
        let tiny = ChannelQuery::new(ChannelPattern::new("chat:*")).bounded(10, 1);
        assert_eq!(
            names(&tally(&tiny)),
            [("chat:1", 3)],
            "the first name always fits"
        );
    }
}
