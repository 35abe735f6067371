//! The web UI's login: the admin token goes once in the body of
//! `POST /admin/login`, and a random login id in an HttpOnly,
//! `SameSite=Strict` cookie (`belay_admin`, path `/admin`) stands for it
//! after, so a browser reaches the guarded routes, the page and its
//! WebSocket without the token in a URL or in the page's storage.
//!
//! | request | answer |
//! |---|---|
//! | `POST /admin/login` `{"token": "…"}` with the configured token | 204, `Set-Cookie: belay_admin=…` |
//! | the same with another token | 401 `wrong admin token` (nothing held) |
//! | no token is configured | 404 `no admin token is configured: the admin routes answer loopback requests` |
//! | a body that is no such JSON or over 4 KiB | 400 / 413 |
//! | an `Origin` of another site | 403 `cross-origin admin request` |
//! | `POST /admin/logout` | 204, the login forgotten and the cookie cleared |
//!
//! At most [`MAX_LOGINS`] logins are held (the oldest goes first), each for
//! [`LOGIN_LIFETIME`].

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde::Deserialize;

use super::guard::{cross_origin, Refusal};
use crate::admin_state::same_secret;
use crate::Server;

/// The cookie's name.
pub const COOKIE: &str = "belay_admin";
/// The longest login body.
const MAX_BODY: usize = 4 << 10;

pub use crate::admin_state::{LOGIN_LIFETIME, MAX_LOGINS};

/// The login id a request's `belay_admin` cookie carries.
pub(crate) fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

pub(super) fn routes() -> Router<Server> {
    Router::new()
        .route("/admin/login", post(login))
        .route("/admin/logout", post(logout))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    token: String,
}

async fn login(State(server): State<Server>, request: Request) -> Response {
    if cross_origin(request.headers()) {
        return Refusal::CrossOrigin.into_response();
    }
    let Some(token) = server.shared.config.admin_token.clone() else {
        return (
            StatusCode::NOT_FOUND,
            "no admin token is configured: the admin routes answer loopback requests",
        )
            .into_response();
    };
    let body: LoginBody = match super::api::json_body(&server, request.into_body(), MAX_BODY).await
    {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    if !same_secret(body.token.as_bytes(), token.as_bytes()) {
        tracing::info!(target: "belay::server", "admin login refused: wrong token");
        return (StatusCode::UNAUTHORIZED, "wrong admin token").into_response();
    }
    let id = server.shared.admin.logins.open(server.shared.clock.now());
    tracing::info!(target: "belay::server", "admin login");
    let cookie = format!(
        "{COOKIE}={id}; Path=/admin; HttpOnly; SameSite=Strict; Max-Age={}",
        LOGIN_LIFETIME.as_secs()
    );
    (StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response()
}

async fn logout(State(server): State<Server>, request: Request<Body>) -> Response {
    if cross_origin(request.headers()) {
        return Refusal::CrossOrigin.into_response();
    }
    if let Some(id) = cookie(request.headers()) {
        server.shared.admin.logins.close(id);
    }
    let cleared = format!("{COOKIE}=; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=0");
    (StatusCode::NO_CONTENT, [(header::SET_COOKIE, cleared)]).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, "a=1; belay_admin=abc; b=2".parse().unwrap());
        assert_eq!(cookie(&headers), Some("abc"));
        headers.insert(header::COOKIE, "belay_admins=x".parse().unwrap());
        assert_eq!(cookie(&headers), None);
    }
}
