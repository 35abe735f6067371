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
import { makeConfig, type Config } from "./core/config.js";
import type { DisconnectReason, Event, HaltReason, RetryPlan } from "./core/events.js";
import type { Json } from "./core/messages.js";
import type { ConnectionState } from "./core/phase.js";
import { Session, type Input, type Output } from "./core/session.js";
import { ConnectionClosedError, NotReadyError, ServerError, TimeoutError } from "./errors.js";
import { Subscription } from "./subscription.js";

export interface BelayOptions {
  token?: string;
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

/** Detail of the `disconnected` event. */
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

const CONFIG_KEYS = [
  "backoff", "maxAttempts", "resetAfterMs", "connectTimeoutMs", "probeIntervalMs", "probeTimeoutMs",
  "requestTimeoutMs", "subscribeTimeoutMs", "resubscribeBackoff", "onlineDelayMs", "unreachableRetry",
] as const;

function randomSeed(): bigint {
  const words = new Uint32Array(2);
  globalThis.crypto.getRandomValues(words);
  return (BigInt(words[0]!) << 32n) | BigInt(words[1]!);
}

/**
 * A Belay connection. Events (an `EventTarget`): `status` (detail: Status),
 * `connected` (detail: session id), `disconnected` (detail: DisconnectInfo),
 * `halted` (detail: HaltReason), `servererror` (detail: ErrorBody).
 */
export class BelayClient extends EventTarget {
  private readonly session: Session;
  private readonly sockets = new Map<number, WebSocket>();
  private readonly pending = new Map<number, Pending>();
  private readonly channels = new Map<string, Subscription>();
  private readonly statusListeners = new Set<(s: Status) => void>();
  private readonly WS: typeof WebSocket;
  private readonly clock: () => number;
  private readonly network: EventTarget | null;
  private readonly page: EventTarget | null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private pumping = false;
  private lastStatus: Status;

  constructor(readonly url: string, options: BelayOptions = {}) {
    super();
    const overrides: Partial<Config> = {};
    for (const k of CONFIG_KEYS) if (options[k] !== undefined) (overrides as Record<string, unknown>)[k] = options[k];
    if (options.token !== undefined) overrides.token = options.token;
    this.WS = options.WebSocket ?? globalThis.WebSocket;
    this.clock = options.now ?? (() => performance.now());
    this.session = new Session(makeConfig(overrides), this.clock(), options.seed ?? randomSeed());
    this.lastStatus = this.status;
    this.network = options.network === undefined ? (typeof addEventListener === "function" ? globalThis : null) : options.network;
    this.page = options.page === undefined ? (typeof document === "object" ? document : null) : options.page;
    this.listen("addEventListener");
    if (options.autoStart !== false) this.start();
  }

  /** The three readiness levels, the aggregate, and the connection state. */
  get status(): Status {
    const r = this.session.readiness();
    return { state: this.session.state(), ...r, ready: this.session.isReady() };
  }

  /** Call `listener` on every status change (and once now); returns an unsubscribe function. */
  onStatus(listener: (status: Status) => void): () => void {
    this.statusListeners.add(listener);
    listener(this.status);
    return () => this.statusListeners.delete(listener);
  }

  /** Resolves once the connection is ready (all three levels up). */
  whenReady(signal?: AbortSignal): Promise<void> {
    if (this.session.isReady()) return Promise.resolve();
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
    this.session.start(this.clock());
    this.pump();
  }

  /** Connect now, cancelling a pending backoff wait. Never a second connection. */
  reconnectNow(): void {
    this.session.reconnectNow(this.clock());
    this.pump();
  }

  /**
   * Probe the connection now instead of waiting out the heartbeat: one ping,
   * and at most 2 s (or the probe timeout) for any frame before it is dropped
   * and re-established. Called by itself when the page becomes visible, is
   * restored from the back/forward cache, resumes from a freeze, or the
   * device comes back online. Does nothing while connecting or waiting.
   */
  checkLiveness(): void {
    this.session.checkLiveness(this.clock());
    this.pump();
  }

  /** Close for good: settles every request, closes the socket, leaves no timer or listener. */
  close(): void {
    this.session.stop(this.clock());
    this.pump();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.listen("removeEventListener");
    for (const sub of this.channels.values()) sub.end();
    this.channels.clear();
  }

  /** Replace the token sent on the next connect (then `start()` after an auth halt). */
  setToken(token: string | null): void {
    this.session.setToken(token);
  }

  /**
   * Call `method`. Rejects with NotReadyError (never sent), TimeoutError or
   * ConnectionClosedError (fate unknown), or ServerError.
   */
  request(method: string, params: Json = null, options: RequestOptions = {}): Promise<Json> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = this.session.request(this.clock(), {
      method,
      params,
      ...(options.timeout !== undefined ? { timeoutMs: options.timeout } : {}),
      ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
    });
    if (typeof id === "string") return Promise.reject(new NotReadyError(id === "stopped"));
    const promise = new Promise<Json>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      signal?.addEventListener("abort", () => {
        if (this.pending.delete(id)) reject(signal.reason);
      }, { once: true });
    });
    this.pump();
    return promise;
  }

  /** Want `channel`: confirmed, resubscribed and resumed across reconnects. */
  subscribe(channel: string): Subscription {
    const existing = this.channels.get(channel);
    if (existing) return existing;
    const sub = new Subscription(channel, (s) => {
      if (this.channels.get(channel) !== s) return;
      this.channels.delete(channel);
      this.session.unsubscribe(this.clock(), channel);
      this.pump();
    });
    this.channels.set(channel, sub);
    if (this.session.subscribe(this.clock(), channel) === "stopped") sub.end();
    this.pump();
    return sub;
  }

  // ----- the driver loop -----

  private listen(method: "addEventListener" | "removeEventListener"): void {
    for (const t of ["online", "offline", "pageshow"]) this.network?.[method](t, this.onWake);
    for (const t of ["visibilitychange", "resume"]) this.page?.[method](t, this.onWake);
  }

  private readonly onWake = (e: globalThis.Event): void => {
    const t = e.type;
    if (t === "online" || t === "offline") this.input({ kind: "network", online: t === "online" });
    if (t === "offline" || (t === "pageshow" && !(e as PageTransitionEvent).persisted)) return;
    if (t === "visibilitychange" && (this.page as Document).visibilityState === "hidden") return;
    this.checkLiveness();
  };

  private input(input: Input): void {
    this.session.handleInput(this.clock(), input);
    this.pump();
  }

  /** Drain every output, then arm the one timer. Re-entrant calls fold into the outer one. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (let out = this.session.pollOutput(); out; out = this.session.pollOutput()) this.perform(out);
    } finally {
      this.pumping = false;
    }
    this.emitStatus(); // state changes (e.g. waiting → connecting) come without a readiness event
    this.arm();
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const due = this.session.pollTimeout();
    if (due === undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // Timers may fire a little early on some clocks: only run when due.
      const now = this.clock();
      if (now >= due) this.session.handleTimeout(now);
      this.pump();
    }, Math.max(0, Math.ceil(due - this.clock())));
  }

  private perform(out: Output): void {
    switch (out.output) {
      case "open_transport":
        return this.dial(out.id);
      case "transmit":
        this.sockets.get(out.id)?.send(JSON.stringify(out.message));
        return;
      case "close_transport": {
        const ws = this.sockets.get(out.id);
        this.sockets.delete(out.id);
        if (!ws) return;
        ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
        try {
          ws.close(out.code, out.reason); // browsers only send 1000 and 3000–4999
        } catch {
          ws.close();
        }
        return;
      }
      case "event":
        return this.deliver(out);
    }
  }

  private dial(id: number): void {
    let ws: WebSocket;
    try {
      ws = new this.WS(this.url);
    } catch (e) {
      // A malformed URL: a configuration error, never retried.
      return this.input({ kind: "failed", id, failure: { kind: "invalid_config", detail: String(e) } });
    }
    let opened = false;
    this.sockets.set(id, ws);
    ws.onopen = () => {
      opened = true;
      this.input({ kind: "opened", id });
    };
    ws.onmessage = (e: MessageEvent) => this.input({ kind: "frame", id, text: typeof e.data === "string" ? e.data : "" });
    ws.onerror = null; // `error` only logs; `close` alone decides.
    ws.onclose = (e: CloseEvent) => {
      this.sockets.delete(id);
      if (!opened) {
        // Browsers hide why an upgrade failed; with no network it never left this device.
        const offline = typeof navigator !== "undefined" && navigator.onLine === false;
        return this.input({ kind: "failed", id, failure: { kind: offline ? "unreachable" : "network", detail: `closed before open (${e.code})` } });
      }
      // 1005/1006: no close frame or no status in it.
      const code = e.code === 1005 || e.code === 1006 ? null : e.code;
      this.input({ kind: "closed", id, code, reason: e.reason });
    };
  }

  private deliver(e: Event): void {
    switch (e.event) {
      case "readiness_changed":
        return this.emitStatus();
      case "connected":
        this.emitStatus();
        return this.fire("connected", e.session);
      case "disconnected":
      case "connect_failed":
        this.emitStatus();
        return this.fire("disconnected", { reason: e.reason, retry: e.retry, established: e.event === "disconnected" } satisfies DisconnectInfo);
      case "halted":
        this.emitStatus();
        return this.fire("halted", e.reason satisfies HaltReason);
      case "stopped":
        return this.emitStatus();
      case "response": {
        const p = this.pending.get(e.id);
        if (!p) return;
        this.pending.delete(e.id);
        const o = e.outcome;
        if (o.kind === "ok") return p.resolve(o.result);
        return p.reject(o.kind === "server_error" ? new ServerError(o.error) : o.kind === "timeout" ? new TimeoutError() : new ConnectionClosedError());
      }
      case "publication":
        return this.channels.get(e.channel)?.push({ type: "publication", epoch: e.epoch, offset: e.offset, data: e.data });
      case "subscribed":
        return this.channels.get(e.channel)?.push({ type: "subscribed", recovered: e.recovered });
      case "recovery_failed": {
        const pos = this.session.subscriptions.position(e.channel);
        return this.channels.get(e.channel)?.push({ type: "resync", ...(pos ? { epoch: pos.epoch, offset: pos.offset } : {}) });
      }
      case "subscription_lost":
        return this.channels.get(e.channel)?.push({ type: "lost", code: e.code });
      case "subscription_failed":
        return this.channels.get(e.channel)?.push({ type: "failed", code: e.code });
      case "server_error": {
        const { event: _, ...body } = e;
        return this.fire("servererror", body);
      }
    }
  }

  private emitStatus(): void {
    const s = this.status;
    const l = this.lastStatus;
    if (s.state === l.state && s.transport === l.transport && s.protocol === l.protocol && s.service === l.service) return;
    this.lastStatus = s;
    for (const listener of this.statusListeners) safely(() => listener(s));
    this.fire("status", s);
  }

  private fire(type: string, detail: unknown): void {
    safely(() => this.dispatchEvent(new CustomEvent(type, { detail })));
  }
}

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
