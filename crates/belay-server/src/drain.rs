//! Graceful drain: 503 on `/readyz` first, then, after the load balancer had
//! time to notice, reconnect advice to each client (spread out, paced),
//! then close 1012; the server is drained when every connection is gone or
//! the deadline passes. Requests in flight are answered before their
//! connection closes (within the linger).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use belay_proto::server::DrainPlan;

use crate::mailbox::Control;
use crate::metrics::{lock, Metrics};
use crate::shared::{Lifecycle, Shared};

/// Start the drain once; later calls do nothing.
pub(crate) fn start(shared: Arc<Shared>) {
    let started = shared.lifecycle.send_if_modified(|l| {
        if *l == Lifecycle::Serving {
            *l = Lifecycle::Draining;
            true
        } else {
            false
        }
    });
    if started {
        shared.emit(
            "drain",
            "readiness 503; advising clients after the balancer delay".into(),
        );
        tokio::spawn(run(shared));
    }
}

async fn run(shared: Arc<Shared>) {
    let now = shared.clock.now();
    let targets: Vec<(u64, crate::mailbox::ControlSender)> = lock(&shared.connections)
        .iter()
        .map(|(id, tx)| (*id, tx.clone()))
        .collect();
    let plan = DrainPlan::new(now, shared.config.drain.clone(), targets.len());
    shared
        .metrics
        .drain_remaining
        .store(targets.len() as i64, Ordering::Relaxed);
    for (index, (_, control)) in targets.iter().enumerate() {
        sleep_until(&shared, plan.advise_at(index)).await;
        if control
            .send(Control::Advise(plan.advice_for(index)))
            .is_ok()
        {
            Metrics::add(&shared.metrics.drain_advised);
        }
        let control = control.clone();
        let close_at = plan.close_at(index);
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            sleep_until(&shared, close_at).await;
            let _ = control.send(Control::Drain);
        });
    }
    // Wait until every connection is gone, or the deadline.
    let deadline = plan.deadline();
    loop {
        let open = shared.metrics.open_connections();
        shared
            .metrics
            .drain_remaining
            .store(open, Ordering::Relaxed);
        if open <= 0 || shared.clock.now() >= deadline {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    shared.emit("drain", "drained".into());
    shared.lifecycle.send_replace(Lifecycle::Drained);
}

async fn sleep_until(shared: &Shared, at: belay_proto::Instant) {
    tokio::time::sleep_until(shared.clock.to_std(at).into()).await;
}
