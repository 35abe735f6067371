//! The simulator's agenda: what happens next, in time order.
//!
//! Events are ordered by `(instant, sequence)`. The sequence number is the
//! insertion order, so events at the same instant run in the order they
//! were scheduled and a run is reproducible bit for bit. Entries are small
//! `Copy` values; nothing is allocated per event once the buckets have grown.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use belay_proto::{Instant, TransportId};

/// What the server or the network does to one client at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Call `start` on the session (the client is switched on).
    Start,
    /// The session's own timer: call `handle_timeout` if this is still the
    /// session's `poll_timeout`.
    Wake,
    /// The attempt was admitted: `TransportOpened`.
    Opened,
    /// The attempt was refused: `TransportFailed(Failure::network("refused"))`.
    Refused,
    /// The server finished the work of an admitted attempt: the transport
    /// opens, if the client is still waiting for it (a cost model).
    Served,
    /// The server refused after its work: `TransportFailed(Failure::Rejected
    /// { 503, Retry-After })` (a cost model; the header is in the client's
    /// engine state).
    Rejected,
    /// The client's TCP stack retransmits the SYN of a dial the server's
    /// full listen backlog dropped (a cost model): the same attempt reaches
    /// the server again.
    Syn,
    /// The attempt never left the device: `TransportFailed(Failure::unreachable(..))`.
    Unreachable,
    /// The server answers `connect` with `welcome`.
    Welcome,
    /// The server answers `ping` with `pong`.
    Pong,
    /// The server pings an open connection on its beat (a server with a
    /// ping interval), and schedules the next ping.
    ServerPing,
    /// The connection dies without a close frame: `TransportClosed(abnormal)`.
    /// (The server forgets it if it still held it.)
    DropAbnormal,
    /// The flapping server drops a connection: like `DropAbnormal`, but part
    /// of the server's behaviour rather than a one-off incident.
    Flap,
    /// The device's network interface went away under an open connection:
    /// `TransportFailed(Failure::unreachable(..))`.
    InterfaceDown,
    /// The path goes silent: nothing is delivered any more, and the session
    /// is told nothing (only its heartbeat can notice).
    BlackHole,
    /// Planned restart: `reconnect` advice, then a 1012 close.
    Restart,
}

/// One scheduled event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) at: Instant,
    seq: u64,
    pub(crate) client: u32,
    /// The transport the event concerns (0 when it concerns none).
    pub(crate) transport: TransportId,
    pub(crate) what: Delivery,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, the agenda wants the earliest.
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Log2 of a bucket's width in microseconds (1,024 µs, about 1 ms).
const BUCKET_SHIFT: u32 = 10;

/// Buckets in the wheel: 2^16 buckets of 1,024 µs cover 67 s ahead.
const WHEEL: u64 = 1 << 16;

/// The agenda: a calendar queue.
///
/// A plain binary heap over a million entries spends most of its time in
/// cache misses. Here time is cut into buckets of about 1 ms. The entries of
/// every bucket up to `now_bucket` are in `run`, sorted once when their bucket
/// comes up (a bucket filled in order, like a whole fleet starting at one
/// instant, is already sorted and costs one pass). Entries scheduled into
/// those buckets afterwards go to `late_fifo` while they arrive in order
/// (the common case: answers at the current instant) and to the heap
/// `late_heap` otherwise. The wheel holds the
/// buckets of the next 67 s unsorted, and `far` (a binary heap) everything
/// later. The order is exactly that of one binary heap keyed by
/// `(instant, sequence)`.
#[derive(Debug)]
pub(crate) struct Agenda {
    now_bucket: u64,
    run: Vec<Entry>,
    run_pos: usize,
    late_fifo: VecDeque<Entry>,
    late_heap: BinaryHeap<Entry>,
    wheel: Vec<Vec<Entry>>,
    in_wheel: usize,
    far: BinaryHeap<Entry>,
    next_seq: u64,
}

impl Default for Agenda {
    fn default() -> Self {
        Agenda {
            now_bucket: 0,
            run: Vec::new(),
            run_pos: 0,
            late_fifo: VecDeque::new(),
            late_heap: BinaryHeap::new(),
            wheel: (0..WHEEL).map(|_| Vec::new()).collect(),
            in_wheel: 0,
            far: BinaryHeap::new(),
            next_seq: 0,
        }
    }
}

fn bucket(at: Instant) -> u64 {
    at.as_micros() >> BUCKET_SHIFT
}

fn key(entry: &Entry) -> (Instant, u64) {
    (entry.at, entry.seq)
}

/// Where the earliest entry of the current buckets is.
enum Source {
    Run,
    Fifo,
    Heap,
}

impl Agenda {
    /// Schedule `what` for `client` at `at`.
    pub(crate) fn push(
        &mut self,
        at: Instant,
        client: u32,
        transport: TransportId,
        what: Delivery,
    ) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = Entry {
            at,
            seq,
            client,
            transport,
            what,
        };
        let b = bucket(at);
        if b <= self.now_bucket {
            // Also right for an instant before `now_bucket`: everything in
            // the wheel and in `far` is later still.
            if self
                .late_fifo
                .back()
                .map_or(true, |last| key(last) < key(&entry))
            {
                self.late_fifo.push_back(entry);
            } else {
                self.late_heap.push(entry);
            }
        } else if b - self.now_bucket < WHEEL {
            self.wheel[(b % WHEEL) as usize].push(entry);
            self.in_wheel += 1;
        } else {
            self.far.push(entry);
        }
    }

    /// The earliest event, if it is not later than `until`.
    pub(crate) fn pop_until(&mut self, until: Instant) -> Option<Entry> {
        let source = match self.earliest() {
            Some(source) => source,
            None if self.advance(until) => self.earliest()?,
            None => return None,
        };
        let entry = match source {
            Source::Run => self.run[self.run_pos],
            Source::Fifo => *self.late_fifo.front()?,
            Source::Heap => *self.late_heap.peek()?,
        };
        if entry.at > until {
            return None;
        }
        match source {
            Source::Run => self.run_pos += 1,
            Source::Fifo => drop(self.late_fifo.pop_front()),
            Source::Heap => drop(self.late_heap.pop()),
        }
        Some(entry)
    }

    /// The source of the earliest entry of the current buckets, if any.
    fn earliest(&self) -> Option<Source> {
        let mut best: Option<((Instant, u64), Source)> =
            self.run.get(self.run_pos).map(|e| (key(e), Source::Run));
        for (candidate, source) in [
            (self.late_fifo.front(), Source::Fifo),
            (self.late_heap.peek(), Source::Heap),
        ] {
            if let Some(entry) = candidate {
                if best.as_ref().map_or(true, |(k, _)| key(entry) < *k) {
                    best = Some((key(entry), source));
                }
            }
        }
        best.map(|(_, source)| source)
    }

    /// Make the next non-empty bucket the run; `false` if there is none up
    /// to `until`'s bucket. (Not moving past `until` keeps entries scheduled
    /// between two `pop_until` calls, such as a scenario's incidents, in the
    /// wheel instead of the slower `late` structures.)
    fn advance(&mut self, until: Instant) -> bool {
        let far_bucket = self.far.peek().map(|e| bucket(e.at));
        let mut next = far_bucket.unwrap_or(u64::MAX);
        if self.in_wheel > 0 {
            let limit = next.min(self.now_bucket + WHEEL);
            let mut b = self.now_bucket + 1;
            while b < limit && self.wheel[(b % WHEEL) as usize].is_empty() {
                b += 1;
            }
            next = next.min(b);
        }
        if next == u64::MAX || next > bucket(until) {
            return false;
        }
        self.now_bucket = next;
        // Swap the slot in, leaving it the old run's (empty) allocation.
        self.run.clear();
        self.run_pos = 0;
        std::mem::swap(&mut self.run, &mut self.wheel[(next % WHEEL) as usize]);
        self.in_wheel -= self.run.len();
        while self.far.peek().is_some_and(|e| bucket(e.at) <= next) {
            if let Some(entry) = self.far.pop() {
                self.run.push(entry);
            }
        }
        self.run.sort_unstable_by_key(|e| (e.at, e.seq));
        true
    }

    /// Events still scheduled.
    pub(crate) fn len(&self) -> usize {
        self.run.len() - self.run_pos
            + self.late_fifo.len()
            + self.late_heap.len()
            + self.in_wheel
            + self.far.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_in_time_order_then_insertion_order() {
        let mut agenda = Agenda::default();
        let none = TransportId(0);
        agenda.push(Instant::from_millis(5), 1, none, Delivery::Wake);
        agenda.push(Instant::from_millis(1), 2, none, Delivery::Wake);
        agenda.push(Instant::from_millis(5), 3, none, Delivery::Wake);
        agenda.push(Instant::from_millis(1), 4, none, Delivery::Wake);
        let order: Vec<u32> = std::iter::from_fn(|| agenda.pop_until(Instant::MAX))
            .map(|e| e.client)
            .collect();
        assert_eq!(order, [2, 4, 1, 3]);
    }

    #[test]
    fn the_calendar_pops_in_the_order_of_one_big_heap() {
        // Instants spread from the same microsecond to far beyond the wheel,
        // pushed while popping, as the engine does.
        let mut agenda = Agenda::default();
        let mut reference = BinaryHeap::new();
        let mut rng = belay_proto::rng::SplitMix64::new(9);
        let mut now = 0u64;
        let mut popped = Vec::new();
        let mut expected = Vec::new();
        for round in 0..20_000u32 {
            let spread = [0, 1_000, 1_000_000, 100_000_000][(round % 4) as usize];
            let at = Instant::from_micros(now + rng.next_u64() % (spread + 1));
            agenda.push(at, round, TransportId(0), Delivery::Wake);
            reference.push(std::cmp::Reverse((at, round)));
            if round % 3 == 0 {
                let e = agenda.pop_until(Instant::MAX).unwrap();
                let std::cmp::Reverse(r) = reference.pop().unwrap();
                now = e.at.as_micros();
                popped.push((e.at, e.client));
                expected.push(r);
            }
        }
        while let Some(e) = agenda.pop_until(Instant::MAX) {
            popped.push((e.at, e.client));
        }
        while let Some(std::cmp::Reverse(r)) = reference.pop() {
            expected.push(r);
        }
        assert_eq!(popped, expected);
        assert_eq!(agenda.len(), 0);
    }

    #[test]
    fn an_entry_pushed_before_the_current_bucket_still_comes_first() {
        let mut agenda = Agenda::default();
        let none = TransportId(0);
        agenda.push(Instant::from_millis(50), 1, none, Delivery::Wake);
        agenda.push(Instant::from_millis(60), 2, none, Delivery::Wake);
        assert_eq!(agenda.pop_until(Instant::MAX).unwrap().client, 1);
        agenda.push(Instant::from_millis(10), 3, none, Delivery::Wake);
        assert_eq!(agenda.pop_until(Instant::MAX).unwrap().client, 3);
        assert_eq!(agenda.pop_until(Instant::MAX).unwrap().client, 2);
    }

    #[test]
    fn nothing_after_the_limit_is_popped() {
        let mut agenda = Agenda::default();
        agenda.push(Instant::from_millis(10), 1, TransportId(0), Delivery::Wake);
        assert_eq!(agenda.pop_until(Instant::from_millis(9)), None);
        assert_eq!(agenda.len(), 1);
        assert!(agenda.pop_until(Instant::from_millis(10)).is_some());
    }
}
