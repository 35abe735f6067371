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
import { isFinalUnsubscribe, type ClientMessage, type Publication, type StreamPosition, type SubExpiring, type Subscribed, type Unsubscribed } from "./messages.js";
import type { RandomSource } from "./rng.js";
import { US, wholeMs } from "./time.js";

/** Shortest wait for `subscribed` (ms), so a zero timeout cannot livelock. */
export const MIN_CONFIRM_TIMEOUT_MS = 100;

/** Where subscription outputs go, in order. */
export interface SubscriptionSink {
  /** Sent on the current transport (only called while the protocol is up). */
  _subSend(message: ClientMessage): void;
  _emit(event: Event): void;
}

/** A channel's state; the two with a deadline (`t`) first. */
const enum St {
  Pending,
  Retrying,
  Idle,
  Failed,
  Subscribed,
}

interface Channel {
  s: St;
  /** pending: the confirmation deadline; retrying: when to resubscribe. */
  t?: number | undefined;
  /** pending: the subscribe was sent with `since` = `_pos`. */
  _resumed?: boolean;
  _pos?: StreamPosition | undefined;
  _retry: Backoff;
  /** A subscription token, sent with every subscribe of the channel. */
  token?: string | undefined;
  /** After `sub_expiring` on this transport: when to ask for a new token, and when it expires (µs). */
  _ask?: [number, number] | undefined;
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
  return a.length - b.length; // one is a prefix of the other: the shorter first
}

export class Subscriptions {
  private readonly _channels = new Map<string, Channel>();
  private readonly _confirmTimeout: number;
  /** The protocol is up. Only then is a channel pending, retrying or subscribed (going down idles them). */
  private _online?: boolean;
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
    const since = resume ? c._pos : undefined;
    // Fields left undefined are not sent (JSON.stringify drops them).
    this._out._subSend({ type: "subscribe", channel, since: since && { ...since }, token: c.token });
    c.s = St.Pending;
    c.t = now + this._confirmTimeout;
    c._resumed = since !== undefined;
  }

  /** Every wanted channel (other than refused ones) is confirmed; true with none. */
  _allConfirmed(): boolean {
    for (const c of this._channels.values()) if (c.s !== St.Subscribed && c.s !== St.Failed) return false;
    return true;
  }

  _position(channel: string): StreamPosition | undefined {
    return this._channels.get(channel)?._pos;
  }

  /** Want `channel` (with a subscription token); subscribes at once if the protocol is up. False if already wanted. */
  _add(now: number, channel: string, token?: string): boolean {
    if (this._channels.has(channel)) return false;
    const c: Channel = { s: St.Idle, _retry: new Backoff(this._resubscribe), token };
    this._channels.set(channel, c);
    if (this._online) this._subscribeNow(now, channel, c, false);
    return true;
  }

  /** Stop wanting `channel`; false if it was not wanted. */
  _remove(channel: string): boolean {
    const c = this._channels.get(channel);
    if (!c) return false;
    this._channels.delete(channel);
    if (this._online && (c.s === St.Pending || c.s === St.Subscribed)) this._out._subSend({ type: "unsubscribe", channel });
    return true;
  }

  /** `failed` true: channels the server refused get another chance; false: the transport is gone, every other channel waits. */
  _idle(failed: boolean): void {
    for (const c of this._channels.values()) {
      if (globalThis.BELAY_FULL !== false) c._ask = undefined;
      if ((c.s === St.Failed) === failed) c.s = St.Idle;
    }
  }

  /**
   * The server said a confirmed channel's subscription token expires
   * `expires_in_ms` from now (PROTOCOL.md §5.8): ask at 75–90 % of that
   * (`token_refresh.rs`).
   */
  _handleSubExpiring(now: number, msg: SubExpiring, rng: RandomSource): void {
    if (globalThis.BELAY_FULL !== false) {
      const c = this._channels.get(msg.channel);
      if (c?.s !== St.Subscribed) return;
      const ms = msg.expires_in_ms;
      c._ask = [now + Math.floor(ms * (0.75 + 0.15 * rng.nextUnit())) * US, now + ms * US];
    }
  }

  /** Use `token` for `channel` from now on: at once as `sub_refresh` if confirmed, and in every later subscribe. */
  _refreshToken(channel: string, token: string): boolean {
    if (globalThis.BELAY_FULL === false) return false;
    const c = this._channels.get(channel);
    if (!c) return false;
    c.token = token;
    c._ask = undefined;
    if (this._online && c.s === St.Subscribed) this._out._subSend({ type: "sub_refresh", channel, token });
    return true;
  }

  _handleProtocolUp(now: number): void {
    this._online = true;
    for (const [name, c] of this._sorted()) {
      if (c.s === St.Failed) continue;
      c._retry._reset();
      this._subscribeNow(now, name, c, true);
    }
  }

  _handleTransportDown(): void {
    this._online = false;
    this._idle(false);
  }

  _handleSubscribed(msg: Subscribed): void {
    const c = this._channels.get(msg.channel);
    if (c?.s !== St.Pending) return;
    // The server's word is checked against `since` (what was delivered): in
    // the same epoch the position never moves back (a lower offset would
    // deliver duplicates), and a recovery counts only if the server resumes
    // at or before `since` (a higher offset skipped publications).
    const since = c._resumed ? c._pos : undefined;
    const same = since?.epoch === msg.epoch;
    const recovered = same && msg.recovered && msg.offset <= since!.offset;
    c.s = St.Subscribed;
    c._retry._reset();
    c._pos = { epoch: msg.epoch, offset: same ? Math.max(since!.offset, msg.offset) : msg.offset };
    this._out._emit({ event: "subscribed", channel: msg.channel, recovered });
    if (since && !recovered) this._out._emit({ event: "recovery_failed", channel: msg.channel });
  }

  _handleUnsubscribed(now: number, msg: Unsubscribed, rng: RandomSource): void {
    const c = this._channels.get(msg.channel);
    if (!c || c.s === St.Failed || c.s === St.Idle) return;
    const final = isFinalUnsubscribe(msg.code);
    if (final) c.s = St.Failed;
    else {
      c.s = St.Retrying;
      c.t = now + c._retry._nextDelay(now, rng);
    }
    this._out._emit({ event: final ? "subscription_failed" : "subscription_lost", channel: msg.channel, code: msg.code });
  }

  _handlePublication(now: number, p: Publication): void {
    const c = this._channels.get(p.channel);
    if (c?.s !== St.Subscribed) {
      this._strayPublications++;
      return;
    }
    const pos = c._pos!;
    const next = pos.offset + 1;
    if (p.epoch === pos.epoch && p.offset < next) this._duplicatesDropped++;
    else if (p.epoch !== pos.epoch || p.offset > next) this._subscribeNow(now, p.channel, c, true);
    else {
      pos.offset = p.offset;
      this._out._emit({ event: "publication", channel: p.channel, epoch: p.epoch, offset: p.offset, data: p.data });
    }
  }

  _handleTimeout(now: number): void {
    for (const [name, c] of this._sorted()) if (c.s < St.Idle && c.t! <= now) this._subscribeNow(now, name, c, true);
    if (globalThis.BELAY_FULL !== false)
      for (const [channel, c] of this._sorted()) {
        const ask = c.s === St.Subscribed ? c._ask : undefined;
        if (!(ask?.[0]! <= now)) continue;
        c._ask = undefined;
        this._out._emit({ event: "subscription_token_wanted", channel, expires_in_ms: wholeMs(Math.max(0, ask![1] - now)) });
      }
  }

  _pollTimeout(): number | undefined {
    let min: number | undefined;
    for (const c of this._channels.values()) {
      const t = c.s < St.Idle ? c.t : globalThis.BELAY_FULL !== false && c.s === St.Subscribed ? c._ask?.[0] : undefined;
      if (!(t! >= min!)) min = t ?? min;
    }
    return min;
  }
}
