//! The suites: whole runs that start their own servers (processes, Redis),
//! run loads or attacks against them and write a report. Each has its own
//! binary or `belay` subcommand.
//!
//! * [`peers`]: Belay, the floor, Node `ws` and socket.io under the same
//!   loads in one run (`server-bench peers`).
//! * [`cluster`]: the Redis cluster broker: publish, capacity and recovery
//!   over several nodes (`cluster-bench`).
//! * [`herd`]: real clients reconnecting after a real server outage, per
//!   reconnect policy (`herd-bench`, docs/HERD.md).
//! * [`hosts`]: idle resident hosts, asleep and awake (`host-bench`, docs/HOSTS.md).
//! * [`abuse`]: attackers next to a well-behaved victim (`belay abuse`, docs/ABUSE.md).

pub mod abuse;
pub mod cluster;
pub mod herd;
pub mod hosts;
pub mod peers;
