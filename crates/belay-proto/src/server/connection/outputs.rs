//! The connection's outputs, in order.
//!
//! A connection that is receiving a stream mostly has one output at a time:
//! the next live frame. That one is held inline, so live delivery touches
//! no queue memory (thousands of connections each writing to and reading
//! from a queue of their own is thousands of cold cache lines per
//! publication); everything else, and frames behind other outputs, waits
//! in the queue.

use std::collections::VecDeque;

use super::Output;

pub(super) struct Outputs<F> {
    /// The oldest output when it is a live frame that found the queue
    /// empty; everything in `queue` comes after it.
    frame: Option<F>,
    queue: VecDeque<Output<F>>,
    /// The last output taken was a live frame (see `pop_front`).
    streaming: bool,
}

impl<F> Default for Outputs<F> {
    fn default() -> Self {
        Outputs {
            frame: None,
            queue: VecDeque::new(),
            streaming: false,
        }
    }
}

impl<F> Outputs<F> {
    pub(super) fn push_back(&mut self, output: Output<F>) {
        self.queue.push_back(output);
    }

    /// A live frame, after everything queued.
    pub(super) fn push_frame(&mut self, frame: F) {
        if self.frame.is_none() && self.queue.is_empty() {
            self.frame = Some(frame);
        } else {
            self.queue.push_back(Output::SendEncoded(frame));
        }
    }

    pub(super) fn pop_front(&mut self) -> Option<Output<F>> {
        if let Some(frame) = self.frame.take() {
            self.streaming = true;
            return Some(Output::SendEncoded(frame));
        }
        let next = self.queue.pop_front();
        match &next {
            Some(output) => self.streaming = matches!(output, Output::SendEncoded(_)),
            // Drained: an idle connection holds no queue (thousands of idle
            // connections would each keep a few hundred bytes), but one
            // that is receiving a burst keeps it, so delivery does not
            // allocate and free it for every publication. Its next other
            // output (a heartbeat `ping` at the latest) releases it.
            None if !self.streaming && self.queue.capacity() > 0 => self.queue = VecDeque::new(),
            None => {}
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ServerMessage;

    fn taken(outputs: &mut Outputs<&'static str>) -> Vec<String> {
        std::iter::from_fn(|| outputs.pop_front())
            .map(|output| match output {
                Output::SendEncoded(frame) => frame.to_owned(),
                Output::Send(_) => "message".to_owned(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_frame_held_inline_still_comes_out_in_order() {
        let mut outputs = Outputs::default();
        outputs.push_frame("1");
        outputs.push_back(Output::Send(ServerMessage::Pong));
        outputs.push_frame("2");
        assert_eq!(taken(&mut outputs), ["1", "message", "2"]);
        outputs.push_back(Output::Send(ServerMessage::Pong));
        outputs.push_frame("3");
        outputs.push_frame("4");
        assert_eq!(taken(&mut outputs), ["message", "3", "4"]);
    }
}
