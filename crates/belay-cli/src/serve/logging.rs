//! Where `belay serve`'s log lines go and in what form: stderr, as text
//! (coloured only when stderr is a terminal, so files and journald get no
//! escape codes) or as one JSON object per line; the level from `RUST_LOG`
//! (default `info`). The lines themselves are listed in docs/OPERATIONS.md.

use std::io::IsTerminal;
use std::path::Path;

use belay_standalone::{LogFormat, LogPlan, Plan, Settings};
use tracing_subscriber::EnvFilter;

/// Warn about `BELAY_*` variables no setting reads (a misspelt override).
pub(crate) fn warn_stray_variables() {
    for stray in belay_standalone::stray_variables(std::env::vars().map(|(name, _)| name)) {
        tracing::warn!(target: "belay::server", variable = %stray.name, near = stray.near.as_deref(), "{stray}");
    }
}

/// The `[log]` section of the config file at `path`.
pub(crate) fn plan_of_file(path: &Path) -> Result<LogPlan, String> {
    let settings = Settings::load(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let plan = Plan::from_settings(&settings).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(plan.log)
}

/// Install the process's subscriber.
pub(crate) fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let lines = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => lines
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
        _ => lines.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}
