//! A send whose body is over the frame limit gets its `413` and the stream
//! its close 1009 even when the client writes the whole body before it
//! reads: the server reads and drops the rest of the body (bounded) rather
//! than let the unread bytes turn its answer into a reset.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use crate::common::{self, SseRaw};
use crate::server;
use belay_server::ServerConfig;

const BOUND: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_2_mib_send_written_before_reading_gets_its_413_and_the_stream_1009() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let body = "x".repeat(2 << 20);
    let request = format!(
        "POST /sse/send HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nBelay-Stream: {}\r\nBelay-Seq: 1\r\n\
         Content-Length: {}\r\n\r\n{body}",
        sse.stream,
        body.len()
    );
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .set_send_buffer_size(16 * 1024)
        .expect("a small send buffer");
    let mut tcp = socket.connect(addr).await.expect("connect");
    let answer = tokio::time::timeout(BOUND, async {
        tcp.write_all(request.as_bytes())
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut raw = Vec::new();
        tcp.read_to_end(&mut raw)
            .await
            .map_err(|e| format!("read: {e}"))?;
        Ok::<_, String>(String::from_utf8_lossy(&raw).into_owned())
    })
    .await
    .expect("an answer within the bound");
    let status = answer.map(|text| text.get(9..12).unwrap_or("").to_owned());
    assert_eq!(status, Ok("413".to_owned()));
    let (code, _) = sse.closed_within(BOUND).await.expect("a close event");
    assert_eq!(code, 1009);
}
