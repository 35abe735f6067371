//! A resume (`subscribe` with `since`) answered `recovered: true` is taken
//! at its word only where the client can check it: the same epoch, resuming
//! at or before `since`. Otherwise the gap is announced (`RecoveryFailed`),
//! and no (epoch, offset) is ever delivered twice.

use belay_proto::message::{ClientMessage, Publication, ServerMessage, StreamPosition, Subscribed};
use belay_proto::{CloseInfo, Event, Input, Output};
use serde_json::json;

use crate::common::{events, opened_id, sent, Driver};

fn subscribed(epoch: &str, offset: u64, recovered: bool) -> ServerMessage {
    ServerMessage::Subscribed(Subscribed {
        channel: "news".into(),
        epoch: epoch.into(),
        offset,
        recovered,
    })
}

fn publication(epoch: &str, offset: u64) -> ServerMessage {
    ServerMessage::Publication(Publication {
        channel: "news".into(),
        epoch: epoch.into(),
        offset,
        data: json!(offset).into(),
    })
}

fn delivered(out: &[Output]) -> Vec<(String, u64)> {
    events(out)
        .into_iter()
        .filter_map(|e| match e {
            Event::Publication(p) => Some((p.epoch, p.offset)),
            _ => None,
        })
        .collect()
}

fn recovery_failed(out: &[Output]) -> bool {
    events(out).contains(&Event::RecoveryFailed {
        channel: "news".into(),
    })
}

/// Publications 1..=5 of epoch `e1` delivered, then the transport lost and
/// a new one established: the resubscribe carries `since` = (e1, 5).
fn resumed_after_five() -> (Driver, belay_proto::TransportId, Vec<(String, u64)>) {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    let mut seen = delivered(&d.server(id, subscribed("e1", 0, false)));
    for offset in 1..=5 {
        seen.extend(delivered(&d.server(id, publication("e1", offset))));
    }
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
            offset: 5
        })
    );
    (d, id, seen)
}

#[test]
fn a_claimed_recovery_from_a_lower_offset_never_delivers_a_duplicate() {
    let (mut d, id, mut seen) = resumed_after_five();
    let out = d.server(id, subscribed("e1", 2, true));
    assert!(!recovery_failed(&out), "nothing is missing");
    for offset in 3..=6 {
        seen.extend(delivered(&d.server(id, publication("e1", offset))));
    }
    let offsets: Vec<u64> = seen.iter().map(|(_, o)| *o).collect();
    assert_eq!(offsets, [1, 2, 3, 4, 5, 6]);
    assert_eq!(d.session.subscriptions().duplicates_dropped(), 3);
}

#[test]
fn a_claimed_recovery_from_a_higher_offset_announces_the_gap() {
    let (mut d, id, mut seen) = resumed_after_five();
    let out = d.server(id, subscribed("e1", 7, true));
    assert!(recovery_failed(&out), "publications 6 and 7 were skipped");
    assert!(events(&out).contains(&Event::Subscribed {
        channel: "news".into(),
        recovered: false
    }));
    seen.extend(delivered(&d.server(id, publication("e1", 8))));
    let offsets: Vec<u64> = seen.iter().map(|(_, o)| *o).collect();
    assert_eq!(offsets, [1, 2, 3, 4, 5, 8]);
    assert_eq!(d.session.subscriptions().resumes_refuted(), 1);
}

#[test]
fn a_claimed_recovery_in_another_epoch_is_a_recovery_failure() {
    let (mut d, id, mut seen) = resumed_after_five();
    let out = d.server(id, subscribed("e2", 5, true));
    assert!(recovery_failed(&out), "another epoch is another stream");
    seen.extend(delivered(&d.server(id, publication("e2", 6))));
    assert_eq!(seen.last(), Some(&("e2".to_owned(), 6)));
    assert_eq!(d.session.subscriptions().resumes_refuted(), 1);
}

#[test]
fn a_refused_recovery_at_a_lower_offset_still_never_delivers_a_duplicate() {
    let (mut d, id, mut seen) = resumed_after_five();
    let out = d.server(id, subscribed("e1", 3, false));
    assert!(recovery_failed(&out));
    for offset in 4..=6 {
        seen.extend(delivered(&d.server(id, publication("e1", offset))));
    }
    let offsets: Vec<u64> = seen.iter().map(|(_, o)| *o).collect();
    assert_eq!(offsets, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn an_honest_recovery_is_reported_recovered() {
    let (mut d, id, mut seen) = resumed_after_five();
    let out = d.server(id, subscribed("e1", 5, true));
    assert!(!recovery_failed(&out));
    assert!(events(&out).contains(&Event::Subscribed {
        channel: "news".into(),
        recovered: true
    }));
    seen.extend(delivered(&d.server(id, publication("e1", 6))));
    assert_eq!(seen.len(), 6);
    assert_eq!(d.session.subscriptions().resumes_refuted(), 0);
}
