/**
 * The request registry (`registry.rs`): ids grow for the whole session and
 * are never reused; each request has a deadline; a lost transport settles
 * them all with `connection_closed`, in id order.
 */
import type { RequestOutcome } from "./events.js";
import type { Response } from "./messages.js";

export class RequestRegistry {
  lastId = 0;
  lateResponses = 0;
  /** id → deadline (µs); Map keeps insertion (= id) order. */
  private readonly entries = new Map<number, number>();

  insert(deadline: number): number {
    const id = ++this.lastId;
    this.entries.set(id, deadline);
    return id;
  }

  handleResponse(r: Response): [number, RequestOutcome] | undefined {
    if (!this.entries.delete(r.id)) {
      this.lateResponses++;
      return undefined;
    }
    return [r.id, r.error ? { kind: "server_error", error: r.error } : { kind: "ok", result: r.result ?? null }];
  }

  /** Requests due at `now`, by deadline then id, settled with `timeout`. */
  handleTimeout(now: number): [number, RequestOutcome][] {
    const due = [...this.entries].filter(([, d]) => d <= now).sort((a, b) => a[1] - b[1] || a[0] - b[0]);
    return due.map(([id]) => {
      this.entries.delete(id);
      return [id, { kind: "timeout" }];
    });
  }

  settleAll(): [number, RequestOutcome][] {
    const ids = [...this.entries.keys()];
    this.entries.clear();
    return ids.map((id) => [id, { kind: "connection_closed" }]);
  }

  pollTimeout(): number | undefined {
    let min: number | undefined;
    for (const d of this.entries.values()) if (min === undefined || d < min) min = d;
    return min;
  }

  get size(): number {
    return this.entries.size;
  }
}
