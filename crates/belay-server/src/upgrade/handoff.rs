//! The handoff of an upgraded connection: the socket taken back out of
//! hyper, wrapped in the codec, and given to the session's own task.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use super::io::WsIo;
use crate::stream::StreamLayer;
use crate::ws::WebSocket;

/// The task of one upgraded connection: it waits for hyper to hand the
/// socket over, then spawns `session` on it as a task of its own and ends.
/// The session's task is most of an idle connection's memory; spawned by
/// itself it does not also carry this future's arguments (the closure, the
/// layer, hyper's `OnUpgrade`), which an async fn keeps for its whole life
/// and which took it past tokio's 2 KiB task class (see
/// `connection::task_size`).
pub(crate) async fn upgraded<F, Fut>(
    on_upgrade: hyper::upgrade::OnUpgrade,
    max_payload: usize,
    layer: Option<(Arc<dyn StreamLayer>, SocketAddr)>,
    session: F,
) where
    F: FnOnce(WebSocket<WsIo>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Ok(upgraded) = on_upgrade.await else {
        return;
    };
    let (io, read_buf) = WsIo::take(upgraded);
    let io = match layer {
        Some((layer, peer)) => WsIo::Layered(layer.wrap(Box::new(io), peer)),
        None => io,
    };
    let ws = WebSocket::new(io, &read_buf, max_payload);
    // Not held across the session: it can pin hyper's whole read buffer
    // (kilobytes per idle connection).
    drop(read_buf);
    tokio::spawn(session(ws));
}
