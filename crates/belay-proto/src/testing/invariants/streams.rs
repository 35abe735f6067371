//! Stream continuity (spec §5.3, §5.6): no publication delivered twice or
//! skipped without an announcement, nothing for a channel not wanted.

use std::collections::{BTreeMap, BTreeSet};

use crate::message::StreamPosition;
use crate::Session;

/// What the checker knows about one channel the application wants.
#[derive(Debug, Clone, Default)]
struct Channel {
    /// The position the next delivery must follow (same epoch, offset + 1).
    /// `None` until the channel is first confirmed.
    base: Option<StreamPosition>,
    /// A gap was announced (`RecoveryFailed`), or this is the first
    /// confirmation: the next position comes from the session.
    rebase: bool,
    /// A `Subscribed` event in the current batch of outputs.
    confirmed: bool,
    /// ... and its `recovered` flag.
    recovered: bool,
    /// A publication after that `Subscribed` in the same batch.
    delivered_since_confirm: bool,
    /// The epoch of `delivered`.
    delivered_epoch: Option<String>,
    /// The offsets delivered in `delivered_epoch`.
    delivered: BTreeSet<u64>,
}

/// Per channel, the position the next delivery must follow: the one the
/// channel was first confirmed at (read back from the session), then the
/// last publication delivered. A delivery must be in the same epoch at the
/// next offset, unless `RecoveryFailed` came in between. A resume confirmed
/// without `RecoveryFailed` leaves the position where it was. An
/// `(epoch, offset)` is never delivered twice (the record is kept per epoch).
#[derive(Debug, Default)]
pub(super) struct Streams {
    channels: BTreeMap<String, Channel>,
}

impl Streams {
    /// The application's subscribe of `channel` was accepted: a fresh record.
    /// `Err` if it was already wanted.
    pub(super) fn wanted(&mut self, channel: &str) -> Result<(), String> {
        match self.channels.insert(channel.to_owned(), Channel::default()) {
            Some(_) => Err(format!("subscribe({channel:?}) accepted twice")),
            None => Ok(()),
        }
    }

    /// The application's unsubscribe of `channel` was accepted.
    pub(super) fn unwanted(&mut self, channel: &str) -> Result<(), String> {
        match self.channels.remove(channel) {
            Some(_) => Ok(()),
            None => Err(format!(
                "unsubscribe({channel:?}) accepted for a channel not wanted"
            )),
        }
    }

    /// Whether the checker has a record of `channel`.
    pub(super) fn is_wanted(&self, channel: &str) -> bool {
        self.channels.contains_key(channel)
    }

    /// The record of `channel`, made fresh when the driver did not report
    /// the subscribe but the session wants the channel.
    fn entry(&mut self, channel: &str, session: &Session) -> Result<&mut Channel, String> {
        if !self.channels.contains_key(channel) && session.subscriptions().contains(channel) {
            self.channels.insert(channel.to_owned(), Channel::default());
        }
        self.channels
            .get_mut(channel)
            .ok_or_else(|| format!("{channel:?} is not wanted"))
    }

    pub(super) fn subscribed(
        &mut self,
        channel: &str,
        recovered: bool,
        session: &Session,
    ) -> Result<(), String> {
        let entry = self
            .entry(channel, session)
            .map_err(|e| format!("Subscribed: {e}"))?;
        entry.confirmed = true;
        entry.recovered = recovered;
        entry.delivered_since_confirm = false;
        if entry.base.is_none() {
            entry.rebase = true;
        }
        Ok(())
    }

    pub(super) fn recovery_failed(
        &mut self,
        channel: &str,
        session: &Session,
    ) -> Result<(), String> {
        let entry = self
            .entry(channel, session)
            .map_err(|e| format!("RecoveryFailed: {e}"))?;
        entry.rebase = true;
        Ok(())
    }

    /// Check one delivery against the channel's record.
    pub(super) fn deliver(
        &mut self,
        channel: &str,
        position: StreamPosition,
        session: &Session,
    ) -> Result<(), String> {
        let entry = self
            .entry(channel, session)
            .map_err(|e| format!("publication {position:?} delivered, but {e}"))?;
        if entry.confirmed {
            entry.delivered_since_confirm = true;
        }
        if entry.rebase {
            // A gap was announced: the delivery may start anywhere.
            entry.rebase = false;
        } else {
            match &entry.base {
                None => {
                    return Err(format!(
                        "publication {position:?} delivered on {channel:?} before it was ever confirmed"
                    ))
                }
                Some(base) if base.epoch != position.epoch => {
                    return Err(format!(
                        "{channel:?} delivered {position:?} after {base:?}: the epoch changed without RecoveryFailed"
                    ))
                }
                Some(base) if position.offset <= base.offset => {
                    return Err(format!(
                        "{channel:?} delivered {position:?} after {base:?}: repeated or out of order"
                    ))
                }
                Some(base) if position.offset != base.offset.saturating_add(1) => {
                    return Err(format!(
                        "{channel:?} delivered {position:?} after {base:?}: offsets {}..={} skipped without RecoveryFailed",
                        base.offset.saturating_add(1),
                        position.offset - 1
                    ))
                }
                Some(_) => {}
            }
        }
        if entry.delivered_epoch.as_deref() == Some(position.epoch.as_str()) {
            if !entry.delivered.insert(position.offset) {
                return Err(format!(
                    "{channel:?} delivered {position:?} a second time (a RecoveryFailed announces a gap, not a replay)"
                ));
            }
        } else {
            entry.delivered_epoch = Some(position.epoch.clone());
            entry.delivered = BTreeSet::from([position.offset]);
        }
        entry.base = Some(position);
        Ok(())
    }

    /// After a batch: each channel confirmed in it has the position the
    /// record expects; channels the session no longer wants are forgotten
    /// (a later subscribe starts afresh).
    pub(super) fn end_of_batch(&mut self, session: &Session) -> Result<(), String> {
        self.channels
            .retain(|name, _| session.subscriptions().contains(name));
        for (name, entry) in &mut self.channels {
            if !entry.confirmed {
                continue;
            }
            entry.confirmed = false;
            let delivered = std::mem::take(&mut entry.delivered_since_confirm);
            let Some(position) = session.subscriptions().position(name).cloned() else {
                return Err(format!(
                    "{name:?} confirmed, but the session has no position"
                ));
            };
            if delivered {
                // The delivery already moved the record on.
                continue;
            }
            if entry.rebase {
                entry.rebase = false;
                if entry.delivered_epoch.as_deref() != Some(position.epoch.as_str()) {
                    // Moved to another epoch: a later return to an epoch
                    // name seen before is a new history to the client.
                    entry.delivered_epoch = Some(position.epoch.clone());
                    entry.delivered.clear();
                }
                entry.base = Some(position);
            } else if entry.base.as_ref() != Some(&position) {
                return Err(format!(
                    "{name:?}: a resume confirmed with recovered: {} and no RecoveryFailed moved the position from {:?} to {position:?}; what follows is {}",
                    entry.recovered,
                    entry.base,
                    match &entry.base {
                        Some(base) if base.epoch != position.epoch => "from another epoch, unannounced",
                        Some(base) if base.offset < position.offset => "skipped, unannounced",
                        _ => "delivered again",
                    }
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
