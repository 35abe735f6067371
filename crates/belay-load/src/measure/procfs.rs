//! Resident memory and CPU time of a process, from `/proc`.

/// A snapshot of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcSample {
    /// `VmRSS` in KiB.
    pub rss_kib: u64,
    /// `utime + stime` in clock ticks.
    pub cpu_ticks: u64,
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux unless the
/// kernel was built otherwise).
pub const CLK_TCK: f64 = 100.0;

/// Read `/proc/PID/status` and `/proc/PID/stat`.
pub fn sample(pid: u32) -> std::io::Result<ProcSample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let invalid = |what| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    Ok(ProcSample {
        rss_kib: parse_vm_rss(&status).ok_or_else(|| invalid("no VmRSS"))?,
        cpu_ticks: parse_cpu_ticks(&stat).ok_or_else(|| invalid("bad /proc/PID/stat"))?,
    })
}

/// `VmRSS` in KiB from the text of `/proc/PID/status`.
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `utime + stime` (fields 14 and 15) from the text of `/proc/PID/stat`.
/// The command name (field 2) may contain spaces, so count from its `)`.
pub fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace().skip(11); // field 3 is the first here
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_and_stat() {
        let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmRSS:\t   1234 kB\nThreads:\t3\n";
        assert_eq!(parse_vm_rss(status), Some(1234));
        assert_eq!(parse_vm_rss("Name: x\n"), None);
        let stat = "4242 (odd name) S 1 4242 4242 0 -1 4194560 100 0 0 0 17 5 0 0 20 0 3 0";
        assert_eq!(parse_cpu_ticks(stat), Some(22));
        assert_eq!(parse_cpu_ticks("1 (x) S"), None);
    }

    #[test]
    fn samples_this_process() {
        let s = sample(std::process::id()).expect("procfs");
        assert!(s.rss_kib > 0);
    }
}
