//! [`RequestOptions::wait_ready`](crate::RequestOptions::wait_ready): a
//! request that waits, up to a bound, for the session to take it, instead
//! of failing at once with [`RequestError::NotReady`].
//!
//! The wait watches the status: each refusal is followed by a wait for the
//! protocol level to come up (or the client to stop), then one more try;
//! a status published between the try and the refusal counts, so a session
//! that came up meanwhile is tried again at once, and a refusal while the
//! status says up (leaving an advised transport) waits for the next change.

use std::time::Duration;

use belay_proto::message::RawJson;
use belay_proto::Call;

use crate::{Client, RequestError, Status};

impl Client {
    /// Send `call` once the session takes it, within `wait`.
    pub(crate) async fn send_when_ready(
        &self,
        call: Call,
        wait: Duration,
    ) -> Result<RawJson, RequestError> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut status = self.status.clone();
        loop {
            // Every status published after this mark wakes the wait below.
            status.borrow_and_update();
            match self.send_call(call.clone()).await {
                Err(RequestError::NotReady) => {}
                settled => return settled,
            }
            let up = |s: &Status| {
                s.readiness.protocol || s.state == belay_proto::ConnectionState::Stopped
            };
            // A status published since the mark may be the session coming
            // up after the driver refused the call: try again at once.
            let changed = status.has_changed().unwrap_or(false);
            let now_up = up(&status.borrow_and_update());
            if now_up && changed {
                continue;
            }
            if !now_up {
                let waited = tokio::time::timeout_at(deadline, status.wait_for(up)).await;
                match waited {
                    Err(_elapsed) => return Err(RequestError::NotReady),
                    Ok(Err(_gone)) => return Err(RequestError::Closed),
                    Ok(Ok(_)) => {}
                }
            } else {
                // Up, yet refused (leaving an advised transport): wait
                // for the next change.
                match tokio::time::timeout_at(deadline, status.changed()).await {
                    Err(_elapsed) => return Err(RequestError::NotReady),
                    Ok(Err(_gone)) => return Err(RequestError::Closed),
                    Ok(Ok(())) => {}
                }
            }
        }
    }
}
