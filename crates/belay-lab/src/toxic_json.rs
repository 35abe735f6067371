//! The JSON shape of a [`Toxic`]: Toxiproxy's `name`, `type`, `stream`,
//! `toxicity` and `attributes`, checked on the way in.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::toxic::{default_name, Stream, Toxic, ToxicKind};

/// A toxic as written in JSON.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToxicJson {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    stream: Stream,
    #[serde(default = "always")]
    toxicity: f64,
    #[serde(default)]
    attributes: Map<String, Value>,
}

fn always() -> f64 {
    1.0
}

impl TryFrom<ToxicJson> for Toxic {
    type Error = String;

    fn try_from(json: ToxicJson) -> Result<Toxic, String> {
        let mut tagged = json.attributes;
        if tagged.contains_key("type") {
            return Err("attributes: \"type\" belongs outside the attributes".into());
        }
        tagged.insert("type".into(), Value::String(json.kind.clone()));
        let kind = ToxicKind::deserialize(Value::Object(tagged.clone()))
            .map_err(|e| format!("toxic type {:?}: {e}", json.kind))?;
        // Attributes of a type that has none slip past serde: check them all.
        if let Ok(Value::Object(known)) = serde_json::to_value(kind) {
            if let Some(unknown) = tagged.keys().find(|k| !known.contains_key(*k)) {
                return Err(format!(
                    "toxic type {:?}: unknown attribute {unknown:?}",
                    json.kind
                ));
            }
        }
        let toxic = Toxic {
            name: json
                .name
                .unwrap_or_else(|| default_name(&kind, json.stream)),
            stream: json.stream,
            toxicity: json.toxicity,
            kind,
        };
        toxic.validate()?;
        Ok(toxic)
    }
}

impl From<Toxic> for ToxicJson {
    fn from(toxic: Toxic) -> ToxicJson {
        let mut attributes = match serde_json::to_value(toxic.kind) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        attributes.remove("type");
        ToxicJson {
            name: Some(toxic.name),
            kind: toxic.kind.type_name().into(),
            stream: toxic.stream,
            toxicity: toxic.toxicity,
            attributes,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::toxic::{RefuseWith, Stream, Toxic, ToxicKind};

    fn parse(json: &str) -> Result<Toxic, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_round_trip() {
        let toxic = parse(r#"{"type":"latency","attributes":{"latency_ms":200}}"#).unwrap();
        assert_eq!(toxic.name(), "latency_both");
        assert_eq!(toxic.stream(), Stream::Both);
        assert_eq!(toxic.toxicity(), 1.0);
        assert_eq!(
            *toxic.kind(),
            ToxicKind::Latency {
                latency_ms: 200,
                jitter_ms: 0
            }
        );
        let text = serde_json::to_string(&toxic).unwrap();
        assert_eq!(parse(&text).unwrap(), toxic);

        let refuse = parse(r#"{"type":"refuse","stream":"upstream"}"#).unwrap();
        assert_eq!(refuse.name(), "refuse_upstream");
        assert_eq!(
            *refuse.kind(),
            ToxicKind::Refuse {
                with: RefuseWith::Reset
            }
        );
        let rate = parse(r#"{"type":"accept_rate","attributes":{"max":3}}"#).unwrap();
        assert_eq!(
            *rate.kind(),
            ToxicKind::AcceptRate {
                max: 3,
                window_ms: 1000
            }
        );
    }

    #[test]
    fn bad_toxics_say_what_is_wrong() {
        let cases = [
            (r#"{"type":"melt"}"#, "melt"),
            (r#"{"type":"latency"}"#, "latency_ms"),
            (
                r#"{"type":"latency","attributes":{"latency_ms":1,"jiter_ms":2}}"#,
                "jiter_ms",
            ),
            (
                r#"{"type":"bandwidth","attributes":{"bytes_per_sec":0}}"#,
                "at least 1",
            ),
            (r#"{"type":"blackhole","toxicity":1.5}"#, "toxicity"),
            (r#"{"type":"blackhole","name":"a b"}"#, "name"),
            (r#"{"type":"blackhole","stream":"sideways"}"#, "sideways"),
            (
                r#"{"type":"slicer","attributes":{"average_size":4,"size_variation":4}}"#,
                "size_variation",
            ),
            (r#"{"type":"blackhole","colour":"red"}"#, "colour"),
            (
                r#"{"type":"blackhole","attributes":{"latency_ms":1}}"#,
                "latency_ms",
            ),
            (
                r#"{"type":"slicer","attributes":{"average_size":18446744073709551615}}"#,
                "average_size",
            ),
            (r#"{"type":"latency","attributes":{"latency_ms":-1}}"#, "-1"),
            (
                r#"{"type":"latency","attributes":{"type":"x","latency_ms":1}}"#,
                "type",
            ),
        ];
        for (json, needle) in cases {
            let error = parse(json).expect_err(json);
            assert!(error.contains(needle), "{json}: {error}");
        }
    }

    #[test]
    fn builder_names_follow_the_stream() {
        let toxic = Toxic::new(ToxicKind::Blackhole).on(Stream::Upstream);
        assert_eq!(toxic.name(), "blackhole_upstream");
        let named = Toxic::new(ToxicKind::Blackhole)
            .named("elevator")
            .on(Stream::Upstream);
        assert_eq!(named.name(), "elevator");
    }
}
