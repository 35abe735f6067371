//! The checker's rules between settings: what one setting needs of
//! another (TLS files in pairs, a JWT key for JWT auth, a backend URL for
//! each backend decision), reported at the setting's place in the file.

use std::collections::BTreeMap;

use super::Checker;
use crate::config::{ConfigError, Value};

impl Checker<'_> {
    /// Rules between settings.
    pub(super) fn relations(&mut self) {
        let has = |v: &BTreeMap<&str, Value>, p: &str| v.contains_key(p);
        match (has(&self.values, "tls.cert"), has(&self.values, "tls.key")) {
            (true, false) => {
                self.related("tls.cert", "tls.cert needs tls.key (give both or neither)")
            }
            (false, true) => {
                self.related("tls.key", "tls.key needs tls.cert (give both or neither)")
            }
            _ => {}
        }
        let urls = match self.values.get("broker.sentinels") {
            Some(Value::List(urls)) => urls.clone(),
            _ => Vec::new(),
        };
        if let Some(url) = urls
            .iter()
            .find(|u| !u.starts_with("redis://") && !u.starts_with("rediss://"))
        {
            self.related(
                "broker.sentinels",
                &format!("broker.sentinels: expected redis:// (rediss://) URLs, found \"{url}\""),
            );
        }
        let sentinels = !urls.is_empty();
        if sentinels && !has(&self.values, "broker.sentinel_master") {
            self.related(
                "broker.sentinels",
                "broker.sentinels needs broker.sentinel_master (the name the Sentinels watch the primary under)",
            );
        }
        if has(&self.values, "broker.sentinel_master") && !sentinels {
            self.related(
                "broker.sentinel_master",
                "broker.sentinel_master needs broker.sentinels (where the Sentinels are)",
            );
        }
        self.cluster_relations(sentinels);
        if self.values.get("auth.mode") == Some(&Value::Str("jwt".into())) {
            let hs = self.values.get("auth.jwt_algorithm") == Some(&Value::Str("HS256".into()));
            if hs && !has(&self.values, "auth.jwt_secret") {
                self.related(
                    "auth.mode",
                    "auth.mode = \"jwt\" with HS256 needs auth.jwt_secret (or BELAY_AUTH_JWT_SECRET)",
                );
            }
            if !hs && !has(&self.values, "auth.jwt_public_key") {
                self.related(
                    "auth.mode",
                    "auth.mode = \"jwt\" with RS256 or ES256 needs auth.jwt_public_key",
                );
            }
        }
    }

    /// A Redis Cluster is found from its nodes, not through Sentinels (see
    /// `broker.cluster`).
    fn cluster_relations(&mut self, sentinels: bool) {
        let cluster = self.values.get("broker.cluster") == Some(&Value::Bool(true));
        let nodes = match self.values.get("broker.cluster_nodes") {
            Some(Value::List(urls)) => urls.clone(),
            _ => Vec::new(),
        };
        if let Some(url) = nodes
            .iter()
            .find(|u| !u.starts_with("redis://") && !u.starts_with("rediss://"))
        {
            self.related(
                "broker.cluster_nodes",
                &format!(
                    "broker.cluster_nodes: expected redis:// (rediss://) URLs, found \"{url}\""
                ),
            );
        }
        if !nodes.is_empty() && !cluster {
            self.related(
                "broker.cluster_nodes",
                "broker.cluster_nodes needs broker.cluster = true",
            );
        }
        if cluster && sentinels {
            self.related(
                "broker.cluster",
                "broker.cluster and broker.sentinels do not go together: a Redis Cluster is found from its own nodes",
            );
        }
    }

    /// A backend decision needs the backend's URL.
    pub(super) fn backend_relations(&mut self) {
        if self.values.get("auth.mode") == Some(&Value::Str("proxy".into()))
            && !self.values.contains_key("proxy.connect_url")
        {
            self.related(
                "auth.mode",
                "auth.mode = \"proxy\" needs proxy.connect_url (where the backend says who a connection is)",
            );
        }
        let jwt = self.values.get("auth.mode") == Some(&Value::Str("jwt".into()));
        for (at, path) in std::mem::take(&mut self.backend_rules) {
            if path == "namespace.token" {
                if !jwt {
                    self.error_at(
                        at,
                        "subscribe = \"token\" needs auth.mode = \"jwt\" (subscription tokens are JWTs)"
                            .into(),
                    );
                }
                continue;
            }
            let (name, url) = if path == "namespace.subscribe" {
                ("subscribe", "proxy.subscribe_url")
            } else {
                ("publish", "proxy.publish_url")
            };
            if !self.values.contains_key(url) {
                self.error_at(at, format!("{name} = \"backend\" needs {url}"));
            }
        }
    }

    /// An error about `path`, at its place in the file if it is there.
    fn related(&mut self, path: &str, message: &str) {
        match self.spans.get(path).cloned() {
            Some(at) => self.error_at(at, message.to_owned()),
            None => self.errors.push(ConfigError {
                line: 0,
                column: 0,
                message: message.to_owned(),
            }),
        }
    }
}
