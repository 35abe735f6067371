//! The proptest strategies that draw setups and op lists.

use belay_proto::backoff::BackoffPolicy;
use proptest::prelude::*;

use super::ops::{
    Fact, FailureKind, Msg, Op, ReqRef, Setup, Target, ADVICE_REASONS, CHANNELS, CLOSE_CODES,
    EPOCHS, MALFORMED, UNSUB_CODES,
};

pub(crate) fn short_ms() -> impl Strategy<Value = u64> {
    prop_oneof![1u64..=20, 20u64..=2_000, 2_000u64..=15_000]
}

pub(crate) fn setup() -> impl Strategy<Value = Setup> {
    let policies = BackoffPolicy::all_reference().len();
    (
        (
            0..policies,
            prop_oneof![Just(None), (1u32..=10).prop_map(Some)],
            0..policies,
            any::<u64>(),
            prop::bool::weighted(0.9),
        ),
        (
            short_ms(),
            short_ms(),
            short_ms(),
            short_ms(),
            short_ms(),
            short_ms(),
            0u64..=2_000,
        ),
    )
        .prop_map(
            |(
                (policy, max_attempts, resubscribe, seed, start_at_once),
                (
                    reset_after_ms,
                    connect_timeout_ms,
                    probe_interval_ms,
                    probe_timeout_ms,
                    request_timeout_ms,
                    subscribe_timeout_ms,
                    online_delay_ms,
                ),
            )| Setup {
                policy,
                max_attempts,
                resubscribe,
                seed,
                start_at_once,
                reset_after_ms,
                connect_timeout_ms,
                probe_interval_ms,
                probe_timeout_ms,
                request_timeout_ms,
                subscribe_timeout_ms,
                online_delay_ms,
            },
        )
}

pub(crate) fn advice_ms() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..5_000, 0u64..400_000]
}

pub(crate) fn msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        3 => (
            prop::bool::weighted(0.05),
            proptest::option::of(prop_oneof![0u64..100, 100u64..60_000]),
            proptest::option::of((0u64..400_000, 0u64..400_000, proptest::option::of(0u64..10_000_000))),
            proptest::option::of(prop_oneof![0u64..10, 10u64..120_000]),
        )
            .prop_map(
                |(mismatch, ping_interval_ms, pacing, expires_in_ms)| Msg::Welcome {
                    mismatch,
                    ping_interval_ms,
                    pacing,
                    expires_in_ms,
                },
            ),
        2 => Just(Msg::Ping),
        2 => Just(Msg::Pong),
        10 => (
            prop_oneof![
                4 => any::<usize>().prop_map(ReqRef::InFlight),
                2 => any::<usize>().prop_map(ReqRef::Issued),
                1 => (0u64..1_000).prop_map(ReqRef::Bogus),
            ],
            any::<bool>(),
        )
            .prop_map(|(request, ok)| Msg::Response { request, ok }),
        5 => (0..CHANNELS.len(), 0..EPOCHS.len(), 0u64..6, any::<bool>()).prop_map(
            |(channel, epoch, offset, recovered)| Msg::Subscribed { channel, epoch, offset, recovered }
        ),
        2 => (0..CHANNELS.len(), 0..UNSUB_CODES.len())
            .prop_map(|(channel, code)| Msg::Unsubscribed { channel, code }),
        6 => (0..CHANNELS.len(), prop::bool::weighted(0.1), prop_oneof![4 => Just(1i8), 1 => -1i8..=3])
            .prop_map(|(channel, other_epoch, step)| Msg::Publication { channel, other_epoch, step }),
        2 => (0..ADVICE_REASONS.len(), advice_ms(), advice_ms())
            .prop_map(|(reason, min_ms, max_ms)| Msg::Reconnect { reason, min_ms, max_ms }),
        1 => Just(Msg::Error),
    ]
}

pub(crate) fn fact() -> impl Strategy<Value = Fact> {
    prop_oneof![
        3 => Just(Fact::Opened),
        1 => prop_oneof![
            Just(FailureKind::Network),
            proptest::sample::select(vec![401u16, 403, 500, 503]).prop_map(FailureKind::Rejected),
            Just(FailureKind::InvalidConfig),
        ]
        .prop_map(Fact::Failed),
        2 => proptest::option::of(proptest::sample::select(CLOSE_CODES.to_vec())).prop_map(Fact::Closed),
        16 => msg().prop_map(Fact::Message),
        3 => msg().prop_map(Fact::Frame),
        1 => (0..=MALFORMED.len()).prop_map(Fact::Malformed),
        1 => Just(Fact::UnknownType),
    ]
}

pub(crate) fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        3 => any::<usize>().prop_map(Target::Old),
        1 => (0u8..4).prop_map(Target::Future),
    ]
}

pub(crate) fn op() -> impl Strategy<Value = Op> {
    // Stop ends the interesting part of a run: keep it rare.
    prop_oneof![250 => op_but_stop(), 1 => Just(Op::Stop)]
}

pub(crate) fn op_but_stop() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => fact().prop_map(|f| Op::Input(Target::Current, f)),
        10 => (target(), fact()).prop_map(|(t, f)| Op::Input(t, f)),
        6 => (
            proptest::option::of(100u64..60_000),
            proptest::option::of((1u64..400_000, 0u64..400_000, proptest::option::of(0u64..10_000_000))),
        )
            .prop_map(|(ping, pacing)| Op::Establish(ping, pacing)),
        4 => Just(Op::ConfirmAll),
        4 => prop::bool::weighted(0.6).prop_map(Op::Network),
        4 => Just(Op::Start),
        3 => Just(Op::ReconnectNow),
        10 => proptest::option::of(prop_oneof![0u64..50, 0u64..20_000]).prop_map(Op::Request),
        6 => (0..3usize).prop_map(Op::Subscribe),
        2 => (0..3usize).prop_map(Op::Unsubscribe),
        12 => (0u64..3_000).prop_map(Op::Advance),
        12 => Just(Op::ToPollTimeout),
        2 => (60_000u64..7_200_000).prop_map(Op::Suspend),
        2 => (1u64..5_000).prop_map(Op::Earlier),
    ]
}

pub(crate) fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..150)
}
