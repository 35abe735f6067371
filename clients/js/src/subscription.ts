/**
 * One channel as the application sees it: publications in offset order (no
 * gap, no duplicate), or an explicit notice when that cannot be kept.
 */
import type { Json } from "./core/messages.js";
import type { ErrorCode } from "./errors.js";

export type ChannelItem =
  /** One publication, delivered exactly once and in order. */
  | { type: "publication"; epoch: string; offset: number; data: Json }
  /** Publications were lost (history too short or a new epoch): resync from a snapshot. Delivery continues after it. */
  | { type: "resync"; epoch?: string; offset?: number }
  /** The subscription is confirmed (again); `recovered` if a resume replayed everything missed. */
  | { type: "subscribed"; recovered: boolean }
  /** The service lost the subscription; the client resubscribes by itself. */
  | { type: "lost"; code: ErrorCode }
  /** The server refused the channel for good. */
  | { type: "failed"; code: ErrorCode };

export class Subscription implements AsyncIterable<ChannelItem> {
  private readonly _listeners = new Set<(item: ChannelItem) => void>();
  private readonly _queue: ChannelItem[] = [];
  private _waiter: ((r: IteratorResult<ChannelItem>) => void) | undefined;
  private _iterating?: boolean;
  closed = false;

  constructor(readonly channel: string, private readonly _onClose: (s: Subscription) => void) {}

  /** Call `listener` for every item; returns a function that removes it. */
  on(listener: (item: ChannelItem) => void): () => void {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  }

  /** Stop wanting the channel; ends the async iteration. */
  unsubscribe(): void {
    if (this.closed) return;
    this._end();
    this._onClose(this);
  }

  /** @internal */
  _push(item: ChannelItem): void {
    if (this.closed) return;
    for (const l of this._listeners) l(item);
    if (!this._iterating) return;
    if (this._waiter) {
      const w = this._waiter;
      this._waiter = undefined;
      w({ value: item, done: false });
    } else this._queue.push(item);
  }

  /** @internal */
  _end(): void {
    this.closed = true;
    this._waiter?.({ value: undefined, done: true });
    this._waiter = undefined;
  }

  [Symbol.asyncIterator](): AsyncIterator<ChannelItem> {
    this._iterating = true;
    return {
      next: () => {
        const item = this._queue.shift();
        if (item) return Promise.resolve({ value: item, done: false });
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this._waiter = resolve));
      },
      return: () => {
        this.unsubscribe();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
