//! A connection's mailbox for orders from the rest of the server.
//!
//! Orders (reconnect advice, a drain, the outcome of a request the
//! connection called) come one by one, and every connection needs somewhere
//! to receive them, and a tokio channel
//! allocates its first block of slots up front: about 3 KB per idle
//! connection for this order type. A lock-protected `VecDeque` (which does
//! not allocate until used) plus a `Notify` costs a few dozen bytes.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use belay_proto::message::Reply;
use belay_proto::server::{ConnectionOrder, Ticket};

use crate::auth::{AuthError, Principal};
use crate::metrics::lock;

/// Orders from the rest of the server to one connection.
#[derive(Debug)]
pub(crate) enum Control {
    /// An order of the server-wide core (advice, a drain, a close).
    Order(ConnectionOrder),
    /// A request the connection called finished with this outcome.
    Reply(Ticket, Reply),
    /// The authenticator's later verdict on what the core asked under this
    /// ticket.
    Checked(Ticket, Checked),
    /// Say what the connection is (an operator's lookup by user).
    Describe(tokio::sync::oneshot::Sender<Description>),
}

/// What a connection says of itself ([`Control::Describe`]).
#[derive(Debug)]
pub(crate) struct Description {
    /// Its session id, once welcomed.
    pub(crate) session: Option<Arc<str>>,
    /// Its transport's name (`websocket`, `sse`).
    pub(crate) transport: &'static str,
    /// The codec it speaks.
    pub(crate) codec: belay_proto::message::Codec,
}

/// A verdict that came later ([`crate::auth::Verdict::Later`]).
#[derive(Debug)]
pub(crate) enum Checked {
    /// On the credentials of `connect`.
    Connect(Box<Result<Principal, AuthError>>),
    /// On the credentials of a `refresh`.
    Refresh(Box<Result<Principal, AuthError>>),
    /// On a subscribe: allowed, and for how long.
    Subscribe(Result<Option<Duration>, AuthError>),
    /// On the token of a `sub_refresh`: good, and for how long.
    SubRefresh(Result<Option<Duration>, AuthError>),
}

#[derive(Debug, Default)]
struct Mailbox {
    orders: Mutex<VecDeque<Control>>,
    notify: Notify,
    closed: AtomicBool,
}

/// Sends orders to one connection. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ControlSender(Arc<Mailbox>);

/// The connection's end of the mailbox.
#[derive(Debug)]
pub(crate) struct ControlReceiver(Arc<Mailbox>);

/// A new mailbox.
pub(crate) fn mailbox() -> (ControlSender, ControlReceiver) {
    let shared = Arc::new(Mailbox::default());
    (ControlSender(Arc::clone(&shared)), ControlReceiver(shared))
}

impl ControlSender {
    /// Deliver `order`; gives it back if the connection is gone.
    pub(crate) fn send(&self, order: Control) -> Result<(), Control> {
        if self.0.closed.load(Ordering::Acquire) {
            return Err(order);
        }
        lock(&self.0.orders).push_back(order);
        self.0.notify.notify_one();
        Ok(())
    }
}

impl ControlReceiver {
    /// The next order. Cancel-safe: an order is only taken when returned.
    pub(crate) async fn recv(&mut self) -> Control {
        loop {
            if let Some(order) = lock(&self.0.orders).pop_front() {
                return order;
            }
            // A notification sent after the check above is kept as a permit.
            self.0.notify.notified().await;
        }
    }
}

impl Drop for ControlReceiver {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use belay_proto::message::ReconnectAdvice;

    fn drain() -> Control {
        Control::Order(ConnectionOrder::Drain {
            until: belay_proto::Instant::ZERO,
        })
    }

    #[tokio::test]
    async fn orders_arrive_in_order_and_a_closed_mailbox_refuses() {
        let (tx, mut rx) = mailbox();
        tx.send(drain()).unwrap();
        tx.send(Control::Order(ConnectionOrder::Advise(ReconnectAdvice {
            reason: "deploy".into(),
            min_delay_ms: 0,
            max_delay_ms: 0,
            message: None,
        })))
        .unwrap();
        assert!(matches!(
            rx.recv().await,
            Control::Order(ConnectionOrder::Drain { .. })
        ));
        assert!(matches!(
            rx.recv().await,
            Control::Order(ConnectionOrder::Advise(_))
        ));
        drop(rx);
        assert!(tx.send(drain()).is_err());
    }

    #[tokio::test]
    async fn an_order_sent_while_waiting_wakes_the_receiver() {
        let (tx, mut rx) = mailbox();
        let waiter = tokio::spawn(async move { rx.recv().await });
        tokio::task::yield_now().await;
        tx.send(drain()).unwrap();
        assert!(matches!(
            waiter.await.unwrap(),
            Control::Order(ConnectionOrder::Drain { .. })
        ));
    }
}
