//! [`SharedOutcome`]: an idempotency key's state as a store shared by every
//! node keeps it, and the decision a node takes from it.
//!
//! A cluster keeps one record per key in a store all nodes reach (Redis).
//! The store only sets, compares and expires records; what a record means
//! is decided here, so every node (and every store) reads it the same way:
//!
//! ```text
//!   no record ──claim──▶ Running(owner) ──complete──▶ Done(reply) for `retention`
//!                             │  a lease the owner renews while it runs;
//!                             └─ the owner died ──▶ the lease lapses ──▶ no record
//! ```
//!
//! A record is text: `R|DIGEST|OWNER`, `D|DIGEST|REPLY` or `T|DIGEST`
//! (completed, the reply too large to keep), with the params digest as 16
//! hex digits and the reply as its JSON text.

use crate::message::{ErrorBody, Reply};

use super::{stored_reply, too_large, Begin};

/// One key's record in a shared store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SharedOutcome {
    /// An execution holds the key; `owner` names that execution (a node and
    /// a counter), so only it completes, renews or releases the record.
    Running {
        /// Digest of the params that took the key.
        digest: u64,
        /// Who runs it.
        owner: String,
    },
    /// The execution finished with this reply (its JSON text).
    Done {
        /// Digest of the params that took the key.
        digest: u64,
        /// The reply, as JSON.
        reply: String,
    },
    /// The execution finished, but its reply was too large to keep.
    TooLarge {
        /// Digest of the params that took the key.
        digest: u64,
    },
}

impl SharedOutcome {
    /// The record of a finished execution; a reply longer than `max_len`
    /// bytes of JSON is recorded as [`TooLarge`](Self::TooLarge).
    pub fn finished(digest: u64, reply: &Reply, max_len: usize) -> SharedOutcome {
        let text = serde_json::to_string(reply).unwrap_or_default();
        if text.len() > max_len {
            SharedOutcome::TooLarge { digest }
        } else {
            SharedOutcome::Done {
                digest,
                reply: text,
            }
        }
    }

    /// The record as the store keeps it.
    pub fn encode(&self) -> String {
        match self {
            SharedOutcome::Running { digest, owner } => format!("R|{digest:016x}|{owner}"),
            SharedOutcome::Done { digest, reply } => format!("D|{digest:016x}|{reply}"),
            SharedOutcome::TooLarge { digest } => format!("T|{digest:016x}"),
        }
    }

    /// A stored record read back; `None` if it is not one this encoding
    /// writes (another program's value under the key).
    pub fn decode(text: &str) -> Option<SharedOutcome> {
        let (kind, rest) = text.split_at_checked(2)?;
        let digest_text = rest.get(..16)?;
        let digest = u64::from_str_radix(digest_text, 16).ok()?;
        let tail = &rest[16..];
        match (kind, tail) {
            ("T|", "") => Some(SharedOutcome::TooLarge { digest }),
            ("R|", tail) => Some(SharedOutcome::Running {
                digest,
                owner: tail.strip_prefix('|')?.to_owned(),
            }),
            ("D|", tail) => Some(SharedOutcome::Done {
                digest,
                reply: tail.strip_prefix('|')?.to_owned(),
            }),
            _ => None,
        }
    }

    fn digest(&self) -> u64 {
        match self {
            SharedOutcome::Running { digest, .. }
            | SharedOutcome::Done { digest, .. }
            | SharedOutcome::TooLarge { digest } => *digest,
        }
    }

    /// What a node does with a request whose params have `digest`, given
    /// the record a claim found (`None`: there was none, so the claim took
    /// the key and the node runs it).
    ///
    /// A record for other params is [`Begin::Conflict`], as in the local
    /// cache; a running one is [`Begin::InFlight`] (wait for it to finish
    /// or lapse); a completed one is its reply.
    pub fn decide(found: Option<&SharedOutcome>, digest: u64) -> Begin {
        match found {
            None => Begin::New,
            Some(record) if record.digest() != digest => Begin::Conflict,
            Some(SharedOutcome::Running { .. }) => Begin::InFlight,
            Some(SharedOutcome::Done { reply, .. }) => Begin::Done(stored_reply(reply)),
            Some(SharedOutcome::TooLarge { .. }) => Begin::Done(too_large()),
        }
    }
}

/// The answer to a retry whose first attempt ran on a node that stopped
/// before finishing (its lease lapsed): the key is free again, so the
/// client may retry, but this attempt is not run, as with a local attempt
/// that was lost.
pub fn lost_attempt() -> Reply {
    Reply::Error(ErrorBody::new("unavailable", "the first attempt was lost"))
}

#[cfg(test)]
#[path = "shared_tests.rs"]
mod tests;
