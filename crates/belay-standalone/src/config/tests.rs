//! Tests of the config file: every error with its line, the defaults, the
//! environment, the rules between settings.

use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn errors(text: &str) -> Vec<ConfigError> {
    Settings::parse(text, None, no_env).expect_err("the file has errors")
}

#[test]
fn the_defaults_file_checks_clean_and_means_the_defaults() {
    let text = defaults_file();
    let parsed = Settings::parse(&text, None, no_env).expect("the defaults file is valid");
    assert_eq!(parsed, Settings::defaults());
    assert_eq!(Settings::defaults().size("limits.max_frame_len"), 65_536);
    assert_eq!(Settings::defaults().text("broker.url"), Some("memory"));
}

#[test]
fn every_error_is_reported_with_its_line() {
    let text = "[server]\nlisten = \"127.0.0.1:9000\"\n\n[limits]\nmax_fram_len = 10\nburst = \"many\"\nmax_in_flight = 0\n";
    let found = errors(text);
    let lines: Vec<usize> = found.iter().map(|e| e.line).collect();
    assert_eq!(lines, [5, 6, 7], "{found:?}");
    assert!(found[0]
        .message
        .contains("unknown key `max_fram_len` in [limits]"));
    assert!(
        found[0].message.contains("did you mean `max_frame_len`?"),
        "{}",
        found[0]
    );
    assert!(found[1]
        .message
        .contains("limits.burst: expected a whole number, found string"));
    assert!(found[2]
        .message
        .contains("limits.max_in_flight: expected 1 to"));
    assert_eq!(found[1].column, 9, "points at the value");
}

#[test]
fn an_unknown_section_is_an_error_with_a_suggestion() {
    let found = errors("[limit]\nburst = 10\n");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].line, 1);
    assert!(found[0]
        .message
        .contains("unknown section [limit] (did you mean [limits]?)"));
}

#[test]
fn a_syntax_error_is_reported_with_its_line() {
    let found = errors("[server]\nlisten = \"127.0.0.1:80\"\naccept_rate = = 3\n");
    assert!(found.iter().any(|e| e.line == 3), "{found:?}");
}

#[test]
fn a_value_where_a_section_belongs_is_an_error() {
    let found = errors("limits = 5\n");
    assert!(found[0].message.contains("`limits` must be a section"));
}

#[test]
fn values_are_checked_beyond_their_type() {
    let found = errors(
        "[server]\nlisten = \"localhost\"\n[broker]\nurl = \"http://x\"\n[auth]\nmode = \"basic\"\n[network]\ntrusted_proxies = [\"10.0.0.0/99\"]\n",
    );
    let text: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert_eq!(found.len(), 4, "{text:?}");
    assert!(text[0].contains("expected IP:PORT"));
    assert!(text[1].contains("expected \"memory\" or a redis://"));
    assert!(text[2].contains("expected one of \"none\", \"jwt\""));
    assert!(text[3].contains("10.0.0.0/99"));
}

#[test]
fn an_environment_variable_wins_over_the_file() {
    let env = |var: &str| (var == "BELAY_LIMITS_BURST").then(|| "7".to_owned());
    let settings = Settings::parse("[limits]\nburst = 10\n", None, env).expect("valid");
    assert_eq!(settings.int("limits.burst"), 7);
}

#[test]
fn a_bad_environment_variable_is_reported_by_name() {
    let env = |var: &str| (var == "BELAY_HEARTBEAT_PING_INTERVAL_MS").then(|| "soon".to_owned());
    let found = Settings::parse("", None, env).expect_err("invalid");
    assert_eq!(found[0].line, 0);
    assert!(found[0]
        .message
        .starts_with("environment BELAY_HEARTBEAT_PING_INTERVAL_MS (heartbeat.ping_interval_ms)"));
}

#[test]
fn half_a_tls_pair_and_jwt_without_a_key_are_errors() {
    let dir = std::env::temp_dir().join(format!("belay-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let cert = dir.join("cert.pem");
    std::fs::write(&cert, "x").expect("write");
    let text = format!(
        "[tls]\ncert = \"{}\"\n[auth]\nmode = \"jwt\"\n",
        cert.display()
    );
    let found = errors(&text);
    let text: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert_eq!(found.len(), 2, "{text:?}");
    assert!(text[0].contains("tls.cert needs tls.key"));
    assert!(text[1].contains("needs auth.jwt_secret"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_file_is_an_error_and_a_relative_one_is_read_beside_the_config() {
    let dir = std::env::temp_dir().join(format!("belay-config-rel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("key.pem"), "x").expect("write");
    let config = dir.join("belay.toml");
    let found = Settings::parse(
        "[auth]\njwt_public_key = \"nope.pem\"\n",
        Some(&config),
        no_env,
    )
    .expect_err("missing");
    assert!(found[0].message.contains("no such file"), "{}", found[0]);
    let settings = Settings::parse(
        "[auth]\njwt_public_key = \"key.pem\"\n",
        Some(&config),
        no_env,
    )
    .expect("found beside the config");
    assert_eq!(
        settings.text("auth.jwt_public_key"),
        Some(dir.join("key.pem").to_string_lossy().as_ref())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plan_carries_the_settings_into_the_server_config() {
    let text = "[server]\nlisten = \"127.0.0.1:9001\"\n[limits]\nmax_frame_len = 4096\n[heartbeat]\nping_interval_ms = 5000\n[broker]\nurl = \"redis://127.0.0.1:6379\"\n";
    let settings = Settings::parse(text, None, no_env).expect("valid");
    let plan = Plan::from_settings(&settings).expect("a plan");
    assert_eq!(plan.listen, "127.0.0.1:9001".parse().expect("addr"));
    assert_eq!(plan.server.limits.max_frame_len(), 4096);
    assert_eq!(
        plan.server.limits.ping_interval(),
        std::time::Duration::from_secs(5)
    );
    assert!(
        matches!(plan.broker, BrokerPlan::Redis { ref url, .. } if url == "redis://127.0.0.1:6379")
    );
    assert!(plan.auth.is_none());
}

#[test]
fn the_api_key_comes_from_the_environment() {
    let env = |var: &str| (var == "BELAY_API_KEY").then(|| "k1-of-some-length-0123".to_owned());
    let settings = Settings::parse("", None, env).expect("valid");
    let plan = Plan::from_settings(&settings).expect("a plan");
    assert_eq!(
        plan.api,
        Some(("k1-of-some-length-0123".to_owned(), 1_048_576))
    );
}

#[test]
fn the_presence_ttl_defaults_to_60_s_is_checked_and_reaches_the_redis_plan() {
    let ttl = |text: &str| {
        let settings = Settings::parse(text, None, no_env).expect("valid");
        match Plan::from_settings(&settings).expect("a plan").broker {
            BrokerPlan::Redis { presence_ttl, .. } => presence_ttl,
            BrokerPlan::Memory => panic!("a Redis broker expected"),
        }
    };
    let redis = "[broker]\nurl = \"redis://127.0.0.1:6379\"\n";
    assert_eq!(ttl(redis), Some(std::time::Duration::from_secs(60)));
    assert_eq!(
        ttl(&format!("{redis}presence_ttl_ms = 2000\n")),
        Some(std::time::Duration::from_secs(2))
    );
    let found = errors(&format!("{redis}presence_ttl_ms = 999\n"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].line, 3);
    assert!(
        found[0]
            .message
            .contains("broker.presence_ttl_ms: expected 1000 to 86400000, found 999"),
        "{}",
        found[0]
    );
    let env = |var: &str| (var == "BELAY_BROKER_PRESENCE_TTL_MS").then(|| "0".to_owned());
    let found = Settings::parse(redis, None, env).expect_err("out of range");
    assert!(
        found[0].message.contains("BELAY_BROKER_PRESENCE_TTL_MS"),
        "{found:?}"
    );
}

#[test]
fn a_namespace_bound_above_the_global_cap_is_an_error_at_its_line() {
    let text = "[history]\nmax_len = 100\n\n[[namespace]]\npattern = \"chat:*\"\nhistory_size = 500\nhistory_ttl_ms = 7200000\n";
    let found = errors(text);
    let lines: Vec<usize> = found.iter().map(|e| e.line).collect();
    assert_eq!(lines, [6, 7], "{found:?}");
    assert!(
        found[0].message.starts_with(
            "namespace.history_size = 500 is above history.max_len = 100 publications"
        ),
        "{}",
        found[0]
    );
    assert!(
        found[1]
            .message
            .contains("is above history.max_age_secs (in ms)"),
        "{}",
        found[1]
    );
    let within =
        "[history]\nmax_len = 100\n\n[[namespace]]\npattern = \"chat:*\"\nhistory_size = 100\n";
    assert!(Settings::parse(within, None, no_env).is_ok());
}

#[test]
fn sentinels_and_wait_replicas_reach_the_broker_plan() {
    let text = "[broker]\nurl = \"redis://:pw@unused\"\nsentinels = [\"redis://127.0.0.1:26379\", \"redis://127.0.0.1:26380\"]\nsentinel_master = \"main\"\nwait_replicas = 1\nwait_timeout_ms = 250\n";
    let settings = Settings::parse(text, None, no_env).expect("valid");
    let BrokerPlan::Redis {
        sentinel,
        wait_replicas,
        ..
    } = Plan::from_settings(&settings).expect("a plan").broker
    else {
        panic!("a Redis broker expected")
    };
    assert_eq!(
        sentinel,
        Some((
            "main".to_owned(),
            vec![
                "redis://127.0.0.1:26379".to_owned(),
                "redis://127.0.0.1:26380".to_owned()
            ]
        ))
    );
    assert_eq!(wait_replicas, (1, std::time::Duration::from_millis(250)));
}

#[test]
fn sentinels_without_a_master_name_and_a_name_without_sentinels_are_refused() {
    let redis = "[broker]\nurl = \"redis://unused\"\n";
    let found = errors(&format!(
        "{redis}sentinels = [\"redis://127.0.0.1:26379\"]\n"
    ));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains("broker.sentinel_master"),
        "{found:?}"
    );
    assert_eq!(found[0].line, 3);
    let found = errors(&format!("{redis}sentinel_master = \"main\"\n"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains("needs broker.sentinels"),
        "{found:?}"
    );
    let found = errors(&format!("{redis}wait_replicas = 65\n"));
    assert_eq!(found.len(), 1, "{found:?}");
    let found = errors(&format!(
        "{redis}sentinels = [\"127.0.0.1:26379\"]\nsentinel_master = \"main\"\n"
    ));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("expected redis://"), "{found:?}");
}

#[test]
fn a_redis_cluster_reaches_the_broker_plan_with_its_extra_nodes() {
    let text = "[broker]\nurl = \"redis://127.0.0.1:7000\"\ncluster = true\ncluster_nodes = [\"redis://127.0.0.1:7001\"]\n";
    let settings = Settings::parse(text, None, no_env).expect("valid");
    let BrokerPlan::Redis { cluster, .. } = Plan::from_settings(&settings).expect("a plan").broker
    else {
        panic!("a Redis broker expected")
    };
    assert_eq!(cluster, Some(vec!["redis://127.0.0.1:7001".to_owned()]));
}

#[test]
fn a_redis_cluster_with_sentinels_or_stray_nodes_is_refused() {
    let redis = "[broker]\nurl = \"redis://unused\"\n";
    let with_sentinels = errors(&format!(
        "{redis}cluster = true\nsentinels = [\"redis://127.0.0.1:26379\"]\nsentinel_master = \"main\"\n"
    ));
    assert_eq!(with_sentinels.len(), 1, "{with_sentinels:?}");
    assert!(
        with_sentinels[0]
            .message
            .contains("broker.sentinels do not go together"),
        "{with_sentinels:?}"
    );
    let durable = format!("{redis}cluster = true\nwait_replicas = 1\n");
    assert!(
        Settings::parse(&durable, None, no_env).is_ok(),
        "WAIT works per shard"
    );
    let stray = errors(&format!(
        "{redis}cluster_nodes = [\"redis://127.0.0.1:7001\"]\n"
    ));
    assert_eq!(stray.len(), 1, "{stray:?}");
    assert!(
        stray[0].message.contains("needs broker.cluster"),
        "{stray:?}"
    );
    let scheme = errors(&format!(
        "{redis}cluster = true\ncluster_nodes = [\"127.0.0.1:7001\"]\n"
    ));
    assert_eq!(scheme.len(), 1, "{scheme:?}");
    assert!(
        scheme[0].message.contains("expected redis://"),
        "{scheme:?}"
    );
}
