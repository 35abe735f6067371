//! JSON vs binary (spec/PROTOCOL.md §1.8), in the same run: encode + decode
//! of each message type with a typical payload, each codec, and the bytes
//! on the wire (printed once, before the timings, with the mixed stream's
//! total). The JSON codec is the baseline.
//!
//! Run with `cargo bench -p belay-proto --bench codecs`; add `-- --test` to
//! run every bench once (what the test script does).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;

use belay_proto::message::StreamPosition;
use belay_proto::message::{
    decode_client, decode_client_binary, decode_server, decode_server_binary, encode_client,
    encode_client_binary, encode_server, encode_server_binary, ClientMessage, ErrorBody, Pacing,
    Publication, RawJson, Reply, Request, Response, ServerMessage, Subscribe, Subscribed, Welcome,
};

/// A chat-like publication: a short text, a user, a timestamp.
fn chat() -> RawJson {
    RawJson::from(
        json!({"user": "u-1842", "text": "see you at the standup in five", "ts": 1764770000123u64}),
    )
}

fn server_messages() -> Vec<(&'static str, ServerMessage)> {
    vec![
        (
            "welcome",
            ServerMessage::Welcome(Welcome {
                session: "s-7f3a9c21".into(),
                protocol: 1,
                ping_interval_ms: Some(25_000),
                pacing: Some(Pacing {
                    period_ms: 20_000,
                    phase_ms: 7_350,
                    origin_ms: Some(123_456),
                }),
                expires_in_ms: None,
            }),
        ),
        ("ping", ServerMessage::Ping),
        (
            "response",
            ServerMessage::Response(Response {
                id: 1843,
                reply: Reply::Result(RawJson::from(
                    json!({"order": "o-99120", "status": "accepted"}),
                )),
            }),
        ),
        (
            "response_error",
            ServerMessage::Response(Response {
                id: 1844,
                reply: Reply::Error(ErrorBody::new("unavailable", "the service is restarting")),
            }),
        ),
        (
            "subscribed",
            ServerMessage::Subscribed(Subscribed {
                channel: "chat:room-12".into(),
                epoch: "e-20261203".into(),
                offset: 18_220,
                recovered: true,
            }),
        ),
        (
            "publication",
            ServerMessage::Publication(Publication {
                channel: "chat:room-12".into(),
                epoch: "e-20261203".into(),
                offset: 18_221,
                data: chat(),
            }),
        ),
    ]
}

fn client_messages() -> Vec<(&'static str, ClientMessage)> {
    vec![
        (
            "request",
            ClientMessage::Request(Request {
                id: 1843,
                method: "orders.create".into(),
                params: json!({"sku": "A-1", "qty": 2}),
                idem: Some("k-1843".into()),
                timeout_ms: Some(10_000),
            }),
        ),
        (
            "subscribe",
            ClientMessage::Subscribe(Subscribe {
                channel: "chat:room-12".into(),
                since: Some(StreamPosition {
                    epoch: "e-20261203".into(),
                    offset: 18_220,
                }),
                token: None,
            }),
        ),
        ("pong", ClientMessage::Pong),
    ]
}

/// Bytes per type, and a mixed stream: per 100 frames a client receives,
/// 90 publications, 5 responses, 4 pings, 1 subscribed.
fn print_sizes() {
    println!("bytes on the wire (JSON / binary):");
    for (name, m) in server_messages() {
        println!(
            "  {name:>15}: {:>4} / {:>4}",
            encode_server(&m).len(),
            encode_server_binary(&m).len()
        );
    }
    for (name, m) in client_messages() {
        println!(
            "  {name:>15}: {:>4} / {:>4}",
            encode_client(&m).len(),
            encode_client_binary(&m).len()
        );
    }
    let by_name: std::collections::HashMap<_, _> = server_messages().into_iter().collect();
    let mix = [
        ("publication", 90),
        ("response", 5),
        ("ping", 4),
        ("subscribed", 1),
    ];
    let (mut json, mut binary) = (0, 0);
    for (name, n) in mix {
        json += n * encode_server(&by_name[name]).len();
        binary += n * encode_server_binary(&by_name[name]).len();
    }
    println!(
        "  mixed stream of 100 frames: {json} / {binary} B ({:.2}×)",
        json as f64 / binary as f64
    );
}

fn codecs(c: &mut Criterion) {
    print_sizes();
    let mut group = c.benchmark_group("codec_round_trip");
    for (name, m) in server_messages() {
        let json = encode_server(&m);
        let binary = encode_server_binary(&m);
        group.bench_with_input(BenchmarkId::new("json", name), &m, |b, m| {
            b.iter(|| decode_server(&encode_server(black_box(m))))
        });
        group.bench_with_input(BenchmarkId::new("binary", name), &m, |b, m| {
            b.iter(|| decode_server_binary(&encode_server_binary(black_box(m))))
        });
        group.bench_with_input(BenchmarkId::new("json_decode", name), &json, |b, f| {
            b.iter(|| decode_server(black_box(f)))
        });
        group.bench_with_input(BenchmarkId::new("binary_decode", name), &binary, |b, f| {
            b.iter(|| decode_server_binary(black_box(f)))
        });
    }
    for (name, m) in client_messages() {
        group.bench_with_input(BenchmarkId::new("json", name), &m, |b, m| {
            b.iter(|| decode_client(&encode_client(black_box(m))))
        });
        group.bench_with_input(BenchmarkId::new("binary", name), &m, |b, m| {
            b.iter(|| decode_client_binary(&encode_client_binary(black_box(m))))
        });
    }
    group.finish();
}

criterion_group!(benches, codecs);
criterion_main!(benches);
