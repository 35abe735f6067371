//! `[[namespace]]` tables: per-pattern channel settings (history bounds,
//! presence, who may subscribe and publish), checked key by key like the rest of the file and turned into
//! the server's [`Namespaces`] (first matching table wins, in file order).

use std::collections::BTreeMap;
use std::time::Duration;

use belay_server::{Access, ChannelOptions, Namespaces};

use super::schema::{Key, Kind};
use super::Value;

const fn key(path: &'static str, kind: Kind, doc: &'static str) -> Key {
    Key {
        path,
        kind,
        default: None,
        doc,
        secret: false,
    }
}

/// The keys of one `[[namespace]]` table.
pub(crate) const NAMESPACE_KEYS: &[Key] = &[
    key(
        "namespace.pattern",
        Kind::Str,
        "channels this table covers: a name, or a prefix ending in `*` (`chat:*`); required",
    ),
    key(
        "namespace.history_size",
        Kind::Int {
            min: 0,
            max: 1_000_000,
        },
        "publications kept per channel (at most history.max_len)",
    ),
    key(
        "namespace.history_ttl_ms",
        Kind::Int {
            min: 1,
            max: 86_400_000,
        },
        "how long a publication is kept, ms (at most history.max_age_secs)",
    ),
    key(
        "namespace.presence",
        Kind::Bool,
        "track the channel's subscribers as members",
    ),
    key(
        "namespace.join_leave",
        Kind::Bool,
        "publish joins and leaves on $presence:CHANNEL",
    ),
    key(
        "namespace.subscribe",
        Kind::Choice(ACCESS),
        "who may subscribe: \"grant\" (as the token's `channels` claim allows; the default), \"anyone\", \"nobody\", \"backend\" (asked at proxy.subscribe_url), or \"token\" (each subscribe carries a subscription token: a JWT with `sub`, `channel`, `exp`; needs auth.mode = \"jwt\")",
    ),
    key(
        "namespace.publish",
        Kind::Choice(PUBLISH_ACCESS),
        "who may publish from the client: \"grant\" (as the token's `publish` claim allows; the default), \"anyone\", \"nobody\", or \"backend\" (approved at proxy.publish_url)",
    ),
];

/// The names of [`Access`].
const ACCESS: &[&str] = &["grant", "anyone", "nobody", "backend", "token"];
/// The names of [`Access`] for publishing (tokens are for subscribes).
const PUBLISH_ACCESS: &[&str] = &["grant", "anyone", "nobody", "backend"];

/// The key `namespace.NAME`, if there is one.
pub(crate) fn find(name: &str) -> Option<&'static Key> {
    NAMESPACE_KEYS
        .iter()
        .find(|k| k.path.strip_prefix("namespace.") == Some(name))
}

/// One checked `[[namespace]]` table.
pub(crate) type Table = BTreeMap<&'static str, Value>;

/// The server's namespaces from the checked tables, in file order.
pub(crate) fn namespaces(tables: &[Table]) -> Namespaces {
    tables.iter().fold(Namespaces::new(), |ns, table| {
        let Some(Value::Str(pattern)) = table.get("namespace.pattern") else {
            return ns;
        };
        let mut options = ChannelOptions::default();
        if let Some(Value::Int(n)) = table.get("namespace.history_size") {
            options = options.with_history_size(usize::try_from(*n).unwrap_or(0));
        }
        if let Some(Value::Int(ms)) = table.get("namespace.history_ttl_ms") {
            options =
                options.with_history_ttl(Duration::from_millis(u64::try_from(*ms).unwrap_or(1)));
        }
        let flag = |path| matches!(table.get(path), Some(Value::Bool(true)));
        options = options
            .with_presence(flag("namespace.presence"))
            .with_join_leave(flag("namespace.join_leave"));
        let access = |path| match table.get(path) {
            Some(Value::Str(name)) => Access::parse(name).unwrap_or_default(),
            _ => Access::Grant,
        };
        options = options
            .with_subscribe(access("namespace.subscribe"))
            .with_publish(access("namespace.publish"));
        ns.with(pattern.clone(), options)
    })
}
