/**
 * The request registry (`registry.rs`): ids grow for the whole session and
 * are never reused; each request has a deadline; a lost transport settles
 * them all with `connection_closed`, in id order.
 */
import type { RequestOutcome } from "./events.js";
import type { Response } from "./messages.js";

export class RequestRegistry {
  _lastId = 0;
  _lateResponses = 0;
  /** id → deadline (µs); Map keeps insertion (= id) order. */
  private readonly _entries = new Map<number, number>();

  _insert(deadline: number): number {
    const id = ++this._lastId;
    this._entries.set(id, deadline);
    return id;
  }

  _handleResponse(r: Response): [number, RequestOutcome] | undefined {
    if (!this._entries.delete(r.id)) {
      this._lateResponses++;
      return undefined;
    }
    return [r.id, r.error ? { kind: "server_error", error: r.error } : { kind: "ok", result: r.result ?? null }];
  }

  /** Requests due at `now`, by deadline then id, settled with `timeout`. */
  _handleTimeout(now: number): [number, RequestOutcome][] {
    const due = [...this._entries].filter(([, d]) => d <= now).sort((a, b) => a[1] - b[1] || a[0] - b[0]);
    return due.map(([id]) => {
      this._entries.delete(id);
      return [id, { kind: "timeout" }];
    });
  }

  _settleAll(): [number, RequestOutcome][] {
    const ids = [...this._entries.keys()];
    this._entries.clear();
    return ids.map((id) => [id, { kind: "connection_closed" }]);
  }

  _pollTimeout(): number | undefined {
    let min: number | undefined;
    for (const d of this._entries.values()) if (min === undefined || d < min) min = d;
    return min;
  }

  get _size(): number {
    return this._entries.size;
  }
}
