//! The `http_api` target's input model: header bytes pick the method, the
//! path, the query, the API key headers, the content type and the body's
//! kind; the rest is the body (raw, or JSON built from it by
//! [`super::body`]).

use axum::body::Body;
use axum::http::{header, Method, Request, Uri};

use super::body::json_body;
use crate::fuzzing::choices::Choices;

/// The API key the harness's router accepts.
pub(crate) const KEY: &str = "fuzz-api-key-0123";

const METHODS: [&str; 8] = [
    "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "BREW",
];

/// The paths: every documented route, near misses, the server's own
/// routes that answer at once (not `/ws` or `/sse`, whose answers are
/// sessions), and `/api/` + bytes of the input (index 16).
const PATHS: [&str; 16] = [
    "/api/publish",
    "/api/user_publish",
    "/api/broadcast",
    "/api/info",
    "/api/disconnect",
    "/api/presence",
    "/api/history",
    "/api/channels",
    "/api/stats",
    "/api/",
    "/api/unknown",
    "/api/publish/",
    "/API/publish",
    "/healthz",
    "/readyz",
    "/metrics",
];

/// The query strings (index 10: bytes of the input).
const QUERIES: [&str; 10] = [
    "",
    "pattern=chat:*",
    "pattern=",
    "after=news",
    "pattern=a&pattern=b",
    "x=1",
    "pattern=%FF",
    "pattern=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "pattern=news&after=a",
    "after=%20",
];

/// The API key headers: which are sent, with which value.
const KEY_HEADERS: [&[(&str, &str)]; 9] = [
    &[("authorization", "Bearer fuzz-api-key-0123")],
    &[("x-api-key", "fuzz-api-key-0123")],
    &[("authorization", "Bearer wrong-key")],
    &[("authorization", "Bearer ")],
    &[],
    // `X-API-Key` is read first: the right one wins over a wrong bearer…
    &[
        ("x-api-key", "fuzz-api-key-0123"),
        ("authorization", "Bearer wrong"),
    ],
    // …and a wrong one loses over the right bearer.
    &[
        ("x-api-key", "wrong"),
        ("authorization", "Bearer fuzz-api-key-0123"),
    ],
    &[("authorization", "bearer fuzz-api-key-0123")],
    &[("x-api-key", "fuzz-api-key-0123-and-more")],
];

/// Which [`KEY_HEADERS`] carry the right key the way the API reads it.
const KEY_ACCEPTED: [bool; 9] = [true, true, false, false, false, true, false, false, false];

const CONTENT_TYPES: [Option<&str>; 4] = [
    None,
    Some("application/json"),
    Some("text/plain"),
    Some("application/json; charset=utf-8"),
];

/// The body limits the router may be built with.
const MAX_BODIES: [usize; 4] = [4096, 0, 64, 65_536];

/// One input, decoded.
pub(crate) struct HttpInput {
    pub(crate) method: Method,
    /// The path and query, as sent.
    pub(crate) uri: Uri,
    /// The path alone, to find the documented route.
    pub(crate) path: String,
    pub(crate) key_accepted: bool,
    key_headers: &'static [(&'static str, &'static str)],
    content_type: Option<&'static str>,
    pub(crate) max_body: usize,
    /// The body of each request: one, or two (the same, or the second with
    /// other `data`: an idempotency key's retry or conflict).
    pub(crate) bodies: Vec<Vec<u8>>,
}

impl HttpInput {
    /// The input, or `None` when the bytes make no request line an HTTP
    /// server would route (an invalid method or URI is refused by the HTTP
    /// parser before any router sees it).
    pub(crate) fn decode(data: &[u8]) -> Option<HttpInput> {
        let mut c = Choices::new(data);
        let method =
            Method::from_bytes(METHODS[usize::from(c.next()) % METHODS.len()].as_bytes()).ok()?;
        let path_choice = usize::from(c.next()) % (PATHS.len() + 1);
        let query_choice = usize::from(c.next()) % (QUERIES.len() + 1);
        let key_choice = usize::from(c.next()) % KEY_HEADERS.len();
        let content_type = CONTENT_TYPES[usize::from(c.next()) % CONTENT_TYPES.len()];
        let flags = c.next();
        let path = match PATHS.get(path_choice) {
            Some(path) => (*path).to_owned(),
            None => format!("/api/{}", String::from_utf8_lossy(counted(&mut c))),
        };
        let query = match QUERIES.get(query_choice) {
            Some(query) => (*query).to_owned(),
            None => String::from_utf8_lossy(counted(&mut c)).into_owned(),
        };
        let target = if query.is_empty() {
            path.clone()
        } else {
            format!("{path}?{query}")
        };
        let uri = Uri::try_from(target).ok()?;
        let rest = c.rest();
        let body = |other_data: bool| match flags & 3 {
            0 => rest.to_vec(),
            1 | 2 => json_body(rest, other_data),
            _ => Vec::new(),
        };
        let bodies = match (flags >> 4) & 3 {
            1 => vec![body(false), body(false)],
            2 => vec![body(false), body(true)],
            _ => vec![body(false)],
        };
        Some(HttpInput {
            method,
            path: uri.path().to_owned(),
            uri,
            key_accepted: KEY_ACCEPTED[key_choice],
            key_headers: KEY_HEADERS[key_choice],
            content_type,
            max_body: MAX_BODIES[usize::from((flags >> 2) & 3)],
            bodies,
        })
    }

    /// The request carrying `body`.
    pub(crate) fn request(&self, body: &[u8]) -> Request<Body> {
        let mut request = Request::builder()
            .method(self.method.clone())
            .uri(self.uri.clone());
        for (name, value) in self.key_headers {
            request = request.header(*name, *value);
        }
        if let Some(content_type) = self.content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        request
            .body(Body::from(body.to_vec()))
            .expect("a method, URI and headers that were checked")
    }
}

/// A length byte, then that many bytes.
fn counted<'a>(c: &mut Choices<'a>) -> &'a [u8] {
    let len = usize::from(c.next());
    c.take(len)
}
