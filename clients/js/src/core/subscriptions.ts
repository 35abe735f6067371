/**
 * Subscriptions (`client/subscriptions.rs`): a channel counts only once confirmed;
 * an unconfirmed subscribe is repeated on the same transport; `unsubscribed`
 * schedules a resubscribe; publications are delivered in offset order with no
 * duplicate, and a gap or epoch change resubscribes from the last position.
 * Times in µs. Messages and events go straight to the session (`SubscriptionSink`).
 */
import { Backoff } from "./backoff/state.js";
import type { BackoffPolicy } from "./backoff/policy.js";
import type { Event } from "./events.js";
import { isFinalUnsubscribe, type ClientMessage, type Publication, type StreamPosition, type Subscribed, type Unsubscribed } from "./messages.js";
import type { RandomSource } from "./rng.js";
import { US } from "./time.js";

/** Shortest wait for `subscribed` (ms), so a zero timeout cannot livelock. */
export const MIN_CONFIRM_TIMEOUT_MS = 100;

/** Where subscription outputs go, in order. */
export interface SubscriptionSink {
  /** Sent on the current transport (only called while the protocol is up). */
  _subSend(message: ClientMessage): void;
  _emit(event: Event): void;
}

interface Channel {
  s: "idle" | "pending" | "subscribed" | "retrying" | "failed";
  /** pending: the confirmation deadline; retrying: when to resubscribe. */
  t?: number | undefined;
  /** pending: the subscribe was sent with `since` = `position`. */
  resumed?: boolean;
  position?: StreamPosition | undefined;
  retry: Backoff;
  /** A subscription token, sent with every subscribe of the channel. */
  token?: string | undefined;
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

  constructor(confirmTimeoutMs: number, private readonly _resubscribe: BackoffPolicy, private readonly _out: SubscriptionSink) {
    this._confirmTimeout = Math.max(confirmTimeoutMs, MIN_CONFIRM_TIMEOUT_MS) * US;
  }

  private _sorted(): [string, Channel][] {
    return [...this._channels].sort((a, b) => compareNames(a[0], b[0]));
  }

  /** Send `subscribe` (from the channel's position if `resume`) and wait for the confirmation. */
  private _subscribeNow(now: number, channel: string, c: Channel, resume: boolean): void {
    const since = resume ? c.position : undefined;
    // Fields left undefined are not sent (JSON.stringify drops them).
    this._out._subSend({ type: "subscribe", channel, since: since && { ...since }, token: c.token });
    c.s = "pending";
    c.t = now + this._confirmTimeout;
    c.resumed = since !== undefined;
  }

  /** Every wanted channel (other than refused ones) is confirmed; true with none. */
  _allConfirmed(): boolean {
    for (const c of this._channels.values()) if (c.s !== "subscribed" && c.s !== "failed") return false;
    return true;
  }

  _position(channel: string): StreamPosition | undefined {
    return this._channels.get(channel)?.position;
  }

  /** Want `channel` (with a subscription token); subscribes at once if the protocol is up. False if already wanted. */
  _add(now: number, channel: string, token?: string): boolean {
    if (this._channels.has(channel)) return false;
    const c: Channel = { s: "idle", retry: new Backoff(this._resubscribe), token };
    this._channels.set(channel, c);
    if (this._online) this._subscribeNow(now, channel, c, false);
    return true;
  }

  /** Stop wanting `channel`; false if it was not wanted. */
  _remove(channel: string): boolean {
    const c = this._channels.get(channel);
    if (!c) return false;
    this._channels.delete(channel);
    if (this._online && (c.s === "pending" || c.s === "subscribed")) this._out._subSend({ type: "unsubscribe", channel });
    return true;
  }

  /** `failed` true: channels the server refused get another chance; false: the transport is gone, every other channel waits. */
  _idle(failed: boolean): void {
    for (const c of this._channels.values()) if ((c.s === "failed") === failed) c.s = "idle";
  }

  _handleProtocolUp(now: number): void {
    this._online = true;
    for (const [name, c] of this._sorted()) {
      if (c.s === "failed") continue;
      c.retry._reset();
      this._subscribeNow(now, name, c, true);
    }
  }

  _handleTransportDown(): void {
    this._online = false;
    this._idle(false);
  }

  _handleSubscribed(msg: Subscribed): void {
    const c = this._channels.get(msg.channel);
    if (c?.s !== "pending") return;
    // The server's word is checked against `since` (what was delivered): in
    // the same epoch the position never moves back (a lower offset would
    // deliver duplicates), and a recovery counts only if the server resumes
    // at or before `since` (a higher offset skipped publications).
    const since = c.resumed ? c.position : undefined;
    const same = since?.epoch === msg.epoch;
    const recovered = same && msg.recovered && msg.offset <= since!.offset;
    c.s = "subscribed";
    c.retry._reset();
    c.position = { epoch: msg.epoch, offset: same ? Math.max(since!.offset, msg.offset) : msg.offset };
    this._out._emit({ event: "subscribed", channel: msg.channel, recovered });
    if (since && !recovered) this._out._emit({ event: "recovery_failed", channel: msg.channel });
  }

  _handleUnsubscribed(now: number, msg: Unsubscribed, rng: RandomSource): void {
    const c = this._channels.get(msg.channel);
    if (!c || c.s === "failed" || c.s === "idle") return;
    const final = isFinalUnsubscribe(msg.code);
    if (final) c.s = "failed";
    else {
      c.s = "retrying";
      c.t = now + c.retry._nextDelay(now, rng);
    }
    this._out._emit({ event: final ? "subscription_failed" : "subscription_lost", channel: msg.channel, code: msg.code });
  }

  _handlePublication(now: number, p: Publication): void {
    const c = this._channels.get(p.channel);
    if (c?.s !== "subscribed") {
      this._strayPublications++;
      return;
    }
    const pos = c.position!;
    const next = pos.offset + 1;
    if (p.epoch === pos.epoch && p.offset < next) this._duplicatesDropped++;
    else if (p.epoch !== pos.epoch || p.offset > next) this._subscribeNow(now, p.channel, c, true);
    else {
      pos.offset = p.offset;
      this._out._emit({ event: "publication", channel: p.channel, epoch: p.epoch, offset: p.offset, data: p.data });
    }
  }

  _handleTimeout(now: number): void {
    if (this._online) for (const [name, c] of this._sorted()) if ((c.s === "pending" || c.s === "retrying") && c.t! <= now) this._subscribeNow(now, name, c, true);
  }

  _pollTimeout(): number | undefined {
    let min: number | undefined;
    if (this._online) for (const c of this._channels.values()) if ((c.s === "pending" || c.s === "retrying") && !(c.t! >= min!)) min = c.t;
    return min;
  }
}
