//! The attacker's own OS thread, at a low CPU priority.
//!
//! On one machine the attacker competes with the server and the victim for
//! the same cores, which a remote attacker does not: a flat-out flood takes
//! most of a core, and the victim's echo then waits for the OS scheduler as
//! well as for the server. What the harness asks is whether the *server's*
//! handling of one peer hurts another, so the attacker runs on a thread of
//! its own (a single-threaded runtime: one core at most) whose nice value
//! is raised ([`DEFAULT_NICE`]): it gets every cycle the server and the
//! victim leave idle, and none they need. The attacker's effort table shows
//! how much it still sent; `belay abuse --attacker-nice 0` runs it at the
//! victim's priority, as before.

use std::time::Duration;

use tokio::sync::oneshot;

use super::attack::Attack;
use super::Abuse;

/// The attacker thread's nice value unless told otherwise (the lowest
/// priority Linux has for normal threads).
pub const DEFAULT_NICE: i32 = 19;

/// Run `abuse` with `attack` on a new thread at nice `nice`; returns the
/// attack (its effort counted) once the attacker has stopped, at most a
/// second after `attack.until`.
pub async fn run(abuse: Abuse, attack: Attack, nice: i32) -> Result<Attack, String> {
    let (done_tx, done_rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("abuse-attacker".into())
        .spawn(move || {
            // Linux keeps a nice value per thread; `None` is this thread.
            // Raising it needs no privilege; a failure would measure
            // something else than asked, so it stops the run.
            if let Err(e) = rustix::process::setpriority_process(None, nice) {
                let _ = done_tx.send(Err(format!("cannot set the attacker's nice value: {e}")));
                return;
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime {
                runtime.block_on(async {
                    // Every attacker stops at `until`; the extra second is
                    // a backstop.
                    let backstop = attack.until + Duration::from_secs(1);
                    let _ = tokio::time::timeout_at(backstop, abuse.run(&attack)).await;
                });
                // Sockets the attacker's tasks still hold close here.
                drop(runtime);
                let _ = done_tx.send(Ok(attack));
            } else {
                let _ = done_tx.send(Err("cannot start the attacker's runtime".to_owned()));
            }
        })
        .map_err(|e| format!("cannot start the attacker thread: {e}"))?;
    done_rx
        .await
        .map_err(|_| "the attacker thread stopped without reporting".to_owned())?
}
