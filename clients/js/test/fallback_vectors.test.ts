// spec/vectors/fallback.json's `choice` sequences (TransportChoice) and
// `send_retry` cases (SendRetry), as crates/belay-proto/tests/fallback_vectors.rs
// runs them; its `switch` traces run in vectors.test.ts with the session traces.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SendRetry, type SendOutcome } from "../src/core/send_retry.js";
import { TransportChoice, type FallbackConfig, type TransportKind } from "../src/core/transport_choice.js";
import type { Failure } from "../src/core/transport.js";

type J = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const file = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), "../../../spec/vectors/fallback.json"), "utf8"));

/** The README's subset match: every expected key present with an equal value; `null` also matches an absent key. */
function matches(want: J, have: J): boolean {
  if (want === null) return have === null || have === undefined;
  if (typeof want === "object") return typeof have === "object" && have !== null && Object.keys(want).every((k) => matches(want[k], have[k]));
  return want === have;
}

function configOf(json: J): Partial<FallbackConfig> {
  const names: Record<string, keyof FallbackConfig> = {
    after_failures: "afterFailures",
    retry_websocket_every_ms: "retryWebSocketEveryMs",
    switch_within_ms: "switchWithinMs",
  };
  const config: Partial<FallbackConfig> = {};
  for (const [k, v] of Object.entries(json)) {
    const name = names[k];
    if (!name) throw new Error(`unknown config field ${k}`);
    config[name] = v as number;
  }
  return config;
}

function choiceStep(c: TransportChoice, step: J): void {
  const at = step.at as number;
  if ("dial" in step) {
    const kind = step.dial as TransportKind;
    if (step.outcome === "opened") c.handleDial(at, kind, { opened: true });
    else if (step.outcome?.failed) {
      const failure = step.outcome.failed as Failure;
      c.handleDial(at, kind, { opened: false, failure });
      const told = c.failureForSession(kind, failure);
      if ("told" in step && !matches(step.told, told)) throw new Error(`told: expected ${JSON.stringify(step.told)}, got ${JSON.stringify(told)}`);
    } else throw new Error(`unknown outcome ${JSON.stringify(step.outcome)}`);
  } else if ("poll_probe" in step) expect(c.pollProbe(at), "poll_probe").toBe(step.poll_probe);
  else if ("probe" in step) c.handleProbe(at, step.probe === "opened");
  else if ("poll_switch" in step) expect(c.pollSwitch() ?? null, "poll_switch").toBe(step.poll_switch);
  else throw new Error("a step needs one of dial, poll_probe, probe, poll_switch");
  if ("next" in step) expect(c.next(), "next").toBe(step.next);
  if ("on_fallback" in step) expect(c.onFallback(), "on_fallback").toBe(step.on_fallback);
  if ("switching" in step) expect(c.isSwitching(), "switching").toBe(step.switching);
  if ("poll_timeout" in step) expect(c.pollTimeout() ?? null, "poll_timeout").toBe(step.poll_timeout);
}

describe("fallback.json (choice)", () => {
  it("finds the sequences", () => expect(file.choice.length).toBeGreaterThan(0));
  for (const seq of file.choice as J[]) {
    it(seq.name, () => {
      const c = new TransportChoice(configOf(seq.config));
      (seq.steps as J[]).forEach((step, i) => {
        try {
          choiceStep(c, step);
        } catch (e) {
          throw new Error(`step ${i} ${JSON.stringify(step)}:\n  ${(e as Error).message}`);
        }
      });
    });
  }
});

function outcomeOf(json: J): SendOutcome {
  if (json === "no_answer" || json === "timed_out") return json;
  if (typeof json?.status !== "number") throw new Error(`unknown outcome ${JSON.stringify(json)}`);
  return { status: json.status, ...(json.retry_after_ms !== undefined ? { retryAfterMs: json.retry_after_ms } : {}) };
}

describe("fallback.json (send_retry)", () => {
  it("finds the cases", () => expect(file.send_retry.length).toBeGreaterThan(0));
  for (const c of file.send_retry as J[]) {
    it(c.name, () => {
      const retry = new SendRetry(c.start);
      expect(retry.deadline(), "deadline").toBe(c.deadline);
      (c.steps as J[]).forEach((step, i) => {
        const got = retry.handleOutcome(step.at, outcomeOf(step.outcome));
        const shown = got.kind === "sent" ? "sent" : got.kind === "retry" ? { retry_at: got.retryAt } : got.failure.kind === "network" ? "give_up" : got;
        expect(shown, `step ${i}`).toEqual(step.step);
      });
    });
  }
});
