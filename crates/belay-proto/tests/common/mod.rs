//! The virtual-time driver and message helpers the session tests share.
#![allow(dead_code)] // each test crate uses its own subset

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_proto::message::{
    ClientMessage, ReconnectAdvice, ServerMessage, Unsubscribed, Welcome, PROTOCOL_VERSION,
};
use belay_proto::testing::invariants::{ClientChecks, ClientInvariants};
use belay_proto::{
    CloseCode, CloseInfo, Config, Event, Input, Instant, Output, RetryPlan, Session, TransportId,
};

/// A driver with a virtual clock that records what the session asks for.
/// Every batch of outputs it drains goes through the core's invariant
/// checker (`belay_proto::testing::invariants`): a scenario that breaks one
/// fails there, whatever it asserts itself.
pub(crate) struct Driver {
    pub(crate) session: Session,
    pub(crate) now: Instant,
    invariants: ClientInvariants,
}

impl Driver {
    pub(crate) fn new(config: Config) -> Self {
        // Requests are learned from the wire (their deadlines unknown) and
        // no advice is reported: the delay bound is the properties'.
        let mut checks = ClientChecks::all();
        checks.delays = false;
        Driver {
            invariants: ClientInvariants::new(&config, checks),
            session: Session::new(config, Instant::ZERO, 7),
            now: Instant::ZERO,
        }
    }

    /// A config whose backoff has no randomness, so delays are exact.
    pub(crate) fn fixed(delay_ms: u64) -> Self {
        let mut config = Config::default();
        config.set_backoff(BackoffPolicy::fixed(Duration::from_millis(delay_ms)));
        Driver::new(config)
    }

    pub(crate) fn at(&mut self, ms: u64) -> &mut Self {
        self.now = Instant::from_millis(ms);
        self
    }

    pub(crate) fn drain(&mut self) -> Vec<Output> {
        let out: Vec<Output> = std::iter::from_fn(|| self.session.poll_output()).collect();
        if let Err(violation) = self.invariants.batch(self.now, &self.session, &out) {
            panic!("at {:?}: {violation}\n{out:?}", self.now);
        }
        out
    }

    pub(crate) fn input(&mut self, input: Input) -> Vec<Output> {
        if let Input::TransportFailed(id, _) | Input::TransportClosed(id, _) = &input {
            if self.session.current_transport() == Some(*id) {
                self.invariants.transport_ended(*id);
            }
        }
        self.session.handle_input(self.now, input);
        self.drain()
    }

    pub(crate) fn check(&mut self) -> Vec<Output> {
        self.session.check_liveness(self.now);
        self.drain()
    }

    pub(crate) fn tick(&mut self) -> Vec<Output> {
        self.session.handle_timeout(self.now);
        let out = self.drain();
        if let Err(violation) = self.invariants.after_timeout(self.now, &self.session) {
            panic!("at {:?}: {violation}", self.now);
        }
        out
    }

    /// Jump to the next timeout and run it.
    pub(crate) fn next_timeout(&mut self) -> Vec<Output> {
        let at = self.session.poll_timeout().expect("a timeout is scheduled");
        assert!(at >= self.now, "timeouts never lie in the past");
        self.now = at;
        self.tick()
    }

    pub(crate) fn start(&mut self) -> TransportId {
        self.session.start(self.now).unwrap();
        opened_id(&self.drain())
    }

    pub(crate) fn welcome(&mut self, id: TransportId, welcome: Welcome) -> Vec<Output> {
        self.input(Input::Message(id, ServerMessage::Welcome(welcome)))
    }

    /// Open transport `id` and complete the handshake.
    pub(crate) fn establish(&mut self, id: TransportId) -> Vec<Output> {
        let mut out = self.input(Input::TransportOpened(id));
        out.extend(self.welcome(id, welcome("s-1")));
        out
    }

    pub(crate) fn server(&mut self, id: TransportId, message: ServerMessage) -> Vec<Output> {
        self.input(Input::Message(id, message))
    }
}

pub(crate) fn welcome(session: &str) -> Welcome {
    Welcome {
        session: session.into(),
        protocol: PROTOCOL_VERSION,
        ping_interval_ms: None,
        pacing: None,
        expires_in_ms: None,
    }
}

pub(crate) fn opened_id(out: &[Output]) -> TransportId {
    let ids: Vec<_> = out
        .iter()
        .filter_map(|o| match o {
            Output::OpenTransport { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 1, "exactly one transport is opened: {out:?}");
    ids[0]
}

pub(crate) fn events(out: &[Output]) -> Vec<Event> {
    out.iter()
        .filter_map(|o| match o {
            Output::Event(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

pub(crate) fn sent(out: &[Output]) -> Vec<ClientMessage> {
    out.iter()
        .filter_map(|o| match o {
            Output::Transmit { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

pub(crate) fn closes(out: &[Output]) -> Vec<(TransportId, CloseCode)> {
    out.iter()
        .filter_map(|o| match o {
            Output::CloseTransport { id, code, .. } => Some((*id, *code)),
            _ => None,
        })
        .collect()
}

pub(crate) fn retry_of(out: &[Output]) -> RetryPlan {
    events(out)
        .into_iter()
        .find_map(|e| match e {
            Event::Disconnected { retry, .. } | Event::ConnectFailed { retry, .. } => Some(retry),
            _ => None,
        })
        .expect("a disconnect event")
}

pub(crate) fn advice(reason: &str, min_delay_ms: u64, max_delay_ms: u64) -> ServerMessage {
    ServerMessage::Reconnect(ReconnectAdvice {
        reason: reason.into(),
        min_delay_ms,
        max_delay_ms,
        message: None,
    })
}

pub(crate) fn unsubscribed(channel: &str, code: &str) -> ServerMessage {
    ServerMessage::Unsubscribed(Unsubscribed {
        channel: channel.into(),
        code: code.into(),
        reason: String::new(),
    })
}

pub(crate) fn closed(code: CloseCode) -> CloseInfo {
    CloseInfo::new(code, "")
}
