//! The params and results of the reserved methods (spec/PROTOCOL.md §4.6,
//! §4.7, §10.3), typed once for the server and every client, one file per
//! method: `$publish`, `$presence` and `$presence_stats`, `$call` (and the
//! call its host receives), `$answer`. Unknown fields in params are
//! refused (`bad_request`), so a misspelt field is never silently ignored;
//! results and deliveries are read leniently (a newer server may add
//! fields). The shared vectors in spec/vectors/reserved.json pin the wire
//! shapes for the Rust and the TypeScript clients.

mod answer;
mod call;
mod presence;
mod publish;

pub use answer::{AnswerOutcome, AnswerParams, AnswerResult};
pub use call::{CallParams, HostCallDelivery};
pub use presence::{PresenceMember, PresenceMembers, PresenceParams, PresenceStats};
pub use publish::{PublishParams, PublishResult};
