//! Who the client really is behind a trusted proxy: the PROXY protocol
//! (v1 text and v2 binary, as HAProxy sends it) and the `X-Forwarded-For`
//! / `Forwarded` headers.
//!
//! Both are believed only from a peer in [`TrustedProxies`]: anyone else
//! could write any address there. For the headers, the chain is read from
//! the right (the address the nearest proxy saw) and trusted proxies are
//! skipped; the first untrusted address is the client.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

/// An address range, `10.0.0.0/8` or a single address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    addr: IpAddr,
    prefix: u8,
}

/// Why an [`IpRange`] could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an address or address/prefix: {0:?}")]
pub struct IpRangeError(String);

impl FromStr for IpRange {
    type Err = IpRangeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || IpRangeError(text.to_owned());
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text.trim(), None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| error())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(prefix) => prefix.parse::<u8>().map_err(|_| error())?,
            None => max,
        };
        if prefix > max {
            return Err(error());
        }
        Ok(IpRange { addr, prefix })
    }
}

impl IpRange {
    /// Whether `ip` is in the range (an IPv4-mapped IPv6 address counts as
    /// its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// The proxies whose word about the client's address is taken.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpRange>);

impl TrustedProxies {
    /// Trust these ranges.
    pub fn new(ranges: Vec<IpRange>) -> Self {
        TrustedProxies(ranges)
    }

    /// Whether no proxy is trusted (the default).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is a trusted proxy.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|range| range.contains(ip))
    }

    /// The client's address for a request from `peer` carrying these
    /// `X-Forwarded-For` and `Forwarded` header values (all occurrences, in
    /// order). `peer` itself unless it is trusted; then the rightmost
    /// untrusted address of the chain (`Forwarded` wins when both are
    /// present), or the leftmost if every hop is trusted.
    pub fn client(&self, peer: IpAddr, x_forwarded_for: &[&str], forwarded: &[&str]) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let chain: Vec<IpAddr> = if forwarded.is_empty() {
            x_forwarded_for
                .iter()
                .flat_map(|value| value.split(','))
                .filter_map(parse_node)
                .collect()
        } else {
            forwarded
                .iter()
                .flat_map(|value| value.split(','))
                .filter_map(|element| {
                    element.split(';').find_map(|pair| {
                        let (name, value) = pair.split_once('=')?;
                        name.trim()
                            .eq_ignore_ascii_case("for")
                            .then(|| parse_node(value))
                            .flatten()
                    })
                })
                .collect()
        };
        chain
            .iter()
            .rev()
            .find(|ip| !self.trusts(**ip))
            .or(chain.first())
            .copied()
            .unwrap_or(peer)
    }
}

/// One hop of a chain: `192.0.2.1`, `192.0.2.1:80`, `2001:db8::1`,
/// `"[2001:db8::1]:80"`; `unknown` and obfuscated names are skipped.
fn parse_node(text: &str) -> Option<IpAddr> {
    let text = text.trim().trim_matches('"');
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Some(addr.ip());
    }
    let inner = text.strip_prefix('[')?.split(']').next()?;
    inner.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
}

/// The longest PROXY header: 107 bytes for v1, 16 + 216 for v2 with TLVs
/// (longer v2 headers are refused).
pub const MAX_PROXY_HEADER: usize = 16 + 216;

const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";

/// What [`parse_proxy_header`] found at the start of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyHeader {
    /// More bytes are needed.
    Incomplete,
    /// A complete header of `len` bytes; `source` is the client's address
    /// (`None` for `UNKNOWN`, `LOCAL` or a non-TCP family: use the peer's).
    Done {
        /// Bytes the header takes.
        len: usize,
        /// The original client.
        source: Option<SocketAddr>,
    },
    /// Not a valid PROXY header.
    Invalid,
}

/// Parse a PROXY protocol header (v1 or v2) at the start of `buf`.
pub fn parse_proxy_header(buf: &[u8]) -> ProxyHeader {
    if buf.len() >= 5 && &buf[..5] == b"PROXY" {
        return parse_v1(buf);
    }
    let signature_seen = buf.len().min(V2_SIGNATURE.len());
    if buf[..signature_seen] != V2_SIGNATURE[..signature_seen] {
        return if b"PROXY".starts_with(&buf[..buf.len().min(5)]) {
            ProxyHeader::Incomplete
        } else {
            ProxyHeader::Invalid
        };
    }
    if buf.len() < 16 {
        return ProxyHeader::Incomplete;
    }
    parse_v2(buf)
}

fn parse_v1(buf: &[u8]) -> ProxyHeader {
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return if buf.len() >= 107 {
            ProxyHeader::Invalid
        } else {
            ProxyHeader::Incomplete
        };
    };
    let Ok(line) = std::str::from_utf8(&buf[..end]) else {
        return ProxyHeader::Invalid;
    };
    let len = end + 2;
    let fields: Vec<&str> = line.split(' ').collect();
    match fields.as_slice() {
        ["PROXY", "UNKNOWN", ..] => ProxyHeader::Done { len, source: None },
        ["PROXY", family @ ("TCP4" | "TCP6"), src, _dst, sport, _dport] => {
            let ip = match (*family, src.parse::<IpAddr>()) {
                ("TCP4", Ok(ip @ IpAddr::V4(_))) | ("TCP6", Ok(ip @ IpAddr::V6(_))) => ip,
                _ => return ProxyHeader::Invalid,
            };
            match sport.parse::<u16>() {
                Ok(port) => ProxyHeader::Done {
                    len,
                    source: Some(SocketAddr::new(ip, port)),
                },
                Err(_) => ProxyHeader::Invalid,
            }
        }
        _ => ProxyHeader::Invalid,
    }
}

fn parse_v2(buf: &[u8]) -> ProxyHeader {
    let version_command = buf[12];
    let family = buf[13];
    let body = usize::from(u16::from_be_bytes([buf[14], buf[15]]));
    let len = 16 + body;
    if version_command >> 4 != 2 || len > MAX_PROXY_HEADER {
        return ProxyHeader::Invalid;
    }
    if buf.len() < len {
        return ProxyHeader::Incomplete;
    }
    let addresses = &buf[16..len];
    let source = match (version_command & 0x0f, family) {
        // LOCAL: the proxy's own connection (health checks).
        (0, _) => None,
        (1, 0x11) if addresses.len() >= 12 => {
            let ip = Ipv4Addr::new(addresses[0], addresses[1], addresses[2], addresses[3]);
            let port = u16::from_be_bytes([addresses[8], addresses[9]]);
            Some(SocketAddr::new(IpAddr::V4(ip), port))
        }
        (1, 0x21) if addresses.len() >= 36 => {
            let mut octets = [0; 16];
            octets.copy_from_slice(&addresses[..16]);
            let port = u16::from_be_bytes([addresses[32], addresses[33]]);
            Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(octets)), port))
        }
        (1, 0x11 | 0x21) => return ProxyHeader::Invalid,
        (1, _) => None,
        _ => return ProxyHeader::Invalid,
    };
    ProxyHeader::Done { len, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted(ranges: &[&str]) -> TrustedProxies {
        TrustedProxies::new(ranges.iter().map(|r| r.parse().unwrap()).collect())
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ranges_match_by_prefix() {
        let range: IpRange = "10.1.0.0/16".parse().unwrap();
        assert!(range.contains(ip("10.1.200.3")));
        assert!(!range.contains(ip("10.2.0.1")));
        assert!(range.contains(ip("::ffff:10.1.0.9")));
        let v6: IpRange = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains(ip("2001:db8:ffff::1")));
        assert!("10.0.0.0/33".parse::<IpRange>().is_err());
        assert!("proxy.local".parse::<IpRange>().is_err());
    }

    #[test]
    fn headers_from_an_untrusted_peer_are_ignored() {
        let proxies = trusted(&["10.0.0.0/8"]);
        assert_eq!(
            proxies.client(ip("203.0.113.5"), &["198.51.100.1"], &[]),
            ip("203.0.113.5")
        );
    }

    #[test]
    fn the_rightmost_untrusted_hop_is_the_client() {
        let proxies = trusted(&["10.0.0.0/8"]);
        // The client forged the first entry; the proxies appended the rest.
        let xff = ["1.2.3.4, 198.51.100.7", "10.0.0.2"];
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &xff, &[]),
            ip("198.51.100.7")
        );
        let forwarded = [r#"for=1.2.3.4, for="[2001:db8::7]:4711";proto=https"#];
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &xff, &forwarded),
            ip("2001:db8::7")
        );
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &["10.0.0.3"], &[]),
            ip("10.0.0.3")
        );
        assert_eq!(proxies.client(ip("10.0.0.1"), &[], &[]), ip("10.0.0.1"));
    }

    #[test]
    fn proxy_v1_lines_parse_and_bad_ones_are_refused() {
        let line = b"PROXY TCP4 192.0.2.1 192.0.2.2 56324 443\r\nGET /";
        assert_eq!(
            parse_proxy_header(line),
            ProxyHeader::Done {
                len: 42,
                source: Some("192.0.2.1:56324".parse().unwrap())
            }
        );
        assert_eq!(
            parse_proxy_header(b"PROXY TCP6 2001:db8::1 2001:db8::2 1 2\r\n"),
            ProxyHeader::Done {
                len: 40,
                source: Some("[2001:db8::1]:1".parse().unwrap())
            }
        );
        assert_eq!(
            parse_proxy_header(b"PROXY UNKNOWN\r\n"),
            ProxyHeader::Done {
                len: 15,
                source: None
            }
        );
        assert_eq!(parse_proxy_header(b"PROX"), ProxyHeader::Incomplete);
        assert_eq!(
            parse_proxy_header(b"PROXY TCP4 1.2"),
            ProxyHeader::Incomplete
        );
        assert_eq!(
            parse_proxy_header(b"PROXY TCP4 2001:db8::1 1.1.1.1 1 2\r\n"),
            ProxyHeader::Invalid
        );
        assert_eq!(
            parse_proxy_header(b"GET / HTTP/1.1\r\n"),
            ProxyHeader::Invalid
        );
        assert_eq!(parse_proxy_header(&[b'x'; 200]), ProxyHeader::Invalid);
    }

    #[test]
    fn proxy_v2_headers_parse() {
        let mut v2 = V2_SIGNATURE.to_vec();
        v2.extend_from_slice(&[0x21, 0x11, 0, 12]);
        v2.extend_from_slice(&[198, 51, 100, 9, 10, 0, 0, 1, 0x1f, 0x90, 0x01, 0xbb]);
        assert_eq!(parse_proxy_header(&v2[..20]), ProxyHeader::Incomplete);
        assert_eq!(
            parse_proxy_header(&v2),
            ProxyHeader::Done {
                len: 28,
                source: Some("198.51.100.9:8080".parse().unwrap())
            }
        );
        let mut local = V2_SIGNATURE.to_vec();
        local.extend_from_slice(&[0x20, 0x00, 0, 0]);
        assert_eq!(
            parse_proxy_header(&local),
            ProxyHeader::Done {
                len: 16,
                source: None
            }
        );
        let mut bad = V2_SIGNATURE.to_vec();
        bad.extend_from_slice(&[0x31, 0x11, 0, 0]);
        assert_eq!(parse_proxy_header(&bad), ProxyHeader::Invalid);
    }
}
