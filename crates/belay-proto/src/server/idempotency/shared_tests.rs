//! Tests of `SharedOutcome`.

use serde_json::json;

use super::*;

fn ok(v: u64) -> Reply {
    Reply::Result(json!(v).into())
}

#[test]
fn every_record_reads_back_as_written() {
    let records = [
        SharedOutcome::Running {
            digest: 7,
            owner: "node-a|3".into(),
        },
        SharedOutcome::finished(u64::MAX, &ok(1), 1_000),
        SharedOutcome::TooLarge { digest: 0 },
    ];
    for record in records {
        assert_eq!(SharedOutcome::decode(&record.encode()), Some(record));
    }
}

#[test]
fn a_reply_with_separators_in_it_survives_the_encoding() {
    let reply = Reply::Result(json!("a|b|c").into());
    let record = SharedOutcome::finished(1, &reply, 1_000);
    let back = SharedOutcome::decode(&record.encode()).expect("decodes");
    assert_eq!(SharedOutcome::decide(Some(&back), 1), Begin::Done(reply));
}

#[test]
fn a_value_this_encoding_never_writes_is_not_a_record() {
    for text in [
        "",
        "R|",
        "X|0000000000000001",
        "D|zz00000000000001|{}",
        "T|0000000000000001|x",
    ] {
        assert_eq!(SharedOutcome::decode(text), None, "{text:?}");
    }
}

#[test]
fn no_record_means_the_claim_took_the_key() {
    assert_eq!(SharedOutcome::decide(None, 5), Begin::New);
}

#[test]
fn a_running_record_is_waited_for_and_a_done_one_is_answered() {
    let running = SharedOutcome::Running {
        digest: 5,
        owner: "b".into(),
    };
    assert_eq!(SharedOutcome::decide(Some(&running), 5), Begin::InFlight);
    let done = SharedOutcome::finished(5, &ok(9), 1_000);
    assert_eq!(SharedOutcome::decide(Some(&done), 5), Begin::Done(ok(9)));
}

#[test]
fn other_params_under_the_key_conflict_whatever_the_state() {
    let running = SharedOutcome::Running {
        digest: 5,
        owner: "b".into(),
    };
    let done = SharedOutcome::finished(5, &ok(9), 1_000);
    for record in [running, done, SharedOutcome::TooLarge { digest: 5 }] {
        assert_eq!(SharedOutcome::decide(Some(&record), 6), Begin::Conflict);
    }
}

#[test]
fn a_reply_over_the_limit_is_kept_as_too_large() {
    let big = Reply::Result(json!("x".repeat(100)).into());
    let record = SharedOutcome::finished(3, &big, 50);
    assert_eq!(record, SharedOutcome::TooLarge { digest: 3 });
    let Begin::Done(Reply::Error(error)) = SharedOutcome::decide(Some(&record), 3) else {
        panic!("a stored refusal")
    };
    assert_eq!(error.code, "too_large");
}
