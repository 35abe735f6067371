//! [`ClusterApi`]: the API's reach to every node of a Redis cluster,
//! through the nodes' control plane (belay-redis `ControlPlane`): each
//! node answers for itself (disconnecting a user, listing its channels,
//! its figures), and the asking node puts the answers together, naming
//! the nodes that did not answer.

use std::collections::BTreeMap;
use std::time::Duration;

use belay_proto::server::ChannelPattern;
use belay_redis::{RedisBroker, MAX_CONTROL_MESSAGE};
use belay_server::broker::{ChannelCount, ChannelList, ChannelQuery, ChannelTally};
use belay_server::Server;
use serde_json::{json, Value};

use super::{MAX_CHANNELS, MAX_CHANNEL_BYTES};

/// The control method every node answers with its channels.
const CHANNELS: &str = "api.channels";
/// The control method every node answers with its figures.
const STATS: &str = "api.stats";
/// How long every node has to answer.
const WITHIN: Duration = Duration::from_secs(2);
/// Room left in a control message for what surrounds a node's answer.
const ENVELOPE: usize = 1_024;

/// Every node of the cluster `broker` belongs to.
#[derive(Clone, Debug)]
pub struct ClusterApi {
    broker: RedisBroker,
}

/// A node that did not answer, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unanswered {
    node: String,
    error: String,
}

impl Unanswered {
    pub(crate) fn to_json(&self) -> Value {
        json!({"node": self.node, "error": self.error})
    }
}

impl ClusterApi {
    /// Answer other nodes' requests for `server` (disconnecting a user
    /// here, this node's channels and figures) and reach them through
    /// `broker`.
    pub fn new(server: &Server, broker: &RedisBroker) -> ClusterApi {
        let control = broker.control();
        belay_redis::answer_disconnects(control, server);
        let here = server.clone();
        control.handle(CHANNELS, move |body: Value| {
            let answer = node_channels(&here, &body);
            async move { answer }
        });
        let (here, node) = (server.clone(), control.node().to_owned());
        control.handle(STATS, move |_| {
            let answer = stats_of(&here, &node);
            async move { Ok(answer) }
        });
        ClusterApi {
            broker: broker.clone(),
        }
    }

    /// Disconnect `user` on every live node; how many connections closed
    /// (an error if a node could not be asked: the others still did it).
    pub(crate) async fn disconnect_user(&self, user: &str, reason: &str) -> Result<usize, String> {
        let answers = self
            .broker
            .control()
            .ask_all(
                belay_redis::USER_DISCONNECT,
                json!({"user": user, "reason": reason}),
                WITHIN,
            )
            .await
            .map_err(|e| format!("the cluster: {e}"))?;
        let mut total = 0;
        for (node, answer) in answers {
            match answer {
                Ok(n) => total += usize::try_from(n.as_u64().unwrap_or(0)).unwrap_or(0),
                Err(e) => return Err(format!("node {node} did not answer: {e}")),
            }
        }
        Ok(total)
    }

    /// The channels `query` asks for over every live node, counts summed,
    /// and the nodes that did not answer (an error if the cluster could
    /// not be asked at all).
    pub(crate) async fn channels(
        &self,
        query: &ChannelQuery,
    ) -> Result<(ChannelList, Vec<Unanswered>), String> {
        let body = json!({"pattern": pattern_text(query), "after": query.after});
        let answers = self
            .broker
            .control()
            .ask_all(CHANNELS, body, WITHIN)
            .await
            .map_err(|e| format!("the cluster: {e}"))?;
        let mut pages = Vec::new();
        let mut unanswered = Vec::new();
        for (node, answer) in answers {
            match answer.map_err(|e| e.to_string()).and_then(decode_page) {
                Ok(page) => pages.push(page),
                Err(error) => unanswered.push(Unanswered { node, error }),
            }
        }
        Ok((union(query, pages), unanswered))
    }

    /// This node's figures, with its id.
    pub(crate) fn node_stats(&self, server: &Server) -> Value {
        stats_of(server, self.broker.control().node())
    }

    /// Every live node's figures (this one's too), and the nodes that did
    /// not answer (an error if the cluster could not be asked at all).
    pub(crate) async fn stats(&self) -> Result<(Vec<Value>, Vec<Unanswered>), String> {
        let answers = self
            .broker
            .control()
            .ask_all(STATS, Value::Null, WITHIN)
            .await
            .map_err(|e| format!("the cluster: {e}"))?;
        let mut nodes = Vec::new();
        let mut unanswered = Vec::new();
        for (node, answer) in answers {
            match answer {
                Ok(stats) if stats.is_object() => nodes.push(stats),
                Ok(_) => unanswered.push(Unanswered {
                    node,
                    error: "a malformed answer".into(),
                }),
                Err(e) => unanswered.push(Unanswered {
                    node,
                    error: e.to_string(),
                }),
            }
        }
        Ok((nodes, unanswered))
    }
}

/// `server`'s figures as a node of the cluster.
fn stats_of(server: &Server, node: &str) -> Value {
    let mut stats = serde_json::to_value(server.stats()).unwrap_or_else(|_| json!({}));
    stats["node"] = json!(node);
    stats
}

/// The pattern `query` was made from, as text.
fn pattern_text(query: &ChannelQuery) -> String {
    query.pattern.as_str().to_owned()
}

/// One node's answer to [`CHANNELS`]: `{"c": [[name, subscribers]…],
/// "t": truncated}`, within a control message (halved until it fits,
/// then truncated).
fn node_channels(server: &Server, body: &Value) -> Result<Value, String> {
    let pattern = body["pattern"].as_str().ok_or("no pattern")?;
    let after = body["after"].as_str().map(str::to_owned);
    let query = ChannelQuery::new(ChannelPattern::new(pattern))
        .after(after)
        .bounded(MAX_CHANNELS, MAX_CHANNEL_BYTES);
    let list = server.list_channels(&query).map_err(|e| e.to_string())?;
    let channels: Vec<Value> = list
        .channels
        .iter()
        .map(|c| json!([c.channel, c.subscribers]))
        .collect();
    Ok(fitted(channels, list.truncated))
}

/// `{"c": channels, "t": truncated}`, halved until it fits in a control
/// message (and then truncated).
fn fitted(mut channels: Vec<Value>, mut truncated: bool) -> Value {
    loop {
        let answer = json!({"c": channels, "t": truncated});
        if answer.to_string().len() + ENVELOPE <= MAX_CONTROL_MESSAGE || channels.len() <= 1 {
            return answer;
        }
        channels.truncate(channels.len() / 2);
        truncated = true;
    }
}

/// A node's page as [`node_channels`] sent it.
fn decode_page(answer: Value) -> Result<ChannelList, String> {
    let malformed = || "a malformed answer".to_string();
    let mut page = ChannelList::default();
    page.truncated = answer["t"].as_bool().ok_or_else(malformed)?;
    for entry in answer["c"].as_array().ok_or_else(malformed)? {
        let name = entry[0].as_str().ok_or_else(malformed)?;
        let n = entry[1].as_u64().ok_or_else(malformed)?;
        page.channels.push(ChannelCount::new(
            name,
            usize::try_from(n).unwrap_or(usize::MAX),
        ));
    }
    Ok(page)
}

/// Every node's page as one, counts summed. A node's page cut short ends
/// at its last name: names after the first such end may be missing from
/// it, so the union stops there too (and says more follow).
fn union(query: &ChannelQuery, pages: Vec<ChannelList>) -> ChannelList {
    let mut end: Option<String> = None;
    let mut cut = false;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for page in pages {
        if page.truncated {
            cut = true;
            let last = page.channels.last().map(|c| c.channel.clone());
            end = match (end, last) {
                (Some(e), Some(l)) => Some(e.min(l)),
                (e, l) => e.or(l),
            };
        }
        for c in page.channels {
            let n = counts.entry(c.channel).or_default();
            *n = n.saturating_add(c.subscribers);
        }
    }
    let mut tally = ChannelTally::new(query);
    for (name, n) in &counts {
        if end.as_deref().is_some_and(|end| name.as_str() > end) {
            break;
        }
        tally.offer(name, *n);
    }
    let mut list = tally.finish();
    list.truncated |= cut;
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(names: &[(&str, usize)], truncated: bool) -> ChannelList {
        let mut page = ChannelList::default();
        page.truncated = truncated;
        page.channels = names
            .iter()
            .map(|(n, c)| ChannelCount::new(*n, *c))
            .collect();
        page
    }

    fn names(list: &ChannelList) -> Vec<(&str, usize)> {
        list.channels
            .iter()
            .map(|c| (c.channel.as_str(), c.subscribers))
            .collect()
    }

    #[test]
    fn the_union_sums_counts_and_stops_where_a_cut_page_ends() {
        let query = ChannelQuery::new(ChannelPattern::new("*")).bounded(10, 1_000);
        let whole = union(
            &query,
            vec![
                page(&[("a", 1), ("b", 2)], false),
                page(&[("b", 1), ("c", 1)], false),
            ],
        );
        assert_eq!(
            (names(&whole), whole.truncated),
            (vec![("a", 1), ("b", 3), ("c", 1)], false)
        );
        let cut = union(
            &query,
            vec![
                page(&[("a", 1), ("b", 2)], true),
                page(&[("b", 1), ("c", 1)], false),
            ],
        );
        assert_eq!(
            (names(&cut), cut.truncated),
            (vec![("a", 1), ("b", 3)], true)
        );
    }

    #[test]
    fn a_nodes_answer_fits_a_control_message() {
        // Names JSON escapes grow: `"` is two characters on the wire.
        let long = "\"".repeat(250);
        let channels: Vec<Value> = (0..1_000)
            .map(|i| json!([format!("{long}{i}"), i]))
            .collect();
        let small = fitted(channels[..3].to_vec(), false);
        assert_eq!(
            decode_page(small).map(|p| (p.channels.len(), p.truncated)),
            Ok((3, false))
        );
        let answer = fitted(channels, false);
        assert!(answer.to_string().len() + ENVELOPE <= MAX_CONTROL_MESSAGE);
        let decoded = decode_page(answer).expect("decodes");
        assert!(decoded.truncated && !decoded.channels.is_empty());
        assert_eq!(decoded.channels[0].subscribers, 0);
    }
}
