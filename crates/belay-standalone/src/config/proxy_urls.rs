//! Tests of the `[proxy]` URLs and CA file in the checker: an `https://`
//! backend is a backend like an `http://` one, anything else is an error at
//! its line (not a refusal at start without one), and `proxy.ca` is a file
//! that must exist, read beside the config when relative.

use super::{Plan, Settings};

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn an_https_backend_checks_clean_and_plans() {
    let text = "[auth]\nmode = \"proxy\"\n[proxy]\nconnect_url = \"https://backend.example:8443/belay/connect\"\nrpc_url = \"https://[::1]:8443/rpc\"\n";
    let settings = Settings::parse(text, None, no_env).expect("https URLs are valid");
    let plan = Plan::from_settings(&settings);
    assert!(plan.is_ok(), "{:?}", plan.err());
}

#[test]
fn a_url_that_is_not_http_or_https_is_an_error_at_its_line() {
    let text = "[proxy]\nconnect_url = \"ftp://backend/connect\"\npublish_url = \"backend:9000/publish\"\n";
    let found = Settings::parse(text, None, no_env).expect_err("bad URLs");
    let lines: Vec<usize> = found.iter().map(|e| e.line).collect();
    assert_eq!(lines, [2, 3], "{found:?}");
    assert!(
        found[0]
            .message
            .contains("proxy.connect_url: expected an http:// or https:// URL"),
        "{}",
        found[0]
    );
}

#[test]
fn a_ca_file_that_does_not_exist_is_an_error_at_its_line() {
    let text = "[proxy]\nca = \"/nonexistent/belay-ca.pem\"\n";
    let found = Settings::parse(text, None, no_env).expect_err("no such file");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].line, 2);
    assert!(
        found[0].message.starts_with("proxy.ca: no such file"),
        "{}",
        found[0]
    );
}
