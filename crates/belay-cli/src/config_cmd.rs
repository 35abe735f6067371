//! `belay config`: check a config file, or print one with every default.

use std::path::PathBuf;

use belay_standalone::{defaults_file, stray_variables, LoadError, Plan, Settings};

/// Arguments of `belay config`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ConfigCommand {
    /// Check FILE (and the BELAY_* environment) without starting anything:
    /// every error with its line, then exit 2; `FILE: ok` and exit 0.
    Check {
        /// The TOML file.
        file: PathBuf,
    },
    /// Print a config file with every setting, its default, what it does
    /// and its environment variable.
    Defaults,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    match &args.command {
        ConfigCommand::Defaults => {
            print!("{}", defaults_file());
            Ok(())
        }
        ConfigCommand::Check { file } => {
            let name = file.display();
            let settings = match Settings::load(file) {
                Ok(settings) => settings,
                Err(LoadError::Invalid(errors)) => {
                    for error in &errors {
                        if error.line == 0 {
                            eprintln!("{name}: {}", error.message);
                        } else {
                            eprintln!("{name}:{}:{}: {}", error.line, error.column, error.message);
                        }
                    }
                    return Err(format!("{name}: {} error(s)", errors.len()));
                }
                Err(other) => return Err(other.to_string()),
            };
            // Keys and secrets are read as the server would read them.
            Plan::from_settings(&settings).map_err(|e| format!("{name}: {e}"))?;
            for stray in stray_variables(std::env::vars().map(|(name, _)| name)) {
                eprintln!("{name}: warning: {stray}");
            }
            println!("{name}: ok");
            Ok(())
        }
    }
}
