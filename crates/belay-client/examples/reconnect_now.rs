//! Seed 003's scenario for the Rust client: the application asks a client
//! that is waiting out its reconnect backoff to reconnect now
//! ([`Client::reconnect_now`]). peers/seed003/reconnect_now.mjs spawns this
//! example next to the JavaScript clients, through the same counting proxy
//! (docs/COMPARISON.md, seed 003).
//!
//! ```sh
//! cargo run -p belay-client --example reconnect_now -- ws://127.0.0.1:PORT/ws [--backoff-ms 1500]
//! ```
//!
//! The client's backoff is fixed (`BackoffPolicy::fixed`, 1,500 ms by
//! default); everything else is the default config. Lines on stdout:
//!
//! * `ready TRANSPORT` when the status becomes ready (session welcomed,
//!   every level up), with the transport it is ready on;
//! * `not-ready STATE` when it stops being ready, with the connection state
//!   seen then (`waiting`, `connecting`, …).
//!
//! Lines on stdin: `wake` calls `reconnect_now()`; `close` (or the end of
//! stdin) closes the client, waits for its tasks and exits.
#![forbid(unsafe_code)]

use std::time::Duration;

use belay_client::{Client, Status};
use belay_proto::backoff::BackoffPolicy;
use tokio::sync::mpsc;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: reconnect_now URL [--backoff-ms MS]")?;
    let mut backoff_ms = 1_500u64;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--backoff-ms" => {
                backoff_ms = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--backoff-ms needs a number of milliseconds")?;
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let client = Client::builder(url)
        .configure(move |config| {
            config.set_backoff(BackoffPolicy::fixed(Duration::from_millis(backoff_ms)));
        })
        .connect()
        .expect("a usable URL");

    // stdin is read on a thread of its own (std's blocking reads), one
    // command per line; its end closes the client.
    let (commands_tx, mut commands) = mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if commands_tx.send(line.trim().to_owned()).is_err() {
                break;
            }
        }
    });

    let mut status = client.status();
    let mut ready = false;
    report(&status.borrow_and_update(), &mut ready);
    loop {
        tokio::select! {
            changed = status.changed() => {
                if changed.is_err() {
                    break;
                }
                report(&status.borrow_and_update(), &mut ready);
            }
            command = commands.recv() => match command.as_deref() {
                Some("wake") => client.reconnect_now().map_err(|e| e.to_string())?,
                Some("close") | None => break,
                Some(other) => eprintln!("reconnect_now: unknown command {other:?}"),
            },
        }
    }
    client.close().await;
    Ok(())
}

/// Print a line when `ready` flips.
fn report(status: &Status, ready: &mut bool) {
    if status.ready && !*ready {
        println!("ready {:?}", status.transport);
    } else if !status.ready && *ready {
        println!("not-ready {}", format!("{:?}", status.state).to_lowercase());
    }
    *ready = status.ready;
}
