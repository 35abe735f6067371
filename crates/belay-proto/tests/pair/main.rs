//! Client and server cores together in virtual time, on the core's own
//! harness ([`belay_proto::testing::Pair`]): one behaviour per module, one
//! scenario per test. 120 s of protocol run in milliseconds.

mod support;

mod freeze;
mod random_faults;
