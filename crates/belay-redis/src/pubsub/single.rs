//! The PUB/SUB connection to one Redis (or to the primary the Sentinels
//! name).

use std::collections::HashSet;

use futures_util::StreamExt;
use redis::aio::{PubSubSink, PubSubStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;

use super::{Command, Served, Task};

impl Task {
    pub(super) async fn serve(
        &self,
        mut sink: PubSubSink,
        mut stream: PubSubStream,
        queue: &mut mpsc::UnboundedReceiver<Command>,
        ready: &mut Option<oneshot::Sender<()>>,
    ) -> Served {
        for name in &self.control_names {
            let done = timeout(self.command_timeout, sink.subscribe(name)).await;
            if !matches!(done, Ok(Ok(()))) {
                return Served::Lost;
            }
        }
        if let Some(ready) = ready.take() {
            let _ = ready.send(());
        }
        // The names this connection is subscribed to, confirmed
        // (`Task::command`; an unsubscribe decided before a join has already
        // removed the name). (One round trip per join, one at a time, made 10,000 clients
        // resubscribing to one channel wait behind each other past the
        // join's timeout, and their retries kept the queue full.)
        let mut subscribed: HashSet<String> = HashSet::new();
        // Any message from Redis is proof of life: only a connection quiet
        // for a probe interval is probed (a busy node probing a busy
        // connection mistook a late PONG for a lost Redis).
        // The probe is due a probe interval after the last message (not at
        // fixed ticks, which probed up to two intervals after it), so a
        // silent Redis is found within `probe_every + command_timeout`.
        let mut heard = tokio::time::Instant::now();
        let probe = tokio::time::sleep(self.probe_every);
        tokio::pin!(probe);
        loop {
            tokio::select! {
                command = queue.recv() => {
                    if let Some(served) = self.command(&mut sink, &mut subscribed, command).await {
                        return served;
                    }
                }
                message = stream.next() => match message {
                    None => return Served::Lost,
                    Some(message) => {
                        heard = tokio::time::Instant::now();
                        let name = message.get_channel_name();
                        if self.control_names.iter().any(|own| own == name) {
                            // Full: dropped, and its sender times out.
                            if self.control_inbox.try_send(message.get_payload_bytes().to_vec()).is_err() {
                                tracing::warn!("control inbox full: message dropped");
                            }
                            continue;
                        }
                        if self.deliver(name, message.get_payload_bytes()) {
                            // Its last members ended or went: nobody here listens.
                            if let Some(served) = self.part(&mut sink, &mut subscribed, name).await {
                                return served;
                            }
                        }
                    }
                },
                () = &mut probe => {
                    let due = heard + self.probe_every;
                    if tokio::time::Instant::now() < due {
                        probe.as_mut().reset(due);
                        continue;
                    }
                    let pong = timeout(self.command_timeout, sink.ping::<redis::Value>()).await;
                    if !matches!(pong, Ok(Ok(_))) {
                        return Served::Lost;
                    }
                    heard = tokio::time::Instant::now();
                    probe.as_mut().reset(heard + self.probe_every);
                }
            }
        }
    }
}
