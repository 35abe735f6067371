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
  lastReceivedAt: number;
  pendingProbeAt: number | undefined;
  /** Advertised server ping interval (µs); the watchdog fires at `last + 2 × it`. */
  serverPing: number | undefined;
  probesSent = 0;

  constructor(now: number, readonly interval: number, readonly timeout: number) {
    this.lastReceivedAt = now;
  }

  /** Any frame from the peer. Never moves `lastReceivedAt` backwards. */
  handleFrame(now: number): void {
    this.lastReceivedAt = Math.max(this.lastReceivedAt, now);
    this.pendingProbeAt = undefined;
  }

  /** `"probe"` (caller sends it; recorded as pending), `"wait"`, or a failure cause. */
  handleTimeout(now: number): "wait" | "probe" | LivenessFailure {
    if (this.serverPing !== undefined && now >= this.lastReceivedAt + 2 * this.serverPing) {
      return "server_pings_missing";
    }
    const action = decide(this.lastReceivedAt, this.pendingProbeAt, now, this.interval, this.timeout);
    if (action === "close") return "probe_unanswered";
    if (action === "probe") {
      this.pendingProbeAt = now;
      this.probesSent++;
    }
    return action;
  }

  /** The next instant at which `handleTimeout` can change anything. */
  pollTimeout(): number {
    const t =
      this.pendingProbeAt !== undefined ? this.pendingProbeAt + this.timeout : this.lastReceivedAt + this.interval;
    return this.serverPing !== undefined ? Math.min(t, this.lastReceivedAt + 2 * this.serverPing) : t;
  }
}
