//! The broadcast load's HTTP publisher against the bench server with the
//! HTTP API mounted, in process: every message posted is delivered to every
//! subscriber with its publish stamp, and a wrong API key fails every
//! request with 401 (counted, never delivered).

use std::time::Duration;

use belay_load::clients::target::Target;
use belay_load::loads::broadcast::{self, BroadcastConfig, Publisher};
use belay_load::loads::http_publish::{self, HttpPublisher};

const KEY: &str = "a-test-api-key-0123456789";

/// The bench server with the API under `KEY`, on a free loopback port.
async fn server() -> Target {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = belay_load::servers::belay::build(Duration::from_secs(25));
    let router = server
        .router()
        .merge(belay_standalone::api::router(&server, KEY, 1 << 20, None));
    tokio::spawn(async move {
        let _ = server.serve(listener, router).await;
    });
    Target::local(addr).expect("a loopback target")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_posted_to_the_api_reach_every_subscriber_with_their_stamp() {
    let target = server().await;
    let config = BroadcastConfig {
        publisher: Publisher::Http(HttpPublisher {
            key: KEY.into(),
            connections: 2,
        }),
        time_limit: Duration::from_secs(30),
        ..BroadcastConfig::new(20, 10, 200.0)
    };
    let mut report = broadcast::run(&target, &config)
        .await
        .expect("the load runs");
    assert_eq!(report.first_error, None);
    assert_eq!(report.subscribers, 20);
    assert_eq!(report.deliveries, 200);
    assert_eq!(report.expected, 200);
    // Every delivery carried the stamp of its request.
    assert_eq!(report.latencies.len(), 200);
    assert!(report.latencies.percentile(100.0).expect("samples") < Duration::from_secs(30));
    // The span of the stamps delivered (first to last publish) is known.
    let span = report.publish_span.expect("stamps were delivered");
    assert!(span < Duration::from_secs(30), "{span:?}");
    let http = report.http.expect("the HTTP publisher's report");
    assert_eq!((http.published, http.failed), (10, 0));
    assert_eq!(http.round_trips.len(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_api_key_fails_every_request_with_401() {
    let target = server().await;
    let publisher = HttpPublisher {
        key: "not-the-key".into(),
        connections: 1,
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let report = http_publish::run(&target, None, &publisher, "bench", 5, 100.0, deadline)
        .await
        .expect("the connections open");
    assert_eq!((report.published, report.failed), (0, 5));
    let error = report.first_error.expect("the first failure");
    assert!(error.contains("401"), "{error}");
    assert!(error.contains("unauthorized"), "{error}");
}
