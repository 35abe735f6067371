//! The client core against a server that lies or misbehaves: every answer is
//! checked against what the client itself knows, and no advertisement can
//! switch off a guarantee. One behaviour per module, in virtual time.

#[path = "../common/mod.rs"]
mod common;

mod payloads;
mod ping_interval;
mod request_size;
mod resume;
mod retry_after;
