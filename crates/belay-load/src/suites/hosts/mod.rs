//! The idle-sleep benchmarks of resident hosts (`host-bench`,
//! docs/HOSTS.md): what an idle host costs on the wire asleep and awake,
//! how long a call waits for a sleeping host, and what the relay holds per
//! host.

pub mod memory;
pub mod relay;
pub mod traffic;
pub mod wake;
pub mod wire_count;
