//! Harness code of the fuzz targets: the client_session and
//! server_connection harnesses live in `belay_proto::fuzzing` (so the test
//! command replays their corpora on stable), the server's in
//! `belay_server::fuzzing`; see docs/FUZZING.md.
#![forbid(unsafe_code)]

pub use belay_proto::fuzzing::{client_session, server_connection};
