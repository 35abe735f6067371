//! Where a channel lives in Redis. Every key of a channel carries the
//! channel in a hash tag (`{…}`), so on Redis Cluster a channel's keys share
//! a slot and one script can touch them all.
//!
//! | what | key |
//! |---|---|
//! | epoch (`e`) and top offset (`s`), a hash | `PREFIX.meta.{CHANNEL}` |
//! | history, a Stream whose entry ids are the offsets (`N-0`), fields `d` (data) and `t` (ms published) | `PREFIX.history.{CHANNEL}` |
//! | live publications, PUB/SUB | `PREFIX.live.CHANNEL` (on a Redis Cluster, sharded PUB/SUB: `PREFIX.live.{CHANNEL}`) |
//!
//! On a cluster the live name carries the hash tag too: the publish script
//! sends it with `SPUBLISH`, which must stay in the script's slot.
//!
//! A live message is `OFFSET:EPOCH:DATA` (epochs are hex, without `:`).

/// The key and PUB/SUB names of one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChannelKeys {
    pub(crate) meta: String,
    pub(crate) history: String,
    pub(crate) live: String,
}

impl ChannelKeys {
    /// `cluster`: on a Redis Cluster (sharded PUB/SUB).
    pub(crate) fn new(prefix: &str, channel: &str, cluster: bool) -> Self {
        ChannelKeys {
            meta: format!("{prefix}.meta.{{{channel}}}"),
            history: format!("{prefix}.history.{{{channel}}}"),
            live: live_name(prefix, channel, cluster),
        }
    }
}

/// The PUB/SUB channel of `channel`.
pub(crate) fn live_name(prefix: &str, channel: &str, cluster: bool) -> String {
    if cluster {
        format!("{prefix}.live.{{{channel}}}")
    } else {
        format!("{prefix}.live.{channel}")
    }
}

/// The channel a PUB/SUB name belongs to, if it is one of ours.
pub(crate) fn channel_of<'a>(prefix: &str, live: &'a str, cluster: bool) -> Option<&'a str> {
    let name = live.strip_prefix(prefix)?.strip_prefix(".live.")?;
    if cluster {
        name.strip_prefix('{')?.strip_suffix('}')
    } else {
        Some(name)
    }
}

/// A live message's offset, epoch and data, if it is well formed.
pub(crate) fn parse_live(payload: &[u8]) -> Option<(u64, &str, &str)> {
    let text = std::str::from_utf8(payload).ok()?;
    let (offset, rest) = text.split_once(':')?;
    let (epoch, data) = rest.split_once(':')?;
    Some((offset.parse().ok()?, epoch, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channels_keys_share_its_hash_tag() {
        let keys = ChannelKeys::new("belay", "chat:1", false);
        assert_eq!(keys.meta, "belay.meta.{chat:1}");
        assert_eq!(keys.history, "belay.history.{chat:1}");
        assert_eq!(channel_of("belay", &keys.live, false), Some("chat:1"));
        assert_eq!(channel_of("other", &keys.live, false), None);
    }

    #[test]
    fn on_a_cluster_the_live_name_shares_the_hash_tag() {
        let keys = ChannelKeys::new("belay", "chat:1", true);
        assert_eq!(keys.live, "belay.live.{chat:1}");
        assert_eq!(channel_of("belay", &keys.live, true), Some("chat:1"));
        assert_eq!(channel_of("belay", "belay.live.chat:1", true), None);
        // Outside a cluster braces are part of the channel's name.
        assert_eq!(channel_of("belay", "belay.live.{x}", false), Some("{x}"));
    }

    #[test]
    fn a_live_message_splits_at_its_first_two_colons() {
        assert_eq!(
            parse_live(b"7:ab12:{\"a\":\"b:c\"}"),
            Some((7, "ab12", "{\"a\":\"b:c\"}"))
        );
        assert_eq!(parse_live(b"x:ab:1"), None);
        assert_eq!(parse_live(b"7"), None);
    }
}
