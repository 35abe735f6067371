//! Reading a config file against the schema: every error at once, each
//! with its line and column, then the environment overrides, then the
//! defaults.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::schema::{self, Key, Kind};
use super::{namespace_order, namespaces, ConfigError, Settings, Value};

mod relations;

/// Check `text` (the file at `base`, whose directory relative paths start
/// from) with environment variables from `env`.
pub(crate) fn check(
    text: &str,
    base: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Settings, Vec<ConfigError>> {
    let mut checker = Checker {
        text,
        dir: base.and_then(Path::parent).map(Path::to_path_buf),
        errors: Vec::new(),
        values: BTreeMap::new(),
        spans: BTreeMap::new(),
        namespaces: Vec::new(),
        backend_rules: Vec::new(),
        namespace_bounds: Vec::new(),
    };
    let (doc, syntax) = DeTable::parse_recoverable(text);
    for error in syntax {
        let at = error.span().unwrap_or(0..0);
        checker.error_at(at, error.message().trim().to_owned());
    }
    checker.walk(doc.get_ref());
    checker.environment(env);
    checker.defaults();
    checker.relations();
    checker.backend_relations();
    checker.namespace_caps();
    if checker.errors.is_empty() {
        Ok(Settings {
            values: checker.values,
            namespaces: checker.namespaces,
        })
    } else {
        checker.errors.sort_by_key(|e| (e.line, e.column));
        Err(checker.errors)
    }
}

struct Checker<'t> {
    text: &'t str,
    dir: Option<PathBuf>,
    errors: Vec<ConfigError>,
    values: BTreeMap<&'static str, Value>,
    /// Where each setting given in the file is.
    spans: BTreeMap<&'static str, Range<usize>>,
    /// The checked `[[namespace]]` tables.
    namespaces: Vec<namespaces::Table>,
    /// Where a namespace leaves `subscribe` or `publish` to the backend
    /// (which then needs its proxy URL), or subscribes to tokens
    /// (`namespace.token`: which need JWT auth).
    backend_rules: Vec<(Range<usize>, &'static str)>,
    /// A namespace's `history_size` or `history_ttl_ms`, where it is
    /// written: checked against the global caps once they are known.
    namespace_bounds: Vec<(Range<usize>, &'static str, i64)>,
}

impl Checker<'_> {
    fn error_at(&mut self, at: Range<usize>, message: String) {
        let before = &self.text[..at.start.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        self.errors.push(ConfigError {
            line,
            column,
            message,
        });
    }

    fn walk(&mut self, doc: &DeTable<'_>) {
        let sections = schema::sections();
        for (section, value) in doc {
            let name = section.get_ref().as_ref();
            if name == "namespace" {
                self.namespace_tables(section.span(), value.get_ref());
                continue;
            }
            if !sections.contains(&name) {
                let hint = did_you_mean(name, sections.iter().copied(), "[", "]");
                self.error_at(section.span(), format!("unknown section [{name}]{hint}"));
                continue;
            }
            let Some(table) = value.get_ref().as_table() else {
                self.error_at(
                    section.span(),
                    format!("`{name}` must be a section ([{name}]), not a value"),
                );
                continue;
            };
            for (key, value) in table {
                self.setting(name, key, value);
            }
        }
    }

    /// `[[namespace]]`: an array of tables, each checked against
    /// [`namespaces::NAMESPACE_KEYS`], with a `pattern`.
    fn namespace_tables(&mut self, at: Range<usize>, value: &DeValue<'_>) {
        let Some(tables) = value.as_array() else {
            self.error_at(at, "`namespace` must be tables ([[namespace]])".into());
            return;
        };
        // Each table's pattern and where it is written, for the order check.
        let mut patterns: Vec<(String, Range<usize>)> = Vec::new();
        for table in tables.iter() {
            let Some(entries) = table.get_ref().as_table() else {
                self.error_at(
                    table.span(),
                    "`namespace` must be tables ([[namespace]])".into(),
                );
                continue;
            };
            let mut checked = namespaces::Table::new();
            for (key, value) in entries {
                let name = key.get_ref().as_ref();
                let Some(found) = namespaces::find(name) else {
                    let names = namespaces::NAMESPACE_KEYS.iter().map(|k| k.name());
                    let hint = did_you_mean(name, names, "`", "`");
                    self.error_at(
                        key.span(),
                        format!("unknown key `{name}` in [[namespace]]{hint}"),
                    );
                    continue;
                };
                match self.convert(found, value.get_ref()) {
                    Ok(v) => {
                        if v == Value::Str("backend".into()) {
                            self.backend_rules.push((value.span(), found.path));
                        }
                        if v == Value::Str("token".into()) {
                            self.backend_rules.push((value.span(), "namespace.token"));
                        }
                        if let (Value::Str(pattern), "namespace.pattern") = (&v, found.path) {
                            patterns.push((pattern.clone(), value.span()));
                        }
                        if let Value::Int(n) = v {
                            self.namespace_bounds.push((value.span(), found.path, n));
                        }
                        checked.insert(found.path, v);
                    }
                    Err(message) => {
                        self.error_at(value.span(), format!("{}: {message}", found.path))
                    }
                }
            }
            if !checked.contains_key("namespace.pattern") {
                self.error_at(table.span(), "a [[namespace]] needs a `pattern`".into());
            }
            self.namespaces.push(checked);
        }
        self.dead_namespaces(&patterns);
    }

    /// A namespace bound above the global cap would be cut to the cap
    /// without a word: an error at the namespace's value instead, naming
    /// the cap (and its value, from the file, the environment or the
    /// default).
    fn namespace_caps(&mut self) {
        let cap = |checker: &Self, path: &str| match checker.values.get(path) {
            Some(Value::Int(n)) => Some(*n),
            _ => None,
        };
        let max_len = cap(self, "history.max_len");
        let max_age_ms = cap(self, "history.max_age_secs").map(|secs| secs.saturating_mul(1_000));
        for (at, path, value) in std::mem::take(&mut self.namespace_bounds) {
            let (limit, global, unit) = match path {
                "namespace.history_size" => (max_len, "history.max_len", "publications"),
                "namespace.history_ttl_ms" => (max_age_ms, "history.max_age_secs (in ms)", "ms"),
                _ => continue,
            };
            if let Some(limit) = limit.filter(|limit| value > *limit) {
                self.error_at(
                    at,
                    format!("{path} = {value} is above {global} = {limit} {unit}: the channels would keep only that much; raise {global} or lower {path}"),
                );
            }
        }
    }

    /// A table an earlier one covers entirely can never match: an error at
    /// its pattern, naming the earlier one and its line.
    fn dead_namespaces(&mut self, patterns: &[(String, Range<usize>)]) {
        let names: Vec<&str> = patterns.iter().map(|(p, _)| p.as_str()).collect();
        for (later, earlier) in namespace_order::shadowed(&names) {
            let (earlier_pattern, earlier_at) = &patterns[earlier];
            let earlier_line = self.text[..earlier_at.start.min(self.text.len())]
                .matches('\n')
                .count()
                + 1;
            let message = format!(
                "[[namespace]] pattern {:?} can never match: the [[namespace]] {earlier_pattern:?} (line {earlier_line}) comes first and covers every channel it does (a channel takes the first table that covers it: list the narrower pattern first)",
                patterns[later].0
            );
            self.error_at(patterns[later].1.clone(), message);
        }
    }

    fn setting(
        &mut self,
        section: &str,
        key: &Spanned<std::borrow::Cow<'_, str>>,
        value: &Spanned<DeValue<'_>>,
    ) {
        let name = key.get_ref().as_ref();
        let path = format!("{section}.{name}");
        let Some(found) = schema::find(&path) else {
            let names = schema::KEYS
                .iter()
                .filter(|k| k.section() == section)
                .map(|k| k.name());
            let hint = did_you_mean(name, names, "`", "`");
            self.error_at(
                key.span(),
                format!("unknown key `{name}` in [{section}]{hint}"),
            );
            return;
        };
        match self.convert(found, value.get_ref()) {
            Ok(v) => {
                self.values.insert(found.path, v);
                self.spans.insert(found.path, value.span());
            }
            Err(message) => self.error_at(value.span(), format!("{}: {message}", found.path)),
        }
    }

    fn environment(&mut self, env: &dyn Fn(&str) -> Option<String>) {
        for key in schema::KEYS {
            let var = key.env_var();
            let Some(text) = env(&var) else { continue };
            match self.convert_env(key, &text) {
                Ok(v) => {
                    self.values.insert(key.path, v);
                    self.spans.remove(key.path);
                }
                Err(message) => self.errors.push(ConfigError {
                    line: 0,
                    column: 0,
                    message: format!("environment {var} ({}): {message}", key.path),
                }),
            }
        }
    }

    fn defaults(&mut self) {
        for key in schema::KEYS {
            if self.values.contains_key(key.path) {
                continue;
            }
            let Some(default) = key.default else { continue };
            let parsed = DeValue::parse(default)
                .map_err(|e| e.message().to_owned())
                .and_then(|v| self.convert(key, v.get_ref()));
            match parsed {
                Ok(v) => {
                    self.values.insert(key.path, v);
                }
                Err(message) => self.errors.push(ConfigError {
                    line: 0,
                    column: 0,
                    message: format!("the default of {} is invalid: {message}", key.path),
                }),
            }
        }
    }

    fn convert(&self, key: &Key, value: &DeValue<'_>) -> Result<Value, String> {
        let text = || value.as_str().map(str::to_owned);
        match key.kind {
            Kind::Int { min, max } => {
                let Some(int) = value.as_integer() else {
                    return Err(format!(
                        "expected a whole number, found {}",
                        value.type_str()
                    ));
                };
                let n = i64::from_str_radix(int.as_str(), int.radix())
                    .map_err(|_| "the number is too large".to_owned())?;
                in_range(n, min, max).map(Value::Int)
            }
            Kind::Float { above } => {
                let n = match (value.as_float(), value.as_integer()) {
                    (Some(f), _) => f.as_str().parse::<f64>().ok(),
                    (None, Some(i)) => i64::from_str_radix(i.as_str(), i.radix())
                        .ok()
                        .map(|n| n as f64),
                    _ => None,
                };
                let n =
                    n.ok_or_else(|| format!("expected a number, found {}", value.type_str()))?;
                if n.is_finite() && n > above {
                    Ok(Value::Float(n))
                } else {
                    Err(format!("expected a number above {above}, found {n}"))
                }
            }
            Kind::Bool => value
                .as_bool()
                .map(Value::Bool)
                .ok_or_else(|| format!("expected true or false, found {}", value.type_str())),
            Kind::List | Kind::Ranges => {
                let Some(items) = value.as_array() else {
                    return Err(format!(
                        "expected a list of strings, found {}",
                        value.type_str()
                    ));
                };
                let mut list = Vec::new();
                for item in items.iter() {
                    let Some(s) = item.get_ref().as_str() else {
                        return Err(format!(
                            "expected strings in the list, found {}",
                            item.get_ref().type_str()
                        ));
                    };
                    list.push(s.to_owned());
                }
                self.refine(key, Value::List(list))
            }
            _ => {
                let s = text()
                    .ok_or_else(|| format!("expected a string, found {}", value.type_str()))?;
                self.refine(key, Value::Str(s))
            }
        }
    }

    /// The same rules for a value given as an environment variable (lists
    /// comma-separated).
    fn convert_env(&self, key: &Key, text: &str) -> Result<Value, String> {
        match key.kind {
            Kind::Int { min, max } => text
                .trim()
                .parse::<i64>()
                .map_err(|_| "expected a whole number".to_owned())
                .and_then(|n| in_range(n, min, max))
                .map(Value::Int),
            Kind::Float { above } => match text.trim().parse::<f64>() {
                Ok(n) if n.is_finite() && n > above => Ok(Value::Float(n)),
                _ => Err(format!("expected a number above {above}")),
            },
            Kind::Bool => match text.trim() {
                "true" | "1" => Ok(Value::Bool(true)),
                "false" | "0" => Ok(Value::Bool(false)),
                _ => Err("expected true or false".into()),
            },
            Kind::List | Kind::Ranges => {
                let list = text
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                self.refine(key, Value::List(list))
            }
            _ => self.refine(key, Value::Str(text.to_owned())),
        }
    }

    /// The checks beyond the TOML type.
    fn refine(&self, key: &Key, value: Value) -> Result<Value, String> {
        if let (true, Value::Str(secret)) = (key.secret, &value) {
            let least = schema::least_secret_len(key.path);
            if secret.chars().count() < least {
                return Err(if secret.is_empty() {
                    "a secret cannot be empty (leave the setting out instead)".to_owned()
                } else {
                    format!(
                        "too short: at least {least} characters (found {}); use a long random value",
                        secret.chars().count()
                    )
                });
            }
        }
        match (key.kind, value) {
            (Kind::Choice(choices), Value::Str(s)) => {
                if choices.contains(&s.as_str()) {
                    Ok(Value::Str(s))
                } else {
                    Err(format!(
                        "expected one of {}, found \"{s}\"",
                        quoted(choices)
                    ))
                }
            }
            (Kind::File, Value::Str(s)) => {
                let path = match &self.dir {
                    Some(dir) if Path::new(&s).is_relative() => dir.join(&s),
                    _ => PathBuf::from(&s),
                };
                if path.is_file() {
                    Ok(Value::Str(path.to_string_lossy().into_owned()))
                } else {
                    Err(format!("no such file: {}", path.display()))
                }
            }
            (Kind::Addr, Value::Str(s)) => s
                .parse::<std::net::SocketAddr>()
                .map(|_| Value::Str(s.clone()))
                .map_err(|_| format!("expected IP:PORT, found \"{s}\"")),
            (Kind::BrokerUrl, Value::Str(s)) => {
                if s == "memory" || s.starts_with("redis://") || s.starts_with("rediss://") {
                    Ok(Value::Str(s))
                } else {
                    Err(format!(
                        "expected \"memory\" or a redis:// (rediss://) URL, found \"{s}\""
                    ))
                }
            }
            (Kind::BackendUrl, Value::Str(s)) => {
                // What the proxy's client accepts (hyper's URI parser), so
                // a URL that checks clean is one `belay serve` can use.
                let uri = s.parse::<hyper::Uri>().ok();
                let scheme = uri.as_ref().and_then(|u| u.scheme_str());
                if matches!(scheme, Some("http" | "https"))
                    && uri.as_ref().and_then(hyper::Uri::host).is_some()
                {
                    Ok(Value::Str(s))
                } else {
                    Err(format!(
                        "expected an http:// or https:// URL (http://HOST:PORT/PATH), found \"{s}\""
                    ))
                }
            }
            (Kind::Ranges, Value::List(list)) => {
                for item in &list {
                    item.parse::<belay_proto::server::IpRange>()
                        .map_err(|e| format!("\"{item}\": {e}"))?;
                }
                Ok(Value::List(list))
            }
            (_, value) => Ok(value),
        }
    }
}

fn in_range(n: i64, min: i64, max: i64) -> Result<i64, String> {
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(format!("expected {min} to {max}, found {n}"))
    }
}

fn quoted(choices: &[&str]) -> String {
    choices
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn did_you_mean<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
    open: &str,
    close: &str,
) -> String {
    super::suggest::closest(name, candidates)
        .map(|c| format!(" (did you mean {open}{c}{close}?)"))
        .unwrap_or_default()
}
