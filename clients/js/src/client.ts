/**
 * The browser driver: a thin shell of I/O around the sans-IO `Session`.
 *
 * - One WebSocket per transport id; every handler is bound to its id, and the
 *   core drops anything from an id that is not current, so a dead socket's
 *   late `onclose` can never touch the new connection (stale-socket rule by
 *   construction). An abandoned socket is closed and forgotten at once.
 * - One timer: `setTimeout` to `session.pollTimeout()`.
 * - `online`/`offline` window events are fed to the core.
 * - Time is `performance.now()`; randomness is one SplitMix64 seeded from
 *   `crypto.getRandomValues` (or `options.seed`).
 */
import type { BackoffPolicy } from "./core/backoff/policy.js";
import { defaultConfig } from "./core/config.js";
import type { DisconnectReason, Event, HaltReason, RetryPlan } from "./core/events.js";
import type { Json } from "./core/messages.js";
import type { ConnectionState } from "./core/phase.js";
import { readinessOf } from "./core/readiness.js";
import { Session, type Input, type Output } from "./core/session.js";
import { ConnectionClosedError, InvalidUrlError, NotReadyError, ServerError, TimeoutError, TooLargeError } from "./errors.js";
import { Subscription, type ChannelItem } from "./subscription.js";

export interface BelayOptions {
  token?: string;
  /**
   * Where tokens come from (PROTOCOL.md §2.8): asked before a dial when
   * there is no token, the server refused the last one, or it is near its
   * expiry, and on the open session at 75–90 % of the token's lifetime (the
   * token is then sent in-band, without reconnecting). A rejection is
   * retried with the backoff and never halts; reject with
   * `UnauthorizedError` when the user is signed out: the client halts
   * `auth_failed`. A token the provider just gave that the server refuses
   * halts too. Needs the `@belay/client/full` entry (the default entry
   * throws a TypeError for it).
   */
  tokenProvider?: () => Promise<string>;
  /**
   * Where new subscription tokens come from (PROTOCOL.md §5.8): when the
   * server says a channel's token expires (`sub_expiring`), called with the
   * channel at 75–90 % of what is left; its token is sent as `sub_refresh`
   * without leaving the channel. A rejection leaves the token to expire (the
   * server ends the subscription, which is subscribed again with the token
   * it has). Needs `@belay/client/full`.
   */
  subscriptionTokenProvider?: (channel: string) => Promise<string>;
  backoff?: BackoffPolicy;
  /** Automatic reconnects in a row before halting; default: never halts. */
  maxAttempts?: number | null;
  resetAfterMs?: number;
  connectTimeoutMs?: number;
  probeIntervalMs?: number;
  probeTimeoutMs?: number;
  requestTimeoutMs?: number;
  subscribeTimeoutMs?: number;
  resubscribeBackoff?: BackoffPolicy;
  onlineDelayMs?: number;
  unreachableRetry?: BackoffPolicy;
  /** Seed of the client's random source (reproducible runs); random by default. */
  seed?: number | bigint;
  /** Connect at construction (default true); otherwise call `start()`. */
  autoStart?: boolean;
  /** Injection points for tests. */
  WebSocket?: typeof WebSocket;
  now?: () => number;
  /** Where `online`/`offline` and `pageshow` events come from (default: `globalThis`). */
  network?: EventTarget | null;
  /** Where `visibilitychange` and `resume` come from (default: `document`, if any). */
  page?: EventTarget | null;
}

/** What a UI needs: three levels and one answer. */
export interface Status {
  state: ConnectionState;
  transport: boolean;
  protocol: boolean;
  service: boolean;
  ready: boolean;
}

export interface RequestOptions {
  /** Deadline in ms (default: `requestTimeoutMs`). */
  timeout?: number;
  /** Sent on the wire so a retry after Timeout/ConnectionClosed cannot execute twice. */
  idempotencyKey?: string;
  /** Rejects with the signal's reason; a late response is then ignored. */
  signal?: AbortSignal;
}

/**
 * Detail of the `disconnected` event, fired once for each lost session
 * (`established: true`) and once for each failed attempt (`false`), never
 * coalesced: a failed redial right after a loss does not hide the loss.
 */
export interface DisconnectInfo {
  reason: DisconnectReason;
  retry: RetryPlan;
  /** false while connecting: the session was never established. */
  established: boolean;
}


interface Pending {
  resolve(value: Json): void;
  reject(error: unknown): void;
}

/**
 * A Belay connection. Events (an `EventTarget`): `status` (detail: Status),
 * `connected` (detail: session id), `disconnected` (detail: DisconnectInfo),
 * `halted` (detail: HaltReason), `servererror` (detail: ErrorBody).
 */
export class BelayClient extends EventTarget {
  private readonly _session: Session;
  private readonly _sockets = new Map<number, WebSocket>();
  private readonly _pending = new Map<number, Pending>();
  private readonly _channels = new Map<string, Subscription>();
  private readonly _statusListeners = new Set<(s: Status) => void>();
  private readonly _WS: typeof WebSocket;
  private readonly _clock: () => number;
  private readonly _network: EventTarget | null;
  private readonly _page: EventTarget | null;
  private _timer: ReturnType<typeof setTimeout> | undefined;
  private _pumping?: boolean;
  private readonly _tokens: (() => Promise<string>) | undefined;
  private readonly _subTokens: ((channel: string) => Promise<string>) | undefined;
  /** State and readiness level of the last status reported. */
  private _lastStatus: string;

  /** Throws InvalidUrlError for a URL no WebSocket can dial (nothing is started). */
  constructor(readonly url: string, options: BelayOptions = {}) {
    super();
    let usable;
    try {
      usable = /^(ws|http)s?:$/.test(new URL(url, globalThis.location?.href).protocol);
    } catch {}
    if (!usable) throw new InvalidUrlError(url);
    // The options that are session configuration (every key of the defaults).
    const config = defaultConfig();
    for (const k in config) if ((options as Record<string, unknown>)[k] !== undefined) (config as unknown as Record<string, unknown>)[k] = (options as Record<string, unknown>)[k];
    this._WS = options.WebSocket ?? globalThis.WebSocket;
    if (globalThis.BELAY_FULL !== false) {
      this._tokens = options.tokenProvider;
      this._subTokens = options.subscriptionTokenProvider;
      config.tokenProvider = !!this._tokens;
    } else if (options.tokenProvider || options.subscriptionTokenProvider) throw new TypeError("token providers need @belay/client/full");
    this._clock = options.now ?? (() => performance.now());
    this._session = new Session(config, this._clock(), options.seed ?? globalThis.crypto.getRandomValues(new BigUint64Array(1))[0]!);
    this._lastStatus = this._statusKey();
    this._network = options.network === undefined ? (typeof addEventListener === "function" ? globalThis : null) : options.network;
    this._page = options.page === undefined ? (typeof document === "object" ? document : null) : options.page;
    this._listen("addEventListener");
    if (options.autoStart !== false) this.start();
  }

  /** The three readiness levels, the aggregate, and the connection state. */
  get status(): Status {
    const s = this._session;
    return { state: s.state(), ...readinessOf(s._level), ready: s.isReady() };
  }

  /** Call `listener` on every status change (and once now); returns an unsubscribe function. */
  onStatus(listener: (status: Status) => void): () => void {
    this._statusListeners.add(listener);
    listener(this.status);
    return () => this._statusListeners.delete(listener);
  }

  /** Resolves once the connection is ready (all three levels up). */
  whenReady(signal?: AbortSignal): Promise<void> {
    if (this._session.isReady()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const off = this.onStatus((s) => {
        if (s.ready) {
          off();
          resolve();
        }
      });
      signal?.addEventListener("abort", () => {
        off();
        reject(signal.reason);
      }, { once: true });
    });
  }

  /** Connect (after a halt: with a fresh backoff). */
  start(): void {
    this._session.start(this._clock());
    this._pump();
  }

  /** Connect now, cancelling a pending backoff wait. Never a second connection. */
  reconnectNow(): void {
    this._session.reconnectNow(this._clock());
    this._pump();
  }

  /**
   * Probe the connection now instead of waiting out the heartbeat: one ping,
   * and at most 2 s (or the probe timeout) for any frame before it is dropped
   * and re-established. Called by itself when the page becomes visible, is
   * restored from the back/forward cache, resumes from a freeze, or the
   * device comes back online. Does nothing while connecting or waiting.
   */
  checkLiveness(): void {
    this._session.checkLiveness(this._clock());
    this._pump();
  }

  /** Close for good: settles every request, closes the socket, leaves no timer or listener. */
  close(): void {
    this._session.stop(this._clock());
    this._pump();
    clearTimeout(this._timer);
    this._timer = undefined;
    this._listen("removeEventListener");
    for (const sub of this._channels.values()) sub._end();
    this._channels.clear();
  }

  /** Replace the token sent on the next connect (then `start()` after an auth halt). */
  setToken(token: string | null): void {
    this._session.setToken(token);
  }

  /**
   * Call `method`. Rejects with NotReadyError or TooLargeError (never sent),
   * TimeoutError or ConnectionClosedError (fate unknown), or ServerError.
   * NotReadyError comes at once while the connection is not up; to wait for
   * it instead, `requestWhenReady` from `@belay/client/wait`.
   */
  request(method: string, params: Json = null, options: RequestOptions = {}): Promise<Json> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = this._session.request(this._clock(), { method, params, timeoutMs: options.timeout, idempotencyKey: options.idempotencyKey });
    if (typeof id !== "number") return Promise.reject(typeof id === "string" ? new NotReadyError(id === "stopped") : new TooLargeError(id.len, id.max));
    const promise = new Promise<Json>((resolve, reject) => {
      this._pending.set(id, { resolve, reject });
      signal?.addEventListener("abort", () => {
        if (this._pending.delete(id)) reject(signal.reason);
      }, { once: true });
    });
    this._pump();
    return promise;
  }

  /**
   * Want `channel`: confirmed, resubscribed and resumed across reconnects.
   * `token`: a subscription token, for a channel whose server asks for one
   * (sent with every subscribe of it, the resubscribes too).
   */
  subscribe(channel: string, token?: string): Subscription {
    const existing = this._channels.get(channel);
    if (existing) return existing;
    const sub = new Subscription(channel, (s) => {
      if (this._channels.get(channel) !== s) return;
      this._channels.delete(channel);
      this._session.unsubscribe(this._clock(), channel);
      this._pump();
    });
    this._channels.set(channel, sub);
    if (this._session.subscribe(this._clock(), channel, token) === "stopped") sub._end();
    this._pump();
    return sub;
  }

  // ----- the driver loop -----

  private _listen(method: "addEventListener" | "removeEventListener"): void {
    for (const t of ["online", "offline", "pageshow"]) this._network?.[method](t, this._onWake);
    for (const t of ["visibilitychange", "resume"]) this._page?.[method](t, this._onWake);
  }

  private readonly _onWake = (e: globalThis.Event): void => {
    const t = e.type;
    if (t === "online" || t === "offline") this._input({ kind: "network", online: t === "online" });
    if (t === "offline" || (t === "pageshow" && !(e as PageTransitionEvent).persisted)) return;
    if (t === "visibilitychange" && (this._page as Document).visibilityState === "hidden") return;
    this.checkLiveness();
  };

  private _input(input: Input): void {
    this._session.handleInput(this._clock(), input);
    this._pump();
  }

  /** Drain every output, then arm the one timer. Re-entrant calls fold into the outer one. */
  private _pump(): void {
    if (this._pumping) return;
    this._pumping = true;
    try {
      for (let out = this._session.pollOutput(); out; out = this._session.pollOutput()) this._perform(out);
    } finally {
      this._pumping = false;
    }
    this._emitStatus(); // state changes (e.g. waiting → connecting) come without a readiness event
    this._arm();
  }

  private _arm(): void {
    clearTimeout(this._timer);
    this._timer = undefined;
    const due = this._session.pollTimeout();
    if (due === undefined) return;
    this._timer = setTimeout(() => {
      this._timer = undefined;
      // Timers may fire a little early on some clocks: only run when due.
      const now = this._clock();
      if (now >= due) this._session.handleTimeout(now);
      this._pump();
    }, Math.max(0, Math.ceil(due - this._clock())));
  }

  private _perform(out: Output): void {
    switch (out.output) {
      case "open_transport":
        return this._dial(out.id);
      case "transmit":
        this._sockets.get(out.id)?.send(JSON.stringify(out.message));
        return;
      case "close_transport": {
        const ws = this._sockets.get(out.id);
        this._sockets.delete(out.id);
        if (!ws) return;
        ws.onopen = ws.onmessage = ws.onclose = null;
        ws.onerror = ignore; // ws (Node) may still report an error, e.g. of a handshake this close aborts
        try {
          ws.close(out.code, out.reason); // browsers only send 1000 and 3000–4999
        } catch {
          ws.close();
        }
        return;
      }
      case "event":
        return this._deliver(out);
    }
  }

  private _dial(id: number): void {
    let ws: WebSocket;
    try {
      ws = new this._WS(this.url);
    } catch (e) {
      // A malformed URL: a configuration error, never retried.
      return this._input({ kind: "failed", id, failure: { kind: "invalid_config", detail: String(e) } });
    }
    let opened = false;
    this._sockets.set(id, ws);
    ws.onopen = () => {
      opened = true;
      this._input({ kind: "opened", id });
    };
    const failed = (detail: string): void => {
      this._sockets.delete(id);
      // Browsers hide why an upgrade failed; with no network it never left this device.
      const offline = globalThis.navigator?.onLine === false;
      this._input({ kind: "failed", id, failure: { kind: offline ? "unreachable" : "network", detail } });
    };
    // Before `open`, the first `error` or `close` fails the dial (Node 20's own WebSocket fires no
    // `close` after a failed dial's `error`); the core drops the other as stale. After `open`,
    // `close` alone decides. The handler must be set: ws (an EventEmitter) throws an unheard `error`.
    ws.onerror = () => opened || failed("error before open");
    // A text frame's text, or the object a codec such as `@belay/client/binary` made of a frame.
    ws.onmessage = (e: MessageEvent) => this._input({ kind: "frame", id, text: e.data });
    // The SSE fallback (`@belay/client/fallback`) asks to move back to WebSocket, at the
    // session's next quiet moment (PROTOCOL.md §1.7); it asks only its last dial, this one.
    if (globalThis.BELAY_FULL !== false)
      ws.addEventListener?.("belay:replace", (e) => {
        const now = this._clock();
        this._session.replaceTransportWhenQuiet(now, now + (e as globalThis.Event & { withinMs: number }).withinMs);
        this._pump();
      });
    ws.onclose = (e: CloseEvent) => {
      if (!opened) return failed(`closed before open (${e.code})`);
      this._sockets.delete(id);
      // 1005/1006: no close frame or no status in it.
      const code = e.code === 1005 || e.code === 1006 ? null : e.code;
      this._input({ kind: "closed", id, code, reason: e.reason });
    };
  }

  private _deliver(e: Extract<Output, { output: "event" }>): void {
    // The status first: listeners see the state an event leaves behind.
    this._emitStatus();
    // Token asks: only the full build emits them.
    if (globalThis.BELAY_FULL !== false && (e.event === "token_wanted" || e.event === "subscription_token_wanted")) {
      const answer = (f: () => void) => {
        f();
        this._pump();
      };
      const now = () => this._clock();
      // An answer to an ask the session no longer waits for changes nothing.
      if (e.event === "token_wanted")
        this._tokens?.().then(
          (token) => answer(() => this._session.refreshToken(now(), token)),
          (err) => answer(() => this._session.tokenFailed(now(), err?.name === "UnauthorizedError" ? "unauthorized" : "unavailable")),
        );
      // A failure leaves the subscription token to expire.
      else this._subTokens?.(e.channel).then((token) => answer(() => this._session.refreshSubscriptionToken(now(), e.channel, token)), () => {});
      return;
    }
    switch (e.event) {
      case "readiness_changed":
      case "stopped":
        return;
      case "connected":
        return this._fire("connected", e.session);
      case "disconnected":
      case "connect_failed":
        return this._fire("disconnected", { reason: e.reason, retry: e.retry, established: e.event === "disconnected" } satisfies DisconnectInfo);
      case "halted":
        return this._fire("halted", e.reason satisfies HaltReason);
      case "response": {
        const p = this._pending.get(e.id);
        if (!p) return;
        this._pending.delete(e.id);
        const o = e.outcome;
        if (o.kind === "ok") return p.resolve(o.result);
        return p.reject(o.kind === "server_error" ? new ServerError(o.error) : o.kind === "timeout" ? new TimeoutError() : new ConnectionClosedError());
      }
      case "server_error": {
        const { event: _, output: __, ...body } = e;
        return this._fire("servererror", body);
      }
      default: {
        // A channel's item: the event's own fields, the channel's position for a resync
        // (the token asks were taken above).
        const { event, channel, output: _, ...fields } = e as Exclude<typeof e, { event: "token_wanted" | "subscription_token_wanted" }>;
        const resync = event === "recovery_failed";
        // publication → publication, subscribed → subscribed, subscription_lost → lost, subscription_failed → failed
        const type = resync ? "resync" : event.split("_").pop();
        this._channels.get(channel)?._push({ type, ...fields, ...(resync && this._session._subscriptions._position(channel)) } as ChannelItem);
      }
    }
  }

  private _statusKey(): string {
    return this._session.state() + this._session._level;
  }

  private _emitStatus(): void {
    const key = this._statusKey();
    if (key === this._lastStatus) return;
    this._lastStatus = key;
    const s = this.status;
    for (const listener of this._statusListeners) safely(() => listener(s));
    this._fire("status", s);
  }

  private _fire(type: string, detail: unknown): void {
    safely(() => this.dispatchEvent(new CustomEvent(type, { detail })));
  }
}

const ignore = (): void => {};

/** Application callbacks must not break the driver loop; report their errors asynchronously. */
function safely(f: () => void): void {
  try {
    f();
  } catch (e) {
    setTimeout(() => {
      throw e;
    });
  }
}
