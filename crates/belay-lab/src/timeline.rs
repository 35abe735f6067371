//! Scripted timelines: toxics added and removed at set times, run by
//! [`Proxy::run_timeline`](crate::Proxy::run_timeline), `POST
//! /proxies/{name}/timeline` or `belay proxy --timeline FILE`.
//!
//! ```json
//! {"steps":[
//!   {"at_ms":0,    "action":"add",    "toxic":{"type":"latency","attributes":{"latency_ms":200}}},
//!   {"at_ms":2000, "action":"add",    "toxic":{"name":"elevator","type":"blackhole"}},
//!   {"at_ms":4000, "action":"remove", "name":"latency_both"},
//!   {"at_ms":5000, "action":"clear"},
//!   {"at_ms":6000, "action":"fault",  "fault":{"mode":"reset"}}
//! ]}
//! ```
//!
//! Times count from the start of the run; steps run in time order (steps
//! at the same time in the order written). `add` replaces a toxic of the
//! same name; `remove` of a missing toxic is logged and skipped. With
//! `"repeat_ms": P` (at least the last step's time, and at least 1), the
//! steps run again every P milliseconds until the timeline is stopped or
//! replaced (flapping, for instance).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::{sleep_until, Instant};

use crate::fault::Fault;
use crate::state::Shared;
use crate::toxic::Toxic;

/// The latest time a step may be scheduled at (one day).
const MAX_AT_MS: u64 = 86_400_000;
/// The most steps a timeline may hold.
const MAX_STEPS: usize = 10_000;

/// What a step does.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// Add a toxic (replacing one of the same name).
    Add(Toxic),
    /// Remove the toxic of this name.
    Remove(String),
    /// Remove every toxic.
    Clear,
    /// Set a whole-proxy fault (its toxics replace all others).
    Fault(Fault),
}

/// One step: an action at a time from the start of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    at: Duration,
    action: Action,
}

impl Step {
    /// When it runs, from the start of the run.
    pub fn at(&self) -> Duration {
        self.at
    }

    /// What it does.
    pub fn action(&self) -> &Action {
        &self.action
    }
}

/// A scripted sequence of toxic changes.
///
/// ```
/// use std::time::Duration;
/// use belay_lab::{Timeline, Toxic, ToxicKind};
/// let timeline = Timeline::new()
///     .add(Duration::ZERO, Toxic::new(ToxicKind::Latency { latency_ms: 200, jitter_ms: 0 }))
///     .add(Duration::from_secs(2), Toxic::new(ToxicKind::Blackhole))
///     .clear(Duration::from_secs(5));
/// assert_eq!(timeline.steps().len(), 3);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TimelineJson", into = "TimelineJson")]
pub struct Timeline {
    steps: Vec<Step>,
    repeat: Option<Duration>,
}

impl Timeline {
    /// An empty timeline.
    pub fn new() -> Timeline {
        Timeline::default()
    }

    /// Parse a timeline from JSON; the message says what is wrong.
    pub fn from_json(text: &str) -> Result<Timeline, String> {
        serde_json::from_str(text).map_err(|e| format!("not a timeline: {e}"))
    }

    /// Add `action` at `at` (after any step already at that time).
    #[must_use]
    pub fn then(mut self, at: Duration, action: Action) -> Timeline {
        let index = self.steps.partition_point(|s| s.at <= at);
        self.steps.insert(index, Step { at, action });
        self
    }

    /// Add `toxic` at `at`.
    #[must_use]
    pub fn add(self, at: Duration, toxic: Toxic) -> Timeline {
        self.then(at, Action::Add(toxic))
    }

    /// Remove the toxic named `name` at `at`.
    #[must_use]
    pub fn remove(self, at: Duration, name: impl Into<String>) -> Timeline {
        self.then(at, Action::Remove(name.into()))
    }

    /// Remove every toxic at `at`.
    #[must_use]
    pub fn clear(self, at: Duration) -> Timeline {
        self.then(at, Action::Clear)
    }

    /// Run the steps again every `period` (measured from the start of one
    /// round to the start of the next), until stopped.
    #[must_use]
    pub fn repeat_every(mut self, period: Duration) -> Timeline {
        self.repeat = Some(period);
        self
    }

    /// The period of the rounds, if the steps repeat.
    pub fn repeat(&self) -> Option<Duration> {
        self.repeat
    }

    /// The steps, in the order they run.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Check every step; the message says which is wrong and why.
    pub fn validate(&self) -> Result<(), String> {
        if self.steps.len() > MAX_STEPS {
            return Err(format!("at most {MAX_STEPS} steps"));
        }
        if let Some(period) = self.repeat {
            let last = self.steps.last().map_or(Duration::ZERO, |s| s.at);
            if period < last || period < Duration::from_millis(1) {
                return Err(format!(
                    "repeat_ms must be at least 1 and at least the last step's at_ms ({})",
                    last.as_millis()
                ));
            }
            if period > Duration::from_millis(MAX_AT_MS) {
                return Err(format!("repeat_ms must be at most {MAX_AT_MS}"));
            }
        }
        for (index, step) in self.steps.iter().enumerate() {
            let checked = if step.at > Duration::from_millis(MAX_AT_MS) {
                Err(format!("at_ms must be at most {MAX_AT_MS}"))
            } else {
                match &step.action {
                    Action::Add(toxic) => toxic.validate(),
                    Action::Fault(fault) => fault.validate(),
                    Action::Remove(_) | Action::Clear => Ok(()),
                }
            };
            checked.map_err(|e| format!("step {index}: {e}"))?;
        }
        Ok(())
    }
}

/// Run `timeline` against `shared` from `start`.
pub(crate) async fn run(timeline: Timeline, shared: Arc<Shared>, mut start: Instant) {
    loop {
        for step in &timeline.steps {
            sleep_until(start + step.at).await;
            apply(step, &shared);
        }
        match timeline.repeat {
            Some(period) => start += period,
            None => return,
        }
    }
}

fn apply(step: &Step, shared: &Shared) {
    let done = match &step.action {
        Action::Add(toxic) => shared.replace(toxic.clone()),
        Action::Remove(name) => shared.remove(name).map(drop),
        Action::Clear => {
            shared.clear();
            Ok(())
        }
        Action::Fault(fault) => shared.set(*fault),
    };
    match done {
        Ok(()) => tracing::info!(at = ?step.at, action = ?step.action, "timeline step"),
        Err(e) => tracing::warn!(at = ?step.at, error = %e, "timeline step skipped"),
    }
}

/// A timeline as written in JSON.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TimelineJson {
    steps: Vec<StepJson>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    repeat_ms: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
enum StepJson {
    Add { at_ms: u64, toxic: Toxic },
    Remove { at_ms: u64, name: String },
    Clear { at_ms: u64 },
    Fault { at_ms: u64, fault: Fault },
}

impl TryFrom<TimelineJson> for Timeline {
    type Error = String;

    fn try_from(json: TimelineJson) -> Result<Timeline, String> {
        let mut timeline = Timeline::new();
        for step in json.steps {
            let (at_ms, action) = match step {
                StepJson::Add { at_ms, toxic } => (at_ms, Action::Add(toxic)),
                StepJson::Remove { at_ms, name } => (at_ms, Action::Remove(name)),
                StepJson::Clear { at_ms } => (at_ms, Action::Clear),
                StepJson::Fault { at_ms, fault } => (at_ms, Action::Fault(fault)),
            };
            timeline = timeline.then(Duration::from_millis(at_ms), action);
        }
        timeline.repeat = json.repeat_ms.map(Duration::from_millis);
        timeline.validate()?;
        Ok(timeline)
    }
}

impl From<Timeline> for TimelineJson {
    fn from(timeline: Timeline) -> TimelineJson {
        let steps = timeline
            .steps
            .into_iter()
            .map(|step| {
                let at_ms = u64::try_from(step.at.as_millis()).unwrap_or(u64::MAX);
                match step.action {
                    Action::Add(toxic) => StepJson::Add { at_ms, toxic },
                    Action::Remove(name) => StepJson::Remove { at_ms, name },
                    Action::Clear => StepJson::Clear { at_ms },
                    Action::Fault(fault) => StepJson::Fault { at_ms, fault },
                }
            })
            .collect();
        let repeat_ms = timeline
            .repeat
            .map(|p| u64::try_from(p.as_millis()).unwrap_or(u64::MAX));
        TimelineJson { steps, repeat_ms }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toxic::ToxicKind;

    #[test]
    fn json_steps_are_sorted_stably_and_round_trip() {
        let text = r#"{"steps":[
            {"at_ms":5000,"action":"clear"},
            {"at_ms":0,"action":"add","toxic":{"type":"latency","attributes":{"latency_ms":200}}},
            {"at_ms":2000,"action":"add","toxic":{"name":"elevator","type":"blackhole"}},
            {"at_ms":2000,"action":"remove","name":"latency_both"},
            {"at_ms":6000,"action":"fault","fault":{"mode":"reset"}}
        ],"repeat_ms":10000}"#;
        let timeline = Timeline::from_json(text).unwrap();
        let ats: Vec<u64> = timeline
            .steps()
            .iter()
            .map(|s| s.at().as_millis() as u64)
            .collect();
        assert_eq!(ats, [0, 2000, 2000, 5000, 6000]);
        assert_eq!(timeline.repeat(), Some(Duration::from_secs(10)));
        assert!(matches!(timeline.steps()[1].action(), Action::Add(t) if t.name() == "elevator"));
        assert_eq!(
            timeline.steps()[2].action(),
            &Action::Remove("latency_both".into())
        );
        let again = Timeline::from_json(&serde_json::to_string(&timeline).unwrap()).unwrap();
        assert_eq!(again, timeline);
    }

    #[test]
    fn bad_timelines_say_what_is_wrong() {
        let cases = [
            (r#"{"steps":[{"at_ms":0,"action":"melt"}]}"#, "melt"),
            (r#"{"steps":[{"action":"clear"}]}"#, "at_ms"),
            (
                r#"{"steps":[{"at_ms":0,"action":"add","toxic":{"type":"bandwidth","attributes":{"bytes_per_sec":0}}}]}"#,
                "bytes_per_sec",
            ),
            (
                r#"{"steps":[{"at_ms":99999999999,"action":"clear"}]}"#,
                "at_ms",
            ),
            (r#"{"steps":[{"at_ms":0,"action":"clear","x":1}]}"#, "x"),
            (
                r#"{"steps":[{"at_ms":500,"action":"clear"}],"repeat_ms":400}"#,
                "repeat_ms",
            ),
            (r#"{"steps":[],"repeat_ms":0}"#, "repeat_ms"),
        ];
        for (json, needle) in cases {
            let error = Timeline::from_json(json).expect_err(json);
            assert!(error.contains(needle), "{json}: {error}");
        }
        let bad = Timeline::new().add(
            Duration::ZERO,
            Toxic::new(ToxicKind::Bandwidth { bytes_per_sec: 0 }),
        );
        assert!(bad.validate().is_err());
    }
}
