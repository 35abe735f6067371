//! `belay abuse` end to end: two cheap abuses, 2 s phases, against real
//! `belay serve --demo` processes; the report must hold sane figures.

use std::process::Command;

use serde_json::Value;

#[test]
fn two_cheap_abuses_report_sane_figures() {
    let json = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("abuse-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_belay"))
        .args([
            "abuse",
            "--only",
            "json-ping-flood,channel-churn",
            "--secs",
            "2",
            "--recovery-secs",
            "3",
            "--commit",
            "test",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("run belay abuse");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Without --check, failed criteria do not fail the command.
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for name in ["json-ping-flood", "channel-churn"] {
        assert!(stdout.contains(&format!("| {name} |")), "{stdout}");
    }
    let text = std::fs::read_to_string(&json).expect("the JSON report");
    let _ = std::fs::remove_file(&json);
    let reports: Vec<Value> = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(reports.len(), 2, "{text}");
    for r in &reports {
        let name = r["abuse"].as_str().unwrap_or("?");
        let base = &r["baseline"];
        // 2 s at one echo per 20 ms: about 100, every one answered.
        let answered = base["answered"].as_u64().unwrap_or(0);
        assert!(answered >= 50, "{name}: baseline answered {answered}: {r}");
        assert_eq!(base["unanswered"], 0, "{name}: {r}");
        assert!(
            base["p50_ms"]
                .as_f64()
                .is_some_and(|ms| ms > 0.0 && ms < 1_000.0),
            "{name}: {r}"
        );
        assert!(
            base["publications"].as_u64().unwrap_or(0) >= 2,
            "{name}: {r}"
        );
        assert!(base["probes"].as_u64().unwrap_or(0) >= 2, "{name}: {r}");
        // The attacker did something, from its own sessions.
        let effort = &r["effort"];
        assert!(
            effort["connections"].as_u64().unwrap_or(0) >= 4,
            "{name}: {r}"
        );
        assert!(effort["sent"].as_u64().unwrap_or(0) > 100, "{name}: {r}");
        assert!(effort["received"].as_u64().unwrap_or(0) > 0, "{name}: {r}");
        // The server was sampled throughout.
        let rss = &r["rss_kib"];
        assert!(rss["baseline"].as_u64().unwrap_or(0) > 1_000, "{name}: {r}");
        assert!(
            rss["peak"].as_u64().unwrap_or(0) >= rss["after"].as_u64().unwrap_or(u64::MAX),
            "{name}: {r}"
        );
        assert!(r["server_failure"].is_null(), "{name}: {r}");
        assert!(r["pass"].is_boolean(), "{name}: {r}");
    }
}
