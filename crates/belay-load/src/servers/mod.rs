//! The servers under test, as the benchmarks run them.
//!
//! * [`belay`]: Belay's server with the demo methods plus `bench.publish`,
//!   its limits raised so that the load is what gets measured.
//! * [`floor`]: the bare tokio-websockets server Belay is compared with.
//! * [`child`]: a server under test as a child process (`LISTEN addr` on
//!   stdout, RSS and CPU from `/proc/PID`).
//!
//! The runtime a server process runs on is the standalone server's
//! (`belay_standalone::runtime`), shared with `belay serve`.

pub mod belay;
pub mod child;
pub mod floor;
