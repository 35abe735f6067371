//! The test harness of the core (feature `testing`), as quinn-proto keeps
//! its `Pair` beside the machines it tests.
//!
//! [`Pair`] runs N client cores ([`Session`](crate::Session)) against the
//! server core ([`Connection`](crate::server::Connection)) over simulated
//! [`Link`]s (latency, loss, one direction frozen, cut), with a
//! [`ModelBroker`] built on the core's `ChannelLog`, all in virtual time:
//! the clock jumps to the next thing due, so minutes of protocol take
//! milliseconds. The server's [`Node`](crate::server::Node) runs beside the
//! connections as belay-server runs it: every connection registered and
//! identified as its client's user (`client-N`), its orders (drain,
//! `disconnect_user`) and timers on the pair's clock, presence kept as it
//! decides, and resident hosts on its `HostCalls` (`set_host`, `host_beat`,
//! `$call` and `$answer` relayed).
//!
//! ```text
//!  Client 0 ── Link ──┐                 ┌─ Connection ─┐
//!  Client 1 ── Link ──┼── Schedule ─────┼─ Connection ─┼── ModelBroker
//!  …                  │ (virtual clock) └─ …          ─┘     Application
//! ```
//!
//! Every batch of outputs of every client and server connection goes
//! through the one invariant checker, [`invariants`], which the session
//! property tests and the fuzz targets use as well; the first violation
//! panics. The server side answers as its [`Application`] says (credential
//! and subscription-token lifetimes; `echo` and `slow` methods). The
//! scenarios are belay-proto's `tests/pair/` (one behaviour per file; the
//! crate's dev-dependency on itself with `testing` makes `cargo test` run
//! them).
//!
//! | file | purpose |
//! |---|---|
//! | `pair.rs` | [`Pair`]: constructors, getters, the run loop |
//! | `schedule.rs` | the virtual clock and the deliveries in flight |
//! | `link.rs` | [`Link`]: latency, loss, freeze, cut, refusal |
//! | `client_side.rs` | [`Client`]: a session, its link, its events; `add_client`, `command` |
//! | `server_side.rs` | the server's connections; `publish`, `close_server_connections`, `drop_server_connections`, `advise_clients`, `drain_server` |
//! | `application.rs` | [`Application`]: what the server's application answers |
//! | `broker.rs` | [`ModelBroker`]: channels on the core's `ChannelLog` |
//! | `records.rs` | [`ClientId`], [`ConnectionId`], [`ServerRecord`] |
//! | `invariants/` | [`ClientInvariants`](invariants::ClientInvariants), [`ServerInvariants`](invariants::ServerInvariants) |
//!
//! ```
//! use std::time::Duration;
//! use belay_proto::Config;
//! use belay_proto::testing::{ClientId, Pair};
//!
//! let mut pair = Pair::new(Config::default(), 1);
//! let second = pair.add_client(Config::default(), 2);
//! for client in [ClientId::FIRST, second] {
//!     pair.command(client, |session, now| session.start(now)).unwrap();
//! }
//! pair.run_for(Duration::from_secs(1));
//! assert!(pair.client(second).session.is_ready());
//! assert_eq!(pair.server_connections(), 2);
//! ```

mod application;
mod broker;
mod client_side;
mod hosts;
pub mod invariants;
mod link;
mod node_side;
mod pair;
mod records;
mod schedule;
mod server_side;

pub use application::Application;
pub use broker::{ModelBroker, Subscriber};
pub use client_side::Client;
pub use link::{Direction, Link};
pub use pair::Pair;
pub use records::{ClientId, ConnectionId, ServerRecord};
