//! Every output and event the core can give a connection reaches a
//! handler of this driver: one value of each variant
//! (`belay_proto::every_variant`) through the real dispatch. A variant
//! added to the core fails here until the driver carries it out.

use std::sync::Arc;

use belay_proto::every_variant::EveryVariant;
use belay_proto::server::{Connection, Event, Output};
use bytes::Bytes;

use super::{Driver, End};
use crate::mailbox::mailbox;
use crate::ws::WebSocket;

fn driver(server: &crate::Server) -> Driver {
    let shared = &server.shared;
    let (control, _orders) = mailbox();
    let id = shared.register(control.clone());
    let core = Connection::new(Arc::clone(&shared.limits), shared.clock.now(), 1);
    let peer = "127.0.0.1:1".parse().unwrap();
    Driver::new(shared, core, control, peer, None, id)
}

#[tokio::test]
async fn every_core_output_and_event_is_carried_out() {
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
            driver.count(event, "websocket").is_ok(),
            "the driver does not count {shown}"
        );
    }
}
