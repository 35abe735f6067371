//! The committed inputs of a fuzz target, for the corpus replays that run
//! them on stable Rust in the test command (docs/FUZZING.md).

use std::path::{Path, PathBuf};

/// Every input of `target` under `fuzz_dir`: the seeds
/// (`seeds/<target>/`), the minimised corpus (`corpus/<target>/`) and the
/// findings (`artifacts-found/<target>/`), sorted by path. Panics when
/// fewer than 10 are committed: a replay of nothing proves nothing.
pub fn committed_inputs(fuzz_dir: &Path, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    for kind in ["seeds", "corpus", "artifacts-found"] {
        let Ok(entries) = std::fs::read_dir(fuzz_dir.join(kind).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a readable corpus directory").path();
            if path.is_file() {
                let bytes = std::fs::read(&path).expect("a readable corpus file");
                found.push((path, bytes));
            }
        }
    }
    found.sort();
    assert!(
        found.len() >= 10,
        "only {} committed inputs for {target} under {}",
        found.len(),
        fuzz_dir.display()
    );
    found
}
