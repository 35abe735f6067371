//! A page of a channel's history outside a subscription (the HTTP API's
//! `/api/history`, `Broker::history`): the read script, its page.

use belay_proto::message::{Publication, RawJson, StreamPosition};
use belay_server::broker::{HistoryError, HistoryPage, HistoryQuery};

use crate::broker::{new_epoch, Inner};
use crate::keys::ChannelKeys;
use crate::scripts::read_reply;

impl Inner {
    /// A page of `channel`'s history for `query` (see the read script).
    pub(crate) async fn read(
        &self,
        channel: String,
        query: HistoryQuery,
    ) -> Result<HistoryPage, HistoryError> {
        let keys = ChannelKeys::new(&self.config().prefix, &channel, self.config().is_cluster());
        let (_, history_age) = self.history_bounds(&channel);
        let since = query.since.as_ref();
        // The first entry id to read, inclusive (offsets are entry ids).
        let start = match (since, query.reverse) {
            (None, false) => "-".to_owned(),
            (None, true) => "+".to_owned(),
            (Some(s), false) => format!("{}-0", s.offset.saturating_add(1)),
            (Some(s), true) if s.offset == 0 => String::new(),
            (Some(s), true) => format!("{}-0", s.offset - 1),
        };
        let mut call = self.scripts().read.prepare_invoke();
        call.key(&keys.meta)
            .key(&keys.history)
            .arg(since.map(|s| s.epoch.as_str()).unwrap_or_default())
            .arg(since.map(|s| s.offset.to_string()).unwrap_or_default())
            .arg(if query.reverse { "1" } else { "0" })
            // Within what Lua's numbers print as integers.
            .arg(query.limit.min(1 << 31))
            .arg(query.max_bytes)
            .arg(u64::try_from(history_age.as_millis()).unwrap_or(u64::MAX))
            .arg(self.config().meta_ttl.as_secs().max(1))
            .arg(new_epoch())
            .arg(start);
        let (primary, writer) = self
            .primary("history")
            .await
            .map_err(HistoryError::Unavailable)?;
        call.arg(&*writer).arg(self.durable_flag());
        let reply = self
            .run("history", &primary, &call)
            .await
            .map_err(HistoryError::Unavailable)?;
        let read = read_reply(reply).map_err(|e| HistoryError::Unavailable(e.to_string()))?;
        let position = StreamPosition {
            epoch: read.epoch,
            offset: read.top,
        };
        query.check(&position)?;
        let mut page = HistoryPage::empty(position);
        for entry in read.entries {
            let data = RawJson::from_json(entry.data).map_err(|_| {
                HistoryError::Unavailable("a publication in Redis is not JSON".into())
            })?;
            page.publications.push(Publication {
                channel: channel.clone(),
                epoch: page.position.epoch.clone(),
                offset: entry.offset,
                data,
            });
        }
        page.truncated = read.truncated;
        Ok(page)
    }
}
