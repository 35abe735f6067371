//! Just enough HTTP/1.1 to drive a server's admin API and read its metrics.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one admin call may take.
const CALL_BOUND: Duration = Duration::from_secs(5);

/// A status code and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
}

/// `method path` with a JSON `body` (may be empty); with `proxy_header`, the request is preceded
/// by a PROXY protocol v1 line naming the lab's own address, as a server
/// that trusts the lab's address as a proxy (`--proxy-protocol
/// --trusted-proxy 127.0.0.1`, behind HAProxy) expects from it.
pub(crate) async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    proxy_header: bool,
) -> Result<Answer, String> {
    let exchange = async {
        let mut tcp = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        let mut request = String::new();
        if proxy_header {
            let local = tcp
                .local_addr()
                .map_err(|e| format!("local address towards {addr}: {e}"))?;
            request.push_str(&proxy_v1(local, addr));
        }
        request.push_str(&format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
        tcp.write_all(request.as_bytes())
            .await
            .map_err(|e| format!("write to {addr}: {e}"))?;
        let mut raw = Vec::new();
        tcp.read_to_end(&mut raw)
            .await
            .map_err(|e| format!("read from {addr}: {e}"))?;
        parse(&String::from_utf8_lossy(&raw))
    };
    tokio::time::timeout(CALL_BOUND, exchange)
        .await
        .map_err(|_| format!("{method} {path} on {addr}: no answer within {CALL_BOUND:?}"))?
}

/// The PROXY protocol v1 line for a connection from `from` to `to`.
fn proxy_v1(from: SocketAddr, to: SocketAddr) -> String {
    let family = if from.is_ipv4() { "TCP4" } else { "TCP6" };
    format!(
        "PROXY {family} {} {} {} {}\r\n",
        from.ip(),
        to.ip(),
        from.port(),
        to.port()
    )
}

fn parse(text: &str) -> Result<Answer, String> {
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {:.60}", text))?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let chunked = text.split("\r\n\r\n").next().is_some_and(|h| {
        h.to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok(Answer { status, body })
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// The value of an unlabelled Prometheus sample, e.g. `belay_connections_open`.
pub(crate) fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (key, value) = l.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_plain_answer() {
        let a =
            parse("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 8\r\n\r\ndraining").unwrap();
        assert_eq!(
            a,
            Answer {
                status: 503,
                body: "draining".into()
            }
        );
    }

    #[test]
    fn reads_a_chunked_answer() {
        let a = parse(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(a.body, "abcde");
    }

    #[test]
    fn writes_a_proxy_v1_line() {
        let line = proxy_v1(
            "127.0.0.1:40000".parse().unwrap(),
            "127.0.0.1:8080".parse().unwrap(),
        );
        assert_eq!(line, "PROXY TCP4 127.0.0.1 127.0.0.1 40000 8080\r\n");
    }

    #[test]
    fn finds_a_metric() {
        let text = "# HELP x\nbelay_connections_open 3\nbelay_connects_total 12\n";
        assert_eq!(metric(text, "belay_connections_open"), Some(3.0));
        assert_eq!(metric(text, "belay_connects_total"), Some(12.0));
        assert_eq!(metric(text, "belay_missing"), None);
    }
}
