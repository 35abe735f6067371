//! Writing `client_session` inputs (seed corpora): the inverse of the
//! derived `Arbitrary` decoding of [`SessionInput`].

use crate::fuzzing::unparse::{variant, Unparse};

use super::{
    Advance, Chan, Epoch, Fact, FuzzClose, FuzzFailure, FuzzText, PingInterval, ReqRef,
    ServerFrame, SessionInput, Setup, Stale, Step,
};

/// The bytes [`decode_session`](super::decode_session) turns into `input`: the inverse of the
/// derived `Arbitrary` decoding. Texts longer than 65,535 bytes are cut.
pub fn encode_session(input: &SessionInput) -> Vec<u8> {
    let mut out = Vec::new();
    input.setup.unparse(&mut out);
    input.seed.unparse(&mut out);
    for step in &input.steps {
        out.push(1); // "another element follows"
        step.unparse(&mut out);
    }
    out
}

impl Unparse for FuzzText {
    fn unparse(&self, out: &mut Vec<u8>) {
        let mut end = self.0.len().min(usize::from(u16::MAX));
        while !self.0.is_char_boundary(end) {
            end -= 1;
        }
        out.extend_from_slice(&(end as u16).to_le_bytes());
        out.extend_from_slice(&self.0.as_bytes()[..end]);
    }
}

impl Unparse for Chan {
    fn unparse(&self, out: &mut Vec<u8>) {
        variant(out, *self as u64, 3);
    }
}

impl Unparse for Epoch {
    fn unparse(&self, out: &mut Vec<u8>) {
        variant(out, *self as u64, 2);
    }
}

impl Unparse for Setup {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            Setup::Default => variant(out, 0, 4),
            Setup::MaxAttempts(n) => {
                variant(out, 1, 4);
                n.unparse(out);
            }
            Setup::ShortTimers => variant(out, 2, 4),
            Setup::ZeroTimers => variant(out, 3, 4),
        }
    }
}

impl Unparse for PingInterval {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            PingInterval::Absent => variant(out, 0, 5),
            PingInterval::Zero => variant(out, 1, 5),
            PingInterval::Millis(ms) => {
                variant(out, 2, 5);
                ms.unparse(out);
            }
            PingInterval::Seconds(s) => {
                variant(out, 3, 5);
                s.unparse(out);
            }
            PingInterval::Any(ms) => {
                variant(out, 4, 5);
                ms.unparse(out);
            }
        }
    }
}

impl Unparse for ReqRef {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            ReqRef::InFlight(n) => {
                variant(out, 0, 3);
                n.unparse(out);
            }
            ReqRef::Latest => variant(out, 1, 3),
            ReqRef::Any(id) => {
                variant(out, 2, 3);
                id.unparse(out);
            }
        }
    }
}

impl Unparse for ServerFrame {
    fn unparse(&self, out: &mut Vec<u8>) {
        const N: u64 = 16;
        match self {
            ServerFrame::Welcome { ping, pacing } => {
                variant(out, 0, N);
                ping.unparse(out);
                pacing.unparse(out);
            }
            ServerFrame::WelcomeProtocol(protocol) => {
                variant(out, 1, N);
                protocol.unparse(out);
            }
            ServerFrame::Ping => variant(out, 2, N),
            ServerFrame::Pong => variant(out, 3, N),
            ServerFrame::Response { to, error } => {
                variant(out, 4, N);
                to.unparse(out);
                error.unparse(out);
            }
            ServerFrame::Subscribed {
                channel,
                epoch,
                offset,
                recovered,
            } => {
                variant(out, 5, N);
                channel.unparse(out);
                epoch.unparse(out);
                offset.unparse(out);
                recovered.unparse(out);
            }
            ServerFrame::Resumed(channel) => {
                variant(out, 6, N);
                channel.unparse(out);
            }
            ServerFrame::Publication {
                channel,
                epoch,
                offset,
            } => {
                variant(out, 7, N);
                channel.unparse(out);
                epoch.unparse(out);
                offset.unparse(out);
            }
            ServerFrame::NextPublication(channel) => {
                variant(out, 8, N);
                channel.unparse(out);
            }
            ServerFrame::Unsubscribed { channel, code } => {
                variant(out, 9, N);
                channel.unparse(out);
                code.unparse(out);
            }
            ServerFrame::Reconnect {
                reason,
                min_delay_ms,
                max_delay_ms,
            } => {
                variant(out, 10, N);
                reason.unparse(out);
                min_delay_ms.unparse(out);
                max_delay_ms.unparse(out);
            }
            ServerFrame::Error(code) => {
                variant(out, 11, N);
                code.unparse(out);
            }
            ServerFrame::UnknownType => variant(out, 12, N),
            ServerFrame::Malformed(i) => {
                variant(out, 13, N);
                i.unparse(out);
            }
            ServerFrame::Garbage(text) => {
                variant(out, 14, N);
                text.unparse(out);
            }
            ServerFrame::TooLarge => variant(out, 15, N),
        }
    }
}

impl Unparse for FuzzFailure {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            FuzzFailure::Network => variant(out, 0, 6),
            FuzzFailure::Unreachable => variant(out, 1, 6),
            FuzzFailure::Rejected(i) => {
                variant(out, 2, 6);
                i.unparse(out);
            }
            FuzzFailure::RejectedAny(status) => {
                variant(out, 3, 6);
                status.unparse(out);
            }
            FuzzFailure::InvalidConfig => variant(out, 4, 6),
            FuzzFailure::RejectedRetryAfter(i, ms) => {
                variant(out, 5, 6);
                i.unparse(out);
                ms.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzClose {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            FuzzClose::Abnormal => variant(out, 0, 3),
            FuzzClose::Listed(i) => {
                variant(out, 1, 3);
                i.unparse(out);
            }
            FuzzClose::Any(code) => {
                variant(out, 2, 3);
                code.unparse(out);
            }
        }
    }
}

impl Unparse for Fact {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            Fact::Opened => variant(out, 0, 4),
            Fact::Failed(failure) => {
                variant(out, 1, 4);
                failure.unparse(out);
            }
            Fact::Closed(close) => {
                variant(out, 2, 4);
                close.unparse(out);
            }
            Fact::Frame(frame) => {
                variant(out, 3, 4);
                frame.unparse(out);
            }
        }
    }
}

impl Unparse for Stale {
    fn unparse(&self, out: &mut Vec<u8>) {
        variant(out, *self as u64, 2);
    }
}

impl Unparse for Advance {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            Advance::Micros(us) => {
                variant(out, 0, 4);
                us.unparse(out);
            }
            Advance::Millis(ms) => {
                variant(out, 1, 4);
                ms.unparse(out);
            }
            Advance::Seconds(s) => {
                variant(out, 2, 4);
                s.unparse(out);
            }
            Advance::ToDeadline => variant(out, 3, 4),
        }
    }
}

impl Unparse for Step {
    fn unparse(&self, out: &mut Vec<u8>) {
        const N: u64 = 14;
        match self {
            Step::Frame(frame) => {
                variant(out, 0, N);
                frame.unparse(out);
            }
            Step::Opened => variant(out, 1, N),
            Step::Failed(failure) => {
                variant(out, 2, N);
                failure.unparse(out);
            }
            Step::Closed(close) => {
                variant(out, 3, N);
                close.unparse(out);
            }
            Step::Stale(which, fact) => {
                variant(out, 4, N);
                which.unparse(out);
                fact.unparse(out);
            }
            Step::Network(online) => {
                variant(out, 5, N);
                online.unparse(out);
            }
            Step::Advance(advance) => {
                variant(out, 6, N);
                advance.unparse(out);
            }
            Step::Start => variant(out, 7, N),
            Step::Stop => variant(out, 8, N),
            Step::Request {
                params,
                timeout_ms,
                idem,
            } => {
                variant(out, 9, N);
                params.unparse(out);
                timeout_ms.unparse(out);
                idem.unparse(out);
            }
            Step::Subscribe(chan) => {
                variant(out, 10, N);
                chan.unparse(out);
            }
            Step::Unsubscribe(chan) => {
                variant(out, 11, N);
                chan.unparse(out);
            }
            Step::ReconnectNow => variant(out, 12, N),
            Step::CheckLiveness => variant(out, 13, N),
        }
    }
}
