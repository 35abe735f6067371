//! Host mode against a real relay (belay-server on loopback): a resident
//! host sleeps while nobody needs it, wakes for a call, sleeps again after
//! the grace, and leaves no task behind.

mod identity;
mod no_task_left;
mod relay;
mod sleeps_until_needed;
mod wake_bound;
