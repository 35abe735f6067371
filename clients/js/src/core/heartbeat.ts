/**
 * Liveness (`heartbeat/`): every inbound frame is proof of life. The probe
 * policy is a pure function of timestamps (`decide`); the server-ping
 * watchdog closes after two advertised intervals without any frame. All
 * values in µs. `Heartbeat` applies `decide`'s rules (a pending probe is
 * judged by its own send time; the session's time never goes backwards, so
 * no difference needs saturating), with the probe due on the beat.
 *
 * The fleet's beat (`heartbeat/beat.rs`, `Beat::for_probes`): with a
 * `welcome` whose pacing carries the plan's origin (`origin_ms`), an idle
 * connection (its last frame the answer to our probe, or the `welcome`)
 * probes on a beat set on this client's slots: one beat `timeout + 250 ms`
 * before a slot, and `m = ⌈period / interval⌉` evenly spaced beats per
 * period (or one every `⌊interval / period⌋` periods), so beats are at most
 * `interval` apart. It probes at the first beat after its last frame; after
 * any other frame, at `interval` after it. So a silent death is noticed
 * before the client's next slot after it (a plain silent loss: the next
 * slot is right after). A server that pings and gives its plan's origin
 * pings idle connections on its own beat (every its ping interval): if its
 * ping was the last frame when the heartbeat closes (the probe unanswered
 * or the watchdog expired), that loss is noticed on the beat
 * (`Loss::Beat`), with the server's ping interval.
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
  /**
   * The beat (µs): one of its instants at the start of a period (at or
   * before the anchor), the period, and the beats in each period (at
   * `⌈j × period / m⌉` into it); undefined without a beat.
   */
  _beatAt: number | undefined;
  _beatEvery: number | undefined;
  _perPeriod = 1;
  /** The last frame was the answer to our probe (or the `welcome`): probes follow the beat. */
  _idle = true;
  /** The server pings idle connections on the fleet's beat, every `_serverPing` (`set_server_beat`). */
  _serverBeat?: boolean;
  /**
   * The server's ping interval if its ping, on its beat, was the last frame
   * (`last_was_ping` with the server's beat), else falsy.
   */
  _onBeat: number | false | undefined;

  /** `now`: when the transport opened or last spoke (the `welcome`: the beat's anchor). */
  constructor(now: number, readonly _interval: number, readonly _timeout: number) {
    this._lastReceivedAt = now;
  }

  /**
   * Follow the fleet's beat (`Beat::for_probes`, in whole ms): the pacing
   * `slots` of the `welcome` this heartbeat started at (the anchor). The
   * beat's period is the slot period (`m` beats in it) or `f` slot periods
   * (one beat); one beat is `timeout + 250 ms` before a slot. No beat
   * without an origin, nor for an interval under 1 ms.
   */
  _setBeat(slots: PacingSlots | undefined, originMs: number | undefined): void {
    const i = Math.floor(this._interval / US);
    if (originMs! >= 0 && i) {
      const p = slots!._periodMs;
      const period = p * US;
      const every = (this._beatEvery = period * Math.max(1, Math.floor(i / p)));
      this._perPeriod = Math.ceil(p / i);
      this._beatAt = this._lastReceivedAt + ((((slots!._phaseMs * US - this._timeout - 25e4) % period) + period) % period) - every;
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
   * When the next probe is due if nothing arrives: `interval` after the
   * last frame `t`, or, idle with a beat, the first beat instant after `t`:
   * from the start `s` of the beat period holding `t`, the beat after the
   * last of its `m` at or before `t`. (`t` is after the beat's stored
   * instant, which is at or before the anchor, so plain `%` is exact.)
   */
  _probeDueAt(): number {
    const t = this._lastReceivedAt;
    const every = this._beatEvery!;
    const m = this._perPeriod;
    const s = t - ((t - this._beatAt!) % every);
    return this._idle && every ? s + Math.ceil(((Math.floor(((t - s) * m) / every) + 1) * every) / m) : t + this._interval;
  }

  /**
   * If the heartbeat's close is due at `now` and the server's ping on its
   * beat was the last frame, the server's ping interval (the probe went
   * unanswered or the watchdog expired), else 0.
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
    this._probesSent++;
    return "probe";
  }

  /** The next instant at which `handleTimeout` can change anything. */
  _pollTimeout(): number {
    const t = this._pendingProbeAt !== undefined ? this._pendingProbeAt + this._timeout : this._probeDueAt();
    return Math.min(t, this._lastReceivedAt + 2 * this._serverPing);
  }
}
