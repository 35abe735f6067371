//! `belay token`: tokens for development, against a config file, as
//! Centrifugo's `gentoken` and `checktoken`: `mint` signs one the config's
//! `[auth]` accepts, `inspect` shows a token's header and claims without
//! checking it, `check` checks one as the server would.

use std::path::{Path, PathBuf};
use std::time::Duration;

use belay_server::auth::{Authenticator, Principal, Verdict};
use belay_standalone::auth::{decode_unverified, MintClaims, TokenMint};
use belay_standalone::{Plan, Settings};

/// Arguments of `belay token`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: TokenCmd,
}

#[derive(Debug, clap::Subcommand)]
enum TokenCmd {
    /// Print a token the config's `[auth]` (auth.mode = "jwt") accepts.
    Mint {
        /// The config file (the server's).
        #[arg(long)]
        config: PathBuf,
        /// The user (`sub`).
        #[arg(long)]
        user: String,
        /// How long it is valid, e.g. `30m`, `1h`, `24h`.
        #[arg(long, value_parser = parse_ttl, default_value = "1h")]
        ttl: Duration,
        /// Channel patterns it may subscribe to (`channels`), comma-separated.
        #[arg(long, value_delimiter = ',')]
        channels: Vec<String>,
        /// Channel patterns it may publish to from the client (`publish`).
        #[arg(long, value_delimiter = ',')]
        publish: Vec<String>,
        /// What other clients are told about the user (`info`), as JSON.
        #[arg(long)]
        info: Option<String>,
        /// A subscription token for this channel instead of a connection token.
        #[arg(long)]
        channel: Option<String>,
        /// A resident host's token: the host it names (`host`, docs/HOSTS.md).
        #[arg(long, conflicts_with = "channel")]
        host: Option<String>,
        /// The private key (PEM) for RS256 or ES256: the config names only the public one.
        #[arg(long, value_name = "FILE")]
        key: Option<PathBuf>,
    },
    /// Show a token's header and claims, without checking its signature.
    Inspect {
        /// The token.
        token: String,
    },
    /// Check a token as the server with this config would (exit 1 if refused).
    Check {
        /// The config file (the server's).
        #[arg(long)]
        config: PathBuf,
        /// With `--channel`: a subscription token for that channel, of `--user`.
        #[arg(long)]
        channel: Option<String>,
        /// The connection's user, for a subscription token.
        #[arg(long)]
        user: Option<String>,
        /// The token.
        token: String,
    },
}

/// `belay token`; `Ok(false)` when `check` refused the token.
pub(crate) fn run(args: &Args) -> Result<bool, String> {
    match &args.command {
        TokenCmd::Mint {
            config,
            user,
            ttl,
            channels,
            publish,
            info,
            channel,
            host,
            key,
        } => {
            let settings = load(config)?;
            let pem = match key {
                Some(path) => {
                    Some(std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?)
                }
                None => None,
            };
            let mint =
                TokenMint::from_settings(&settings, pem.as_deref()).map_err(|e| e.to_string())?;
            let mut claims = MintClaims::new(user.clone(), *ttl);
            claims.channels = (!channels.is_empty()).then(|| channels.clone());
            claims.publish = (!publish.is_empty()).then(|| publish.clone());
            claims.channel = channel.clone();
            if let Some(id) = host {
                if !belay_proto::host::valid_host_id(id) {
                    return Err(format!(
                        "--host {id:?} is not a host id (1-128 of A-Z a-z 0-9 - _ .)"
                    ));
                }
            }
            claims.host = host.clone();
            claims.info = match info {
                Some(text) => Some(
                    serde_json::from_str(text).map_err(|e| format!("--info is not JSON: {e}"))?,
                ),
                None => None,
            };
            println!("{}", mint.mint(&claims).map_err(|e| e.to_string())?);
            Ok(true)
        }
        TokenCmd::Inspect { token } => {
            let (header, claims) = decoded(token)?;
            println!(
                "{}",
                serde_json::json!({ "header": header, "claims": claims, "verified": false })
            );
            Ok(true)
        }
        TokenCmd::Check {
            config,
            channel,
            user,
            token,
        } => check(config, channel.as_deref(), user.as_deref(), token),
    }
}

fn load(path: &Path) -> Result<Settings, String> {
    Settings::load(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The header and claims of `token`, unverified.
fn decoded(token: &str) -> Result<(serde_json::Value, serde_json::Value), String> {
    decode_unverified(token)
}

fn check(
    config: &Path,
    channel: Option<&str>,
    user: Option<&str>,
    token: &str,
) -> Result<bool, String> {
    let settings = load(config)?;
    let plan = Plan::from_settings(&settings).map_err(|e| format!("{}: {e}", config.display()))?;
    let Some(auth) = plan.auth else {
        return Err(format!(
            "{}: auth.mode is not \"jwt\": the server checks no tokens",
            config.display()
        ));
    };
    let verdict = match channel {
        None => auth
            .authenticate(Some(token))
            .map(|principal| format!("a connection token of user {:?}", principal.user)),
        Some(channel) => {
            let principal = Principal::user(user.unwrap_or_default());
            match auth.check_subscription_token(&principal, channel, Some(token)) {
                Verdict::Now(answer) => answer.map(|_| {
                    format!(
                        "a subscription token of user {:?} for {channel:?}",
                        principal.user
                    )
                }),
                _ => return Err("the authenticator answers later: not a JWT config".into()),
            }
        }
    };
    match verdict {
        Ok(what) => {
            let (_, claims) = decoded(token)?;
            println!("valid: {what}; claims {claims}");
            Ok(true)
        }
        Err(refused) => {
            println!("refused: {refused}");
            Ok(false)
        }
    }
}

/// `30m`, `1h`, `24h` or plain seconds.
fn parse_ttl(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map_or((s, "s"), |i| (&s[..i], &s[i..]));
    let value: u64 = number
        .parse()
        .map_err(|_| format!("invalid duration {s:?}"))?;
    let secs = match unit {
        "s" => value,
        "m" => value.saturating_mul(60),
        "h" => value.saturating_mul(3_600),
        "d" => value.saturating_mul(86_400),
        other => return Err(format!("unknown unit {other:?} in {s:?} (s, m, h, d)")),
    };
    Ok(Duration::from_secs(secs))
}
