//! The Kubernetes recipe (examples/kubernetes/belay.yaml): the belay.toml
//! of its ConfigMap (pods sharing channels through Redis with Sentinel)
//! passes `belay config check` with the Secret's environment overrides, and the pod's grace period covers the drain its
//! settings configure (preStop, load-balancer delay, advising the pod's
//! connections, linger, requests in flight). The YAML is read line by line:
//! the manifest is ours and keeps a simple shape.

use std::path::PathBuf;

use belay_proto::server::DrainConfig;

/// The connections per pod the manifest's grace period is sized for (its
/// header comment says so).
const CONNECTIONS_PER_POD: f64 = 10_000.0;

fn manifest() -> String {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/kubernetes/belay.yaml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of the block under the line `header` (trimmed), dedented by
/// the block's indentation; the block ends at the first non-empty line
/// indented no deeper than the header.
fn block(yaml: &str, header: &str) -> Vec<String> {
    let mut lines = yaml.lines();
    let start = lines
        .by_ref()
        .find(|l| l.trim() == header)
        .unwrap_or_else(|| panic!("no `{header}` in the manifest"));
    let outer = start.len() - start.trim_start().len();
    let body: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > outer)
        .collect();
    let inner = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .expect("an empty block");
    body.iter()
        .map(|l| l.get(inner..).unwrap_or("").to_owned())
        .collect()
}

/// The value of `key: VALUE` or `key = VALUE` among `lines`, unquoted.
fn value(lines: &[String], key: &str) -> String {
    lines
        .iter()
        .find_map(|l| {
            let rest = l.trim().strip_prefix(key)?.trim_start();
            let rest = rest.strip_prefix(':').or_else(|| rest.strip_prefix('='))?;
            Some(rest.split('#').next()?.trim().trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| panic!("no `{key}` in {lines:#?}"))
}

fn number(lines: &[String], key: &str) -> f64 {
    value(lines, key)
        .parse()
        .unwrap_or_else(|e| panic!("{key}: {e}"))
}

fn lines(yaml: &str) -> Vec<String> {
    yaml.lines().map(str::to_owned).collect()
}

#[test]
fn the_configmaps_belay_toml_passes_config_check_with_the_secrets_overrides() {
    let yaml = manifest();
    let toml = block(&yaml, "belay.toml: |").join("\n");
    let dir = std::env::temp_dir().join(format!("belay-kubernetes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("belay.toml");
    std::fs::write(&file, toml).expect("write");
    let secrets = block(&yaml, "stringData:");
    let mut check = std::process::Command::new(env!("CARGO_BIN_EXE_belay"));
    check.args(["config", "check"]).arg(&file);
    let mut names = Vec::new();
    for line in secrets
        .iter()
        .filter(|l| !l.trim().is_empty() && !l.trim().starts_with('#'))
    {
        let (name, _) = line.split_once(':').expect("KEY: value");
        names.push(name.trim().to_owned());
        check.env(name.trim(), value(&secrets, name.trim()));
    }
    assert_eq!(
        names,
        ["BELAY_AUTH_JWT_SECRET", "BELAY_API_KEY", "BELAY_BROKER_URL"]
    );
    let out = check.output().expect("run belay");
    assert!(
        out.status.success(),
        "belay config check failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Without the Secret, the JWT mode has no secret: the check says so.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_belay"))
        .args(["config", "check"])
        .arg(&file)
        .env_remove("BELAY_AUTH_JWT_SECRET")
        .output()
        .expect("run belay");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_grace_period_covers_the_configured_drain() {
    let yaml = manifest();
    let toml = block(&yaml, "belay.toml: |");
    let all = lines(&yaml);
    let grace = number(&all, "terminationGracePeriodSeconds");
    let pre_stop = number(&block(&yaml, "preStop:"), "seconds");
    let lb_delay = number(&toml, "lb_delay_secs");
    let spread = number(&toml, "spread_ms") / 1000.0;
    let in_flight = number(&toml, "timeout_ms") / 1000.0;
    // Not settable in belay.toml: the drain's defaults.
    let drain = DrainConfig::default();
    let linger = drain.linger().as_secs_f64();
    let advising = CONNECTIONS_PER_POD / drain.advise_rate();
    let drain_time = pre_stop + lb_delay + advising + linger + in_flight;
    assert!(
        grace >= drain_time,
        "grace {grace} s < preStop {pre_stop} + lb_delay {lb_delay} + advising {advising} + linger {linger} + in flight {in_flight}"
    );
    assert!(
        grace >= pre_stop + lb_delay + spread + linger,
        "grace {grace} s < lb_delay + spread + linger"
    );
    // The readiness probe notices the drain's 503 well within lb_delay.
    let probe = block(&yaml, "readinessProbe:");
    assert_eq!(value(&probe, "path"), "/readyz");
    let noticed = number(&probe, "periodSeconds") * number(&probe, "failureThreshold");
    assert!(
        noticed < lb_delay,
        "readiness notices after {noticed} s, lb_delay is {lb_delay} s"
    );
}
