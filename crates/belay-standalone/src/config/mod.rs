//! The config file: every server option in one TOML file with documented
//! defaults ([`defaults_file`]), environment overrides
//! (`BELAY_SECTION_NAME`, e.g. `BELAY_AUTH_JWT_SECRET`), and a check that
//! reports every error with its line ([`Settings::parse`]). Unknown
//! sections and keys are errors, with the closest known name suggested.

mod check;
mod defaults;
mod namespace_order;
mod namespaces;
mod plan;
#[cfg(test)]
mod proxy_urls;
mod schema;
mod stray;
mod suggest;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use defaults::defaults_file;
pub use plan::{BrokerPlan, LogFormat, LogPlan, Plan, PlanError};
pub use stray::{stray_variables, StrayVariable};

/// One problem in a config file (or in the environment).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    /// 1-based line in the file; 0 when the problem is not in the file (an
    /// environment variable, a missing setting).
    pub line: usize,
    /// 1-based column (0 with `line` 0).
    pub column: usize,
    /// What is wrong, naming the setting.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(
                f,
                "line {}, column {}: {}",
                self.line, self.column, self.message
            )
        }
    }
}

/// Why a config file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file (or the environment) has errors: all of them, in order.
    #[error("{} error(s):\n{}", .0.len(), .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<ConfigError>),
}

/// A checked value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    List(Vec<String>),
}

/// Checked settings: every key of the schema with a default is present.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    values: BTreeMap<&'static str, Value>,
    /// The `[[namespace]]` tables, in file order.
    namespaces: Vec<namespaces::Table>,
}

impl Settings {
    /// Read and check the file at `path`, with the process's environment.
    pub fn load(path: &Path) -> Result<Settings, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Settings::parse(&text, Some(path), |var| std::env::var(var).ok())
            .map_err(LoadError::Invalid)
    }

    /// Check `text`, the file at `path` if it has one (relative file
    /// names are read from its directory), with environment variables
    /// looked up by `env`. Every error is reported, in file order.
    pub fn parse(
        text: &str,
        path: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, Vec<ConfigError>> {
        check::check(text, path, &env)
    }

    /// Every default.
    pub fn defaults() -> Settings {
        check::check("", None, &|_| None).unwrap_or(Settings {
            values: BTreeMap::new(),
            namespaces: Vec::new(),
        })
    }

    /// The server's namespaces from the `[[namespace]]` tables.
    pub(crate) fn namespaces(&self) -> belay_server::Namespaces {
        namespaces::namespaces(&self.namespaces)
    }

    pub(crate) fn int(&self, path: &str) -> i64 {
        match self.values.get(path) {
            Some(Value::Int(n)) => *n,
            _ => 0,
        }
    }

    pub(crate) fn uint(&self, path: &str) -> u64 {
        u64::try_from(self.int(path)).unwrap_or(0)
    }

    pub(crate) fn size(&self, path: &str) -> usize {
        usize::try_from(self.int(path)).unwrap_or(0)
    }

    pub(crate) fn float(&self, path: &str) -> Option<f64> {
        match self.values.get(path) {
            Some(Value::Float(n)) => Some(*n),
            _ => None,
        }
    }

    pub(crate) fn flag(&self, path: &str) -> bool {
        matches!(self.values.get(path), Some(Value::Bool(true)))
    }

    pub(crate) fn text(&self, path: &str) -> Option<&str> {
        match self.values.get(path) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn list(&self, path: &str) -> &[String] {
        match self.values.get(path) {
            Some(Value::List(l)) => l,
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests;
