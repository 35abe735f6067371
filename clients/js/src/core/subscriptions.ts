/**
 * Subscriptions (`subscriptions.rs`): a channel counts only once confirmed;
 * an unconfirmed subscribe is repeated on the same transport; `unsubscribed`
 * schedules a resubscribe; publications are delivered in offset order with no
 * duplicate, and a gap or epoch change resubscribes from the last position.
 * Times in µs.
 */
import { Backoff } from "./backoff/state.js";
import type { BackoffPolicy } from "./backoff/policy.js";
import type { Event } from "./events.js";
import {
  isFinalUnsubscribe,
  type ClientMessage,
  type Publication,
  type StreamPosition,
  type Subscribed,
  type Unsubscribed,
} from "./messages.js";
import type { RandomSource } from "./rng.js";
import { US } from "./time.js";

/** Shortest wait for `subscribed` (ms), so a zero timeout cannot livelock. */
export const MIN_CONFIRM_TIMEOUT_MS = 100;

export type SubscriptionOutput = { send: ClientMessage } | { event: Event };

type ChannelState =
  | { s: "idle" }
  | { s: "pending"; deadline: number; resumed: boolean }
  | { s: "subscribed" }
  | { s: "retrying"; at: number }
  | { s: "failed" };

interface Channel {
  state: ChannelState;
  position: StreamPosition | undefined;
  retry: Backoff;
}

/** Byte-wise UTF-8 order (= code point order), like Rust's `BTreeMap<String, _>`. */
export function compareNames(a: string, b: string): number {
  for (let i = 0, j = 0; i < a.length && j < b.length; ) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(j)!;
    if (x !== y) return x - y;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

export class Subscriptions {
  private readonly _channels = new Map<string, Channel>();
  private readonly _confirmTimeout: number;
  private _online = false;
  _duplicatesDropped = 0;
  _strayPublications = 0;

  constructor(confirmTimeoutMs: number, private readonly _resubscribe: BackoffPolicy) {
    this._confirmTimeout = Math.max(confirmTimeoutMs, MIN_CONFIRM_TIMEOUT_MS) * US;
  }

  private _sorted(): [string, Channel][] {
    return [...this._channels].sort((a, b) => compareNames(a[0], b[0]));
  }

  private _subscribeNow(now: number, channel: string, since: StreamPosition | undefined, out: SubscriptionOutput[]): ChannelState {
    const send: ClientMessage = since ? { type: "subscribe", channel, since: { ...since } } : { type: "subscribe", channel };
    out.push({ send });
    return { s: "pending", deadline: now + this._confirmTimeout, resumed: since !== undefined };
  }

  /** Every wanted channel (other than refused ones) is confirmed; true with none. */
  _allConfirmed(): boolean {
    for (const c of this._channels.values()) if (c.state.s !== "subscribed" && c.state.s !== "failed") return false;
    return true;
  }

  _has(channel: string): boolean {
    return this._channels.has(channel);
  }

  _position(channel: string): StreamPosition | undefined {
    return this._channels.get(channel)?.position;
  }

  /** Want `channel`; subscribes at once if the protocol is up. False if already wanted. */
  _add(now: number, channel: string, out: SubscriptionOutput[]): boolean {
    if (this._channels.has(channel)) return false;
    const entry: Channel = { state: { s: "idle" }, position: undefined, retry: new Backoff(this._resubscribe) };
    if (this._online) entry.state = this._subscribeNow(now, channel, undefined, out);
    this._channels.set(channel, entry);
    return true;
  }

  /** Stop wanting `channel`; false if it was not wanted. */
  _remove(channel: string, out: SubscriptionOutput[]): boolean {
    const entry = this._channels.get(channel);
    if (!entry) return false;
    this._channels.delete(channel);
    if (this._online && (entry.state.s === "pending" || entry.state.s === "subscribed")) {
      out.push({ send: { type: "unsubscribe", channel } });
    }
    return true;
  }

  /** Channels the server refused get another chance on the next transport. */
  _retryRefused(): void {
    for (const c of this._channels.values()) if (c.state.s === "failed") c.state = { s: "idle" };
  }

  _handleProtocolUp(now: number, out: SubscriptionOutput[]): void {
    this._online = true;
    for (const [name, c] of this._sorted()) {
      if (c.state.s === "failed") continue;
      c.retry._reset();
      c.state = this._subscribeNow(now, name, c.position, out);
    }
  }

  _handleTransportDown(): void {
    this._online = false;
    for (const c of this._channels.values()) if (c.state.s !== "failed") c.state = { s: "idle" };
  }

  _handleSubscribed(msg: Subscribed, out: SubscriptionOutput[]): void {
    const c = this._channels.get(msg.channel);
    if (!c || c.state.s !== "pending") return;
    const resumed = c.state.resumed;
    c.state = { s: "subscribed" };
    c.retry._reset();
    c.position = { epoch: msg.epoch, offset: msg.offset };
    out.push({ event: { event: "subscribed", channel: msg.channel, recovered: resumed && msg.recovered } });
    if (resumed && !msg.recovered) out.push({ event: { event: "recovery_failed", channel: msg.channel } });
  }

  _handleUnsubscribed(now: number, msg: Unsubscribed, rng: RandomSource, out: SubscriptionOutput[]): void {
    const c = this._channels.get(msg.channel);
    if (!c || c.state.s === "failed" || c.state.s === "idle") return;
    if (isFinalUnsubscribe(msg.code)) {
      c.state = { s: "failed" };
      out.push({ event: { event: "subscription_failed", channel: msg.channel, code: msg.code } });
      return;
    }
    c.state = { s: "retrying", at: now + c.retry._nextDelay(now, rng) };
    out.push({ event: { event: "subscription_lost", channel: msg.channel, code: msg.code } });
  }

  _handlePublication(now: number, p: Publication, out: SubscriptionOutput[]): void {
    const c = this._channels.get(p.channel);
    if (!c || c.state.s !== "subscribed") {
      this._strayPublications++;
      return;
    }
    const pos = c.position;
    if (!pos) return;
    const next = pos.offset + 1;
    if (p.epoch === pos.epoch && p.offset < next) {
      this._duplicatesDropped++;
      return;
    }
    if (p.epoch !== pos.epoch || p.offset > next) {
      c.state = this._subscribeNow(now, p.channel, pos, out);
      return;
    }
    pos.offset = p.offset;
    out.push({ event: { event: "publication", channel: p.channel, epoch: p.epoch, offset: p.offset, data: p.data } });
  }

  _handleTimeout(now: number, out: SubscriptionOutput[]): void {
    if (!this._online) return;
    for (const [name, c] of this._sorted()) {
      const st = c.state;
      const due = (st.s === "pending" && st.deadline <= now) || (st.s === "retrying" && st.at <= now);
      if (due) c.state = this._subscribeNow(now, name, c.position, out);
    }
  }

  _pollTimeout(): number | undefined {
    if (!this._online) return undefined;
    let min: number | undefined;
    for (const { state: st } of this._channels.values()) {
      const t = st.s === "pending" ? st.deadline : st.s === "retrying" ? st.at : undefined;
      if (t !== undefined && (min === undefined || t < min)) min = t;
    }
    return min;
  }
}
