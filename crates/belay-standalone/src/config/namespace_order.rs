//! `[[namespace]]` tables that can never match: a channel takes the first
//! table whose pattern covers it, so a table listed after one that covers
//! every channel it does (`chat:admin:*` after `chat:*`, `news` after `*`)
//! is dead. That is an error, not a warning: the settings the file gives
//! that table (a `nobody`, a history bound) would silently not apply, which
//! is exactly the mistake that opens a channel the author meant to close.

use belay_proto::server::ChannelPattern;

/// For each pattern (in file order) that an earlier one covers entirely,
/// its index and the index of the first earlier one that does.
pub(crate) fn shadowed(patterns: &[&str]) -> Vec<(usize, usize)> {
    let patterns: Vec<ChannelPattern> = patterns.iter().map(|p| ChannelPattern::new(*p)).collect();
    (0..patterns.len())
        .filter_map(|later| {
            (0..later)
                .find(|&earlier| patterns[earlier].covers(&patterns[later]))
                .map(|earlier| (later, earlier))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::shadowed;
    use crate::config::Settings;

    #[test]
    fn a_narrower_pattern_after_a_wider_one_is_shadowed() {
        assert_eq!(shadowed(&["chat:*", "chat:admin:*"]), [(1, 0)]);
        assert_eq!(shadowed(&["*", "news"]), [(1, 0)]);
        assert_eq!(shadowed(&["news", "news"]), [(1, 0)]);
    }

    #[test]
    fn a_narrower_pattern_first_and_unrelated_patterns_are_not() {
        assert!(shadowed(&["chat:admin:*", "chat:*", "news", "news:*"]).is_empty());
        // `a*b` is a name (only a trailing `*` is special): `a*` covers it.
        assert_eq!(shadowed(&["a*", "a*b"]), [(1, 0)]);
        assert!(shadowed(&["a*b", "a*"]).is_empty());
    }

    #[test]
    fn the_checker_reports_the_dead_table_at_its_pattern_naming_the_first() {
        let text = "[[namespace]]\npattern = \"chat:*\"\npresence = true\n\n[[namespace]]\npattern = \"chat:admin:*\"\npublish = \"nobody\"\n";
        let found = Settings::parse(text, None, |_| None).expect_err("a dead namespace");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].column), (6, 11), "{}", found[0]);
        assert!(
            found[0]
                .message
                .contains("\"chat:admin:*\" can never match")
                && found[0].message.contains("\"chat:*\" (line 2)"),
            "{}",
            found[0]
        );
    }
}
