//! Every output of the client core reaches a handler of this driver.

use belay_proto::every_variant::EveryVariant;
use belay_proto::{Config, Output, Session};
use tokio::sync::{broadcast, mpsc, watch};

use super::{Driver, Outlets, Providers};
use crate::endpoints::Endpoints;
use crate::transport::Target;

/// One value of every core output through the real dispatch: a variant
/// added to the core fails here until the driver carries it out.
#[tokio::test]
async fn every_core_output_is_carried_out() {
    let origin = tokio::time::Instant::now();
    let session = Session::new(Config::default(), belay_proto::Instant::ZERO, 1);
    let tls = crate::TlsSettings::default().client_config().unwrap();
    let target = Target::parse("ws://127.0.0.1:9/ws", tls).map(|t| Endpoints::new(t, Vec::new()));
    let (commands_tx, commands_rx) = mpsc::unbounded_channel();
    let outlets = Outlets {
        status: watch::channel(crate::Status::default()).0,
        events: broadcast::channel(16).0,
        finished: watch::channel(false).0,
    };
    let providers = Providers {
        token: None,
        subscription_token: None,
    };
    let mut driver = Driver::new(
        session,
        origin,
        target,
        providers,
        commands_rx,
        commands_tx.downgrade(),
        outlets,
        None,
    );
    for output in Output::every_variant() {
        let shown = format!("{output:?}");
        assert!(
            driver.carry_out(output).is_ok(),
            "the driver does not carry out {shown}"
        );
    }
}
