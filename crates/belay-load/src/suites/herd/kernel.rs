//! The kernel's count of connections its listen queues dropped
//! (`/proc/net/netstat`, `TcpExt`): when a wave of dials overflows the
//! server's accept queue, the excess SYNs (or final ACKs) are dropped and
//! TCP retries them after 1 s, 3 s, …, which spreads the wave out. These
//! counters are system-wide; on the bench's machine nothing else listens
//! under load, so their change over a run is the run's.

/// Listen-queue drops so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenDrops {
    /// `ListenOverflows`: a connection completed while the accept queue was full.
    pub overflows: u64,
    /// `ListenDrops`: connections dropped at the listener for any reason.
    pub drops: u64,
    /// `TCPReqQFullDrop`: SYNs dropped because the SYN queue was full.
    pub syn_queue_full: u64,
}

impl ListenDrops {
    /// The counters now (all zero where `/proc/net/netstat` is unreadable).
    pub fn now() -> ListenDrops {
        std::fs::read_to_string("/proc/net/netstat")
            .map(|text| parse(&text))
            .unwrap_or_default()
    }

    /// What happened since `earlier`.
    pub fn since(self, earlier: ListenDrops) -> ListenDrops {
        ListenDrops {
            overflows: self.overflows.saturating_sub(earlier.overflows),
            drops: self.drops.saturating_sub(earlier.drops),
            syn_queue_full: self.syn_queue_full.saturating_sub(earlier.syn_queue_full),
        }
    }
}

/// The counters in the text of `/proc/net/netstat` (a `TcpExt:` line of
/// names followed by a `TcpExt:` line of values).
fn parse(text: &str) -> ListenDrops {
    let mut lines = text.lines().filter(|line| line.starts_with("TcpExt:"));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return ListenDrops::default();
    };
    let value = |want: &str| {
        names
            .split_whitespace()
            .zip(values.split_whitespace())
            .find(|(name, _)| *name == want)
            .and_then(|(_, value)| value.parse().ok())
            .unwrap_or(0)
    };
    ListenDrops {
        overflows: value("ListenOverflows"),
        drops: value("ListenDrops"),
        syn_queue_full: value("TCPReqQFullDrop"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_tcp_ext_lines() {
        let text = "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPReqQFullDrop\n\
                    TcpExt: 1 20 25 3\n\
                    IpExt: InNoRoutes\nIpExt: 0\n";
        let now = parse(text);
        assert_eq!(
            now,
            ListenDrops {
                overflows: 20,
                drops: 25,
                syn_queue_full: 3
            }
        );
        let before = ListenDrops {
            overflows: 5,
            drops: 5,
            syn_queue_full: 0,
        };
        assert_eq!(now.since(before).overflows, 15);
        assert_eq!(parse("nothing"), ListenDrops::default());
    }
}
