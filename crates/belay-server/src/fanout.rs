//! Live publications for one subscription of one connection.

use std::sync::Arc;

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, watch};

use crate::broker::Delivery;
use crate::connection::{unsubscribed, Control, Outbound};
use crate::faults::Faults;

pub(crate) struct Forwarder {
    pub(crate) channel: String,
    /// Offsets at or below this were already sent (confirmation or replay).
    pub(crate) after: u64,
    pub(crate) live: broadcast::Receiver<Arc<Delivery>>,
    pub(crate) out: Outbound,
    pub(crate) control: crate::mailbox::ControlSender,
    pub(crate) faults: watch::Receiver<Faults>,
}

impl Forwarder {
    pub(crate) async fn run(mut self) {
        loop {
            if self.faults.borrow().freeze {
                if self.faults.changed().await.is_err() {
                    return;
                }
                continue;
            }
            // A freeze must stop the next publication too, not the one after.
            let received = tokio::select! {
                biased;
                changed = self.faults.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    continue;
                }
                received = self.live.recv() => received,
            };
            match received {
                Ok(delivery) => {
                    if delivery.offset <= self.after {
                        continue;
                    }
                    self.after = delivery.offset;
                    if self.out.try_send(delivery.frame.clone()).is_err() {
                        let _ = self.control.send(Control::SlowConsumer);
                        return;
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    // Publications were skipped: never lose them silently.
                    // The client resubscribes from its position and the
                    // history replays them (or says it cannot).
                    let message = unsubscribed(&self.channel, "lagged", "subscriber fell behind");
                    if !crate::connection::queue(&self.out, &message) {
                        let _ = self.control.send(Control::SlowConsumer);
                    }
                    return;
                }
                Err(RecvError::Closed) => return,
            }
        }
    }
}
