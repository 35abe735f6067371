//! An operator's lookup by user names a fallback session's transport `sse`
//! (the admin UI's `GET /admin/sessions`).

use belay_server::ServerConfig;
use serde_json::{json, Value};

use crate::common::{self, http_call, SseRaw};
use crate::{request, result_of, server};

#[tokio::test]
async fn a_session_over_the_fallback_is_listed_with_transport_sse() {
    let server = server(ServerConfig::default());
    let addr = common::start_with(&server, server.router().merge(server.admin_router())).await;
    let (mut sse, welcome) = SseRaw::connected(addr, None).await;
    // An answered request: the session is past its welcome.
    assert_eq!(sse.send(&[&request(1, "echo", json!(1))]).await.status, 204);
    assert_eq!(result_of(&mut sse, 1).await, json!(1));
    let answer = http_call(addr, "GET", "/admin/sessions?user=anonymous", None).await;
    let listed: Value = serde_json::from_str(&answer.body).expect("JSON");
    let sessions = listed["sessions"].as_array().expect("a list");
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["transport"], "sse");
    assert_eq!(sessions[0]["codec"], "json");
    let belay_proto::message::ServerMessage::Welcome(welcome) = welcome else {
        panic!("a welcome: {welcome:?}");
    };
    assert_eq!(sessions[0]["session"], welcome.session.as_str());
}
