/**
 * Which transport the next dial uses, WebSocket or the SSE + HTTP fallback
 * (`client/transport_choice.rs`, spec/PROTOCOL.md §1.7), decided from how
 * the dials went. Pure and clock-free: times are the driver's ms.
 *
 *   direct ── WebSocket failed before open ──▶ next dial: SSE ── opened ──▶ fallback
 *   fallback: every dial is SSE; every `retryWebSocketEveryMs` a probe (a
 *     WebSocket opened and closed at once). Probe opened ──▶ switching: the
 *     next dial is a WebSocket, and `pollSwitch()` hands the driver the bound
 *     (now + `switchWithinMs`) for `Session.replaceTransportWhenQuiet`;
 *     WebSocket opened ──▶ direct; WebSocket failed ──▶ back to SSE
 *
 * The moment of the switch is the session's (`session/switch.rs`): the
 * first with no request in flight; from the bound on it refuses new
 * requests until the last is answered. `SendRetry` (`send_retry.ts`) is the
 * fallback's other rule: the sends' retries.
 *
 * Only in `@belay/client/fallback`: the default entry never imports it.
 */
import type { Failure } from "./transport.js";

export type TransportKind = "websocket" | "sse";

export interface FallbackConfig {
  /** WebSocket dials in a row that failed before opening, after which the next dial is SSE (≥ 1; default 1). */
  afterFailures: number;
  /** While on the fallback, how often a WebSocket is tried again (default 60 s). */
  retryWebSocketEveryMs: number;
  /** Once a probe opened, how long the session may wait for a quiet moment before it stops taking requests to make one (default 30 s). */
  switchWithinMs: number;
}

export function defaultFallbackConfig(): FallbackConfig {
  return { afterFailures: 1, retryWebSocketEveryMs: 60_000, switchWithinMs: 30_000 };
}

/** How a dial ended: opened, or the failure before it opened. */
export type DialOutcome = { opened: true } | { opened: false; failure: Failure };

/** Whether a failed WebSocket dial may be a blocked upgrade (the server's own refusals and no route say nothing). */
function counts(failure: Failure): boolean {
  if (failure.kind === "network") return true;
  return failure.kind === "rejected" && failure.status !== 429 && failure.status !== 503 && failure.status !== 401;
}

export class TransportChoice {
  private _fallback = false;
  private _wsFailures = 0;
  private _next: TransportKind = "websocket";
  private _probeAt: number | undefined;
  private _probing = false;
  /** A probe opened: the next dial is a WebSocket, until a WebSocket dial ends. */
  private _switching = false;
  /** The bound on the wait for a quiet moment, until the driver takes it. */
  private _switchBy: number | undefined;
  /** A 403 to the upgrade was told as a network failure until the fallback's dial shows whose it was. */
  private _forbiddenDeferred = false;
  private readonly _config: FallbackConfig;

  constructor(config: Partial<FallbackConfig> = {}) {
    this._config = { ...defaultFallbackConfig(), ...config };
    this._config.afterFailures = Math.max(1, this._config.afterFailures);
  }

  /** Whether sessions run on the fallback now. */
  onFallback(): boolean {
    return this._fallback;
  }

  /** The transport the next dial uses. */
  next(): TransportKind {
    return this._next;
  }

  /** Whether a probe opened and no WebSocket dial has ended since. */
  isSwitching(): boolean {
    return this._switching;
  }

  /** A dial on `kind` ended with `outcome`. */
  handleDial(nowMs: number, kind: TransportKind, outcome: DialOutcome): void {
    if (kind === "websocket") {
      if (outcome.opened) {
        this._fallback = this._switching = this._forbiddenDeferred = false;
        this._wsFailures = 0;
        this._probeAt = this._switchBy = undefined;
        this._next = "websocket";
        return;
      }
      if (counts(outcome.failure)) this._wsFailures++;
      // A switch whose WebSocket failed is over: back to the stream.
      this._switching = false;
      this._switchBy = undefined;
      if (this._fallback || this._wsFailures >= this._config.afterFailures) this._next = "sse";
    } else if (outcome.opened) {
      // The 403 was the path's: WebSockets are blocked.
      this._forbiddenDeferred = false;
      if (!this._fallback) {
        this._fallback = true;
        this._probeAt = undefined;
      }
      // Probes restart from here (also after a switch that failed).
      if (this._probeAt === undefined && !this._probing && !this._switching) this._probeAt = nowMs + this._config.retryWebSocketEveryMs;
      if (!this._switching) this._next = "sse";
    } else {
      // The server may be down, or the block gone: try the other.
      this._next = "websocket";
    }
  }

  /**
   * What the session is to be told of a dial on `kind` that failed with
   * `failure`, once `handleDial` has heard of it (`failure_for_session` in
   * Rust): a 403 to the upgrade may be a proxy's that blocks WebSockets, so
   * while the next dial is SSE it is told as a network failure, and the
   * fallback's dial decides (opens: the path's; 429/503: retry; anything
   * else: the 403 after all). A browser sees no status, so its driver
   * never has a 403 to pass; the rule is here for the shared vectors.
   */
  failureForSession(kind: TransportKind, failure: Failure): Failure {
    if (kind === "websocket" && failure.kind === "rejected" && failure.status === 403 && this._next === "sse") {
      this._forbiddenDeferred = !this._fallback;
      return { kind: "network", detail: "the upgrade was answered 403 (a proxy that blocks WebSockets?): trying the fallback" };
    }
    if (kind === "sse" && this._forbiddenDeferred) {
      this._forbiddenDeferred = false;
      if (failure.kind === "rejected" && (failure.status === 429 || failure.status === 503)) return failure;
      return { kind: "rejected", status: 403 };
    }
    return failure;
  }

  /** When `pollProbe` next has something to say: on the fallback, with no probe running and no switch under way. */
  pollTimeout(): number | undefined {
    return this._fallback && !this._probing && !this._switching ? this._probeAt : undefined;
  }

  /** Whether to start a WebSocket probe now (at most one at a time; its end goes to `handleProbe`). */
  pollProbe(nowMs: number): boolean {
    const at = this.pollTimeout();
    const due = at !== undefined && nowMs >= at;
    if (due) this._probing = true;
    return due;
  }

  /** The probe opened a WebSocket (`true`: the switch starts) or did not (the next is due an interval from now). */
  handleProbe(nowMs: number, opened: boolean): void {
    this._probing = false;
    if (!this._fallback) return;
    if (opened) {
      this._switching = true;
      this._switchBy = nowMs + this._config.switchWithinMs;
      this._probeAt = undefined;
      this._next = "websocket";
    } else this._probeAt = nowMs + this._config.retryWebSocketEveryMs;
  }

  /**
   * Once after a probe opened: the instant (ms) by which the session is to
   * have made its quiet moment, for `Session.replaceTransportWhenQuiet`;
   * the dial that follows is a WebSocket.
   */
  pollSwitch(): number | undefined {
    const by = this._switchBy;
    this._switchBy = undefined;
    return by;
  }
}
