/**
 * The session (`client/session/`): one sans-IO facade over the small machines.
 *
 *   driver ── handleInput(now, input) / handleTimeout(now) / commands ──▶ Session
 *   driver ◀── pollOutput(): Output        pollTimeout(): ms | undefined ──
 *
 * Polling contract: after every call, drain `pollOutput()` until it returns
 * undefined, then sleep until `pollTimeout()` and call `handleTimeout`.
 * `handleTimeout` is idempotent; an early call does nothing. Times passed in
 * are milliseconds on the driver's monotonic clock (fractions allowed); the
 * session clamps them so time never goes backwards.
 *
 * The stale-event rule lives in one place, `handleInput`: a fact from a
 * transport that is not the current one is counted and dropped.
 *
 * The phase (`phase.rs`) is three fields: `_state`; `_id`, the transport,
 * kept only while connecting, handshaking or open (at most one exists, by
 * construction); `_at`, the state's deadline (connecting/handshaking: the
 * connect timeout; waiting: the end of the wait; open: a pending liveness
 * check). An open connection's heartbeat is `_hb`. Rust's `Authorizing`
 * (waiting for the token provider before a dial) is `connecting` with
 * `_authorizing` set and no `_id`, the provider's deadline in `_at`.
 */
import { Backoff } from "./backoff/state.js";
import { PacingSlots, retryWindow } from "./backoff/pacing.js";
import { CloseCode, closeHalt, closeInfo } from "./close.js";
import { decodeServer, isDecodeError, tooLarge, type DecodeError } from "./codec.js";
import type { Config } from "./config.js";
import type { DisconnectReason, Event, HaltReason, RetryPlan } from "./events.js";
import { Heartbeat } from "./heartbeat.js";
import { PROTOCOL_VERSION, type ClientMessage, type ReconnectAdvice, type ServerMessage, type Welcome } from "./messages.js";
import type { ConnectionState } from "./phase.js";
import { readinessOf, type Readiness } from "./readiness.js";
import { RequestRegistry } from "./registry.js";
import { SplitMix64 } from "./rng.js";
import { Subscriptions, type SubscriptionSink } from "./subscriptions.js";
import { fromMs, US, wholeMs } from "./time.js";
import type { TransportId } from "./transport.js";
import type { Call, Input, Output, RequestError, SessionStats, SubscribeError, TokenError } from "./io.js";

/**
 * `globalThis.BELAY_FULL !== false` guards what only `@belay/client/full`
 * carries: the token provider's lifecycle (PROTOCOL.md §2.8: asking before a
 * dial, in-band refresh, provider failures retried, subscription tokens
 * refreshed) and the SSE fallback's switch back at the session's quiet
 * moment (§1.7). The sources have it; the default entry's build
 * (scripts/bundle.mjs) defines it `false`, and the minifier drops every
 * branch it guards, so a client with a fixed token on WebSocket pays nothing
 * for them. Written out at each use: only a literal test is folded.
 */
declare global {
  // eslint-disable-next-line no-var
  var BELAY_FULL: false | undefined;
}

/** Shortest server ping interval honoured (ms); 0 means "the server does not ping". */
const MIN_SERVER_PING_MS = 1000;
/** Longest server ping interval honoured (ms): no advertisement switches detection off. */
const MAX_SERVER_PING_MS = 120_000;
/** Longest wait of a liveness check (ms); a shorter probe timeout wins. */
export const LIVENESS_CHECK_TIMEOUT_MS = 2000;
/**
 * What a `$call` without its own timeout adds to `requestTimeoutMs`: the
 * relay's default wake bound (heartbeat interval 15 s + connect allowance
 * 5 s, HOSTS.md), as Rust's `Client::call_host` does. A relay with other
 * timing: pass `timeout`.
 */
export const HOST_WAKE_BOUND_MS = 20_000;

export type { Call, Input, Output, RequestError, SessionStats, SubscribeError, TokenError, TooLarge } from "./io.js";

/** The smallest defined value, if any. */
const earliest = (ts: (number | undefined)[]): number | undefined => {
  let min: number | undefined;
  for (const t of ts) if (!(t! >= min!)) min = t ?? min;
  return min;
};

export class Session implements SubscriptionSink {
  private _now: number;
  private readonly _rng: SplitMix64;
  private _state: ConnectionState = "idle";
  private _id: TransportId | undefined;
  private _at: number | undefined;
  private _hb: Heartbeat | undefined;
  private readonly _backoff: Backoff;
  private readonly _localBackoff: Backoff;
  private _deployBackoff?: boolean;
  private _advice: ReconnectAdvice | undefined;
  /** Advised to leave the open transport: nothing new is sent on it; closed once idle. */
  _leaving?: boolean;
  /** A move to a new transport at the next quiet moment, and the bound on the wait for one (µs; `replaceTransportWhenQuiet`). */
  private _switchBy: number | undefined;
  /** The token lifecycle (PROTOCOL.md §2.8; `credentials.rs`), in µs: when to ask on the open session, when the token expires, from when a dial asks first. */
  private _askAt: number | undefined;
  private _expiresAt: number | undefined;
  /** 0 once the server refused the token: a dial with a provider asks first. */
  private _renewAt: number | undefined;
  /** The token came from the provider and the server has not accepted it yet: a refusal halts. */
  private _fresh?: boolean;
  /** The refusal just handled: ask at once. */
  private _askNow?: boolean;
  /** Connecting without a transport: waiting for the provider's token. */
  private _authorizing?: boolean;
  private readonly _tokenRetries: Backoff | undefined;
  private _notBefore: number | undefined;
  private _online = true;
  private _nextTransport = 0;
  /** Readiness levels up (0–3, 3 = ready). */
  _level = 0;
  private _readySince: number | undefined;
  private readonly _registry = new RequestRegistry((id, outcome) => this._emit({ event: "response", id, outcome }));
  readonly _subscriptions: Subscriptions;
  private _sessionId: string | undefined;
  private readonly _outputs: Output[] = [];
  private readonly _counters: SessionStats = { transportsOpened: 0, staleInputs: 0, unknownFrames: 0, probesSent: 0 };

  constructor(readonly _config: Config, nowMs: number, seed: bigint | number) {
    this._now = fromMs(nowMs);
    this._rng = new SplitMix64(seed);
    this._backoff = new Backoff(_config.backoff);
    this._localBackoff = new Backoff(_config.unreachableRetry);
    if (globalThis.BELAY_FULL !== false) this._tokenRetries = new Backoff(_config.backoff);
    this._subscriptions = new Subscriptions(_config.subscribeTimeoutMs, _config.resubscribeBackoff, this);
  }

  // ----- getters -----

  readiness(): Readiness {
    return readinessOf(this._level);
  }
  isReady(): boolean {
    return this._level > 2;
  }
  state(): ConnectionState {
    return this._state;
  }
  /** Retry delays handed out since the backoff last reset. */
  attempt(): number {
    return this._backoff._attempt;
  }
  stats(): SessionStats {
    const s = { ...this._counters };
    if (this._state === "open") s.probesSent += this._hb!._probesSent;
    return s;
  }

  // ----- outputs -----

  pollOutput(): Output | undefined {
    return this._outputs.shift();
  }

  /**
   * When `handleTimeout` next has work (ms), or undefined if nothing is
   * scheduled (never once stopped: stopping drops every deadline).
   */
  pollTimeout(): number | undefined {
    const t = earliest([
      this._at,
      this._state === "open" ? this._hb!._pollTimeout() : undefined,
      ...this._registry._entries.values(),
      this._subscriptions._pollTimeout(),
      this._cooldownDeadline(),
      this._askAt, // set only while open
      globalThis.BELAY_FULL !== false && this._state === "open" && !this._leaving ? this._switchBy : undefined,
    ]);
    return t && t / US;
  }

  // ----- commands -----

  /** Start connecting; after a halt, resume with a fresh backoff. No-op while connected. */
  start(nowMs: number): "stopped" | undefined {
    const now = this._advance(nowMs);
    const s = this._state;
    if (s === "stopped") return s;
    if (s === "idle" || s === "halted") {
      // Leave idle/halted on the application's word: fresh backoff, refused channels retried.
      this._resetBackoff();
      this._subscriptions._idle(true);
      this._dialOrAsk(now);
    }
    return undefined;
  }

  /** Cancel a pending wait and dial at once; never a second transport. */
  reconnectNow(nowMs: number): "stopped" | undefined {
    if (this._state !== "waiting" && this._state !== "offline") return this.start(nowMs);
    this._dialOrAsk(this._advance(nowMs));
    return undefined;
  }

  /**
   * Move to a new transport at the next quiet moment (`session/switch.rs`;
   * the SSE fallback's switch back, PROTOCOL.md §1.7): once open with no
   * request in flight, close the transport (1000 `transport replaced`) and
   * dial again at once, without a backoff step; the subscriptions resume
   * from their positions. Until then requests are taken and sent as usual;
   * from `byMs` on, new ones are refused `not_ready` until those in flight
   * settle. While connecting or handshaking the move waits for the session
   * to open; with no transport it does nothing. A lost transport cancels
   * it; a server's `reconnect` advice takes precedence.
   */
  replaceTransportWhenQuiet(nowMs: number, byMs: number): void {
    if (globalThis.BELAY_FULL !== false) {
      // `_id` is kept while connecting, handshaking or open.
      if (this._id !== undefined) this._switchBy = fromMs(byMs);
      this.handleTimeout(nowMs); // idempotent: moves now if quiet (`_leaveIfIdle`)
    }
  }

  /**
   * Check now that the peer is alive instead of waiting out the heartbeat
   * (page visible again, restored from the bfcache, back online, resumed).
   * While open: one `ping` (none if a probe is already pending) and
   * min(probe timeout, 2 s) for any frame, else close 4000 `probe_unanswered`.
   * A pending check is neither repeated nor extended; other states: nothing.
   */
  checkLiveness(nowMs: number): void {
    const now = this._advance(nowMs);
    if (this._state !== "open" || this._at !== undefined) return;
    this._at = now + Math.min(this._config.probeTimeoutMs, LIVENESS_CHECK_TIMEOUT_MS) * US;
    if (this._hb!._pendingProbeAt === undefined) {
      this._counters.probesSent++;
      this._send(this._id!, { type: "ping" });
    }
  }

  /** Stop for good: close, settle everything, emit `stopped` and nothing after. */
  stop(nowMs: number): void {
    const now = this._advance(nowMs);
    const s = this._state;
    if (s === "stopped") return;
    if (this._id !== undefined) this._close(this._id, CloseCode.NORMAL, "client stop");
    this._go("stopped");
    this._dropTransportState(now);
    if (s === "open") this._emit({ event: "disconnected", reason: { kind: "client_stopped" }, retry: { kind: "no" } });
    this._emit({ event: "stopped" });
  }

  /**
   * Send a request (only while open); it settles exactly once by a `response`
   * event. A request whose frame would be longer than `MAX_FRAME_LEN` is
   * refused unsent (`too_large`): it takes no id and changes nothing.
   */
  request(nowMs: number, call: Call): number | RequestError {
    const now = this._advance(nowMs);
    if (this._state !== "open" || this._leaving) return this._state === "stopped" ? "stopped" : "not_ready";
    // A `$call` may first wait for a sleeping host to wake: HOST_WAKE_BOUND_MS
    // (written out: the bundle is smaller so).
    const timeoutMs = call.timeoutMs ?? this._config.requestTimeoutMs + (call.method === "$call" ? 20_000 : 0);
    const registry = this._registry;
    // Fields left undefined are not sent (JSON.stringify drops them).
    const message: ClientMessage = { type: "request", id: registry._lastId + 1, method: call.method, params: call.params ?? null, idem: call.idempotencyKey, timeout_ms: Math.floor(timeoutMs) };
    const big = tooLarge(JSON.stringify(message));
    if (big) return big;
    this._send(this._id!, message);
    return registry._insert(now + Math.floor(timeoutMs * US));
  }

  /** Replace the token sent in the next `connect`. */
  setToken(token: string | null): void {
    this._config.token = token;
    // The application's own token: not refused, not fresh from the provider, its expiry unknown.
    if (globalThis.BELAY_FULL !== false) this._fresh = this._renewAt = undefined;
  }

  /**
   * Use `token` from now on (the answer to `token_wanted`): sent with
   * `refresh` on the open session (no reconnect), in every later `connect`;
   * a session waiting for it before a dial dials now.
   */
  refreshToken(nowMs: number, token: string): void {
    if (globalThis.BELAY_FULL !== false) {
      const now = this._advance(nowMs);
      this._config.token = token;
      this._fresh = true;
      this._renewAt = undefined;
      if (this._state === "open") {
        this._askAt = undefined;
        this._send(this._id!, { type: "refresh", token });
      } else if (this._authorizing) this._dial(now);
    }
  }

  /**
   * The token provider gave no token. `unavailable` is asked again after the
   * backoff (before a dial the attempt fails `token_unavailable`); only
   * `unauthorized` halts (`auth_failed`), closing an open transport with 1000.
   */
  tokenFailed(nowMs: number, error: TokenError): void {
    if (globalThis.BELAY_FULL !== false) {
      const now = this._advance(nowMs);
      const open = this._state === "open";
      const retry = error === "unavailable";
      if (retry && open) this._askAt = now + this._tokenRetries!._nextDelay(now, this._rng);
      // Otherwise the attempt fails, or the session halts (not an answer to an older ask: only while open or asked).
      else if (open || this._authorizing) {
        if (open) this._close(this._id!, CloseCode.NORMAL, error);
        this._loseTransport(now, { kind: retry ? "token_unavailable" : error }, retry ? undefined : { kind: "auth_failed" });
      }
    }
  }

  /** Want `channel`; `token`: a subscription token sent with every subscribe of it. */
  subscribe(nowMs: number, channel: string, token?: string): SubscribeError | undefined {
    return this._channelCommand(nowMs, () => this._subscriptions._add(this._now, channel, token) || "already_subscribed");
  }

  /**
   * Use the subscription token `token` for `channel` from now on: at once as
   * `sub_refresh` while the channel is confirmed (the answer to
   * `subscription_token_wanted`; the channel is not left), and with every
   * later subscribe of it (PROTOCOL.md §5.8).
   */
  refreshSubscriptionToken(nowMs: number, channel: string, token: string): SubscribeError | undefined {
    if (globalThis.BELAY_FULL !== false) return this._channelCommand(nowMs, () => this._subscriptions._refreshToken(channel, token) || "not_subscribed");
    return undefined;
  }

  unsubscribe(nowMs: number, channel: string): SubscribeError | undefined {
    return this._channelCommand(nowMs, () => this._subscriptions._remove(channel) || "not_subscribed");
  }

  private _channelCommand(nowMs: number, f: () => true | SubscribeError): SubscribeError | undefined {
    const now = this._advance(nowMs);
    if (this._state === "stopped") return "stopped";
    const r = f();
    if (r !== true) return r;
    this._refreshReadiness(now);
    return undefined;
  }

  // ----- inputs -----

  handleInput(nowMs: number, input: Input): void {
    const now = this._advance(nowMs);
    if (this._state === "stopped") return;
    if (input.kind === "network") return this._onNetwork(now, input.online);
    const id = input.id;
    // The stale-event rule: only the current transport may change state.
    if (this._id !== id) {
      this._counters.staleInputs++;
      return;
    }
    switch (input.kind) {
      case "opened":
        return this._onOpened(now, id);
      case "failed": {
        const f = input.failure;
        const after = (f as { retry_after_ms?: number }).retry_after_ms!; // a `rejected` failure's
        // `Retry-After: R` from the server's admission control: advice like a
        // `reconnect` message, spread over [R, 2R), unless advice is pending.
        if (after >= 0) this._advice = this._advice || ({ reason: "retry_after", min_delay_ms: after, max_delay_ms: after * 2 } as ReconnectAdvice);
        return this._loseTransport(
          now,
          { kind: "transport_failed", failure: f },
          f.kind === "invalid_config" ? f // { kind: "invalid_config", detail }, as the halt reason
          : f.kind === "rejected" && (f.status === 401 || f.status === 403) ? (globalThis.BELAY_FULL !== false ? this._tokenRefused() : { kind: "auth_failed" })
          : undefined,
        );
      }
      case "closed": {
        const close = closeInfo(input.code, input.reason);
        const halt = closeHalt(close);
        return this._loseTransport(now, { kind: "transport_closed", close }, globalThis.BELAY_FULL !== false && halt?.kind === "auth_failed" ? this._tokenRefused() : halt);
      }
      case "frame": {
        const m = decodeServer(input.text);
        if (!isDecodeError(m)) return this._onMessage(now, id, m);
        if (m.error === "unknown_type") {
          // A newer server's message: proof of life, otherwise skipped.
          this._counters.unknownFrames++;
          return this._noteFrame(now);
        }
        const tooBig = m.error === "too_large";
        this._close(id, tooBig ? CloseCode.TOO_BIG : CloseCode.PROTOCOL_ERROR, tooBig ? "frame too large" : "malformed frame");
        return this._loseTransport(now, { kind: "protocol_violation", error: m });
      }
      case "message":
        return this._onMessage(now, id, input.message);
    }
  }

  /** Run whatever is due. Idempotent; early calls do nothing. */
  handleTimeout(nowMs: number): void {
    const now = this._advance(nowMs);
    this._registry._handleTimeout(now);
    this._leaveIfIdle(now);
    const s = this._state;
    const id = this._id!;
    const due = this._at! <= now; // never once stopped: stopping drops every deadline
    if (globalThis.BELAY_FULL !== false && this._authorizing && due) this.tokenFailed(nowMs, "unavailable"); // the provider did not answer in time
    else if ((s === "connecting" || s === "handshaking") && due) {
      this._close(id, CloseCode.HANDSHAKE_TIMEOUT, "connect timeout");
      this._loseTransport(now, { kind: "connect_timeout" });
    } else if (s === "open") {
      const r = due ? "probe_unanswered" : this._hb!._handleTimeout(now);
      if (r === "probe") this._send(id, { type: "ping" });
      else if (r !== "wait") {
        this._close(id, CloseCode.HEARTBEAT_TIMEOUT, "heartbeat timeout");
        this._loseTransport(now, { kind: "heartbeat_timeout", cause: r });
      }
    } else if (s === "waiting" && due) this._dialOrAsk(now);
    this._subscriptions._handleTimeout(now); // online only while open
    if (globalThis.BELAY_FULL !== false && this._askAt! <= now && this._state === "open") {
      this._askAt = undefined;
      this._emit({ event: "token_wanted", expires_in_ms: wholeMs(Math.max(0, (this._expiresAt ?? 0) - now)) });
    }
    if (this._cooldownDeadline()! <= now) this._resetBackoff();
  }

  // ----- transport facts -----

  private _onOpened(now: number, id: TransportId): void {
    if (this._state !== "connecting") return;
    this._go("handshaking", id, now + this._config.connectTimeoutMs * US);
    this._advice = undefined;
    this._localBackoff._reset();
    // Fields left undefined are not sent (JSON.stringify drops them).
    this._send(id, { type: "connect", protocol: PROTOCOL_VERSION, token: this._config.token ?? undefined, session: this._sessionId });
    this._refreshReadiness(now);
  }

  private _onNetwork(now: number, online: boolean): void {
    if (online === this._online) return;
    this._online = online;
    const s = this._state;
    if (!online) {
      if (s === "waiting") this._go("offline");
      else if (s === "connecting" || s === "handshaking") {
        this._close(this._id!, CloseCode.GOING_AWAY, "network offline");
        this._loseTransport(now, { kind: "network_offline" });
      }
      // An open connection may survive; the heartbeat will tell.
    } else if (s === "offline" || s === "waiting") {
      // Online proves nothing about the server: a fresh backoff and an attempt
      // soon, spread over [0, online_delay); the server's "not before" holds.
      this._backoff._reset();
      const delayMs = Math.floor(this._rng.nextUnit() * Math.floor(this._config.onlineDelayMs));
      this._wait(now + delayMs * US);
    }
  }

  // ----- messages -----

  /**
   * A frame arrived, of message type `type` (undefined: unknown): proof of
   * life. A `pong` answers our probe, so the connection is idle (probes
   * follow the fleet's beat); a `ping` is the server's, on its beat if it
   * pings on one.
   */
  private _noteFrame(now: number, type?: string): void {
    if (this._state === "open") {
      this._hb!._handleFrame(now, type);
      this._at = undefined;
    }
  }

  private _onMessage(now: number, id: TransportId, m: ServerMessage): void {
    // A frame before the open event: treat the transport as opened first.
    this._onOpened(now, id);
    this._noteFrame(now, m.type);
    const subs = this._subscriptions;
    // Only the full build decodes it (the default entry skips it as an unknown type).
    if (globalThis.BELAY_FULL !== false && m.type === "sub_expiring") return subs._handleSubExpiring(now, m, this._rng);
    switch (m.type) {
      case "welcome":
        return this._onWelcome(now, id, m);
      case "ping":
        return this._send(id, { type: "pong" });
      case "response":
        this._registry._handleResponse(m);
        return this._leaveIfIdle(now);
      case "subscribed":
        subs._handleSubscribed(m);
        break;
      case "unsubscribed":
        subs._handleUnsubscribed(now, m, this._rng);
        break;
      case "publication":
        subs._handlePublication(now, m);
        break;
      case "refreshed":
        return this._accepted(now, m.expires_in_ms);
      case "reconnect":
        this._advice = m;
        // The server will close this transport: send nothing new on it and
        // leave once nothing is in flight (a request sent as its close frame
        // left could not be answered).
        if (this._state === "open") this._leaving = true;
        this._refreshReadiness(now);
        return this._leaveIfIdle(now);
      case "error": {
        // Its error body: `code`, `message` and, if present, `retry_after_ms`.
        const { type: _, ...body } = m;
        return this._emit({ event: "server_error", ...body });
      }
      default: // pong
        return;
    }
    this._refreshReadiness(now);
  }

  private _onWelcome(now: number, id: TransportId, w: Welcome): void {
    if (this._state !== "handshaking") return;
    if (w.protocol !== PROTOCOL_VERSION) {
      // Retrying cannot help: the server will name the same version again.
      this._close(id, CloseCode.PROTOCOL_ERROR, "unsupported protocol version");
      const error: DecodeError = { error: "invalid", kind: "welcome", detail: `protocol ${w.protocol} is not ${PROTOCOL_VERSION}` };
      return this._loseTransport(now, { kind: "protocol_violation", error }, { kind: "protocol_mismatch", server: w.protocol });
    }
    // A pinging server keeps a healthy connection busy: probe only after 1.5
    // of its intervals of quiet, so such a connection sends no probes at all.
    // The interval is clamped to [1 s, 120 s]: probes come after at most
    // max(probe interval, 180 s) of quiet, whatever the server advertises.
    const c = this._config;
    const ping = w.ping_interval_ms && Math.min(Math.max(w.ping_interval_ms, MIN_SERVER_PING_MS), MAX_SERVER_PING_MS);
    const hb = (this._hb = new Heartbeat(now, Math.floor(Math.max(c.probeIntervalMs, ((ping || 0) * 3) / 2) * US), c.probeTimeoutMs * US));
    this._go("open", id);
    const p = w.pacing;
    const slots = (this._backoff._slots = p && new PacingSlots(p.period_ms, p.phase_ms, now));
    // With its plan's origin the server says where the fleet's beat is: a
    // server that pings pings idle connections on it; otherwise our own
    // probes keep the connection alive, on the beat while idle.
    if (ping) (hb._serverPing = ping * US), (hb._serverBeat = p?.origin_ms! >= 0);
    else hb._setBeat(slots, p?.origin_ms);
    this._sessionId = w.session;
    this._accepted(now, w.expires_in_ms);
    this._emit({ event: "connected", session: w.session });
    this._subscriptions._handleProtocolUp(now);
    this._refreshReadiness(now);
    this._leaveIfIdle(now); // a move asked while handshaking
  }

  // ----- the reconnect controller -----

  /** The current transport is gone. The only place that decides what happens next. */
  private _loseTransport(now: number, reason: DisconnectReason, halt?: HaltReason): void {
    const wasOpen = this._state === "open";
    if (wasOpen) this._counters.probesSent += this._hb!._probesSent;
    const advice = this._advice;
    this._advice = undefined;
    // Ready for the whole cooldown even if the timer has not run yet (a throttled driver).
    if (this._cooldownDeadline()! <= now) this._resetBackoff();
    this._go("idle");
    this._dropTransportState(now);

    let retry: RetryPlan = { kind: "no" };
    const attempts = this._backoff._attempt;
    const max = this._config.maxAttempts;
    // The server refused a token the provider can replace: ask at once.
    let reauthorize: boolean | undefined;
    if (globalThis.BELAY_FULL !== false) {
      reauthorize = this._askNow && !halt && this._online;
      this._askNow = undefined;
    }
    if (halt) {
      // retry: no
    } else if (globalThis.BELAY_FULL !== false && reauthorize) {
      retry = { kind: "after", delay_ms: 0 };
    } else if (!this._online) {
      this._go("offline");
      retry = { kind: "when_online" };
    } else if (globalThis.BELAY_FULL !== false && reason.kind === "replaced") {
      // Not a failure: no backoff, no advice to wait for; dialed below.
      retry = { kind: "after", delay_ms: 0 };
    } else if (reason.kind === "transport_failed" && reason.failure.kind === "unreachable") {
      // No route from this device: retry soon on the local schedule, without advancing the backoff.
      retry = { kind: "after", delay_ms: wholeMs(this._wait(now + this._localBackoff._nextDelay(now, this._rng)) - now) };
    } else if (max !== null && attempts >= max) {
      halt = { kind: "exhausted", attempts };
    } else {
      if (advice) {
        if (advice.reason === "deploy") this._deployBackoff = true;
        this._backoff._advice = retryWindow(now, advice.min_delay_ms, advice.max_delay_ms);
      }
      const onSlotGrid = this._backoff._slots !== undefined && attempts > 0;
      // The loss: noticed, silent (0), or silent and noticed on the beat (its interval).
      let delay = this._backoff._nextDelay(now, this._rng, reason.kind === "heartbeat_timeout" ? this._hb!._noticedOnBeat(now) : undefined);
      // Deploy-related reconnects back off twice as long, except advised delays
      // and the server's slot grid, which already spreads the fleet.
      if (this._deployBackoff && !advice && !onSlotGrid) delay *= 2;
      if (advice) this._notBefore = now + delay;
      this._go("waiting", undefined, now + delay);
      retry = { kind: "after", delay_ms: wholeMs(delay) };
    }
    if (halt) this._go("halted");
    this._emit({ event: wasOpen ? "disconnected" : "connect_failed", reason, retry });
    if (halt) this._emit({ event: "halted", reason: halt });
    if (globalThis.BELAY_FULL !== false && reason.kind === "replaced" && this._online) this._dial(now);
    else if (globalThis.BELAY_FULL !== false && reauthorize) this._dialOrAsk(now);
  }

  /** Wait until `until`, or the server's "not before" if later; returns the end of the wait. */
  private _wait(until: number): number {
    this._go("waiting", undefined, Math.max(this._notBefore ?? 0, until));
    return this._at!;
  }

  /** A dial is due: with a provider and a token absent, refused or past its renewal point, ask first (the dial follows the answer). */
  private _dialOrAsk(now: number): void {
    if (globalThis.BELAY_FULL !== false) {
      const c = this._config;
      if (c.tokenProvider && (c.token === null || this._renewAt! <= now)) {
        this._notBefore = undefined;
        this._go("connecting", undefined, now + c.connectTimeoutMs * US);
        this._authorizing = true;
        this._emit({ event: "token_wanted", expires_in_ms: wholeMs(Math.max(0, (this._expiresAt ?? 0) - now)) });
        return;
      }
    }
    this._dial(now);
  }

  /** The server refused the credentials: halt, unless the provider can replace a token it did not just give. */
  private _tokenRefused(): HaltReason | undefined {
    this._renewAt = 0;
    if (globalThis.BELAY_FULL !== false && this._config.tokenProvider && !this._fresh) {
      this._askNow = true;
      return undefined;
    }
    return { kind: "auth_failed" };
  }

  private _dial(now: number): void {
    this._notBefore = undefined;
    const id = ++this._nextTransport;
    this._counters.transportsOpened++;
    this._go("connecting", id, now + this._config.connectTimeoutMs * US);
    this._outputs.push({ output: "open_transport", id, attempt: this._backoff._attempt });
  }

  private _resetBackoff(): void {
    this._backoff._reset();
    this._deployBackoff = false;
  }

  /** The backoff resets after `reset_after` of continuous readiness, if there is anything to reset. */
  private _cooldownDeadline(): number | undefined {
    if (this._readySince === undefined || (this._backoff._attempt === 0 && !this._deployBackoff)) return undefined;
    return this._readySince + this._config.resetAfterMs * US;
  }

  /**
   * Leave the advised transport once no request waits for its answer, or
   * move to a new one (`replaceTransportWhenQuiet`) then; `_leaving` is only
   * ever set while open.
   */
  private _leaveIfIdle(now: number): void {
    // A pending move (advice takes precedence): from its bound on, nothing new is sent.
    const by = globalThis.BELAY_FULL !== false && this._state === "open" && !this._advice ? this._switchBy : undefined;
    if (globalThis.BELAY_FULL !== false && now >= by! && !this._leaving) (this._leaving = true), this._refreshReadiness(now);
    if ((!this._leaving && by === undefined) || this._registry._entries.size > 0) return;
    this._close(this._id!, CloseCode.NORMAL, by === undefined ? "advised" : "transport replaced");
    this._loseTransport(now, { kind: by === undefined ? "advised" : "replaced" });
  }

  /** The server accepted the credentials, which expire `ms` from now: ask for a new token at 75–90 % of that (PROTOCOL.md §2.8), and renew before a dial from then on. */
  private _accepted(now: number, ms: number | undefined): void {
    if (globalThis.BELAY_FULL !== false) {
      this._fresh = undefined;
      this._tokenRetries!._reset();
      this._askAt = this._renewAt = ms === undefined ? ms : now + Math.floor(ms * (0.75 + 0.15 * this._rng.nextUnit())) * US;
      this._expiresAt = ms === undefined ? ms : now + ms * US;
    }
  }

  private _dropTransportState(now: number): void {
    this._leaving = false;
    if (globalThis.BELAY_FULL !== false) this._switchBy = undefined;
    this._askAt = undefined;
    this._refreshReadiness(now);
    this._registry._settleAll();
    this._subscriptions._handleTransportDown();
  }

  // ----- plumbing -----

  private _go(state: ConnectionState, id?: TransportId, at?: number): void {
    if (globalThis.BELAY_FULL !== false) this._authorizing = undefined;
    this._state = state;
    this._id = id;
    this._at = at;
  }

  private _refreshReadiness(now: number): void {
    const s = this._state;
    const level =
      s === "open" && !this._leaving ? (this._subscriptions._allConfirmed() ? 3 : 2) : s === "handshaking" || s === "open" ? 1 : 0;
    if (level === this._level) return;
    this._level = level;
    const ready = level > 2;
    // Defined exactly while ready: kept while ready, set on becoming ready.
    this._readySince = ready ? (this._readySince ?? now) : undefined;
    this._emit({ event: "readiness_changed", readiness: readinessOf(level), ready });
  }

  /** @internal A subscription message, sent on the open transport (the subscriptions are online only while open). */
  _subSend(message: ClientMessage): void {
    this._send(this._id!, message);
  }

  /** @internal */
  _emit(event: Event): void {
    this._outputs.push({ output: "event", ...event });
  }

  private _send(id: TransportId, message: ClientMessage): void {
    this._outputs.push({ output: "transmit", id, message });
  }

  private _close(id: TransportId, code: number, reason: string): void {
    this._outputs.push({ output: "close_transport", id, code, reason });
  }

  /** Time only moves forward. */
  private _advance(nowMs: number): number {
    return (this._now = Math.max(this._now, fromMs(nowMs)));
  }
}
