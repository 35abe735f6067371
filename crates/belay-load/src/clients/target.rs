//! Where the load goes (loopback only) and where it comes from (127.0.0.x).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use http::Uri;

use crate::LoadError;

/// A loopback WebSocket endpoint.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URI sent in the upgrade request.
    pub uri: Uri,
    /// The socket address to connect to.
    pub addr: SocketAddr,
}

impl Target {
    /// Parse `ws://HOST:PORT/PATH`. `HOST` must be a loopback IP literal or
    /// `localhost`; anything else is refused, so the load generator cannot
    /// be pointed at someone else's server.
    pub fn parse(url: &str) -> Result<Target, LoadError> {
        let uri: Uri = url
            .parse()
            .map_err(|e| LoadError::Target(format!("invalid URL {url:?}: {e}")))?;
        if uri.scheme_str() != Some("ws") {
            return Err(LoadError::Target(format!(
                "{url:?}: only ws:// URLs are supported (loopback, no TLS)"
            )));
        }
        let host = uri
            .host()
            .ok_or_else(|| LoadError::Target(format!("{url:?} has no host")))?;
        let ip = loopback_host(host).ok_or_else(|| {
            LoadError::Target(format!(
                "refusing {host:?}: belay load only targets loopback addresses (127.0.0.0/8, ::1, localhost)"
            ))
        })?;
        let port = uri
            .port_u16()
            .ok_or_else(|| LoadError::Target(format!("{url:?} has no port")))?;
        Ok(Target {
            addr: SocketAddr::new(ip, port),
            uri,
        })
    }

    /// The URL, for a client that parses its own (belay-client).
    pub fn url(&self) -> String {
        format!("ws://{}{}", self.addr, self.uri.path())
    }

    /// The target for a server listening at `addr` (path `/ws`).
    pub fn local(addr: SocketAddr) -> Result<Target, LoadError> {
        Target::parse(&format!("ws://{addr}/ws"))
    }
}

/// The IP of a loopback host name, or `None` if it is not loopback.
pub fn loopback_host(host: &str) -> Option<IpAddr> {
    if host.eq_ignore_ascii_case("localhost") {
        return Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let ip: IpAddr = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()?;
    ip.is_loopback().then_some(ip)
}

/// Parse source addresses: a comma-separated list of loopback IPv4
/// addresses or ranges `A-B` whose first three octets agree
/// (`127.0.0.1-127.0.0.40,127.0.1.1`). At most 1,024 addresses.
pub fn parse_sources(spec: &str) -> Result<Vec<IpAddr>, LoadError> {
    let bad = |why: String| LoadError::Target(format!("sources {spec:?}: {why}"));
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let parse = |s: &str| -> Result<Ipv4Addr, LoadError> {
            let ip: Ipv4Addr = s
                .parse()
                .map_err(|_| bad(format!("{s:?} is not an IPv4 address")))?;
            if !ip.is_loopback() {
                return Err(bad(format!("{ip} is not a loopback address")));
            }
            Ok(ip)
        };
        let (a, b) = (parse(first)?, parse(last)?);
        if a.octets()[..3] != b.octets()[..3] {
            return Err(bad(format!("range {a}-{b} must stay within one /24")));
        }
        let (lo, hi) = (a.octets()[3], b.octets()[3]);
        if lo > hi {
            return Err(bad(format!("range {a}-{b} is empty")));
        }
        for last_octet in lo..=hi {
            let [o1, o2, o3, _] = a.octets();
            out.push(IpAddr::V4(Ipv4Addr::new(o1, o2, o3, last_octet)));
        }
        if out.len() > 1_024 {
            return Err(bad("more than 1,024 addresses".into()));
        }
    }
    if out.is_empty() {
        return Err(bad("no addresses".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_are_accepted() {
        let t = Target::parse("ws://127.0.0.1:8080/ws").expect("loopback");
        assert_eq!(t.addr, "127.0.0.1:8080".parse().expect("addr"));
        assert_eq!(t.uri.path(), "/ws");
        assert!(Target::parse("ws://localhost:1/ws").is_ok());
        assert!(Target::parse("ws://127.9.9.9:1/").is_ok());
        assert!(Target::parse("ws://[::1]:1/ws").is_ok());
    }

    #[test]
    fn non_loopback_and_odd_urls_are_refused() {
        for url in [
            "ws://10.0.0.1:80/ws",
            "ws://example.com:80/ws",
            "ws://0.0.0.0:80/ws",
            "wss://127.0.0.1:443/ws",
            "http://127.0.0.1:80/ws",
            "ws://127.0.0.1/ws",
            "not a url",
        ] {
            assert!(
                matches!(Target::parse(url), Err(LoadError::Target(_))),
                "{url}"
            );
        }
    }

    #[test]
    fn source_ranges_expand() {
        let s = parse_sources("127.0.0.1-127.0.0.3, 127.0.1.7").expect("valid");
        let want: Vec<IpAddr> = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.1.7"]
            .iter()
            .map(|s| s.parse().expect("ip"))
            .collect();
        assert_eq!(s, want);
        assert_eq!(
            parse_sources("127.0.0.1-127.0.0.40").expect("valid").len(),
            40
        );
    }

    #[test]
    fn bad_sources_are_refused() {
        for spec in [
            "",
            "10.0.0.1",
            "127.0.0.5-127.0.0.1",
            "127.0.0.1-127.0.1.1",
            "127.0.0.1-10.0.0.2",
            "banana",
        ] {
            assert!(parse_sources(spec).is_err(), "{spec}");
        }
    }
}
