//! docs/OPERATIONS.md's Metrics table lists exactly the metric families a
//! server renders at `/metrics`, each with the type it is rendered with.
//!
//! The families are read from the `# TYPE` lines of
//! [`Server::render_metrics`], which are there whether or not a labelled
//! family has a series yet, so a fresh server shows every one. The server
//! runs on the default embedded broker, which reports both broker gauges
//! (`belay_channels`, `belay_history_bytes`); no family is rendered only
//! with Redis or the standalone API (Redis renders a subset: no
//! `belay_history_bytes`), so the check holds both ways with no exception.
//! The table is the `## Metrics` section's rows up to its first subsection:
//! the rows under `### Series Prometheus adds` (`up`) are Prometheus' own,
//! not the server's, and are left out of the reverse check.

use std::collections::BTreeMap;

use belay_server::Server;

/// Metric name → type, from the `# TYPE` lines of a Prometheus text.
fn rendered_families(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .map(|rest| {
            let (name, kind) = rest
                .split_once(' ')
                .unwrap_or_else(|| panic!("a `# TYPE` line without a type: {rest:?}"));
            (name.to_owned(), kind.trim().to_owned())
        })
        .collect()
}

/// Metric name → type, from the table rows of the `## Metrics` section
/// before its first `###` subsection (`| `name` | type | labels | meaning |`).
fn documented_families(doc: &str) -> BTreeMap<String, String> {
    let section = doc
        .split_once("\n## Metrics\n")
        .expect("docs/OPERATIONS.md has a `## Metrics` section")
        .1;
    let end = ["\n## ", "\n### "]
        .iter()
        .filter_map(|heading| section.find(heading))
        .min()
        .unwrap_or(section.len());
    section[..end]
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let name = cells[0].trim_end_matches('`').to_owned();
            let kind = cells.get(1).copied().unwrap_or_default().to_owned();
            (name, kind)
        })
        .collect()
}

#[tokio::test]
async fn every_rendered_metric_is_in_the_operations_table_and_no_other() {
    let doc_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/OPERATIONS.md");
    let doc = std::fs::read_to_string(doc_path).expect("docs/OPERATIONS.md is readable");
    let documented = documented_families(&doc);
    let rendered = rendered_families(&Server::builder().build().render_metrics());
    assert!(
        rendered.len() >= 20,
        "the server renders its metric families ({} found)",
        rendered.len()
    );

    let undocumented: Vec<&String> = rendered
        .keys()
        .filter(|name| !documented.contains_key(*name))
        .collect();
    assert!(
        undocumented.is_empty(),
        "rendered at /metrics but missing from docs/OPERATIONS.md's Metrics table: {undocumented:?}"
    );

    let not_rendered: Vec<&String> = documented
        .keys()
        .filter(|name| !rendered.contains_key(*name))
        .collect();
    assert!(
        not_rendered.is_empty(),
        "in docs/OPERATIONS.md's Metrics table but not rendered at /metrics: {not_rendered:?}"
    );

    for (name, kind) in &rendered {
        assert_eq!(
            documented.get(name),
            Some(kind),
            "docs/OPERATIONS.md gives {name} another type than its `# TYPE` line"
        );
    }
}
