//! A client chooses its close code (`POST /sse/close` takes any of
//! 0–65535), so undocumented codes fold into one label: the set of
//! `belay_closes_total` series and of `/api/stats` keys stays bounded
//! whatever the clients send.

use crate::common::{self, metric_until, SseRaw};
use crate::server;
use belay_server::metrics::OTHER_CLOSE_CODES;
use belay_server::ServerConfig;

const CHOSEN: [u16; 8] = [0, 1, 999, 2999, 3000, 4100, 4999, 65535];

#[tokio::test]
async fn undocumented_close_codes_share_one_label() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    for code in CHOSEN {
        let (sse, _) = SseRaw::connected(addr, None).await;
        let answer = sse.close(code, "bye").await;
        assert!(answer.status < 500, "{code}: {}", answer.status);
    }
    let others = CHOSEN.len() as f64;
    metric_until(addr, "belay_closes_total{code=\"other\"}", |n| n >= others).await;
    let text = common::http_call(addr, "GET", "/metrics", None).await.body;
    for code in CHOSEN {
        assert!(
            !text.contains(&format!("belay_closes_total{{code=\"{code}\"}}")),
            "{code} has a label of its own"
        );
    }
    let keys: Vec<u16> = server.metrics().closes_by_code().into_keys().collect();
    assert_eq!(keys, [OTHER_CLOSE_CODES]);
}
