//! An output of the core its driver was not written for (a core newer
//! than its driver). The core's enums are `#[non_exhaustive]`, so every
//! match on them keeps a catch-all arm; that arm returns [`Unhandled`]
//! instead of doing nothing, the caller [`report`](Unhandled::report)s it
//! (an error in the log, a failed assertion in debug builds), and the
//! drivers' tests run one value of every variant through the real
//! dispatch (`belay_proto::every_variant`), so a new variant fails a test
//! before it can be dropped.

use std::fmt::Debug;

/// What the driver could not carry out.
#[derive(Debug)]
pub(crate) struct Unhandled {
    kind: &'static str,
    output: String,
}

impl Unhandled {
    /// `output`, a `kind` (`"connection output"`) this driver does not know.
    pub(crate) fn new(kind: &'static str, output: &impl Debug) -> Self {
        Unhandled {
            kind,
            output: format!("{output:?}"),
        }
    }

    /// Say so: loudly in the log, and as a failed assertion in debug builds.
    pub(crate) fn report(self) {
        tracing::error!(kind = self.kind, output = %self.output, "the server does not handle this core output");
        debug_assert!(false, "unhandled {}: {}", self.kind, self.output);
    }
}
