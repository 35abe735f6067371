//! [`Link`]: what the simulated network does to each frame.

use std::time::Duration;

use crate::rng::{RandomSource, SplitMix64};

/// Which way a frame travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
// A link has two ends: there is no third direction to add.
#[allow(clippy::exhaustive_enums)]
pub enum Direction {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// The network between the client and the server.
#[derive(Debug, Clone)]
pub struct Link {
    /// One-way delay of every frame and of connection setup.
    pub latency: Duration,
    /// Share of frames lost, 0.0 to 1.0 (seeded).
    pub loss: f64,
    /// Frames client → server vanish (a frozen peer or a half-dead path).
    pub up_frozen: bool,
    /// Frames server → client vanish.
    pub down_frozen: bool,
    /// Nothing gets through, new connections included.
    pub cut: bool,
    /// New connections are refused at once (a server that is down: its
    /// port answers with a reset); existing ones are not touched.
    pub refusing: bool,
    rng: SplitMix64,
}

impl Link {
    /// A link with `latency` each way, no loss, seeded by `seed`.
    pub fn new(latency: Duration, seed: u64) -> Self {
        Link {
            latency,
            loss: 0.0,
            up_frozen: false,
            down_frozen: false,
            cut: false,
            refusing: false,
            rng: SplitMix64::new(seed),
        }
    }

    /// Freeze both directions (a process stopped: nothing read, nothing sent).
    pub fn freeze(&mut self) {
        self.up_frozen = true;
        self.down_frozen = true;
    }

    /// Let everything through again (loss stays as set).
    pub fn heal(&mut self) {
        self.up_frozen = false;
        self.down_frozen = false;
        self.cut = false;
        self.refusing = false;
    }

    /// Whether a frame travelling `direction` now arrives.
    pub fn delivers(&mut self, direction: Direction) -> bool {
        let frozen = match direction {
            Direction::Up => self.up_frozen,
            Direction::Down => self.down_frozen,
        };
        if self.cut || frozen {
            return false;
        }
        self.loss <= 0.0 || self.rng.next_unit() >= self.loss
    }

    /// Whether a new connection can be set up now.
    pub fn accepts(&self) -> bool {
        !self.cut && !self.up_frozen && !self.down_frozen && !self.refusing
    }
}
