//! Each channel's stream position: publications arrive in order without
//! duplicates, a gap is replayed, and a reconnect resumes from the
//! position (or says the resume failed).

use belay_proto::message::{ClientMessage, ServerMessage, StreamPosition, Subscribed};
use belay_proto::{CloseInfo, Event, Input, Output};

use crate::common::{events, opened_id, sent, Driver};
use crate::support::{publication, subscribed};

#[test]
fn a_reconnect_resumes_each_channel_from_its_position() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.server(id, subscribed("news", 40, false));
    d.server(id, publication("news", 41));
    d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    let id = opened_id(&d.next_timeout());
    let out = d.establish(id);
    let since = sent(&out).into_iter().find_map(|m| match m {
        ClientMessage::Subscribe(s) => s.since,
        _ => None,
    });
    assert_eq!(
        since,
        Some(StreamPosition {
            epoch: "e1".into(),
            offset: 41
        })
    );
    let out = d.server(id, subscribed("news", 41, true));
    assert!(events(&out).contains(&Event::Subscribed {
        channel: "news".into(),
        recovered: true
    }));
}

#[test]
fn an_unrecoverable_resume_is_reported_explicitly() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.server(id, subscribed("news", 5, false));
    d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    let id = opened_id(&d.next_timeout());
    d.establish(id);
    let out = d.server(
        id,
        ServerMessage::Subscribed(Subscribed {
            channel: "news".into(),
            epoch: "e2".into(),
            offset: 100,
            recovered: false,
        }),
    );
    assert!(events(&out).contains(&Event::RecoveryFailed {
        channel: "news".into()
    }));
}

#[test]
fn publications_arrive_in_order_without_duplicates_and_a_gap_is_repaired() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.server(id, subscribed("news", 0, false));
    let delivered = |out: &[Output]| -> Vec<u64> {
        events(out)
            .into_iter()
            .filter_map(|e| match e {
                Event::Publication(p) => Some(p.offset),
                _ => None,
            })
            .collect()
    };
    assert_eq!(delivered(&d.server(id, publication("news", 1))), vec![1]);
    assert!(delivered(&d.server(id, publication("news", 1))).is_empty());
    // Offset 3 skips 2: ask the server to replay from 1 instead of losing 2.
    let out = d.server(id, publication("news", 3));
    assert!(delivered(&out).is_empty());
    assert!(sent(&out).iter().any(|m| matches!(m, ClientMessage::Subscribe(s) if s.since.as_ref().map(|p| p.offset) == Some(1))));
    d.server(id, subscribed("news", 1, true));
    assert_eq!(delivered(&d.server(id, publication("news", 2))), vec![2]);
    assert_eq!(delivered(&d.server(id, publication("news", 3))), vec![3]);
}
