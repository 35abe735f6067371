/**
 * Which transport the next dial uses, WebSocket or the SSE + HTTP fallback
 * (`client/transport_choice.rs`, spec/PROTOCOL.md §1.7), decided from how
 * the dials went. Pure and clock-free: times are the driver's ms.
 *
 *   direct ── WebSocket failed before open ──▶ next dial: SSE ── opened ──▶ fallback
 *   fallback: every dial is SSE; every `retryWebSocketEveryMs` a probe (a
 *     WebSocket opened and closed at once). Probe opened ──▶ switch at the
 *     next quiet moment ──▶ direct
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
}

export function defaultFallbackConfig(): FallbackConfig {
  return { afterFailures: 1, retryWebSocketEveryMs: 60_000 };
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
  private _switchWanted = false;
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

  /** A dial on `kind` ended with `outcome`. */
  handleDial(nowMs: number, kind: TransportKind, outcome: DialOutcome): void {
    if (kind === "websocket") {
      if (outcome.opened) {
        this._fallback = this._switchWanted = false;
        this._wsFailures = 0;
        this._probeAt = undefined;
        this._next = "websocket";
        return;
      }
      if (counts(outcome.failure)) this._wsFailures++;
      if (this._fallback || this._wsFailures >= this._config.afterFailures) this._next = "sse";
    } else if (outcome.opened) {
      if (!this._fallback) {
        this._fallback = true;
        this._probeAt = nowMs + this._config.retryWebSocketEveryMs;
      }
      this._next = "sse";
    } else {
      // The server may be down, or the block gone: try the other.
      this._next = "websocket";
    }
  }

  /** When `pollProbe` next has something to say. */
  pollTimeout(): number | undefined {
    return this._fallback && !this._probing && !this._switchWanted ? this._probeAt : undefined;
  }

  /** Whether to start a WebSocket probe now (at most one at a time; its end goes to `handleProbe`). */
  pollProbe(nowMs: number): boolean {
    const at = this.pollTimeout();
    const due = at !== undefined && nowMs >= at;
    if (due) this._probing = true;
    return due;
  }

  /** The probe opened a WebSocket (`true`) or did not. */
  handleProbe(nowMs: number, opened: boolean): void {
    this._probing = false;
    if (!this._fallback) return;
    if (opened) this._switchWanted = true;
    else this._probeAt = nowMs + this._config.retryWebSocketEveryMs;
  }

  /**
   * A probe opened and the session is `quiet` (nothing in flight that a
   * reconnect would disturb): switch now. `true` once; the next dial is a
   * WebSocket.
   */
  pollSwitch(quiet: boolean): boolean {
    if (!(this._switchWanted && quiet && this._fallback)) return false;
    this._switchWanted = this._fallback = false;
    this._wsFailures = 0;
    this._probeAt = undefined;
    this._next = "websocket";
    return true;
  }
}
