//! Resident hosts in a [`Pair`], as belay-server's relay runs them on the
//! node's [`HostCalls`](crate::server::HostCalls): a client whose
//! credentials name a host (`set_host`) beats (`host_beat`, the relay's
//! HTTP heartbeat), holds `$host-calls:ID` while it is needed, gets each
//! call published there and answers it with `$answer`; a caller's `$call`
//! is a request that settles with the host's answer or the relay's error.

use std::collections::BTreeMap;

use crate::host::HostChannel;
use crate::message::{ErrorBody, HostCallDelivery, Payload, RawJson, Reply};
use crate::server::{
    BeatAnswer, CallId, CallRequest, Caller, HostCallOutput, Input, RegistryFull, ReservedCall,
    Ticket, ANSWER_METHOD, CALL_METHOD,
};

use super::records::{ClientId, ConnectionId};
use super::Pair;

/// Which clients are hosts, and the callers waiting for their calls.
#[derive(Debug, Default)]
pub(super) struct HostSide {
    hosts: BTreeMap<ClientId, String>,
    waiting: BTreeMap<CallId, (ConnectionId, Ticket)>,
    /// Replies to send once the connection at hand is done.
    replies: Vec<(ConnectionId, Ticket, Reply)>,
}

impl Pair {
    /// `client`'s credentials name the resident host `id`.
    pub fn set_host(&mut self, client: ClientId, id: &str) {
        self.hosts.hosts.insert(client, id.to_owned());
    }

    /// The host `id` beats (the relay's `POST /hosts/heartbeat`): whether it
    /// is needed.
    pub fn host_beat(&mut self, id: &str) -> Result<BeatAnswer, RegistryFull> {
        let now = self.now();
        let answer = self.node.node.host_calls_mut().handle_beat(now, id);
        self.carry_out_node();
        answer
    }

    /// Whether `id`'s call of `method`, or its answer, is the relay's to
    /// run; if so, run it (`Some(reply)` to answer now, `None` to answer
    /// when the call settles).
    pub(super) fn host_request(
        &mut self,
        id: ConnectionId,
        ticket: Ticket,
        method: &str,
        params: &Payload,
    ) -> Option<Option<Reply>> {
        if method != CALL_METHOD && method != ANSWER_METHOD {
            return None;
        }
        let now = self.now();
        let host = self.hosts.hosts.get(&id.client).cloned();
        let caller = host.as_deref().map_or(Caller::client(), Caller::host);
        let call = self.node.node.reserved_call(caller, method, params)?;
        let calls = self.node.node.host_calls_mut();
        Some(match call {
            Ok(ReservedCall::Call { params, .. }) => {
                let caller = format!("{}/{}", id.client.user(), id.transport.0);
                let request =
                    CallRequest::new(params.host.as_str(), caller, params.method, params.params);
                match calls.handle_call(now, request) {
                    Ok(call) => {
                        self.hosts.waiting.insert(call, (id, ticket));
                        None
                    }
                    Err(e) => Some(Reply::Error(
                        e.error_body(&params.host, &calls.config().timing),
                    )),
                }
            }
            Ok(ReservedCall::Answer { params }) => {
                let (host, call) = (host.unwrap_or_default(), CallId::from_u64(params.call));
                match calls.handle_answer(now, &host, call, params.outcome.into_reply()) {
                    Ok(()) => Some(Reply::Result(RawJson::from_value(&serde_json::json!({})))),
                    Err(_) => Some(Reply::Error(ErrorBody::new("not_found", "no such call"))),
                }
            }
            Ok(other) => panic!("pair: {method} is not {other:?}"),
            Err(error) => Some(Reply::Error(error)),
        })
    }

    /// `id` joined (`held`) or left `channel`: a host's calls channel
    /// attaches or detaches it.
    pub(super) fn host_channel(&mut self, id: ConnectionId, channel: &str, held: bool) {
        let Some(HostChannel::Calls(host)) = HostChannel::parse(channel) else {
            return;
        };
        if self.hosts.hosts.get(&id.client).map(String::as_str) != Some(host) {
            return;
        }
        let now = self.now();
        let calls = self.node.node.host_calls_mut();
        if held {
            calls.handle_attached(now, host);
        } else {
            calls.handle_detached(now, host);
        }
    }

    /// Fire the host calls' timers due now.
    pub(super) fn host_timeouts(&mut self) {
        let now = self.now();
        let calls = self.node.node.host_calls_mut();
        if calls.poll_timeout().is_some_and(|at| at <= now) {
            calls.handle_timeout(now);
        }
    }

    /// Carry out the host calls' outputs: deliveries published on the
    /// calls channel, settled calls answered to their callers.
    pub(super) fn carry_out_host_calls(&mut self) {
        let now = self.now();
        let mut publish = Vec::new();
        while let Some(output) = self.node.node.host_calls_mut().poll_output() {
            match output {
                HostCallOutput::Deliver(delivery) => {
                    let data = HostCallDelivery::new(
                        delivery.call.as_u64(),
                        delivery.method,
                        delivery.params,
                    );
                    let channel = format!("{}{}", crate::host::CALLS_CHANNEL_PREFIX, delivery.host);
                    publish.push((channel, serde_json::to_value(data).unwrap_or_default()));
                }
                HostCallOutput::Settled {
                    call,
                    host,
                    outcome,
                } => {
                    if let Some((id, ticket)) = self.hosts.waiting.remove(&call) {
                        let timing = &self.node.node.host_calls().config().timing;
                        let reply =
                            outcome.unwrap_or_else(|e| Reply::Error(e.error_body(&host, timing)));
                        self.hosts.replies.push((id, ticket, reply));
                    }
                }
                HostCallOutput::StateChanged { .. } => {}
            }
        }
        for (id, ticket, reply) in std::mem::take(&mut self.hosts.replies) {
            self.with_connection(id, |conn| {
                conn.handle_input(now, Input::Reply { ticket, reply })
            });
        }
        for (channel, data) in publish {
            self.publish(&channel, data);
        }
    }
}
