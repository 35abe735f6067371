//! Which connections the node holds, and whose each one is.

use std::collections::HashMap;
use std::sync::Arc;

use crate::time::Instant;

/// One connection of the node, numbered in accept order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnectionHandle(u64);

impl ConnectionHandle {
    /// The number (unique on this node, increasing in accept order).
    pub fn get(self) -> u64 {
        self.0
    }

    /// A handle no node gave out (a driver's test of its dispatch).
    #[cfg(feature = "testing")]
    pub fn for_testing(number: u64) -> Self {
        ConnectionHandle(number)
    }
}

/// One open connection: whose it is and since when.
#[derive(Debug)]
struct Entry {
    /// `None` until the connection's credentials are accepted.
    user: Option<Arc<str>>,
    since: Instant,
}

/// The open connections and their users.
#[derive(Debug, Default)]
pub(super) struct Registry {
    next: u64,
    users: HashMap<ConnectionHandle, Entry>,
}

impl Registry {
    pub(super) fn add(&mut self, now: Instant) -> ConnectionHandle {
        let handle = ConnectionHandle(self.next);
        self.next += 1;
        self.users.insert(
            handle,
            Entry {
                user: None,
                since: now,
            },
        );
        handle
    }

    /// `handle` is `user`'s; ignored for a connection already gone.
    pub(super) fn identify(&mut self, handle: ConnectionHandle, user: Arc<str>) {
        if let Some(entry) = self.users.get_mut(&handle) {
            entry.user = Some(user);
        }
    }

    /// When `handle` was accepted.
    pub(super) fn since(&self, handle: ConnectionHandle) -> Option<Instant> {
        self.users.get(&handle).map(|entry| entry.since)
    }

    pub(super) fn remove(&mut self, handle: ConnectionHandle) {
        self.users.remove(&handle);
    }

    pub(super) fn contains(&self, handle: ConnectionHandle) -> bool {
        self.users.contains_key(&handle)
    }

    pub(super) fn user(&self, handle: ConnectionHandle) -> Option<&Arc<str>> {
        self.users
            .get(&handle)
            .and_then(|entry| entry.user.as_ref())
    }

    pub(super) fn len(&self) -> usize {
        self.users.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// Every open connection, in accept order.
    pub(super) fn all(&self) -> Vec<ConnectionHandle> {
        let mut all: Vec<ConnectionHandle> = self.users.keys().copied().collect();
        all.sort_unstable();
        all
    }

    /// `user`'s open connections, in accept order.
    pub(super) fn of_user<'a>(
        &'a self,
        user: &'a str,
    ) -> impl Iterator<Item = ConnectionHandle> + 'a {
        let mut mine: Vec<ConnectionHandle> = self
            .users
            .iter()
            .filter(|(_, entry)| entry.user.as_deref() == Some(user))
            .map(|(h, _)| *h)
            .collect();
        mine.sort_unstable();
        mine.into_iter()
    }
}
