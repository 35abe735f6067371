//! The core's `Session` on one task and one socket: what a suite holding
//! tens of thousands of sessions that come back after a loss runs (the
//! cluster's capacity hold). The core decides everything (heartbeat,
//! reconnect, resubscribe from the position, order without duplicates);
//! this only dials, moves frames and keeps the time. Unlike a belay-client
//! `Client` (a driver task, a transport task and channels between them
//! and the application), one session costs one task, as the minimal
//! clients do, so the load generator does not take the CPU the servers
//! under test need.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::time::Duration;

use belay_proto::message::encode_client;
use belay_proto::{
    CloseCode, CloseInfo, Config, Event, Failure, Input, Instant, Output, Session, TransportId,
};
use futures_util::{SinkExt, StreamExt};
use tokio_websockets::{ClientBuilder, Message};

use super::target::Target;
use super::websocket::{self, Session as Socket};

/// One session of the core over WebSocket (JSON), to one target.
#[derive(Debug)]
pub struct CoreSession {
    session: Session,
    target: Target,
    source: Option<IpAddr>,
    socket: Option<(TransportId, Socket)>,
    origin: tokio::time::Instant,
}

impl CoreSession {
    /// A session of `target` from `source`, started (its first dial is
    /// made by the first [`next_event_or`](Self::next_event_or)).
    pub fn start(target: Target, source: Option<IpAddr>, config: Config, seed: u64) -> Self {
        let mut session = Session::new(config, Instant::ZERO, seed);
        // A fresh session cannot be stopped yet.
        let _ = session.start(Instant::ZERO);
        CoreSession {
            session,
            target,
            source,
            socket: None,
            origin: tokio::time::Instant::now(),
        }
    }

    /// The core (to subscribe, request, read its state).
    pub fn core(&mut self) -> (&mut Session, Instant) {
        let now = self.now();
        (&mut self.session, now)
    }

    /// Do what the core asks until it has something to tell (its next
    /// event) or `interrupt` completes first (`None`). `interrupt` is only
    /// raced while the session waits for a frame or a deadline, so a dial
    /// or a frame being written is never cut in half. Never ends on its
    /// own (the core reconnects): drop it, or [`close`](Self::close) it.
    ///
    /// # Panics
    ///
    /// On an output of the core this load client does not carry out (a
    /// core newer than it): the run stops rather than go wrong quietly.
    pub async fn next_event_or<F: Future>(&mut self, interrupt: F) -> Option<Event> {
        tokio::pin!(interrupt);
        loop {
            while let Some(output) = self.session.poll_output() {
                match output {
                    Output::Event(event) => return Some(event),
                    Output::OpenTransport { id, .. } => self.dial(id).await,
                    Output::Transmit { id, message } => {
                        self.send(id, encode_client(&message)).await
                    }
                    Output::CloseTransport { id, code, reason } => {
                        self.close_socket(id, code, &reason).await
                    }
                    other => panic!("the load client does not carry out {other:?}"),
                }
            }
            if self.wait(interrupt.as_mut()).await {
                return None;
            }
        }
    }

    /// Close the socket (1000) and stop.
    pub async fn close(mut self) {
        let now = self.now();
        self.session.stop(now);
        if let Some((_, mut socket)) = self.socket.take() {
            let _ = socket.close().await;
        }
    }

    fn now(&self) -> Instant {
        Instant::from_elapsed(self.origin.elapsed())
    }

    /// Open transport `id`: TCP from the source, the upgrade, within the
    /// core's connect timeout.
    async fn dial(&mut self, id: TransportId) {
        let bound = self.session.config().connect_timeout();
        let opened = tokio::time::timeout(bound, async {
            let stream = websocket::dial(self.target.addr, self.source)
                .await
                .map_err(|e| e.to_string())?;
            let (socket, _) = ClientBuilder::from_uri(self.target.uri.clone())
                .connect_on(stream)
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(socket)
        })
        .await
        .unwrap_or_else(|_| Err("connect timeout".to_owned()));
        let now = self.now();
        match opened {
            Ok(socket) => {
                self.socket = Some((id, socket));
                self.session.handle_input(now, Input::TransportOpened(id));
            }
            Err(e) => self
                .session
                .handle_input(now, Input::TransportFailed(id, Failure::network(e))),
        }
    }

    async fn send(&mut self, id: TransportId, text: String) {
        let Some((open, socket)) = self.socket.as_mut() else {
            return;
        };
        if *open != id {
            return;
        }
        if let Err(e) = socket.send(Message::text(text)).await {
            self.socket = None;
            let now = self.now();
            self.session.handle_input(
                now,
                Input::TransportFailed(id, Failure::network(e.to_string())),
            );
        }
    }

    async fn close_socket(&mut self, id: TransportId, code: CloseCode, reason: &str) {
        if self.socket.as_ref().is_some_and(|(open, _)| *open == id) {
            if let Some((_, mut socket)) = self.socket.take() {
                let code = tokio_websockets::CloseCode::try_from(code.0)
                    .unwrap_or(tokio_websockets::CloseCode::NORMAL_CLOSURE);
                let _ = tokio::time::timeout(
                    Duration::from_millis(500),
                    socket.send(Message::close(Some(code), reason)),
                )
                .await;
            }
        }
    }

    /// The next frame, or the core's next deadline; `true` if `interrupt`
    /// came first.
    async fn wait<F: Future>(&mut self, interrupt: Pin<&mut F>) -> bool {
        let deadline = self.session.poll_timeout();
        let wake = deadline.map(|at| self.origin + at.elapsed_since_origin());
        let sleep = async {
            match wake {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let frame = async {
            match self.socket.as_mut() {
                Some((id, socket)) => (*id, socket.next().await),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            (id, frame) = frame => {
                let now = self.now();
                let input = match frame {
                    Some(Ok(message)) => match (message.as_close(), message.as_text()) {
                        (Some((code, reason)), _) => {
                            Some(Input::TransportClosed(id, CloseInfo::new(CloseCode(u16::from(code)), reason)))
                        }
                        (None, Some(text)) => Some(Input::Frame(id, text.to_owned())),
                        // WebSocket pings and pongs: the codec answers them.
                        (None, None) => None,
                    },
                    Some(Err(e)) => Some(Input::TransportFailed(id, Failure::network(e.to_string()))),
                    None => Some(Input::TransportClosed(id, CloseInfo::abnormal())),
                };
                if let Some(input) = input {
                    if matches!(input, Input::TransportClosed(..) | Input::TransportFailed(..)) {
                        self.socket = None;
                    }
                    self.session.handle_input(now, input);
                }
            }
            () = sleep => {
                let now = self.now();
                if deadline.is_some_and(|at| now >= at) {
                    self.session.handle_timeout(now);
                }
            }
            _ = interrupt => return true,
        }
        false
    }
}
