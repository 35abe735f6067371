//! Writes the `client_session` seed corpus (`fuzz/seeds/client_session/`)
//! from `belay_fuzz::client_session::seeds`, after running each seed
//! through the harness (so a committed seed never fails by itself).
//!
//! ```text
//! cd fuzz && cargo run --example client_session_seeds -- seeds
//! ```
//!
//! Each file is named after a hash of its content (as the other targets'
//! seeds, written by belay-server's `fuzz_seeds` example), so running it
//! again writes the same files.

use std::path::PathBuf;

use belay_fuzz::client_session::{encode_session, run, seeds::seeds};

fn main() -> std::io::Result<()> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("seeds"));
    let dir = out.join("client_session");
    std::fs::create_dir_all(&dir)?;
    let seeds = seeds();
    for (label, input) in &seeds {
        let outcome = run(input);
        let bytes = encode_session(input);
        let file = dir.join(name(&bytes));
        std::fs::write(&file, &bytes)?;
        println!(
            "{} ({} bytes): {label}\n    {outcome:?}",
            file.display(),
            bytes.len()
        );
    }
    println!("{}: {} seeds", dir.display(), seeds.len());
    Ok(())
}

/// A stable file name: FNV-1a of the content, as hex.
fn name(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("seed-{hash:016x}")
}
