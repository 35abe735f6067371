/**
 * The session (`session/mod.rs`): one sans-IO facade over the small machines.
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
 */
import { Backoff } from "./backoff/state.js";
import { PacingSlots, retryWindow } from "./backoff/pacing.js";
import { CloseCode, closeInfo, disposition, type CloseInfo } from "./close.js";
import { decodeServer, isDecodeError, type DecodeError } from "./codec.js";
import type { Config } from "./config.js";
import type { DisconnectReason, Event, HaltReason, RequestOutcome, RetryPlan } from "./events.js";
import { Heartbeat } from "./heartbeat.js";
import {
  PROTOCOL_VERSION,
  type ClientMessage,
  type Json,
  type ReconnectAdvice,
  type ServerMessage,
  type Welcome,
} from "./messages.js";
import { phaseTimeout, phaseTransport, type ConnectionState, type Phase } from "./phase.js";
import { isReady, readinessOf, sameReadiness, type Readiness } from "./readiness.js";
import { RequestRegistry } from "./registry.js";
import { SplitMix64 } from "./rng.js";
import { Subscriptions, type SubscriptionOutput } from "./subscriptions.js";
import { fromMs, US, wholeMs } from "./time.js";
import type { Failure, TransportId } from "./transport.js";

/** Shortest server ping interval honoured (ms); 0 means "the server does not ping". */
const MIN_SERVER_PING_MS = 1000;
/** Longest wait of a liveness check (ms); a shorter probe timeout wins. */
export const LIVENESS_CHECK_TIMEOUT_MS = 2000;

export type Input =
  | { kind: "opened"; id: TransportId }
  | { kind: "failed"; id: TransportId; failure: Failure }
  /** `code` null/absent when no close frame arrived (what browsers report as 1006). */
  | { kind: "closed"; id: TransportId; code?: number | null; reason?: string }
  | { kind: "frame"; id: TransportId; text: string }
  | { kind: "message"; id: TransportId; message: ServerMessage }
  | { kind: "network"; online: boolean };

export type Output =
  | { output: "open_transport"; id: TransportId; attempt: number }
  | { output: "transmit"; id: TransportId; message: ClientMessage }
  | { output: "close_transport"; id: TransportId; code: number; reason: string }
  | ({ output: "event" } & Event);

export interface Call {
  method: string;
  params?: Json;
  /** This call's deadline in ms; the config's request timeout if absent. */
  timeoutMs?: number | undefined;
  idempotencyKey?: string | undefined;
}

export type RequestError = "not_ready" | "stopped";
export type SubscribeError = "already_subscribed" | "not_subscribed" | "stopped";

export interface SessionStats {
  transportsOpened: number;
  staleInputs: number;
  unknownFrames: number;
  probesSent: number;
}

export class Session {
  private _now: number;
  private readonly _rng: SplitMix64;
  private _phase: Phase = { state: "idle" };
  private readonly _backoff: Backoff;
  private readonly _localBackoff: Backoff;
  private _deployBackoff = false;
  private _advice: ReconnectAdvice | undefined;
  private _notBefore: number | undefined;
  private _online = true;
  private _nextTransport = 0;
  private _current: Readiness = readinessOf(false, false, false);
  private _readySince: number | undefined;
  private readonly _registry = new RequestRegistry();
  readonly _subscriptions: Subscriptions;
  private _sessionId: string | undefined;
  private readonly _outputs: Output[] = [];
  private _outputHead = 0;
  private readonly _counters: SessionStats = { transportsOpened: 0, staleInputs: 0, unknownFrames: 0, probesSent: 0 };

  constructor(readonly _config: Config, nowMs: number, seed: bigint | number) {
    this._now = fromMs(nowMs);
    this._rng = new SplitMix64(seed);
    this._backoff = new Backoff(_config.backoff);
    this._localBackoff = new Backoff(_config.unreachableRetry);
    this._subscriptions = new Subscriptions(_config.subscribeTimeoutMs, _config.resubscribeBackoff);
  }

  // ----- getters -----

  readiness(): Readiness {
    return { ...this._current };
  }
  isReady(): boolean {
    return isReady(this._current);
  }
  state(): ConnectionState {
    return this._phase.state;
  }
  currentTransport(): TransportId | undefined {
    return phaseTransport(this._phase);
  }
  session(): string | undefined {
    return this._sessionId;
  }
  /** Retry delays handed out since the backoff last reset. */
  attempt(): number {
    return this._backoff._attempt;
  }
  requestsInFlight(): number {
    return this._registry._size;
  }
  stats(): SessionStats {
    const s = { ...this._counters };
    if (this._phase.state === "open") s.probesSent += this._phase.heartbeat._probesSent;
    return s;
  }

  // ----- outputs -----

  pollOutput(): Output | undefined {
    if (this._outputHead >= this._outputs.length) {
      this._outputs.length = this._outputHead = 0;
      return undefined;
    }
    return this._outputs[this._outputHead++];
  }

  /** When `handleTimeout` next has work (ms), or undefined if nothing is scheduled. */
  pollTimeout(): number | undefined {
    if (this._phase.state === "stopped") return undefined;
    let min: number | undefined;
    for (const t of [phaseTimeout(this._phase), this._registry._pollTimeout(), this._subscriptions._pollTimeout(), this._cooldownDeadline()]) {
      if (t !== undefined && (min === undefined || t < min)) min = t;
    }
    return min === undefined ? undefined : min / US;
  }

  // ----- commands -----

  /** Start connecting; after a halt, resume with a fresh backoff. No-op while connected. */
  start(nowMs: number): "stopped" | undefined {
    const now = this._advance(nowMs);
    const s = this._phase.state;
    if (s === "stopped") return "stopped";
    if (s === "idle" || s === "halted") this._resume(now);
    return undefined;
  }

  /** Cancel a pending wait and dial at once; never a second transport. */
  reconnectNow(nowMs: number): "stopped" | undefined {
    if (this._phase.state === "waiting" || this._phase.state === "offline") {
      this._dial(this._advance(nowMs));
      return undefined;
    }
    return this.start(nowMs);
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
    const p = this._phase;
    if (p.state !== "open" || p.check !== undefined) return;
    p.check = now + Math.min(this._config.probeTimeoutMs, LIVENESS_CHECK_TIMEOUT_MS) * US;
    if (p.heartbeat._pendingProbeAt === undefined) {
      this._counters.probesSent++;
      this._push({ output: "transmit", id: p.id, message: { type: "ping" } });
    }
  }

  /** Stop for good: close, settle everything, emit `stopped` and nothing after. */
  stop(nowMs: number): void {
    const now = this._advance(nowMs);
    if (this._phase.state === "stopped") return;
    const wasOpen = this._phase.state === "open";
    const id = phaseTransport(this._phase);
    if (id !== undefined) this._push({ output: "close_transport", id, code: CloseCode.NORMAL, reason: "client stop" });
    this._phase = { state: "stopped" };
    this._dropTransportState(now);
    if (wasOpen) this._emit({ event: "disconnected", reason: { kind: "client_stopped" }, retry: { kind: "no" } });
    this._emit({ event: "stopped" });
  }

  /** Send a request (only while open); it settles exactly once by a `response` event. */
  request(nowMs: number, call: Call): number | RequestError {
    const now = this._advance(nowMs);
    if (this._phase.state === "stopped") return "stopped";
    if (this._phase.state !== "open") return "not_ready";
    const timeoutMs = call.timeoutMs ?? this._config.requestTimeoutMs;
    const id = this._registry._insert(now + Math.floor(timeoutMs * US));
    const message: ClientMessage = { type: "request", id, method: call.method, params: call.params ?? null };
    if (call.idempotencyKey !== undefined) message.idem = call.idempotencyKey;
    message.timeout_ms = Math.floor(timeoutMs);
    this._push({ output: "transmit", id: this._phase.id, message });
    return id;
  }

  /** Replace the token sent in the next `connect`. */
  setToken(token: string | null): void {
    this._config.token = token;
  }

  subscribe(nowMs: number, channel: string): SubscribeError | undefined {
    const now = this._advance(nowMs);
    if (this._phase.state === "stopped") return "stopped";
    const out: SubscriptionOutput[] = [];
    if (!this._subscriptions._add(now, channel, out)) return "already_subscribed";
    this._applySubscriptionOutputs(out);
    this._refreshReadiness(now);
    return undefined;
  }

  unsubscribe(nowMs: number, channel: string): SubscribeError | undefined {
    const now = this._advance(nowMs);
    if (this._phase.state === "stopped") return "stopped";
    const out: SubscriptionOutput[] = [];
    if (!this._subscriptions._remove(channel, out)) return "not_subscribed";
    this._applySubscriptionOutputs(out);
    this._refreshReadiness(now);
    return undefined;
  }

  // ----- inputs -----

  handleInput(nowMs: number, input: Input): void {
    const now = this._advance(nowMs);
    if (this._phase.state === "stopped") return;
    if (input.kind !== "network") {
      // The stale-event rule: only the current transport may change state.
      if (phaseTransport(this._phase) !== input.id) {
        this._counters.staleInputs++;
        return;
      }
    }
    switch (input.kind) {
      case "opened":
        return this._onOpened(now, input.id);
      case "failed":
        return this._onFailed(now, input.failure);
      case "closed":
        return this._onClosed(now, closeInfo(input.code, input.reason));
      case "frame": {
        const m = decodeServer(input.text);
        if (!isDecodeError(m)) return this._onMessage(now, input.id, m);
        if (m.error === "unknown_type") {
          // A newer server's message: proof of life, otherwise skipped.
          this._counters.unknownFrames++;
          this._noteFrame(now);
          return;
        }
        return this._onProtocolViolation(now, input.id, m);
      }
      case "message":
        return this._onMessage(now, input.id, input.message);
      case "network":
        return this._onNetwork(now, input.online);
    }
  }

  /** Run whatever is due. Idempotent; early calls do nothing. */
  handleTimeout(nowMs: number): void {
    const now = this._advance(nowMs);
    this._emitSettled(this._registry._handleTimeout(now));
    const p = this._phase;
    switch (p.state) {
      case "stopped":
        return;
      case "connecting":
      case "handshaking":
        if (p.deadline <= now) this._abandon(now, p.id, CloseCode.HANDSHAKE_TIMEOUT, { kind: "connect_timeout" });
        break;
      case "open": {
        const r = p.check !== undefined && p.check <= now ? "probe_unanswered" : p.heartbeat._handleTimeout(now);
        if (r === "probe") this._push({ output: "transmit", id: p.id, message: { type: "ping" } });
        else if (r !== "wait") this._abandon(now, p.id, CloseCode.HEARTBEAT_TIMEOUT, { kind: "heartbeat_timeout", cause: r });
        break;
      }
      case "waiting":
        if (p.until <= now) this._dial(now);
        break;
    }
    if (this._phase.state === "open") {
      const out: SubscriptionOutput[] = [];
      this._subscriptions._handleTimeout(now, out);
      this._applySubscriptionOutputs(out);
    }
    const cooldown = this._cooldownDeadline();
    if (cooldown !== undefined && cooldown <= now) this._resetBackoff();
  }

  // ----- transport facts -----

  private _onOpened(now: number, id: TransportId): void {
    if (this._phase.state !== "connecting") return;
    this._phase = { state: "handshaking", id, deadline: now + this._config.connectTimeoutMs * US };
    this._advice = undefined;
    this._localBackoff._reset();
    const message: ClientMessage = { type: "connect", protocol: PROTOCOL_VERSION };
    if (this._config.token !== null) message.token = this._config.token;
    if (this._sessionId !== undefined) message.session = this._sessionId;
    this._push({ output: "transmit", id, message });
    this._refreshReadiness(now);
  }

  private _onFailed(now: number, failure: Failure): void {
    let halt: HaltReason | undefined;
    if (failure.kind === "invalid_config") halt = { kind: "invalid_config", detail: failure.detail };
    else if (failure.kind === "rejected" && (failure.status === 401 || failure.status === 403)) halt = { kind: "auth_failed" };
    this._loseTransport(now, { kind: "transport_failed", failure }, halt);
  }

  private _onClosed(now: number, close: CloseInfo): void {
    const d = disposition(close.code);
    const halt: HaltReason | undefined =
      d === "terminal" ? { kind: "server_closed", close } : d === "auth_failed" ? { kind: "auth_failed" } : undefined;
    this._loseTransport(now, { kind: "transport_closed", close }, halt);
  }

  private _onProtocolViolation(now: number, id: TransportId, error: DecodeError): void {
    const tooBig = error.error === "too_large";
    this._push({
      output: "close_transport",
      id,
      code: tooBig ? CloseCode.TOO_BIG : CloseCode.PROTOCOL_ERROR,
      reason: tooBig ? "frame too large" : "malformed frame",
    });
    this._loseTransport(now, { kind: "protocol_violation", error });
  }

  /** Close the current transport ourselves and move on without waiting for its close event. */
  private _abandon(now: number, id: TransportId, code: number, reason: DisconnectReason): void {
    const text = reason.kind === "heartbeat_timeout" ? "heartbeat timeout" : reason.kind === "connect_timeout" ? "connect timeout" : "abandoned";
    this._push({ output: "close_transport", id, code, reason: text });
    this._loseTransport(now, reason);
  }

  private _onNetwork(now: number, online: boolean): void {
    if (online === this._online) return;
    this._online = online;
    const p = this._phase;
    if (!online) {
      if (p.state === "waiting") this._phase = { state: "offline" };
      else if (p.state === "connecting" || p.state === "handshaking") {
        this._push({ output: "close_transport", id: p.id, code: CloseCode.GOING_AWAY, reason: "network offline" });
        this._loseTransport(now, { kind: "network_offline" });
      }
      // An open connection may survive; the heartbeat will tell.
      return;
    }
    if (p.state === "offline" || p.state === "waiting") {
      // Online proves nothing about the server: a fresh backoff and an attempt
      // soon, spread over [0, online_delay); the server's "not before" holds.
      this._backoff._reset();
      const delayMs = Math.floor(this._rng.nextUnit() * Math.floor(this._config.onlineDelayMs));
      const until = now + delayMs * US;
      this._phase = { state: "waiting", until: this._notBefore === undefined ? until : Math.max(this._notBefore, until) };
    }
  }

  // ----- messages -----

  private _noteFrame(now: number): void {
    if (this._phase.state === "open") {
      this._phase.heartbeat._handleFrame(now);
      this._phase.check = undefined;
    }
  }

  private _onMessage(now: number, id: TransportId, m: ServerMessage): void {
    // A frame before the open event: treat the transport as opened first.
    if (this._phase.state === "connecting") this._onOpened(now, id);
    this._noteFrame(now);
    const out: SubscriptionOutput[] = [];
    switch (m.type) {
      case "welcome":
        return this._onWelcome(now, id, m);
      case "ping":
        return this._push({ output: "transmit", id, message: { type: "pong" } });
      case "pong":
        return;
      case "response": {
        const settled = this._registry._handleResponse(m);
        if (settled) this._emit({ event: "response", id: settled[0], outcome: settled[1] });
        return;
      }
      case "subscribed":
        this._subscriptions._handleSubscribed(m, out);
        break;
      case "unsubscribed":
        this._subscriptions._handleUnsubscribed(now, m, this._rng, out);
        break;
      case "publication":
        this._subscriptions._handlePublication(now, m, out);
        break;
      case "reconnect":
        this._advice = m;
        return;
      case "error": {
        const e: Event = { event: "server_error", code: m.code, message: m.message };
        if (m.retry_after_ms !== undefined) e.retry_after_ms = m.retry_after_ms;
        return this._emit(e);
      }
    }
    this._applySubscriptionOutputs(out);
    this._refreshReadiness(now);
  }

  private _onWelcome(now: number, id: TransportId, w: Welcome): void {
    if (this._phase.state !== "handshaking") return;
    if (w.protocol !== PROTOCOL_VERSION) {
      // Retrying cannot help: the server will name the same version again.
      this._push({ output: "close_transport", id, code: CloseCode.PROTOCOL_ERROR, reason: "unsupported protocol version" });
      const error: DecodeError = { error: "invalid", kind: "welcome", detail: `protocol ${w.protocol} is not ${PROTOCOL_VERSION}` };
      this._loseTransport(now, { kind: "protocol_violation", error }, { kind: "protocol_mismatch", server: w.protocol });
      return;
    }
    // A pinging server keeps a healthy connection busy: probe only after 1.5
    // of its intervals of quiet, so such a connection sends no probes at all.
    const ping = w.ping_interval_ms ? Math.max(w.ping_interval_ms, MIN_SERVER_PING_MS) : undefined;
    const probeMs = ping === undefined ? this._config.probeIntervalMs : Math.max(this._config.probeIntervalMs, (ping * 3) / 2);
    const heartbeat = new Heartbeat(now, Math.floor(probeMs * US), this._config.probeTimeoutMs * US);
    heartbeat._serverPing = ping === undefined ? undefined : ping * US;
    this._phase = { state: "open", id, heartbeat };
    this._backoff._slots = w.pacing ? new PacingSlots(w.pacing.period_ms, w.pacing.phase_ms, now) : undefined;
    this._sessionId = w.session;
    this._emit({ event: "connected", session: w.session });
    const out: SubscriptionOutput[] = [];
    this._subscriptions._handleProtocolUp(now, out);
    this._applySubscriptionOutputs(out);
    this._refreshReadiness(now);
  }

  // ----- the reconnect controller -----

  /** The current transport is gone. The only place that decides what happens next. */
  private _loseTransport(now: number, reason: DisconnectReason, halt?: HaltReason): void {
    const wasOpen = this._phase.state === "open";
    if (this._phase.state === "open") this._counters.probesSent += this._phase.heartbeat._probesSent;
    const advice = this._advice;
    this._advice = undefined;
    const cooldown = this._cooldownDeadline();
    // Ready for the whole cooldown even if the timer has not run yet (a throttled driver).
    if (cooldown !== undefined && cooldown <= now) this._resetBackoff();
    this._phase = { state: "idle" };
    this._dropTransportState(now);

    let retry: RetryPlan;
    if (halt) {
      this._phase = { state: "halted" };
      retry = { kind: "no" };
    } else if (!this._online) {
      this._phase = { state: "offline" };
      retry = { kind: "when_online" };
    } else if (reason.kind === "transport_failed" && reason.failure.kind === "unreachable") {
      retry = this._scheduleLocalRetry(now);
    } else {
      const r = this._scheduleReconnect(now, advice);
      if ("kind" in r) retry = r;
      else {
        halt = r.halt;
        retry = { kind: "no" };
      }
    }
    this._emit({ event: wasOpen ? "disconnected" : "connect_failed", reason, retry });
    if (halt) this._emit({ event: "halted", reason: halt });
  }

  private _scheduleReconnect(now: number, advice: ReconnectAdvice | undefined): RetryPlan | { halt: HaltReason } {
    const attempts = this._backoff._attempt;
    const max = this._config.maxAttempts;
    if (max !== null && attempts >= max) {
      this._phase = { state: "halted" };
      return { halt: { kind: "exhausted", attempts } };
    }
    if (advice) {
      if (advice.reason === "deploy") this._deployBackoff = true;
      this._backoff._advice = retryWindow(now, advice.min_delay_ms, advice.max_delay_ms);
    }
    const onSlotGrid = this._backoff._slots !== undefined && this._backoff._attempt > 0;
    let delay = this._backoff._nextDelay(now, this._rng);
    // Deploy-related reconnects back off twice as long, except advised delays
    // and the server's slot grid, which already spreads the fleet.
    if (this._deployBackoff && !advice && !onSlotGrid) delay *= 2;
    if (advice) this._notBefore = now + delay;
    this._phase = { state: "waiting", until: now + delay };
    return { kind: "after", delay_ms: wholeMs(delay) };
  }

  /** No route from this device: retry soon on the local schedule, without advancing the backoff. */
  private _scheduleLocalRetry(now: number): RetryPlan {
    const t = now + this._localBackoff._nextDelay(now, this._rng);
    const until = this._notBefore === undefined ? t : Math.max(this._notBefore, t);
    this._phase = { state: "waiting", until };
    return { kind: "after", delay_ms: wholeMs(until - now) };
  }

  private _dial(now: number): void {
    this._notBefore = undefined;
    const id = ++this._nextTransport;
    this._counters.transportsOpened++;
    this._phase = { state: "connecting", id, deadline: now + this._config.connectTimeoutMs * US };
    this._push({ output: "open_transport", id, attempt: this._backoff._attempt });
  }

  /** Leave idle/halted on the application's word: fresh backoff, refused channels retried. */
  private _resume(now: number): void {
    this._resetBackoff();
    this._subscriptions._retryRefused();
    this._dial(now);
  }

  private _resetBackoff(): void {
    this._backoff._reset();
    this._deployBackoff = false;
  }

  /** The backoff resets after `reset_after` of continuous readiness, if there is anything to reset. */
  private _cooldownDeadline(): number | undefined {
    if (this._readySince === undefined) return undefined;
    if (this._backoff._attempt === 0 && !this._deployBackoff) return undefined;
    return this._readySince + this._config.resetAfterMs * US;
  }

  private _dropTransportState(now: number): void {
    this._refreshReadiness(now);
    this._emitSettled(this._registry._settleAll());
    this._subscriptions._handleTransportDown();
  }

  // ----- plumbing -----

  private _refreshReadiness(now: number): void {
    const s = this._phase.state;
    const next = readinessOf(s === "handshaking" || s === "open", s === "open", this._subscriptions._allConfirmed());
    if (sameReadiness(next, this._current)) return;
    const wasReady = isReady(this._current);
    this._current = next;
    const ready = isReady(next);
    if (ready && !wasReady) this._readySince = now;
    else if (!ready) this._readySince = undefined;
    this._emit({ event: "readiness_changed", readiness: { ...next }, ready });
  }

  private _applySubscriptionOutputs(out: SubscriptionOutput[]): void {
    const id = this._phase.state === "open" ? this._phase.id : undefined;
    for (const item of out) {
      if ("send" in item) {
        if (id !== undefined) this._push({ output: "transmit", id, message: item.send });
      } else this._emit(item.event);
    }
  }

  private _emitSettled(settled: [number, RequestOutcome][]): void {
    for (const [id, outcome] of settled) this._emit({ event: "response", id, outcome });
  }

  private _emit(event: Event): void {
    this._outputs.push({ output: "event", ...event });
  }

  private _push(output: Output): void {
    this._outputs.push(output);
  }

  /** Time only moves forward. */
  private _advance(nowMs: number): number {
    this._now = Math.max(this._now, fromMs(nowMs));
    return this._now;
  }
}
