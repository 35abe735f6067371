//! Reading a channel's history outside a subscription (the HTTP API's
//! `/api/history`) on two nodes sharing one real Redis: what node A
//! published, node B reads with its offsets and the channel's position,
//! forward after a position or from the oldest held, reversed before it or
//! from the top, within a limit and a byte bound; a position of another
//! epoch or beyond the top is refused with the current one; entries older
//! than the history's age are skipped either way; a channel nobody
//! published on is empty at offset 0 of the epoch its first publication
//! then gets.

use crate::common::{config, node, RedisServer};
use belay_proto::message::StreamPosition;
use belay_server::broker::{HistoryError, HistoryPage, HistoryQuery};
use serde_json::json;

fn offsets(page: &HistoryPage) -> Vec<u64> {
    page.publications.iter().map(|p| p.offset).collect()
}

fn at(epoch: &str, offset: u64) -> StreamPosition {
    StreamPosition {
        epoch: epoch.into(),
        offset,
    }
}

#[tokio::test]
async fn a_node_reads_what_another_published_either_way() {
    let redis = RedisServer::start().await;
    let (a, _) = node(config(&redis)).await;
    let (b, _) = node(config(&redis)).await;

    let empty = b
        .history("news", HistoryQuery::new(10))
        .await
        .expect("read");
    assert_eq!((offsets(&empty), empty.position.offset), (vec![], 0));
    for n in 1..=5 {
        let p = a
            .publish("news", json!({ "n": n }))
            .await
            .expect("published");
        assert_eq!(p.epoch, empty.position.epoch, "the epoch the read named");
    }
    let epoch = empty.position.epoch.clone();

    let all = b
        .history("news", HistoryQuery::new(10))
        .await
        .expect("read");
    assert_eq!(offsets(&all), [1, 2, 3, 4, 5]);
    assert_eq!(all.position, at(&epoch, 5));
    assert_eq!(all.publications[0].data.get(), r#"{"n":1}"#);
    assert!(!all.truncated);
    let after = b
        .history("news", HistoryQuery::new(2).since(at(&epoch, 2)))
        .await
        .expect("read");
    assert_eq!(offsets(&after), [3, 4]);
    let before = b
        .history(
            "news",
            HistoryQuery::new(10).since(at(&epoch, 4)).reverse(true),
        )
        .await
        .expect("read");
    assert_eq!(offsets(&before), [3, 2, 1]);
    let newest = b
        .history("news", HistoryQuery::new(2).reverse(true))
        .await
        .expect("read");
    assert_eq!(offsets(&newest), [5, 4]);
    let nothing_before = b
        .history(
            "news",
            HistoryQuery::new(10).since(at(&epoch, 0)).reverse(true),
        )
        .await
        .expect("read");
    assert_eq!(offsets(&nothing_before), Vec::<u64>::new());
    // `{"n":N}` is 7 bytes: 15 take two, the third is left for the next page.
    let bounded = b
        .history("news", HistoryQuery::new(10).max_bytes(15))
        .await
        .expect("read");
    assert_eq!((offsets(&bounded), bounded.truncated), (vec![1, 2], true));

    assert_eq!(
        b.history("news", HistoryQuery::new(1).since(at("old", 1)))
            .await,
        Err(HistoryError::EpochChanged {
            current: at(&epoch, 5)
        })
    );
    assert_eq!(
        b.history("news", HistoryQuery::new(1).since(at(&epoch, 6)))
            .await,
        Err(HistoryError::BeyondTop {
            current: at(&epoch, 5)
        })
    );
}

#[tokio::test]
async fn entries_older_than_the_history_age_are_skipped_either_way() {
    let redis = RedisServer::start().await;
    let (a, _) = node(config(&redis)).await;
    for n in 1..=3 {
        a.publish("aged", json!(n)).await.expect("published");
    }
    // Rewrite the Stream as if 1 and 2 had been published at the epoch of
    // Unix time (far beyond the 300 s the history keeps) and 3 just now.
    let mut conn = redis::Client::open(redis.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let key = "belay.history.{aged}";
    let (now_s, _): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut conn)
        .await
        .expect("TIME");
    let _: () = redis::cmd("DEL")
        .arg(key)
        .query_async(&mut conn)
        .await
        .expect("DEL");
    for (id, t) in [("1-0", 0), ("2-0", 0), ("3-0", now_s * 1_000)] {
        let _: String = redis::cmd("XADD")
            .arg(key)
            .arg(id)
            .arg("d")
            .arg("3")
            .arg("t")
            .arg(t)
            .query_async(&mut conn)
            .await
            .expect("XADD");
    }
    for reverse in [false, true] {
        let page = a
            .history("aged", HistoryQuery::new(10).reverse(reverse))
            .await
            .expect("read");
        assert_eq!(offsets(&page), [3], "reverse: {reverse}");
        assert_eq!(page.position.offset, 3);
    }
}
