//! `$call` (spec/PROTOCOL.md §10.3): a client calls a method of a resident
//! host through the relay. Params `{"host": ID, "method": NAME, "params":
//! <json>}` (`params` optional, `null` when absent); the result is the
//! host's own, so it has no type here. The relay hands the call to its
//! host as a publication on `$host-calls:ID` whose data is a
//! [`HostCallDelivery`].

use serde::{Deserialize, Serialize};

use crate::message::Payload;

/// `$call` params: call `method` of the host `host` with `params`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CallParams {
    /// The host's id.
    pub host: String,
    /// The host's method (1 to 128 bytes).
    pub method: String,
    /// Its params; `null` when the request has none. Always sent, as the
    /// clients always have.
    #[serde(default)]
    pub params: Payload,
}

impl CallParams {
    /// Call `method` of `host` with `params`.
    pub fn new(host: impl Into<String>, method: impl Into<String>, params: Payload) -> Self {
        CallParams {
            host: host.into(),
            method: method.into(),
            params,
        }
    }
}

/// A call as its host receives it: the data of a publication on
/// `$host-calls:ID`. The host answers it with `$answer` naming `call`.
///
/// Read leniently, as hosts always have: unknown fields are ignored (a
/// newer relay may add some), a missing `method` is the empty name (no
/// host has that method, so it answers `unknown_method`) and missing
/// `params` are `null`. Only `call` is required: without it there is
/// nothing to answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostCallDelivery {
    /// The call's id, unique on the relay while the call lasts.
    pub call: u64,
    /// The host's method the caller named.
    #[serde(default)]
    pub method: String,
    /// The caller's params.
    #[serde(default)]
    pub params: Payload,
}

impl HostCallDelivery {
    /// Call `call`: `method` with `params`.
    pub fn new(call: u64, method: impl Into<String>, params: Payload) -> Self {
        HostCallDelivery {
            call,
            method: method.into(),
            params,
        }
    }
}
