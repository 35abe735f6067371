/**
 * The request registry (`client/registry.rs`): ids grow for the whole session and
 * are never reused; each request has a deadline; a lost transport settles
 * them all with `connection_closed`, in id order. Settling calls `settle`.
 */
import type { RequestOutcome } from "./events.js";
import type { Response } from "./messages.js";

export class RequestRegistry {
  _lastId = 0;
  _lateResponses = 0;
  /** id → deadline (µs); Map keeps insertion (= id) order. */
  readonly _entries = new Map<number, number>();

  constructor(private readonly _settle: (id: number, outcome: RequestOutcome) => void) {}

  _insert(deadline: number): number {
    this._entries.set(++this._lastId, deadline);
    return this._lastId;
  }

  _handleResponse(r: Response): void {
    if (this._entries.delete(r.id)) this._settle(r.id, r.error ? { kind: "server_error", error: r.error } : { kind: "ok", result: r.result ?? null });
    else this._lateResponses++;
  }

  /** Requests due at `now`, by deadline then id, settled with `timeout`. */
  _handleTimeout(now: number): void {
    for (const [id] of [...this._entries].filter(([, d]) => d <= now).sort((a, b) => a[1] - b[1] || a[0] - b[0])) {
      this._entries.delete(id);
      this._settle(id, { kind: "timeout" });
    }
  }

  _settleAll(): void {
    const ids = [...this._entries.keys()];
    this._entries.clear();
    for (const id of ids) this._settle(id, { kind: "connection_closed" });
  }
}
