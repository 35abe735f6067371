/**
 * Liveness (`heartbeat.rs`): every inbound frame is proof of life. The probe
 * policy is a pure function of timestamps; the server-ping watchdog closes
 * after two advertised intervals without any frame. All values in µs.
 */

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
  /** Advertised server ping interval (µs); the watchdog fires at `last + 2 × it`. */
  _serverPing: number | undefined;
  _probesSent = 0;

  constructor(now: number, readonly _interval: number, readonly _timeout: number) {
    this._lastReceivedAt = now;
  }

  /** Any frame from the peer. Never moves `lastReceivedAt` backwards. */
  _handleFrame(now: number): void {
    this._lastReceivedAt = Math.max(this._lastReceivedAt, now);
    this._pendingProbeAt = undefined;
  }

  /** `"probe"` (caller sends it; recorded as pending), `"wait"`, or a failure cause. */
  _handleTimeout(now: number): "wait" | "probe" | LivenessFailure {
    if (this._serverPing !== undefined && now >= this._lastReceivedAt + 2 * this._serverPing) {
      return "server_pings_missing";
    }
    const action = decide(this._lastReceivedAt, this._pendingProbeAt, now, this._interval, this._timeout);
    if (action === "close") return "probe_unanswered";
    if (action === "probe") {
      this._pendingProbeAt = now;
      this._probesSent++;
    }
    return action;
  }

  /** The next instant at which `handleTimeout` can change anything. */
  _pollTimeout(): number {
    const t =
      this._pendingProbeAt !== undefined ? this._pendingProbeAt + this._timeout : this._lastReceivedAt + this._interval;
    return this._serverPing !== undefined ? Math.min(t, this._lastReceivedAt + 2 * this._serverPing) : t;
  }
}
