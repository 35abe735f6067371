//! [`ChannelLog`]: one channel's stream and its bounded recovery history.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::message::{Publication, RawJson, StreamPosition, Subscribed};
use crate::time::Instant;

/// The largest offset the log hands out: 2^53 − 1, the largest integer a
/// JavaScript number holds exactly (spec/PROTOCOL.md §1.1). Publishing past it
/// starts a new epoch (see [`ChannelLog::publish`]).
pub const MAX_OFFSET: u64 = (1 << 53) - 1;

/// The answer to a `subscribe`: the `subscribed` message, then the
/// publications to replay, in offset order, before any live one.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Recovery {
    /// The confirmation to send first.
    pub subscribed: Subscribed,
    /// Publications `subscribed.offset + 1 ..= top`; empty unless the resume
    /// succeeded.
    pub replay: Vec<Publication>,
}

/// One held publication.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    offset: u64,
    published_at: Instant,
    data: RawJson,
}

impl Entry {
    /// Bytes it holds, as the byte bounds count them: its data and the
    /// entry itself.
    fn size(data: &RawJson) -> usize {
        data.get()
            .len()
            .saturating_add(std::mem::size_of::<Entry>())
    }
}

/// One channel's stream: epoch, offsets and a bounded history.
///
/// A channel's publications live in an **epoch** (one incarnation of its
/// history) and carry offsets `1, 2, 3, …` with no gaps; offset 0 means
/// "before the first publication" (spec/PROTOCOL.md §5.1). The log keeps the
/// most recent publications, at most `max_len` of them, at most `max_bytes`
/// of them ([`ChannelLog::with_max_bytes`]) and none older than `max_age`,
/// so a client that reconnects can resume where it left off.
///
/// ```text
///  offsets   1 2 3 4 5 6 7 8 9        top = 9
///            ╳ ╳ ╳ ╳ ┃ 5 … 9 ┃        held: 5..=9 (pruned by length or age)
///  since 4 ──────────▶ replay 5..=9   recovered: every publication after 4 is held
///  since 3 ──────────▶ nothing        not recovered: 4 is gone
/// ```
///
/// [`ChannelLog::recover`] answers a `subscribe` exactly as §5.3 says, and it
/// never replays part of what is missing: either every publication after
/// `since` is replayed (`recovered: true`) or none is (`recovered: false`,
/// the client resyncs from a snapshot). A partial replay would look like a
/// success and lose messages silently.
///
/// The log is pure: `publish` and `recover` take `now`, and an instant
/// earlier than one already seen is treated as that instant, so entries stay
/// in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelLog {
    /// Shared with whoever else holds the name (a broker's map key, its
    /// subscribers), so a channel stores its name once.
    channel: Arc<str>,
    /// Shared by every channel of one incarnation of the history.
    epoch: Arc<str>,
    max_len: usize,
    max_age: Duration,
    /// Bytes the held entries may take ([`Entry::size`] each).
    max_bytes: usize,
    /// Bytes the held entries take.
    bytes: usize,
    top: u64,
    /// Held publications, oldest first, consecutive offsets ending at `top`.
    entries: VecDeque<Entry>,
    /// The latest `now` seen; earlier ones are raised to it.
    latest: Instant,
}

impl ChannelLog {
    /// An empty log (top 0) for `channel` in `epoch`, holding at most
    /// `max_len` publications, none older than `max_age`.
    ///
    /// The epoch must name this incarnation of the history uniquely: a log
    /// created after history was lost (a restart without persistence) needs a
    /// new epoch, or clients would resume against offsets that mean
    /// something else. `max_len` 0 keeps no history (only a client already
    /// at the top resumes); `Duration::MAX` disables the age limit.
    pub fn new(
        channel: impl Into<Arc<str>>,
        epoch: impl Into<Arc<str>>,
        max_len: usize,
        max_age: Duration,
    ) -> Self {
        ChannelLog {
            channel: channel.into(),
            epoch: epoch.into(),
            max_len,
            max_age,
            max_bytes: usize::MAX,
            bytes: 0,
            top: 0,
            entries: VecDeque::new(),
            latest: Instant::ZERO,
        }
    }

    /// The same log, holding at most `max_bytes` of publications (each
    /// counted as its data plus its entry's own size): the oldest go to
    /// make room for a new one; one larger than `max_bytes` alone empties
    /// the history (it must end at the top, so nothing older can stay).
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Append `data` at `now` and return the publication to fan out, with
    /// offset `top + 1`.
    ///
    /// The oldest publications are dropped to stay within `max_len`,
    /// `max_bytes` and `max_age`. After [`MAX_OFFSET`] the log starts a new epoch
    /// (`"{epoch}+"`), drops its history and restarts at offset 1, so offsets
    /// stay exact in every client; subscribers see an epoch change and
    /// resubscribe, exactly as after a lost history.
    pub fn publish(&mut self, now: Instant, data: RawJson) -> Publication {
        let now = self.advance(now);
        if self.top >= MAX_OFFSET {
            self.epoch = format!("{}+", self.epoch).into();
            self.top = 0;
            self.clear();
        }
        self.top += 1;
        let size = Entry::size(&data);
        if self.max_len > 0 && size > self.max_bytes {
            // Held entries must end at the top: with this one left out,
            // none can stay (a resume past it is not recovered).
            self.clear();
        } else if self.max_len > 0 {
            while self.entries.len() >= self.max_len
                || (!self.entries.is_empty() && self.bytes.saturating_add(size) > self.max_bytes)
            {
                self.pop_oldest();
            }
            self.bytes = self.bytes.saturating_add(size);
            self.entries.push_back(Entry {
                offset: self.top,
                published_at: now,
                data: data.clone(),
            });
        }
        self.prune(now);
        Publication {
            channel: self.channel.to_string(),
            epoch: self.epoch.to_string(),
            offset: self.top,
            data,
        }
    }

    /// Answer a `subscribe` at `now`, with `since` its resume position
    /// (spec/PROTOCOL.md §5.3):
    ///
    /// * no `since`: `offset` = top, `recovered: false`, nothing replayed;
    /// * `since` in another epoch, beyond the top, or older than the history
    ///   reaches (the publication `since.offset + 1` was pruned, by length or
    ///   age): `offset` = top, `recovered: false`, **nothing** replayed;
    /// * otherwise: `offset = since.offset`, `recovered: true`, and every
    ///   publication after `since.offset` replayed in order (none if the
    ///   client is at the top).
    ///
    /// The server sends `subscribed`, then the replay, then live
    /// publications from `top + 1` on, which makes the stream gap-free and
    /// duplicate-free as long as nothing is published between this call and
    /// the subscriber joining the live fan-out.
    pub fn recover(&mut self, now: Instant, since: Option<&StreamPosition>) -> Recovery {
        self.prune(now);
        let replay_from = since.and_then(|since| self.replay_start(since));
        match (since, replay_from) {
            (Some(since), Some(skip)) => Recovery {
                subscribed: self.subscribed(since.offset, true),
                replay: self
                    .entries
                    .iter()
                    .skip(skip)
                    .map(|entry| Publication {
                        channel: self.channel.to_string(),
                        epoch: self.epoch.to_string(),
                        offset: entry.offset,
                        data: entry.data.clone(),
                    })
                    .collect(),
            },
            _ => Recovery {
                subscribed: self.subscribed(self.top, false),
                replay: Vec::new(),
            },
        }
    }

    /// Drop publications older than `max_age` at `now`.
    pub fn prune(&mut self, now: Instant) {
        let now = self.advance(now);
        while let Some(oldest) = self.entries.front() {
            if now.saturating_duration_since(oldest.published_at) >= self.max_age {
                self.pop_oldest();
            } else {
                break;
            }
        }
    }

    /// Drop the held publications up to and including `offset` (a
    /// server-wide byte bound taking the oldest first). What stays still
    /// ends at the top, so resumes stay exact.
    pub fn evict_through(&mut self, offset: u64) {
        while self.entries.front().is_some_and(|e| e.offset <= offset) {
            self.pop_oldest();
        }
    }

    /// Bytes the held publications take, as the byte bounds count them.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn pop_oldest(&mut self) {
        if let Some(entry) = self.entries.pop_front() {
            self.bytes = self.bytes.saturating_sub(Entry::size(&entry.data));
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// When the oldest held publication ages out, if any is held: the next
    /// instant at which [`prune`](Self::prune) changes anything.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.entries
            .front()
            .map(|oldest| oldest.published_at.saturating_add(self.max_age))
    }

    /// The channel name.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The channel name as the log shares it (a broker's map key and
    /// eviction order hold the same allocation).
    pub fn channel_name(&self) -> &Arc<str> {
        &self.channel
    }

    /// The current epoch.
    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// Offset of the last publication in this epoch (0 if none).
    pub fn top(&self) -> u64 {
        self.top
    }

    /// The position a subscriber at the top is at.
    pub fn position(&self) -> StreamPosition {
        StreamPosition {
            epoch: self.epoch.to_string(),
            offset: self.top,
        }
    }

    /// Publications held for recovery (never more than `max_len`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no publication is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The publications held at `now` (after pruning by age), oldest
    /// first, as `(offset, data)`: what a history read (the HTTP API's
    /// `/api/history`) chooses from, from either end.
    pub fn held(&mut self, now: Instant) -> impl DoubleEndedIterator<Item = (u64, &RawJson)> {
        self.prune(now);
        self.entries.iter().map(|entry| (entry.offset, &entry.data))
    }

    /// Offset of the oldest publication held, if any.
    pub fn oldest_offset(&self) -> Option<u64> {
        self.entries.front().map(|entry| entry.offset)
    }

    /// How many held entries to skip to replay everything after `since`, or
    /// `None` if the resume must fail.
    fn replay_start(&self, since: &StreamPosition) -> Option<usize> {
        if *since.epoch != *self.epoch || since.offset > self.top {
            return None;
        }
        // The held entries are `first + 1 ..= top`: everything after `since`
        // is held iff `since.offset >= first` (vacuously when at the top).
        let held = u64::try_from(self.entries.len()).unwrap_or(u64::MAX);
        let first = self.top.saturating_sub(held);
        if since.offset < first {
            return None;
        }
        usize::try_from(since.offset - first).ok()
    }

    fn subscribed(&self, offset: u64, recovered: bool) -> Subscribed {
        Subscribed {
            channel: self.channel.to_string(),
            epoch: self.epoch.to_string(),
            offset,
            recovered,
        }
    }

    fn advance(&mut self, now: Instant) -> Instant {
        self.latest = self.latest.max(now);
        self.latest
    }
}

#[cfg(test)]
mod tests;
