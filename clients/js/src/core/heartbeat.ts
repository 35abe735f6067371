/**
 * Liveness (`heartbeat/`): every inbound frame is proof of life. The probe
 * policy is a pure function of timestamps (`decide`); the server-ping
 * watchdog closes after two advertised intervals without any frame. All
 * values in µs. `Heartbeat` applies `decide`'s rules (a pending probe is
 * judged by its own send time; the session's time never goes backwards, so
 * no difference needs saturating), with the probe due on the beat.
 *
 * The fleet's beat (`heartbeat/beat.rs`): a `welcome` whose pacing carries
 * the plan's origin (`origin_ms`) gives this client its place on a beat
 * shared by the whole fleet, `anchor + phase + k × interval`. An idle
 * connection (its last frame the answer to our probe, or the `welcome`)
 * probes at the last beat instant no later than `interval` after its last
 * frame, so never later than without a beat; after any other frame, at
 * `interval` after it. A probe sent on the beat that goes unanswered is a
 * loss noticed on the beat (`Loss::Beat`), spread evenly over the fleet.
 * A server that pings and gives its plan's origin pings idle connections on
 * the beat (every its ping interval): if its ping was the last frame when
 * the heartbeat closes (the probe unanswered or the watchdog expired), that
 * loss too is noticed on the beat, with the server's ping interval.
 */
import type { PacingSlots } from "./backoff/pacing.js";
import { US } from "./time.js";

export type HeartbeatAction = "wait" | "probe" | "close";
export type LivenessFailure = "probe_unanswered" | "server_pings_missing";

/**
 * pending probe sent at p:  now - p >= timeout   -> close, else wait
 * no pending probe:         now - last >= interval -> probe, else wait
 * (differences saturate at zero; `>=` so a coarse clock never costs a tick)
 */
export function decide(
  lastReceivedAt: number,
  pendingProbeAt: number | undefined,
  now: number,
  interval: number,
  timeout: number,
): HeartbeatAction {
  if (pendingProbeAt !== undefined) return Math.max(now - pendingProbeAt, 0) >= timeout ? "close" : "wait";
  return Math.max(now - lastReceivedAt, 0) >= interval ? "probe" : "wait";
}

export class Heartbeat {
  _lastReceivedAt: number;
  _pendingProbeAt: number | undefined;
  /** Advertised server ping interval (µs; Infinity: the server does not ping); the watchdog fires at `last + 2 × it`. */
  _serverPing = Infinity;
  _probesSent = 0;
  /** The beat (µs): one of its instants (below `interval` after the anchor), and its interval (whole ms); undefined without a beat. */
  _beatAt: number | undefined;
  _beatEvery: number | undefined;
  /** The last frame was the answer to our probe (or the `welcome`): probes follow the beat. */
  _idle = true;
  /** The server pings idle connections on the fleet's beat, every `_serverPing` (`set_server_beat`). */
  _serverBeat?: boolean;
  /**
   * The beat's interval if the last sign of life was on the beat (the
   * outstanding probe sent on our beat, or the server's ping, the last
   * frame, on its beat), else falsy (`pending_on_beat`, `last_was_ping`).
   */
  _onBeat: number | false | undefined;

  /** `now`: when the transport opened or last spoke (the `welcome`: the beat's anchor). */
  constructor(now: number, readonly _interval: number, readonly _timeout: number) {
    this._lastReceivedAt = now;
  }

  /**
   * Follow the fleet's beat (`Beat::from_pacing`, in whole ms): the pacing
   * `slots` of the `welcome` this heartbeat started at (the anchor), whose
   * plan began `originMs` before it. The client's offset in the plan is
   * `(phase + origin) mod period`, its place on the beat
   * `floor(offset × interval / period)` after the origin. No beat without
   * an origin, nor for an interval under 1 ms.
   */
  _setBeat(slots: PacingSlots | undefined, originMs: number | undefined): void {
    const i = Math.floor(this._interval / US);
    if (originMs! >= 0 && i) {
      const p = slots!._periodMs;
      this._beatEvery = i * US;
      this._beatAt = this._lastReceivedAt + ((Math.floor((((slots!._phaseMs + (originMs! % p)) % p) * i) / p) + i - (originMs! % i)) % i) * US;
    }
  }

  /**
   * Any frame from the peer, by its message type (undefined: of a type this
   * client does not know). A `pong` answers our probe, so the connection is
   * idle; a `ping` is the server's (`handle_ping`). Never moves
   * `lastReceivedAt` backwards.
   */
  _handleFrame(now: number, type?: string): void {
    this._lastReceivedAt = Math.max(this._lastReceivedAt, now);
    this._pendingProbeAt = undefined;
    this._idle = type == "pong";
    this._onBeat = type == "ping" && this._serverBeat && this._serverPing;
  }

  /**
   * When the next probe is due if nothing arrives: `t`, `interval` after the
   * last frame, or, idle with a beat, the last beat instant at or before
   * `t`. (That is after the beat's first instant and after the last frame:
   * beats are at most `interval` apart and start below `interval` after the
   * anchor, which is no later than the last frame. So plain `%` is exact,
   * and the Rust core's `max` with the last frame changes nothing.)
   */
  _probeDueAt(): number {
    const t = this._lastReceivedAt + this._interval;
    const every = this._beatEvery!;
    return this._idle && every ? t - ((t - this._beatAt!) % every) : t;
  }

  /**
   * If the heartbeat's close is due at `now` and the last sign of life was
   * on the beat, the beat's interval, else 0: with the server's beat and its
   * ping the last frame, the server's ping interval once the probe went
   * unanswered or the watchdog expired; otherwise our own beat's interval
   * once a probe sent on it went unanswered.
   */
  _noticedOnBeat(now: number): number {
    return ((now - this._pendingProbeAt! >= this._timeout || now >= this._lastReceivedAt + 2 * this._serverPing) && this._onBeat) || 0;
  }

  /**
   * `"probe"` (caller sends it; recorded as pending), `"wait"`, or a failure
   * cause. Nothing changes before `pollTimeout` (the earliest of the
   * watchdog's deadline and the pending probe's, or, with none pending, the
   * probe's due time); from then on: the watchdog first, then the pending
   * probe, then a new one.
   */
  _handleTimeout(now: number): "wait" | "probe" | LivenessFailure {
    if (now < this._pollTimeout()) return "wait";
    if (now >= this._lastReceivedAt + 2 * this._serverPing) return "server_pings_missing";
    if (this._pendingProbeAt !== undefined) return "probe_unanswered";
    this._pendingProbeAt = now;
    if (this._idle) this._onBeat = this._beatEvery;
    this._probesSent++;
    return "probe";
  }

  /** The next instant at which `handleTimeout` can change anything. */
  _pollTimeout(): number {
    const t = this._pendingProbeAt !== undefined ? this._pendingProbeAt + this._timeout : this._probeDueAt();
    return Math.min(t, this._lastReceivedAt + 2 * this._serverPing);
  }
}
