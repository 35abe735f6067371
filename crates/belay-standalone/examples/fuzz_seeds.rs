//! Writes the `jwt_claims` and `http_api` seed corpora
//! (`fuzz/seeds/<target>/`) from `belay_standalone::fuzzing::seeds`, after
//! running each seed through its harness (so a committed seed never fails
//! by itself).
//!
//! ```text
//! cargo run -p belay-standalone --features fuzzing --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! Files are named by a hash of their content (`seeds::file_name`), so
//! running it again writes the same files; the replay test
//! (`crates/belay-standalone/tests/fuzz_corpus_replay.rs`) checks that
//! every seed written here is committed.

use std::path::PathBuf;

use belay_standalone::fuzzing::{http_api, jwt_claims, seeds};

fn main() -> std::io::Result<()> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("fuzz/seeds"));
    let jwt = seeds::jwt_claims()
        .into_iter()
        .map(|(label, bytes)| {
            let outcome = format!("{:?}", jwt_claims(&bytes));
            (label, bytes, outcome)
        })
        .collect();
    write(&out.join("jwt_claims"), jwt)?;
    let http = seeds::http_api()
        .into_iter()
        .map(|(label, bytes)| {
            let statuses = format!("{:?}", http_api(&bytes));
            (label, bytes, statuses)
        })
        .collect();
    write(&out.join("http_api"), http)
}

/// Write each seed into `dir`, printing what it is and what it gave.
fn write(dir: &std::path::Path, written: Vec<(&str, Vec<u8>, String)>) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (label, bytes, outcome) in &written {
        let file = dir.join(seeds::file_name(bytes));
        std::fs::write(&file, bytes)?;
        println!(
            "{} ({} bytes): {label}: {outcome}",
            file.display(),
            bytes.len()
        );
    }
    println!("{}: {} seeds", dir.display(), written.len());
    Ok(())
}
