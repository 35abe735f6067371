//! Replays the committed inputs of the `jwt_claims` and `http_api` fuzz
//! targets (`fuzz/seeds/<target>/`, `fuzz/corpus/<target>/` and the
//! findings in `fuzz/artifacts-found/<target>/`) through the same functions
//! the targets call, on stable Rust and without sanitizers, and checks that
//! the seeds reach past the signature and the API key (so the harnesses
//! are not vacuous).
//!
//! ```text
//! cargo test -p belay-standalone --features fuzzing --test fuzz_corpus_replay
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use belay_standalone::fuzzing::{http_api, jwt_claims, seeds, JwtOutcome};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Every committed input of `target` (seeds, corpus, findings), sorted.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    belay_test_support::fuzz_corpus::committed_inputs(&fuzz_dir(), target)
}

/// Run `f` on every committed input of `target`, naming the file that
/// fails; returns what each gave.
fn replay<T>(target: &str, f: impl Fn(&[u8]) -> T) -> Vec<T> {
    inputs(target)
        .iter()
        .map(|(path, bytes)| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(bytes))).unwrap_or_else(
                |panic| {
                    let message = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or(panic.downcast_ref::<&str>().copied());
                    panic!("{target} input {} fails: {message:?}", path.display())
                },
            )
        })
        .collect()
}

#[test]
fn jwt_claims_corpus_replays() {
    let outcomes = replay("jwt_claims", jwt_claims);
    let count = |f: fn(&JwtOutcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    assert!(count(|o| o.connection_accepted) >= 3, "{outcomes:?}");
    assert!(count(|o| o.subscription_accepted) >= 1, "{outcomes:?}");
    assert!(
        count(|o| !o.connection_accepted && !o.subscription_accepted) >= 3,
        "{outcomes:?}"
    );
}

#[test]
fn http_api_corpus_replays() {
    let statuses: BTreeSet<u16> = replay("http_api", http_api).into_iter().flatten().collect();
    for status in [200, 400, 401, 403, 404, 405, 409, 413] {
        assert!(
            statuses.contains(&status),
            "no committed input is answered {status}: {statuses:?}"
        );
    }
}

/// The seed writer's inputs are the committed seeds (so a change of the
/// input model that would make them mean something else is noticed).
#[test]
fn committed_seeds_are_the_seed_writers() {
    for (target, written) in [
        ("jwt_claims", seeds::jwt_claims()),
        ("http_api", seeds::http_api()),
    ] {
        let dir = fuzz_dir().join("seeds").join(target);
        for (label, bytes) in written {
            let committed = std::fs::read(dir.join(seeds::file_name(&bytes)));
            assert_eq!(
                committed.ok().as_deref(),
                Some(bytes.as_slice()),
                "{target} seed {label:?} is not committed: run the seed writer (docs/FUZZING.md)"
            );
        }
    }
}
