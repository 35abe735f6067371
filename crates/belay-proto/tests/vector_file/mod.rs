//! Reading a vectors file of spec/vectors/ and running one check over a
//! section of it, with every failure reported at once (shared by the
//! vectors tests that take their sections this way).

use std::path::Path;

use serde_json::Value;

/// What a check of one vector says.
pub(crate) type Check = Result<(), String>;

/// spec/vectors/`file`, parsed.
pub(crate) fn load(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../spec/vectors")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Run `check` on every vector of `section` of spec/vectors/`file`; panic
/// with every failure at once.
pub(crate) fn run(file: &str, section: &str, check: impl Fn(&Value) -> Check) {
    let doc = load(file);
    let cases = doc[section]
        .as_array()
        .unwrap_or_else(|| panic!("{file} has no array {section:?}"));
    assert!(!cases.is_empty(), "{file}: {section} has no vectors");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let name = case["name"].as_str().unwrap_or("<unnamed>");
            check(case)
                .err()
                .map(|e| format!("{file} {section}/{name}: {e}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{file} {section}: {} of {} vectors failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
