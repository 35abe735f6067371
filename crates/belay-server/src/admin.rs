//! The guard in front of admin and fault routes.
//!
//! Admin routes change what the server does for everyone (a drain stops
//! it), so they are not on [`Server::router`](crate::Server::router) and
//! every request to them passes [`guard`]:
//!
//! | request | answer |
//! |---|---|
//! | an `Origin` header that is not the request's own origin (a page on another site) | 403 `cross-origin admin request` |
//! | a token is configured (`ServerConfig::admin_token`) and `Authorization: Bearer` does not carry it | 401 with `WWW-Authenticate: Bearer` |
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

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;

use belay_proto::server::TrustedProxies;

use crate::Server;

/// `routes` behind the admin guard of `server`.
pub fn guard<S>(server: &Server, routes: Router<S>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes.layer(middleware::from_fn_with_state(server.clone(), check))
}

async fn check(State(server): State<Server>, request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    match verdict(
        server.shared.config.admin_token.as_deref(),
        &server.shared.config.trusted_proxies,
        peer,
        request.headers(),
    ) {
        Ok(()) => next.run(request).await,
        Err(refused) => refused.into_response(),
    }
}

/// Why the guard refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
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

/// Whether a request from `peer` with `headers` may reach an admin route.
fn verdict(
    token: Option<&str>,
    proxies: &TrustedProxies,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
) -> Result<(), Refusal> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let host = text(header::HOST);
    if let Some(origin) = text(header::ORIGIN) {
        let own = host.is_some_and(|host| {
            origin
                .split_once("://")
                .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(host))
        });
        if !own {
            return Err(Refusal::CrossOrigin);
        }
    }
    match token {
        Some(token) => {
            let given = text(header::AUTHORIZATION).and_then(|v| v.strip_prefix("Bearer "));
            if given.is_some_and(|given| same_secret(given.as_bytes(), token.as_bytes())) {
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

/// Compare secrets in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
        assert!(verdict(None, &NO_PROXIES, LOOPBACK, &h).is_ok());
        let remote = Some("192.0.2.1".parse().unwrap());
        assert!(verdict(None, &NO_PROXIES, remote, &h).is_err());
        assert!(verdict(None, &NO_PROXIES, None, &h).is_err());
    }

    #[test]
    fn another_origin_is_refused_even_on_loopback() {
        let h = headers(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "https://evil.example"),
        ]);
        assert!(verdict(None, &NO_PROXIES, LOOPBACK, &h).is_err());
        let same = headers(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "http://127.0.0.1:8080"),
        ]);
        assert!(verdict(None, &NO_PROXIES, LOOPBACK, &same).is_ok());
    }

    #[test]
    fn a_rebound_name_is_not_a_loopback_host() {
        let h = headers(&[
            (header::HOST, "evil.example:8080"),
            (header::ORIGIN, "http://evil.example:8080"),
        ]);
        assert!(verdict(None, &NO_PROXIES, LOOPBACK, &h).is_err());
        assert!(
            loopback_host("localhost:1") && loopback_host("[::1]:80") && loopback_host("127.3.4.5")
        );
    }

    #[test]
    fn a_configured_token_is_required_from_anywhere() {
        let without = headers(&[(header::HOST, "127.0.0.1")]);
        assert!(verdict(Some("s3cret"), &NO_PROXIES, LOOPBACK, &without).is_err());
        let with = headers(&[
            (header::HOST, "admin.example"),
            (header::AUTHORIZATION, "Bearer s3cret"),
        ]);
        assert!(verdict(
            Some("s3cret"),
            &NO_PROXIES,
            Some("192.0.2.1".parse().unwrap()),
            &with
        )
        .is_ok());
        let wrong = headers(&[(header::AUTHORIZATION, "Bearer s3creT")]);
        assert!(verdict(Some("s3cret"), &NO_PROXIES, LOOPBACK, &wrong).is_err());
    }
}
