//! The world's answer to what a session sends: its attempts and its
//! messages, through the server model.

use belay_proto::message::{ClientMessage, ServerMessage};
use belay_proto::{Failure, Input, Instant, Output, TransportId};

use super::Fleet;
use crate::queue::Delivery;
use crate::server::{Answer, Verdict};

impl Fleet<'_> {
    /// The world's answer to one session output.
    pub(super) fn answer(&mut self, index: usize, now: Instant, output: Output) {
        let latency = self.world.latency;
        match output {
            Output::OpenTransport { id, .. } => {
                let at = now.saturating_add(latency / 2);
                let answer = if self.offline(now) {
                    None
                } else {
                    let node = self.cluster.pick();
                    self.clients[index].node = node;
                    Some(self.cluster.attempt(node, at))
                };
                if let Some(answer) = answer.filter(|a| !matches!(a, Answer::Now(_))) {
                    // Answered after the server's work (or dropped): the
                    // failure, if any, is counted when it is known.
                    self.record.attempt(now, false);
                    let client = &mut self.clients[index];
                    client.syn_tries = 0;
                    client.dialed_at = now;
                    self.route(index, id, now, answer);
                    return;
                }
                let delivery = if self.offline(now) {
                    Delivery::Unreachable
                } else {
                    let Some(Answer::Now(verdict)) = answer else {
                        return;
                    };
                    match verdict {
                        Verdict::Admit => {
                            self.clients[index].conn = Some(id);
                            let node = self.clients[index].node;
                            self.cluster.node(node).opened();
                            Delivery::Opened
                        }
                        Verdict::Refuse => Delivery::Refused,
                    }
                };
                self.record.attempt(now, delivery != Delivery::Opened);
                if latency.is_zero() || delivery == Delivery::Unreachable {
                    self.inbox.push_back(match delivery {
                        Delivery::Opened => Input::TransportOpened(id),
                        Delivery::Refused => refused(id),
                        _ => unreachable(id),
                    });
                } else {
                    self.agenda
                        .push(now.saturating_add(latency), index as u32, id, delivery);
                }
            }
            Output::Transmit { id, message } => {
                if self.clients[index].conn != Some(id) {
                    return; // sent into a dead connection
                }
                match message {
                    // Answered in a later step, so that the server's
                    // connection count includes every connection opened at
                    // this instant (the setup connects the whole fleet at once).
                    ClientMessage::Connect(_) => self.agenda.push(
                        now.saturating_add(latency),
                        index as u32,
                        id,
                        Delivery::Welcome,
                    ),
                    ClientMessage::Ping if latency.is_zero() => {
                        self.inbox
                            .push_back(Input::Message(id, ServerMessage::Pong));
                    }
                    ClientMessage::Ping => self.agenda.push(
                        now.saturating_add(latency),
                        index as u32,
                        id,
                        Delivery::Pong,
                    ),
                    _ => {}
                }
            }
            Output::CloseTransport { id, .. } => self.forget(index, id),
            _ => {}
        }
    }

    fn offline(&self, now: Instant) -> bool {
        self.world
            .offline
            .is_some_and(|(from, until)| from <= now && now < until)
    }
}

pub(super) fn refused(id: TransportId) -> Input {
    Input::TransportFailed(id, Failure::network("refused"))
}

pub(super) fn unreachable(id: TransportId) -> Input {
    Input::TransportFailed(id, Failure::unreachable("network down"))
}
