//! Every output, event and order the core can give a connection reaches a
//! handler of this driver: one value of each variant
//! (`belay_proto::every_variant`) through the real dispatch. A variant
//! added to the core fails here until the driver carries it out.

use std::sync::Arc;

use belay_proto::every_variant::EveryVariant;
use belay_proto::server::{Connection, ConnectionOrder, Event, Output};
use belay_proto::Instant;
use bytes::Bytes;

use super::{Driver, End};
use crate::auth::Principal;
use crate::mailbox::mailbox;
use crate::outbound::Outbound;
use crate::requests::RequestSet;
use crate::ws::WebSocket;

fn driver(server: &crate::Server) -> Driver {
    let shared = Arc::clone(&server.shared);
    let (control, _orders) = mailbox();
    let id = shared.register(control.clone());
    Driver {
        core: Connection::new(Arc::clone(&shared.limits), shared.clock.now(), 1),
        out: Outbound::new(Arc::clone(&shared.outbound_total)),
        control,
        inbox: None,
        joining: Vec::new(),
        requests: RequestSet::default(),
        principal: Box::new(Principal::anonymous()),
        session: Arc::from("s"),
        peer: "127.0.0.1:1".parse().unwrap(),
        slot: None,
        reads_at: Instant::ZERO,
        id,
        shared,
    }
}

#[tokio::test]
async fn every_core_output_event_and_order_is_carried_out() {
    let server = crate::Server::builder().build();
    let mut driver = driver(&server);
    let (socket, _peer) = tokio::io::duplex(1 << 16);
    let mut ws = WebSocket::new(socket, &[], 1 << 16);
    let mut end: Option<End> = None;
    for output in Output::<Bytes>::every_variant() {
        let shown = format!("{output:?}");
        assert!(
            driver.carry_out_one(&mut ws, output, &mut end).is_ok(),
            "the driver does not carry out {shown}"
        );
    }
    for event in Event::every_variant() {
        let shown = format!("{event:?}");
        assert!(
            driver.count(event).is_ok(),
            "the driver does not count {shown}"
        );
    }
    let now = driver.now();
    for order in ConnectionOrder::every_variant() {
        let shown = format!("{order:?}");
        assert!(
            driver.carry_out_order(now, order).is_ok(),
            "the driver does not carry out {shown}"
        );
    }
}
