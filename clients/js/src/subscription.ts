/**
 * One channel as the application sees it: publications in offset order (no
 * gap, no duplicate), or an explicit notice when that cannot be kept.
 */
import type { Json } from "./core/messages.js";

export type ChannelItem =
  /** One publication, delivered exactly once and in order. */
  | { type: "publication"; epoch: string; offset: number; data: Json }
  /** Publications were lost (history too short or a new epoch): resync from a snapshot. Delivery continues after it. */
  | { type: "resync"; epoch?: string; offset?: number }
  /** The subscription is confirmed (again); `recovered` if a resume replayed everything missed. */
  | { type: "subscribed"; recovered: boolean }
  /** The service lost the subscription; the client resubscribes by itself. */
  | { type: "lost"; code: string }
  /** The server refused the channel for good. */
  | { type: "failed"; code: string };

export class Subscription implements AsyncIterable<ChannelItem> {
  private readonly listeners = new Set<(item: ChannelItem) => void>();
  private readonly queue: ChannelItem[] = [];
  private waiter: ((r: IteratorResult<ChannelItem>) => void) | undefined;
  private iterating = false;
  closed = false;

  constructor(readonly channel: string, private readonly onClose: (s: Subscription) => void) {}

  /** Call `listener` for every item; returns a function that removes it. */
  on(listener: (item: ChannelItem) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stop wanting the channel; ends the async iteration. */
  unsubscribe(): void {
    if (this.closed) return;
    this.end();
    this.onClose(this);
  }

  /** @internal */
  push(item: ChannelItem): void {
    if (this.closed) return;
    for (const l of this.listeners) l(item);
    if (!this.iterating) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w({ value: item, done: false });
    } else this.queue.push(item);
  }

  /** @internal */
  end(): void {
    this.closed = true;
    if (this.waiter) this.waiter({ value: undefined, done: true });
    this.waiter = undefined;
  }

  [Symbol.asyncIterator](): AsyncIterator<ChannelItem> {
    this.iterating = true;
    return {
      next: () => {
        const item = this.queue.shift();
        if (item) return Promise.resolve({ value: item, done: false });
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.waiter = resolve));
      },
      return: () => {
        this.unsubscribe();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
