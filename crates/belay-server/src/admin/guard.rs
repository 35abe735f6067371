//! The admin guard: who may reach an admin route (the table in
//! [`crate::admin`]).

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;

use belay_proto::server::TrustedProxies;

use crate::admin_state::same_secret;
use crate::Server;

/// `routes` behind the admin guard of `server`.
pub fn guard<S>(server: &Server, routes: Router<S>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes.layer(middleware::from_fn_with_state(server.clone(), check))
}

async fn check(State(server): State<Server>, request: Request, next: Next) -> Response {
    match admits(&server, &request) {
        Ok(()) => next.run(request).await,
        Err(refused) => refused.into_response(),
    }
}

/// Whether `request` may reach an admin route of `server`.
pub(super) fn admits(server: &Server, request: &Request) -> Result<(), Refusal> {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    let logged_in = super::login::cookie(request.headers()).is_some_and(|id| {
        server
            .shared
            .admin
            .logins
            .holds(id, server.shared.clock.now())
    });
    verdict(
        server.shared.config.admin_token.as_deref(),
        &server.shared.config.trusted_proxies,
        peer,
        request.headers(),
        logged_in,
    )
}

/// Whether a request with `headers` comes from a page of another origin
/// (its `Origin` is not its own `Host`).
pub(super) fn cross_origin(headers: &HeaderMap) -> bool {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let host = text(header::HOST);
    text(header::ORIGIN).is_some_and(|origin| {
        !host.is_some_and(|host| {
            origin
                .split_once("://")
                .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(host))
        })
    })
}

/// Why the guard refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    CrossOrigin,
    TokenRequired,
    LoopbackOnly,
    Forwarded,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::CrossOrigin => {
                (StatusCode::FORBIDDEN, "cross-origin admin request").into_response()
            }
            Refusal::TokenRequired => (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "admin token required",
            )
                .into_response(),
            Refusal::LoopbackOnly => {
                (StatusCode::FORBIDDEN, "admin routes answer loopback only").into_response()
            }
            Refusal::Forwarded => (
                StatusCode::FORBIDDEN,
                "a forwarded admin request needs the admin token",
            )
                .into_response(),
        }
    }
}

/// Whether a request from `peer` with `headers` may reach an admin route;
/// `logged_in`: it carries the cookie of a login that holds.
fn verdict(
    token: Option<&str>,
    proxies: &TrustedProxies,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    logged_in: bool,
) -> Result<(), Refusal> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let host = text(header::HOST);
    if cross_origin(headers) {
        return Err(Refusal::CrossOrigin);
    }
    match token {
        Some(token) => {
            let given = text(header::AUTHORIZATION).and_then(|v| v.strip_prefix("Bearer "));
            if logged_in
                || given.is_some_and(|given| same_secret(given.as_bytes(), token.as_bytes()))
            {
                Ok(())
            } else {
                Err(Refusal::TokenRequired)
            }
        }
        None => {
            let local = peer.is_some_and(|ip| ip.is_loopback()) && host.is_some_and(loopback_host);
            if !local {
                return Err(Refusal::LoopbackOnly);
            }
            match forwarded_client(proxies, peer, headers) {
                Forwarding::Direct => Ok(()),
                Forwarding::For(client) if client.is_loopback() && !proxies.trusts(client) => {
                    Ok(())
                }
                Forwarding::For(_) | Forwarding::Unknown => Err(Refusal::Forwarded),
            }
        }
    }
}

/// Who a request came from, as far as forwarding tells.
enum Forwarding {
    /// Straight from its TCP peer: no proxy, no forwarding header.
    Direct,
    /// Through a trusted proxy, which names this client.
    For(IpAddr),
    /// Forwarded by someone the server does not trust (forwarding headers
    /// from a peer that is no trusted proxy): the client is unknown.
    Unknown,
}

fn forwarded_client(
    proxies: &TrustedProxies,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
) -> Forwarding {
    let values = |name: &str| -> Vec<&str> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect()
    };
    let (xff, forwarded) = (values("x-forwarded-for"), values("forwarded"));
    let headers_say = !xff.is_empty() || !forwarded.is_empty() || headers.contains_key("x-real-ip");
    match peer {
        Some(peer) if proxies.trusts(peer) => {
            let client = proxies.client(peer, &xff, &forwarded);
            // A trusted proxy that names nobody (or only itself) hides the
            // client: not provably local.
            if client == peer {
                Forwarding::Unknown
            } else {
                Forwarding::For(client)
            }
        }
        _ if headers_say => Forwarding::Unknown,
        _ => Forwarding::Direct,
    }
}

/// `localhost`, a 127.0.0.0/8 address or `[::1]`, with or without a port.
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    const LOOPBACK: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
    static NO_PROXIES: std::sync::LazyLock<TrustedProxies> =
        std::sync::LazyLock::new(TrustedProxies::default);

    #[test]
    fn loopback_without_a_token_passes_and_a_remote_peer_does_not() {
        let h = headers(&[(header::HOST, "127.0.0.1:8080")]);
        assert!(verdict(None, &NO_PROXIES, LOOPBACK, &h, false).is_ok());
        let remote = Some("192.0.2.1".parse().unwrap());
        assert!(verdict(None, &NO_PROXIES, remote, &h, false).is_err());
        assert!(verdict(None, &NO_PROXIES, None, &h, false).is_err());
    }

    #[test]
    fn another_origin_is_refused_even_on_loopback() {
        let h = headers(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "https://evil.example"),
        ]);
        assert!(verdict(None, &NO_PROXIES, LOOPBACK, &h, false).is_err());
        let same = headers(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "http://127.0.0.1:8080"),
        ]);
        assert!(verdict(None, &NO_PROXIES, LOOPBACK, &same, false).is_ok());
    }

    #[test]
    fn a_rebound_name_is_not_a_loopback_host() {
        let h = headers(&[
            (header::HOST, "evil.example:8080"),
            (header::ORIGIN, "http://evil.example:8080"),
        ]);
        assert!(verdict(None, &NO_PROXIES, LOOPBACK, &h, false).is_err());
        assert!(
            loopback_host("localhost:1") && loopback_host("[::1]:80") && loopback_host("127.3.4.5")
        );
    }

    #[test]
    fn a_configured_token_is_required_from_anywhere() {
        let without = headers(&[(header::HOST, "127.0.0.1")]);
        assert!(verdict(Some("s3cret"), &NO_PROXIES, LOOPBACK, &without, false).is_err());
        let with = headers(&[
            (header::HOST, "admin.example"),
            (header::AUTHORIZATION, "Bearer s3cret"),
        ]);
        assert!(verdict(
            Some("s3cret"),
            &NO_PROXIES,
            Some("192.0.2.1".parse().unwrap()),
            &with,
            false
        )
        .is_ok());
        let wrong = headers(&[(header::AUTHORIZATION, "Bearer s3creT")]);
        assert!(verdict(Some("s3cret"), &NO_PROXIES, LOOPBACK, &wrong, false).is_err());
    }

    #[test]
    fn a_login_stands_for_the_token_but_not_for_another_origin() {
        let h = headers(&[(header::HOST, "admin.example")]);
        let remote = Some("192.0.2.1".parse().unwrap());
        assert!(verdict(Some("s3cret"), &NO_PROXIES, remote, &h, true).is_ok());
        let foreign = headers(&[
            (header::HOST, "admin.example"),
            (header::ORIGIN, "https://evil.example"),
        ]);
        assert_eq!(
            verdict(Some("s3cret"), &NO_PROXIES, remote, &foreign, true),
            Err(Refusal::CrossOrigin)
        );
    }
}
