//! [`Namespaces`]: per-prefix channel settings (`chat:*` keeps 100
//! publications for 10 minutes and tracks presence; `feed` keeps none).
//! A channel takes the options of the first rule whose pattern covers it,
//! in the order the rules were added, else the defaults.

use std::time::Duration;

use super::ChannelPattern;

/// The settings of the channels one rule covers. `None` history bounds
/// leave the broker's own bounds in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelOptions {
    /// Publications kept per channel (at most the broker's bound).
    pub history_size: Option<usize>,
    /// How long a publication is kept (at most the broker's bound).
    pub history_ttl: Option<Duration>,
    /// Whether the channel's subscribers are tracked as members
    /// (the `$presence` query).
    pub presence: bool,
    /// Whether joins and leaves are published (on `$presence:CHANNEL`).
    pub join_leave: bool,
    /// Who may subscribe.
    pub subscribe: Access,
    /// Who may publish from the client (`$publish`).
    pub publish: Access,
}

/// Who may do something on a channel: subscribe to it, or publish to it
/// from the client. A user channel (`#USER`) stays its user's to
/// subscribe to whatever the rule, and takes client publishes only from a
/// rule that covers it ([`Namespaces::rule_for`]; no rule: nobody).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// As the connection's credentials grant (the authenticator decides;
    /// a JWT's `channels` and `publish` claims). The default.
    #[default]
    Grant,
    /// Every connection, whatever its grant.
    Anyone,
    /// No client.
    Nobody,
    /// The application's backend is asked each time (the subscribe or
    /// publish proxy).
    Backend,
    /// Each subscribe must carry a subscription token the application
    /// issued for this user and this channel (subscribes only: for
    /// publishing it means [`Access::Nobody`]).
    Token,
}

impl Access {
    /// The access a config names: `grant`, `anyone`, `nobody`, `backend`
    /// or `token`.
    pub fn parse(name: &str) -> Option<Access> {
        match name {
            "grant" => Some(Access::Grant),
            "anyone" => Some(Access::Anyone),
            "nobody" => Some(Access::Nobody),
            "backend" => Some(Access::Backend),
            "token" => Some(Access::Token),
            _ => None,
        }
    }
}

impl ChannelOptions {
    /// Keep at most `size` publications.
    pub fn with_history_size(mut self, size: usize) -> Self {
        self.history_size = Some(size);
        self
    }

    /// Keep publications at most `ttl`.
    pub fn with_history_ttl(mut self, ttl: Duration) -> Self {
        self.history_ttl = Some(ttl);
        self
    }

    /// Track the subscribers as members.
    pub fn with_presence(mut self, on: bool) -> Self {
        self.presence = on;
        self
    }

    /// Publish joins and leaves.
    pub fn with_join_leave(mut self, on: bool) -> Self {
        self.join_leave = on;
        self
    }

    /// Who may subscribe.
    pub fn with_subscribe(mut self, access: Access) -> Self {
        self.subscribe = access;
        self
    }

    /// Who may publish from the client.
    pub fn with_publish(mut self, access: Access) -> Self {
        self.publish = access;
        self
    }
}

/// Ordered rules from channel patterns to [`ChannelOptions`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Namespaces {
    rules: Vec<(ChannelPattern, ChannelOptions)>,
    defaults: ChannelOptions,
}

impl Namespaces {
    /// No rules: every channel has the defaults.
    pub fn new() -> Self {
        Namespaces::default()
    }

    /// The same rules plus `pattern` → `options`, after the others.
    pub fn with(mut self, pattern: impl Into<String>, options: ChannelOptions) -> Self {
        self.rules.push((ChannelPattern::new(pattern), options));
        self
    }

    /// The options of channels no rule covers.
    pub fn with_defaults(mut self, options: ChannelOptions) -> Self {
        self.defaults = options;
        self
    }

    /// The options of `channel`.
    pub fn options_for(&self, channel: &str) -> &ChannelOptions {
        self.rule_for(channel).unwrap_or(&self.defaults)
    }

    /// The options of the first rule whose pattern covers `channel`;
    /// `None` when no rule does (the channel has the defaults). The
    /// server's user channels (`#USER`) take client publishes only from a
    /// rule that names them: the defaults never open them.
    pub fn rule_for(&self, channel: &str) -> Option<&ChannelOptions> {
        self.rules
            .iter()
            .find(|(pattern, _)| pattern.matches(channel))
            .map(|(_, options)| options)
    }

    /// Whether no rule is set (every channel has the defaults).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The history bounds of `channel`: its namespace's, capped by the
    /// broker's own `max_len` and `max_age` (which apply where the
    /// namespace sets none).
    pub fn history_bounds(
        &self,
        channel: &str,
        max_len: usize,
        max_age: Duration,
    ) -> (usize, Duration) {
        let options = self.options_for(channel);
        (
            options.history_size.map_or(max_len, |n| n.min(max_len)),
            options.history_ttl.map_or(max_age, |t| t.min(max_age)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_covering_rule_wins() {
        let chat = ChannelOptions::default().with_presence(true);
        let room = ChannelOptions::default().with_history_size(5);
        let ns = Namespaces::new()
            .with("chat:room-1", room.clone())
            .with("chat:*", chat.clone());
        assert_eq!(ns.options_for("chat:room-1"), &room);
        assert_eq!(ns.options_for("chat:room-2"), &chat);
    }

    #[test]
    fn an_uncovered_channel_has_the_defaults() {
        let defaults = ChannelOptions::default().with_history_ttl(Duration::from_secs(9));
        let ns = Namespaces::new()
            .with("chat:*", ChannelOptions::default().with_join_leave(true))
            .with_defaults(defaults.clone());
        assert_eq!(ns.options_for("news"), &defaults);
        assert!(!Namespaces::new().options_for("x").presence);
    }

    #[test]
    fn history_bounds_are_capped_by_the_brokers() {
        let age = Duration::from_secs(60);
        let ns = Namespaces::new()
            .with("chat:*", ChannelOptions::default().with_history_size(3))
            .with("big:*", ChannelOptions::default().with_history_size(5_000))
            .with(
                "long:*",
                ChannelOptions::default().with_history_ttl(Duration::from_secs(600)),
            );
        assert_eq!(ns.history_bounds("chat:a", 1_000, age), (3, age));
        assert_eq!(ns.history_bounds("big:a", 1_000, age), (1_000, age));
        assert_eq!(ns.history_bounds("long:a", 1_000, age), (1_000, age));
        assert_eq!(ns.history_bounds("other", 1_000, age), (1_000, age));
    }
}
