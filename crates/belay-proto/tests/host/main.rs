//! Idle sleep for resident hosts: the host's decision driven by scripted
//! heartbeat replies, and the relay's record of a host.

mod flapping;
mod relay_record;
mod script;
mod tri_state;
