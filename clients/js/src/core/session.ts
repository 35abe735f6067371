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
  timeoutMs?: number;
  idempotencyKey?: string;
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
  private now: number;
  private readonly rng: SplitMix64;
  private phase: Phase = { state: "idle" };
  private readonly backoff: Backoff;
  private readonly localBackoff: Backoff;
  private deployBackoff = false;
  private advice: ReconnectAdvice | undefined;
  private notBefore: number | undefined;
  private online = true;
  private nextTransport = 0;
  private current: Readiness = readinessOf(false, false, false);
  private readySince: number | undefined;
  private readonly registry = new RequestRegistry();
  readonly subscriptions: Subscriptions;
  private sessionId: string | undefined;
  private readonly outputs: Output[] = [];
  private outputHead = 0;
  private readonly counters: SessionStats = { transportsOpened: 0, staleInputs: 0, unknownFrames: 0, probesSent: 0 };

  constructor(readonly config: Config, nowMs: number, seed: bigint | number) {
    this.now = fromMs(nowMs);
    this.rng = new SplitMix64(seed);
    this.backoff = new Backoff(config.backoff);
    this.localBackoff = new Backoff(config.unreachableRetry);
    this.subscriptions = new Subscriptions(config.subscribeTimeoutMs, config.resubscribeBackoff);
  }

  // ----- getters -----

  readiness(): Readiness {
    return { ...this.current };
  }
  isReady(): boolean {
    return isReady(this.current);
  }
  state(): ConnectionState {
    return this.phase.state;
  }
  currentTransport(): TransportId | undefined {
    return phaseTransport(this.phase);
  }
  session(): string | undefined {
    return this.sessionId;
  }
  /** Retry delays handed out since the backoff last reset. */
  attempt(): number {
    return this.backoff.attempt;
  }
  requestsInFlight(): number {
    return this.registry.size;
  }
  stats(): SessionStats {
    const s = { ...this.counters };
    if (this.phase.state === "open") s.probesSent += this.phase.heartbeat.probesSent;
    return s;
  }

  // ----- outputs -----

  pollOutput(): Output | undefined {
    if (this.outputHead >= this.outputs.length) {
      this.outputs.length = this.outputHead = 0;
      return undefined;
    }
    return this.outputs[this.outputHead++];
  }

  /** When `handleTimeout` next has work (ms), or undefined if nothing is scheduled. */
  pollTimeout(): number | undefined {
    if (this.phase.state === "stopped") return undefined;
    let min: number | undefined;
    for (const t of [phaseTimeout(this.phase), this.registry.pollTimeout(), this.subscriptions.pollTimeout(), this.cooldownDeadline()]) {
      if (t !== undefined && (min === undefined || t < min)) min = t;
    }
    return min === undefined ? undefined : min / US;
  }

  // ----- commands -----

  /** Start connecting; after a halt, resume with a fresh backoff. No-op while connected. */
  start(nowMs: number): "stopped" | undefined {
    const now = this.advance(nowMs);
    const s = this.phase.state;
    if (s === "stopped") return "stopped";
    if (s === "idle" || s === "halted") this.resume(now);
    return undefined;
  }

  /** Cancel a pending wait and dial at once; never a second transport. */
  reconnectNow(nowMs: number): "stopped" | undefined {
    if (this.phase.state === "waiting" || this.phase.state === "offline") {
      this.dial(this.advance(nowMs));
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
    const now = this.advance(nowMs);
    const p = this.phase;
    if (p.state !== "open" || p.check !== undefined) return;
    p.check = now + Math.min(this.config.probeTimeoutMs, LIVENESS_CHECK_TIMEOUT_MS) * US;
    if (p.heartbeat.pendingProbeAt === undefined) {
      this.counters.probesSent++;
      this.push({ output: "transmit", id: p.id, message: { type: "ping" } });
    }
  }

  /** Stop for good: close, settle everything, emit `stopped` and nothing after. */
  stop(nowMs: number): void {
    const now = this.advance(nowMs);
    if (this.phase.state === "stopped") return;
    const wasOpen = this.phase.state === "open";
    const id = phaseTransport(this.phase);
    if (id !== undefined) this.push({ output: "close_transport", id, code: CloseCode.NORMAL, reason: "client stop" });
    this.phase = { state: "stopped" };
    this.dropTransportState(now);
    if (wasOpen) this.emit({ event: "disconnected", reason: { kind: "client_stopped" }, retry: { kind: "no" } });
    this.emit({ event: "stopped" });
  }

  /** Send a request (only while open); it settles exactly once by a `response` event. */
  request(nowMs: number, call: Call): number | RequestError {
    const now = this.advance(nowMs);
    if (this.phase.state === "stopped") return "stopped";
    if (this.phase.state !== "open") return "not_ready";
    const timeoutMs = call.timeoutMs ?? this.config.requestTimeoutMs;
    const id = this.registry.insert(now + Math.floor(timeoutMs * US));
    const message: ClientMessage = { type: "request", id, method: call.method, params: call.params ?? null };
    if (call.idempotencyKey !== undefined) message.idem = call.idempotencyKey;
    message.timeout_ms = Math.floor(timeoutMs);
    this.push({ output: "transmit", id: this.phase.id, message });
    return id;
  }

  /** Replace the token sent in the next `connect`. */
  setToken(token: string | null): void {
    this.config.token = token;
  }

  subscribe(nowMs: number, channel: string): SubscribeError | undefined {
    const now = this.advance(nowMs);
    if (this.phase.state === "stopped") return "stopped";
    const out: SubscriptionOutput[] = [];
    if (!this.subscriptions.add(now, channel, out)) return "already_subscribed";
    this.applySubscriptionOutputs(out);
    this.refreshReadiness(now);
    return undefined;
  }

  unsubscribe(nowMs: number, channel: string): SubscribeError | undefined {
    const now = this.advance(nowMs);
    if (this.phase.state === "stopped") return "stopped";
    const out: SubscriptionOutput[] = [];
    if (!this.subscriptions.remove(channel, out)) return "not_subscribed";
    this.applySubscriptionOutputs(out);
    this.refreshReadiness(now);
    return undefined;
  }

  // ----- inputs -----

  handleInput(nowMs: number, input: Input): void {
    const now = this.advance(nowMs);
    if (this.phase.state === "stopped") return;
    if (input.kind !== "network") {
      // The stale-event rule: only the current transport may change state.
      if (phaseTransport(this.phase) !== input.id) {
        this.counters.staleInputs++;
        return;
      }
    }
    switch (input.kind) {
      case "opened":
        return this.onOpened(now, input.id);
      case "failed":
        return this.onFailed(now, input.failure);
      case "closed":
        return this.onClosed(now, closeInfo(input.code, input.reason));
      case "frame": {
        const m = decodeServer(input.text);
        if (!isDecodeError(m)) return this.onMessage(now, input.id, m);
        if (m.error === "unknown_type") {
          // A newer server's message: proof of life, otherwise skipped.
          this.counters.unknownFrames++;
          this.noteFrame(now);
          return;
        }
        return this.onProtocolViolation(now, input.id, m);
      }
      case "message":
        return this.onMessage(now, input.id, input.message);
      case "network":
        return this.onNetwork(now, input.online);
    }
  }

  /** Run whatever is due. Idempotent; early calls do nothing. */
  handleTimeout(nowMs: number): void {
    const now = this.advance(nowMs);
    this.emitSettled(this.registry.handleTimeout(now));
    const p = this.phase;
    switch (p.state) {
      case "stopped":
        return;
      case "connecting":
      case "handshaking":
        if (p.deadline <= now) this.abandon(now, p.id, CloseCode.HANDSHAKE_TIMEOUT, { kind: "connect_timeout" });
        break;
      case "open": {
        const r = p.check !== undefined && p.check <= now ? "probe_unanswered" : p.heartbeat.handleTimeout(now);
        if (r === "probe") this.push({ output: "transmit", id: p.id, message: { type: "ping" } });
        else if (r !== "wait") this.abandon(now, p.id, CloseCode.HEARTBEAT_TIMEOUT, { kind: "heartbeat_timeout", cause: r });
        break;
      }
      case "waiting":
        if (p.until <= now) this.dial(now);
        break;
    }
    if (this.phase.state === "open") {
      const out: SubscriptionOutput[] = [];
      this.subscriptions.handleTimeout(now, out);
      this.applySubscriptionOutputs(out);
    }
    const cooldown = this.cooldownDeadline();
    if (cooldown !== undefined && cooldown <= now) this.resetBackoff();
  }

  // ----- transport facts -----

  private onOpened(now: number, id: TransportId): void {
    if (this.phase.state !== "connecting") return;
    this.phase = { state: "handshaking", id, deadline: now + this.config.connectTimeoutMs * US };
    this.advice = undefined;
    this.localBackoff.reset();
    const message: ClientMessage = { type: "connect", protocol: PROTOCOL_VERSION };
    if (this.config.token !== null) message.token = this.config.token;
    if (this.sessionId !== undefined) message.session = this.sessionId;
    this.push({ output: "transmit", id, message });
    this.refreshReadiness(now);
  }

  private onFailed(now: number, failure: Failure): void {
    let halt: HaltReason | undefined;
    if (failure.kind === "invalid_config") halt = { kind: "invalid_config", detail: failure.detail };
    else if (failure.kind === "rejected" && (failure.status === 401 || failure.status === 403)) halt = { kind: "auth_failed" };
    this.loseTransport(now, { kind: "transport_failed", failure }, halt);
  }

  private onClosed(now: number, close: CloseInfo): void {
    const d = disposition(close.code);
    const halt: HaltReason | undefined =
      d === "terminal" ? { kind: "server_closed", close } : d === "auth_failed" ? { kind: "auth_failed" } : undefined;
    this.loseTransport(now, { kind: "transport_closed", close }, halt);
  }

  private onProtocolViolation(now: number, id: TransportId, error: DecodeError): void {
    const tooBig = error.error === "too_large";
    this.push({
      output: "close_transport",
      id,
      code: tooBig ? CloseCode.TOO_BIG : CloseCode.PROTOCOL_ERROR,
      reason: tooBig ? "frame too large" : "malformed frame",
    });
    this.loseTransport(now, { kind: "protocol_violation", error });
  }

  /** Close the current transport ourselves and move on without waiting for its close event. */
  private abandon(now: number, id: TransportId, code: number, reason: DisconnectReason): void {
    const text = reason.kind === "heartbeat_timeout" ? "heartbeat timeout" : reason.kind === "connect_timeout" ? "connect timeout" : "abandoned";
    this.push({ output: "close_transport", id, code, reason: text });
    this.loseTransport(now, reason);
  }

  private onNetwork(now: number, online: boolean): void {
    if (online === this.online) return;
    this.online = online;
    const p = this.phase;
    if (!online) {
      if (p.state === "waiting") this.phase = { state: "offline" };
      else if (p.state === "connecting" || p.state === "handshaking") {
        this.push({ output: "close_transport", id: p.id, code: CloseCode.GOING_AWAY, reason: "network offline" });
        this.loseTransport(now, { kind: "network_offline" });
      }
      // An open connection may survive; the heartbeat will tell.
      return;
    }
    if (p.state === "offline" || p.state === "waiting") {
      // Online proves nothing about the server: a fresh backoff and an attempt
      // soon, spread over [0, online_delay); the server's "not before" holds.
      this.backoff.reset();
      const delayMs = Math.floor(this.rng.nextUnit() * Math.floor(this.config.onlineDelayMs));
      const until = now + delayMs * US;
      this.phase = { state: "waiting", until: this.notBefore === undefined ? until : Math.max(this.notBefore, until) };
    }
  }

  // ----- messages -----

  private noteFrame(now: number): void {
    if (this.phase.state === "open") {
      this.phase.heartbeat.handleFrame(now);
      this.phase.check = undefined;
    }
  }

  private onMessage(now: number, id: TransportId, m: ServerMessage): void {
    // A frame before the open event: treat the transport as opened first.
    if (this.phase.state === "connecting") this.onOpened(now, id);
    this.noteFrame(now);
    const out: SubscriptionOutput[] = [];
    switch (m.type) {
      case "welcome":
        return this.onWelcome(now, id, m);
      case "ping":
        return this.push({ output: "transmit", id, message: { type: "pong" } });
      case "pong":
        return;
      case "response": {
        const settled = this.registry.handleResponse(m);
        if (settled) this.emit({ event: "response", id: settled[0], outcome: settled[1] });
        return;
      }
      case "subscribed":
        this.subscriptions.handleSubscribed(m, out);
        break;
      case "unsubscribed":
        this.subscriptions.handleUnsubscribed(now, m, this.rng, out);
        break;
      case "publication":
        this.subscriptions.handlePublication(now, m, out);
        break;
      case "reconnect":
        this.advice = m;
        return;
      case "error": {
        const e: Event = { event: "server_error", code: m.code, message: m.message };
        if (m.retry_after_ms !== undefined) e.retry_after_ms = m.retry_after_ms;
        return this.emit(e);
      }
    }
    this.applySubscriptionOutputs(out);
    this.refreshReadiness(now);
  }

  private onWelcome(now: number, id: TransportId, w: Welcome): void {
    if (this.phase.state !== "handshaking") return;
    if (w.protocol !== PROTOCOL_VERSION) {
      // Retrying cannot help: the server will name the same version again.
      this.push({ output: "close_transport", id, code: CloseCode.PROTOCOL_ERROR, reason: "unsupported protocol version" });
      const error: DecodeError = { error: "invalid", kind: "welcome", detail: `protocol ${w.protocol} is not ${PROTOCOL_VERSION}` };
      this.loseTransport(now, { kind: "protocol_violation", error }, { kind: "protocol_mismatch", server: w.protocol });
      return;
    }
    // A pinging server keeps a healthy connection busy: probe only after 1.5
    // of its intervals of quiet, so such a connection sends no probes at all.
    const ping = w.ping_interval_ms ? Math.max(w.ping_interval_ms, MIN_SERVER_PING_MS) : undefined;
    const probeMs = ping === undefined ? this.config.probeIntervalMs : Math.max(this.config.probeIntervalMs, (ping * 3) / 2);
    const heartbeat = new Heartbeat(now, Math.floor(probeMs * US), this.config.probeTimeoutMs * US);
    heartbeat.serverPing = ping === undefined ? undefined : ping * US;
    this.phase = { state: "open", id, heartbeat };
    this.backoff.slots = w.pacing ? new PacingSlots(w.pacing.period_ms, w.pacing.phase_ms, now) : undefined;
    this.sessionId = w.session;
    this.emit({ event: "connected", session: w.session });
    const out: SubscriptionOutput[] = [];
    this.subscriptions.handleProtocolUp(now, out);
    this.applySubscriptionOutputs(out);
    this.refreshReadiness(now);
  }

  // ----- the reconnect controller -----

  /** The current transport is gone. The only place that decides what happens next. */
  private loseTransport(now: number, reason: DisconnectReason, halt?: HaltReason): void {
    const wasOpen = this.phase.state === "open";
    if (this.phase.state === "open") this.counters.probesSent += this.phase.heartbeat.probesSent;
    const advice = this.advice;
    this.advice = undefined;
    const cooldown = this.cooldownDeadline();
    // Ready for the whole cooldown even if the timer has not run yet (a throttled driver).
    if (cooldown !== undefined && cooldown <= now) this.resetBackoff();
    this.phase = { state: "idle" };
    this.dropTransportState(now);

    let retry: RetryPlan;
    if (halt) {
      this.phase = { state: "halted" };
      retry = { kind: "no" };
    } else if (!this.online) {
      this.phase = { state: "offline" };
      retry = { kind: "when_online" };
    } else if (reason.kind === "transport_failed" && reason.failure.kind === "unreachable") {
      retry = this.scheduleLocalRetry(now);
    } else {
      const r = this.scheduleReconnect(now, advice);
      if ("kind" in r) retry = r;
      else {
        halt = r.halt;
        retry = { kind: "no" };
      }
    }
    this.emit({ event: wasOpen ? "disconnected" : "connect_failed", reason, retry });
    if (halt) this.emit({ event: "halted", reason: halt });
  }

  private scheduleReconnect(now: number, advice: ReconnectAdvice | undefined): RetryPlan | { halt: HaltReason } {
    const attempts = this.backoff.attempt;
    const max = this.config.maxAttempts;
    if (max !== null && attempts >= max) {
      this.phase = { state: "halted" };
      return { halt: { kind: "exhausted", attempts } };
    }
    if (advice) {
      if (advice.reason === "deploy") this.deployBackoff = true;
      this.backoff.advice = retryWindow(now, advice.min_delay_ms, advice.max_delay_ms);
    }
    const onSlotGrid = this.backoff.slots !== undefined && this.backoff.attempt > 0;
    let delay = this.backoff.nextDelay(now, this.rng);
    // Deploy-related reconnects back off twice as long, except advised delays
    // and the server's slot grid, which already spreads the fleet.
    if (this.deployBackoff && !advice && !onSlotGrid) delay *= 2;
    if (advice) this.notBefore = now + delay;
    this.phase = { state: "waiting", until: now + delay };
    return { kind: "after", delay_ms: wholeMs(delay) };
  }

  /** No route from this device: retry soon on the local schedule, without advancing the backoff. */
  private scheduleLocalRetry(now: number): RetryPlan {
    const t = now + this.localBackoff.nextDelay(now, this.rng);
    const until = this.notBefore === undefined ? t : Math.max(this.notBefore, t);
    this.phase = { state: "waiting", until };
    return { kind: "after", delay_ms: wholeMs(until - now) };
  }

  private dial(now: number): void {
    this.notBefore = undefined;
    const id = ++this.nextTransport;
    this.counters.transportsOpened++;
    this.phase = { state: "connecting", id, deadline: now + this.config.connectTimeoutMs * US };
    this.push({ output: "open_transport", id, attempt: this.backoff.attempt });
  }

  /** Leave idle/halted on the application's word: fresh backoff, refused channels retried. */
  private resume(now: number): void {
    this.resetBackoff();
    this.subscriptions.retryRefused();
    this.dial(now);
  }

  private resetBackoff(): void {
    this.backoff.reset();
    this.deployBackoff = false;
  }

  /** The backoff resets after `reset_after` of continuous readiness, if there is anything to reset. */
  private cooldownDeadline(): number | undefined {
    if (this.readySince === undefined) return undefined;
    if (this.backoff.attempt === 0 && !this.deployBackoff) return undefined;
    return this.readySince + this.config.resetAfterMs * US;
  }

  private dropTransportState(now: number): void {
    this.refreshReadiness(now);
    this.emitSettled(this.registry.settleAll());
    this.subscriptions.handleTransportDown();
  }

  // ----- plumbing -----

  private refreshReadiness(now: number): void {
    const s = this.phase.state;
    const next = readinessOf(s === "handshaking" || s === "open", s === "open", this.subscriptions.allConfirmed());
    if (sameReadiness(next, this.current)) return;
    const wasReady = isReady(this.current);
    this.current = next;
    const ready = isReady(next);
    if (ready && !wasReady) this.readySince = now;
    else if (!ready) this.readySince = undefined;
    this.emit({ event: "readiness_changed", readiness: { ...next }, ready });
  }

  private applySubscriptionOutputs(out: SubscriptionOutput[]): void {
    const id = this.phase.state === "open" ? this.phase.id : undefined;
    for (const item of out) {
      if ("send" in item) {
        if (id !== undefined) this.push({ output: "transmit", id, message: item.send });
      } else this.emit(item.event);
    }
  }

  private emitSettled(settled: [number, RequestOutcome][]): void {
    for (const [id, outcome] of settled) this.emit({ event: "response", id, outcome });
  }

  private emit(event: Event): void {
    this.outputs.push({ output: "event", ...event });
  }

  private push(output: Output): void {
    this.outputs.push(output);
  }

  /** Time only moves forward. */
  private advance(nowMs: number): number {
    this.now = Math.max(this.now, fromMs(nowMs));
    return this.now;
  }
}
