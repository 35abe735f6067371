//! Client and server cores together in virtual time, on the core's own
//! harness ([`belay_proto::testing::Pair`]): one behaviour per module, one
//! scenario per test; every step checked by the one invariant checker.
//! Minutes of protocol run in milliseconds.

mod support;

mod advice;
mod credentials_refresh;
mod default_liveness;
mod disconnect_user;
mod drain;
mod fan_out;
mod flapping;
mod freeze;
mod host_calls;
mod node_drain;
mod presence;
mod random_faults;
mod reaping;
mod reconnect_now;
mod restart_settles_requests;
mod restart_without_loss;
mod short_history;
mod slow_replies;
mod subscription_token;
