//! Which codec a WebSocket connection speaks, chosen with the WebSocket
//! subprotocol (spec/PROTOCOL.md §1.8, "Negotiation").
//!
//! ```text
//!   client: Sec-WebSocket-Protocol: belay.bin.1, belay.json.1
//!   server: the first name it speaks → 101 + Sec-WebSocket-Protocol: belay.bin.1
//!           none it speaks, or no list → 101 without the header: JSON
//! ```
//!
//! ```
//! use belay_proto::message::Codec;
//!
//! assert_eq!(Codec::choose("graphql-ws, belay.bin.1, belay.json.1"), Some(Codec::Binary));
//! assert_eq!(Codec::choose("graphql-ws"), None); // answered without the header: JSON
//! assert_eq!(Codec::from_subprotocol(None), Some(Codec::Json));
//! assert_eq!(Codec::from_subprotocol(Some("belay.bin.1")), Some(Codec::Binary));
//! assert_eq!(Codec::from_subprotocol(Some("mqtt")), None); // not offered: fail the upgrade
//! ```

/// A connection's codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Codec {
    /// JSON text frames (spec/PROTOCOL.md §1.1): the default.
    #[default]
    Json,
    /// The compact binary codec (spec/PROTOCOL.md §1.8), in binary frames.
    Binary,
}

/// Every codec, in the order a client that accepts both offers them.
const OFFERED: [Codec; 2] = [Codec::Binary, Codec::Json];

impl Codec {
    /// Its short name, as logs and reports show it: `json`, `binary`.
    pub const fn name(self) -> &'static str {
        match self {
            Codec::Json => "json",
            Codec::Binary => "binary",
        }
    }

    /// Its WebSocket subprotocol name (the protocol version is its suffix).
    pub const fn subprotocol(self) -> &'static str {
        match self {
            Codec::Json => "belay.json.1",
            Codec::Binary => "belay.bin.1",
        }
    }

    /// The codec named `name`, if it is one of Belay's.
    pub fn named(name: &str) -> Option<Codec> {
        OFFERED.into_iter().find(|c| c.subprotocol() == name)
    }

    /// Server side: the codec to answer a `Sec-WebSocket-Protocol` list
    /// (comma-separated, most preferred first; several headers joined with
    /// commas) with: the first name it speaks. `None`: none it speaks, so
    /// the `101` carries no subprotocol and the connection is JSON.
    pub fn choose(offered: &str) -> Option<Codec> {
        offered.split(',').map(str::trim).find_map(Codec::named)
    }

    /// Client side: the codec of a connection whose `101` named
    /// `answered` (`None`: no header, JSON). `None` back: a subprotocol
    /// that is not Belay's, so the upgrade must fail (RFC 6455 §4.1; a
    /// caller also checks it is one it offered).
    pub fn from_subprotocol(answered: Option<&str>) -> Option<Codec> {
        match answered {
            None => Some(Codec::Json),
            Some(name) => Codec::named(name.trim()),
        }
    }

    /// The `Sec-WebSocket-Protocol` value a client that prefers `self`
    /// sends: `self` first, then the other codecs (so a server that
    /// speaks only JSON still answers with a name).
    pub fn offer(self) -> String {
        let mut names = vec![self.subprotocol()];
        names.extend(
            OFFERED
                .into_iter()
                .filter(|c| *c != self)
                .map(Codec::subprotocol),
        );
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_order_wins_and_unknown_names_are_passed_over() {
        assert_eq!(
            Codec::choose("belay.json.1, belay.bin.1"),
            Some(Codec::Json)
        );
        assert_eq!(Codec::choose(" x ,belay.bin.1"), Some(Codec::Binary));
        assert_eq!(Codec::choose(""), None);
        assert_eq!(Codec::choose("belay.bin.2"), None);
    }

    #[test]
    fn an_offer_names_every_codec_preferred_first() {
        assert_eq!(Codec::Binary.offer(), "belay.bin.1, belay.json.1");
        assert_eq!(Codec::Json.offer(), "belay.json.1, belay.bin.1");
        assert_eq!(Codec::choose(&Codec::Binary.offer()), Some(Codec::Binary));
    }
}
