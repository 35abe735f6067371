//! `POST /api/history`: a channel's retained publications with their
//! offsets and its position, forward after `since` or from the oldest
//! held, `reverse` before it or from the top, `limit` at most; a channel
//! with no history is an empty list at offset 0 of the epoch its first
//! publication then gets; 1 MiB of data ends a page (`truncated`), and
//! reading on from its last offset gives the rest.

use std::net::SocketAddr;

use crate::common::api_node as start;
use belay_test_support::sockets::http_call_with;
use serde_json::{json, Value};

const AUTH: &str = "Authorization: Bearer k";

async fn history(addr: SocketAddr, body: Value) -> (u16, Value) {
    let body = body.to_string();
    let response = http_call_with(addr, "POST", "/api/history", &[AUTH], Some(&body)).await;
    let value = serde_json::from_str(&response.body).expect("JSON");
    (response.status, value)
}

fn offsets(page: &Value) -> Vec<u64> {
    page["publications"]
        .as_array()
        .expect("publications")
        .iter()
        .map(|p| p["offset"].as_u64().expect("an offset"))
        .collect()
}

#[tokio::test]
async fn history_reads_either_way_from_a_position_with_the_channel_position() {
    let (server, addr) = start().await;
    let (status, empty) = history(addr, json!({"channel": "news"})).await;
    assert_eq!(status, 200, "{empty}");
    assert_eq!(
        (offsets(&empty), &empty["offset"], &empty["truncated"]),
        (vec![], &json!(0), &json!(false))
    );
    for n in 1..=5 {
        server
            .publish("news", json!({ "n": n }))
            .await
            .expect("published");
    }

    let (status, all) = history(addr, json!({"channel": "news"})).await;
    assert_eq!(status, 200);
    assert_eq!(offsets(&all), [1, 2, 3, 4, 5]);
    assert_eq!(all["publications"][0]["data"], json!({"n": 1}));
    assert_eq!(all["offset"], 5);
    assert_eq!(
        all["epoch"], empty["epoch"],
        "the epoch the empty read named"
    );
    let epoch = all["epoch"].clone();

    let since = json!({"offset": 2, "epoch": epoch});
    let (_, after) = history(addr, json!({"channel": "news", "since": since, "limit": 2})).await;
    assert_eq!(offsets(&after), [3, 4]);
    let (_, before) = history(
        addr,
        json!({"channel": "news", "since": {"offset": 4, "epoch": epoch}, "reverse": true}),
    )
    .await;
    assert_eq!(offsets(&before), [3, 2, 1]);
    let (_, newest) = history(
        addr,
        json!({"channel": "news", "reverse": true, "limit": 2}),
    )
    .await;
    assert_eq!(offsets(&newest), [5, 4]);
    let (_, position) = history(addr, json!({"channel": "news", "limit": 0})).await;
    assert_eq!(
        (offsets(&position), &position["offset"]),
        (vec![], &json!(5))
    );
    let (_, at_top) = history(
        addr,
        json!({"channel": "news", "since": {"offset": 5, "epoch": epoch}}),
    )
    .await;
    assert_eq!(offsets(&at_top), Vec::<u64>::new());
}

#[tokio::test]
async fn a_page_ends_at_a_mebibyte_of_data_and_reading_on_gives_the_rest() {
    let (server, addr) = start().await;
    // 20 publications of 60,000 bytes of JSON each: 17 (1,020,000 bytes)
    // fit in 1 MiB (1,048,576), an 18th would not.
    let big = "x".repeat(59_998);
    for _ in 0..20 {
        server.publish("big", json!(big)).await.expect("published");
    }
    let (status, first) = history(addr, json!({"channel": "big"})).await;
    assert_eq!(status, 200);
    assert_eq!(offsets(&first), (1..=17).collect::<Vec<_>>());
    assert_eq!(first["truncated"], true);
    let since = json!({"offset": 17, "epoch": first["epoch"]});
    let (_, rest) = history(addr, json!({"channel": "big", "since": since})).await;
    assert_eq!(
        (offsets(&rest), &rest["truncated"]),
        (vec![18, 19, 20], &json!(false))
    );
}
