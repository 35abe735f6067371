/**
 * Runs every shared conformance vector in vectors/ (copied from
 * ../../spec/vectors/ by scripts/vectors.mjs; see its
 * README.md, the whole contract for this runner).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Backoff } from "../src/core/backoff/state.js";
import { PacingSlots, retryWindow } from "../src/core/backoff/pacing.js";
import { parsePolicy } from "../src/policies.js";
import { makeConfig, type Config } from "../src/core/config.js";
import { decide, Heartbeat } from "../src/core/heartbeat.js";
import { RecordedDraws, SplitMix64 } from "../src/core/rng.js";
import { Session, type Input } from "../src/core/session.js";
import type { Failure } from "../src/core/transport.js";

type J = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), "../vectors");
const load = (file: string): J => JSON.parse(readFileSync(join(VECTORS, file), "utf8"));

/** The README's subset matcher; returns a mismatch description or undefined. */
export function subset(want: J, have: J, path = "$"): string | undefined {
  const show = (v: J) => (v === undefined ? "nothing" : JSON.stringify(v));
  if (want === null) return have === null || have === undefined ? undefined : `at ${path}: expected null, got ${show(have)}`;
  if (Array.isArray(want)) {
    if (!Array.isArray(have) || have.length !== want.length) return `at ${path}: expected ${show(want)}, got ${show(have)}`;
    for (let i = 0; i < want.length; i++) {
      const e = subset(want[i], have[i], `${path}[${i}]`);
      if (e) return e;
    }
    return undefined;
  }
  if (typeof want === "object") {
    if (typeof have !== "object" || have === null || Array.isArray(have)) return `at ${path}: expected ${show(want)}, got ${show(have)}`;
    for (const k of Object.keys(want)) {
      const e = subset(want[k], have[k], `${path}.${k}`);
      if (e) return e;
    }
    return undefined;
  }
  return want === have ? undefined : `at ${path}: expected ${show(want)}, got ${show(have)}`;
}

function check(what: string, want: J, have: J): void {
  const e = subset(want, have, what);
  if (e) throw new Error(e);
}

/** µs → whole ms, failing on a fraction (README: "a runner must fail …"). */
function wholeMs(us: number): number {
  if (us % 1000 !== 0) throw new Error(`${us} µs is not a whole millisecond`);
  return us / 1000;
}
function wholeMsOfMs(ms: number): number {
  if (!Number.isInteger(ms)) throw new Error(`${ms} ms is not a whole millisecond`);
  return ms;
}

// ----- heartbeat.json -----

describe("heartbeat.json", () => {
  const file = load("heartbeat.json");
  for (const c of file.decide as J[]) it(`decide: ${c.name}`, () => {
    const pending = c.pending_probe_at === null ? undefined : c.pending_probe_at * 1000;
    expect(decide(c.last_received_at * 1000, pending, c.now * 1000, c.interval_ms * 1000, c.timeout_ms * 1000)).toBe(c.expect);
  });
  for (const c of file.sequences as J[]) it(`sequence: ${c.name}`, () => {
    const hb = new Heartbeat(c.start * 1000, c.interval_ms * 1000, c.timeout_ms * 1000);
    if ("server_ping_interval_ms" in c) hb._serverPing = c.server_ping_interval_ms === null ? Infinity : c.server_ping_interval_ms * 1000;
    c.steps.forEach((step: J, i: number) => {
      try {
        if ("frame" in step) hb._handleFrame(step.frame * 1000);
        else {
          const r = hb._handleTimeout(step.tick * 1000);
          const action = r === "wait" || r === "probe" ? r : "close";
          check("action", step.expect, action);
          if ("cause" in step) check("cause", step.cause, action === "close" ? r : null);
        }
        if ("next_timeout_ms" in step) check("next_timeout_ms", step.next_timeout_ms, wholeMs(hb._pollTimeout()));
        if ("probes_sent" in step) check("probes_sent", step.probes_sent, hb._probesSent);
        if ("pending_probe_at" in step) {
          const got = hb._pendingProbeAt === undefined ? null : wholeMs(hb._pendingProbeAt);
          if (got !== step.pending_probe_at) throw new Error(`pending_probe_at: expected ${step.pending_probe_at}, got ${got}`);
        }
        if ("last_received_at" in step) check("last_received_at", step.last_received_at, wholeMs(hb._lastReceivedAt));
      } catch (e) {
        throw new Error(`${c.name} step ${i} ${JSON.stringify(step)}: ${(e as Error).message}`);
      }
    });
  });
});

// ----- backoff.json -----

describe("backoff.json", () => {
  const file = load("backoff.json");
  for (const c of file.splitmix64 as J[]) it(`splitmix64 seed ${c.seed}`, () => {
    const a = new SplitMix64(BigInt(c.seed));
    expect(c.u64.map(() => a._nextU64().toString())).toEqual(c.u64);
    const b = new SplitMix64(BigInt(c.seed));
    for (const num of c.unit_numerators) expect(b.nextUnit()).toBe(num * 2 ** -53);
  });
  for (const c of file.cases as J[]) it(c.name, () => {
    const policy = parsePolicy(c.policy);
    check("policy round trip", c.policy, policy);
    expect(JSON.stringify(policy)).toBe(JSON.stringify(c.policy));
    const backoff = new Backoff(policy);
    const rng = new RecordedDraws(c.draws);
    (c.delays_ms ?? []).forEach((want: number, i: number) => check(`delays_ms[${i}]`, want, wholeMs(backoff._nextDelay(0, rng))));
    (c.steps ?? []).forEach((step: J, i: number) => {
      try {
        if ("now" in step) check("delay_ms", step.delay_ms, wholeMs(backoff._nextDelay(step.now * 1000, rng)));
        else if ("reset" in step) backoff._reset();
        else if ("slots" in step) {
          const s = step.slots;
          backoff._slots = s === null ? undefined : new PacingSlots(s.period_ms, s.phase_ms, s.anchor * 1000);
        } else if ("advise" in step) {
          const a = step.advise;
          backoff._advice = retryWindow(a.at * 1000, a.min_delay_ms, a.max_delay_ms);
        } else throw new Error("unknown backoff step");
      } catch (e) {
        throw new Error(`step ${i} ${JSON.stringify(step)}: ${(e as Error).message}`);
      }
    });
    expect(rng.taken, "draws_taken").toBe(c.draws_taken);
    expect(backoff._attempt, "attempt").toBe(c.attempt);
  });
});

// ----- session/*.json -----

const CONFIG_FIELDS: Record<string, keyof Config> = {
  backoff: "backoff",
  max_attempts: "maxAttempts",
  reset_after_ms: "resetAfterMs",
  connect_timeout_ms: "connectTimeoutMs",
  probe_interval_ms: "probeIntervalMs",
  probe_timeout_ms: "probeTimeoutMs",
  request_timeout_ms: "requestTimeoutMs",
  subscribe_timeout_ms: "subscribeTimeoutMs",
  resubscribe_backoff: "resubscribeBackoff",
  online_delay_ms: "onlineDelayMs",
  unreachable_retry: "unreachableRetry",
  token: "token",
  token_provider: "tokenProvider",
};

export function configFromJson(json: J): Config {
  const overrides: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(json ?? {})) {
    const field = CONFIG_FIELDS[k];
    if (!field) throw new Error(`unknown config field ${k}`);
    overrides[field] = field === "backoff" || field === "resubscribeBackoff" || field === "unreachableRetry" ? parsePolicy(v) : v;
  }
  return makeConfig(overrides as Partial<Config>);
}

const ACTIONS = ["start", "set_token", "refresh_token", "token_failed", "refresh_subscription_token", "stop", "reconnect_now", "check_liveness", "subscribe", "unsubscribe", "request", "timeout", "input", "replace_transport_when_quiet"];
const CHECKS = ["at", "expect", "result", "state", "ready", "readiness", "next_timeout_ms", "attempt"];

function inputFromJson(a: J): Input {
  if ("opened" in a) return { kind: "opened", id: a.opened };
  if ("failed" in a) return { kind: "failed", id: a.failed, failure: a.failure as Failure };
  if ("closed" in a) return { kind: "closed", id: a.closed, code: a.code ?? null, reason: a.reason ?? "" };
  if ("frame" in a) return { kind: "frame", id: a.frame, text: a.text };
  if ("network" in a) return { kind: "network", online: a.network };
  throw new Error(`unknown input ${JSON.stringify(a)}`);
}

function perform(s: Session, action: string, arg: J, now: number): J {
  const orOk = (r: string | undefined) => r ?? "ok";
  switch (action) {
    case "start":
      return orOk(s.start(now));
    case "reconnect_now":
      return orOk(s.reconnectNow(now));
    case "stop":
      s.stop(now);
      return "ok";
    case "check_liveness":
      s.checkLiveness(now);
      return "ok";
    case "timeout":
      s.handleTimeout(now);
      return "ok";
    case "subscribe":
      // `{"channel": C, "token": T}`: with a subscription token.
      return orOk(typeof arg === "string" ? s.subscribe(now, arg) : s.subscribe(now, arg.channel, arg.token));
    case "refresh_subscription_token":
      return orOk(s.refreshSubscriptionToken(now, arg.channel, arg.token));
    case "unsubscribe":
      return orOk(s.unsubscribe(now, arg));
    case "request": {
      if ("params_repeat" in arg && "params" in arg) throw new Error("a request has params or params_repeat, not both");
      const repeat = arg.params_repeat;
      const r = s.request(now, {
        method: arg.method,
        params: repeat ? repeat.text.repeat(repeat.times) : arg.params ?? null,
        ...(arg.timeout_ms != null ? { timeoutMs: arg.timeout_ms } : {}),
        ...(typeof arg.idem === "string" ? { idempotencyKey: arg.idem } : {}),
      });
      // A refusal with fields (too_large: len, max) is named by its error.
      return typeof r === "object" ? r.error : r;
    }
    case "input":
      s.handleInput(now, inputFromJson(arg));
      return "ok";
    case "refresh_token":
      s.refreshToken(now, arg);
      return "ok";
    case "set_token":
      s.setToken(arg);
      return "ok";
    case "token_failed":
      s.tokenFailed(now, arg);
      return "ok";
    case "replace_transport_when_quiet":
      s.replaceTransportWhenQuiet(now, arg.by);
      return "ok";
  }
  throw new Error(`unknown action ${action}`);
}

export function runTrace(trace: J): void {
  const session = new Session(configFromJson(trace.config), 0, BigInt(trace.seed));
  let last = 0;
  trace.steps.forEach((step: J, i: number) => {
    try {
      const actions = Object.keys(step).filter((k) => ACTIONS.includes(k));
      const unknown = Object.keys(step).filter((k) => !ACTIONS.includes(k) && !CHECKS.includes(k));
      if (unknown.length) throw new Error(`unknown step field ${unknown[0]}`);
      if (actions.length !== 1) throw new Error("a step has exactly one action");
      const action = actions[0]!;
      if (step.at < last) throw new Error(`time goes backwards: ${step.at} ms after ${last} ms`);
      last = step.at;
      if (action !== "timeout") {
        const due = session.pollTimeout();
        if (due !== undefined && due < step.at) throw new Error(`invalid trace: a timeout is due at ${due} ms, before this step; add a timeout step`);
      }
      const result = perform(session, action, step[action], step.at);
      if ("result" in step) check("result", step.result, result);
      else if (typeof result === "string" && result !== "ok") throw new Error(`the command failed with ${result}`);
      const outputs: J[] = [];
      for (let o = session.pollOutput(); o; o = session.pollOutput()) outputs.push(JSON.parse(JSON.stringify(o)));
      const e = subset(step.expect, outputs, "expect");
      if (e) throw new Error(`outputs differ (${e})\n    expected: ${JSON.stringify(step.expect)}\n    actual:   ${JSON.stringify(outputs)}`);
      if ("state" in step) check("state", step.state, session.state());
      if ("ready" in step) check("ready", step.ready, session.isReady());
      if ("readiness" in step) check("readiness", step.readiness, session.readiness());
      if ("next_timeout_ms" in step) {
        const t = session.pollTimeout();
        const got = t === undefined ? null : wholeMsOfMs(t);
        if (got !== step.next_timeout_ms) throw new Error(`next_timeout_ms: expected ${step.next_timeout_ms}, got ${got}`);
      }
      if ("attempt" in step) check("attempt", step.attempt, session.attempt());
      // Every instant and delay the vectors check is a whole millisecond.
      for (const o of outputs) {
        const d = o.retry?.delay_ms;
        if (d !== undefined) wholeMsOfMs(d);
      }
    } catch (e) {
      throw new Error(`trace ${trace.name}, step ${i} ${JSON.stringify(step).slice(0, 200)}:\n  ${(e as Error).message}`);
    }
  });
}

describe("session/*.json", () => {
  const files = readdirSync(join(VECTORS, "session")).filter((f) => f.endsWith(".json")).sort();
  it("finds the traces", () => expect(files.length).toBeGreaterThan(0));
  it.each(files)("%s", (f: string) => {
    const trace = load(join("session", f));
    expect(trace.name + ".json").toBe(f);
    runTrace(trace);
  });
});

// The `switch` traces of fallback.json (its `choice` and `send_retry` cases: fallback_vectors.test.ts).
describe("fallback.json (switch)", () => {
  const traces = load("fallback.json").switch as J[];
  it("finds the traces", () => expect(traces.length).toBeGreaterThan(0));
  for (const trace of traces) it(trace.name, () => runTrace(trace));
});
