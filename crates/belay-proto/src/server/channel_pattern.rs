//! [`ChannelPattern`]: which channels a grant covers: a name exactly, or
//! every name with a prefix (`chat:*`), or every name (`*`).

/// A pattern of channel names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelPattern(String);

impl ChannelPattern {
    /// `text`: a channel name, or a prefix followed by `*`.
    pub fn new(text: impl Into<String>) -> Self {
        ChannelPattern(text.into())
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `channel` is covered. Only a trailing `*` is special.
    pub fn matches(&self, channel: &str) -> bool {
        match self.0.strip_suffix('*') {
            Some(prefix) => channel.starts_with(prefix),
            None => self.0 == channel,
        }
    }

    /// Whether every channel `other` covers, this pattern covers too: a
    /// name is covered by what matches it, a prefix (`chat:admin:*`) only
    /// by a prefix it starts with (`chat:*`, `*`).
    pub fn covers(&self, other: &ChannelPattern) -> bool {
        match (self.0.strip_suffix('*'), other.0.strip_suffix('*')) {
            (Some(prefix), Some(narrower)) => narrower.starts_with(prefix),
            (None, Some(_)) => false,
            (_, None) => self.matches(&other.0),
        }
    }

    /// Whether any of `patterns` covers `channel`.
    pub fn any_matches<'a>(patterns: impl IntoIterator<Item = &'a str>, channel: &str) -> bool {
        patterns
            .into_iter()
            .any(|p| ChannelPattern::new(p).matches(channel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_matches_only_itself() {
        let p = ChannelPattern::new("news");
        assert!(p.matches("news"));
        assert!(!p.matches("news2"));
        assert!(!p.matches("new"));
    }

    #[test]
    fn a_trailing_star_matches_the_prefix() {
        let p = ChannelPattern::new("chat:*");
        assert!(p.matches("chat:"));
        assert!(p.matches("chat:room-1"));
        assert!(!p.matches("chats"));
        assert!(ChannelPattern::new("*").matches("anything"));
    }

    #[test]
    fn a_star_elsewhere_is_a_plain_character() {
        assert!(ChannelPattern::new("a*b").matches("a*b"));
        assert!(!ChannelPattern::new("a*b").matches("axb"));
    }

    #[test]
    fn any_of_several_patterns() {
        assert!(ChannelPattern::any_matches(["feed", "chat:*"], "chat:1"));
        assert!(!ChannelPattern::any_matches(["feed", "chat:*"], "orders"));
        assert!(!ChannelPattern::any_matches([], "feed"));
    }
}
