//! The admin routes and the admin web UI, and the guard in front of them.
//!
//! Admin routes change what the server does for everyone (a drain stops
//! it), so they are not on [`Server::router`](crate::Server::router);
//! [`Server::admin_router`](crate::Server::admin_router) serves them, and
//! every request to them passes [`guard`]:
//!
//! | request | answer |
//! |---|---|
//! | an `Origin` header that is not the request's own origin (a page on another site) | 403 `cross-origin admin request` |
//! | a token is configured (`ServerConfig::admin_token`) and neither `Authorization: Bearer` carries it nor a `belay_admin` cookie names a login that holds ([`login`]) | 401 with `WWW-Authenticate: Bearer` |
//! | no token is configured, and the request was forwarded (the peer is a trusted proxy, or it carries `X-Forwarded-For`, `Forwarded` or `X-Real-IP`) and the client the trusted proxy names is not a loopback address that is no proxy itself | 403 `a forwarded admin request needs the admin token` |
//! | no token is configured, and the peer is not a loopback address or the `Host` is not a loopback name (`localhost`, `127.0.0.0/8`, `::1`) | 403 `admin routes answer loopback only` |
//! | anything else | the route |
//!
//! The `Origin` rule stops a page in an operator's browser from posting to
//! the admin API (browsers send `Origin` with every cross-origin request,
//! including the "simple" `text/plain` POST that needs no preflight); the
//! loopback `Host` rule stops DNS rebinding, where such a page's own name
//! resolves to 127.0.0.1 and its requests look same-origin. The forwarding
//! rule stops a reverse proxy on the same host (nginx, HAProxy: the
//! documented deployment) from lending its loopback address to the whole
//! internet: without a token, only a request that is provably local passes,
//! and one a proxy forwarded is judged by the client it names.
//!
//! The web UI (`GET /admin/`, docs/OPERATIONS.md) is a page of the server's
//! own: the login form when a token is configured and the browser holds no
//! login ([`login`]: the token goes in a POST body once, and an HttpOnly,
//! `SameSite=Strict` cookie stands for it after; never in a URL), the
//! console otherwise. The console reads the admin JSON routes and follows
//! the node's figures live over a Belay connection of the project's own
//! browser client to a hub server of the admin's own.

mod api;
mod guard;
mod live;
pub mod login;
mod page;

pub use guard::guard;

use axum::Router;

use crate::Server;

/// Every admin route of `server`: the guarded JSON and actions, the UI's
/// page, assets and live feed, and the login.
pub(crate) fn routes(server: &Server) -> Router {
    let guarded = api::routes()
        .merge(page::guarded())
        .merge(live::routes(server));
    guard(server, guarded)
        .merge(page::open())
        .merge(login::routes())
        .with_state(server.clone())
}
