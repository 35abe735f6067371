//! The connection task's size, on the socket type the upgrade makes.

use std::sync::Arc;

fn meta() -> crate::connection::ConnectionMeta {
    crate::connection::ConnectionMeta {
        peer: "127.0.0.1:1".parse().unwrap(),
        header_token: None,
        admission: crate::connection::Admission::Admitted,
        codec: belay_proto::message::Codec::Json,
        _peer_slot: None,
    }
}

/// Every connection is one tokio task, and its future is most of the
/// task's allocation. tokio adds a 32 B header, 16 B of scheduler and
/// id and a 48 B trailer and aligns the cell to 128 B, so the cell fits
/// jemalloc's 2 KiB size class while the future is at most 1,952 B;
/// past that every idle connection costs 512 B more (measured twice:
/// 3,385 → 3,907 B per idle connection when the future grew from 1,824
/// to 2,184 B; 3,071 → about 2,560 B when the session stopped running
/// inside the upgrade's task, `scripts/bench-regression.sh`). The bound
/// leaves a little room below that edge. The session runs on the
/// socket type the upgrade makes (`WsIo`), as in the server.
#[tokio::test]
async fn the_connection_future_stays_in_the_2_kib_task_class() {
    let server = crate::Server::builder().build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap());
    let ((accepted, _), _client) = tokio::try_join!(listener.accept(), client).unwrap();
    let io = super::io::WsIo::Tcp(accepted);
    let ws = crate::ws::WebSocket::new(io, &[], 1 << 16);
    let future = crate::connection::run(Arc::clone(&server.shared), ws, meta());
    let size = std::mem::size_of_val(&future);
    assert!(size <= 1_920, "the connection future is {size} B");
}
