import { fixed } from "../src/policies.js";
import { describe, expect, it } from "vitest";
import { makeConfig } from "../src/core/config.js";
import { Session, type Output } from "../src/core/session.js";
import { compareNames } from "../src/core/subscriptions.js";
import { SplitMix64 } from "../src/core/rng.js";
import { PacingSlots } from "../src/core/backoff/pacing.js";

const drain = (s: Session): Output[] => {
  const out: Output[] = [];
  for (let o = s.pollOutput(); o; o = s.pollOutput()) out.push(o);
  return out;
};

function openSession(): Session {
  const s = new Session(makeConfig({ backoff: fixed(1000) }), 0, 1);
  s.start(0);
  s.handleInput(1, { kind: "opened", id: 1 });
  s.handleInput(2, { kind: "frame", id: 1, text: '{"type":"welcome","session":"s","protocol":1}' });
  drain(s);
  return s;
}

describe("session", () => {
  it("drops everything from a replaced transport", () => {
    const s = openSession();
    s.handleInput(3, { kind: "closed", id: 1, code: null });
    drain(s);
    s.handleTimeout(1003);
    expect(drain(s)).toEqual([{ output: "open_transport", id: 2, attempt: 1 }]);
    for (const late of [
      { kind: "closed", id: 1, code: 1000 },
      { kind: "frame", id: 1, text: "garbage" },
      { kind: "opened", id: 1 },
    ] as const) {
      s.handleInput(1004, late);
      expect(drain(s)).toEqual([]);
    }
    expect(s.stats().staleInputs).toBe(3);
    expect(s.state()).toBe("connecting");
  });

  it("accepts fractional milliseconds and keeps whole-ms deadlines exact", () => {
    const s = new Session(makeConfig({ backoff: fixed(1000) }), 0.25, 1);
    s.start(0.5);
    expect(s.pollTimeout()).toBe(10000.5);
    s.handleTimeout(10000.499);
    expect(drain(s).map((o) => o.output)).toEqual(["open_transport"]);
    s.handleTimeout(10000.5);
    expect(drain(s).map((o) => o.output)).toEqual(["close_transport", "event"]);
  });

  it("every request settles once, even when the connection drops", () => {
    const s = openSession();
    const a = s.request(10, { method: "m" });
    const b = s.request(10, { method: "m", timeoutMs: 50 });
    expect([a, b]).toEqual([1, 2]);
    drain(s);
    s.handleTimeout(60);
    expect(drain(s)).toEqual([{ output: "event", event: "response", id: 2, outcome: { kind: "timeout" } }]);
    s.handleInput(70, { kind: "closed", id: 1, code: 1006 });
    const settled = drain(s).filter((o) => o.output === "event" && o.event === "response");
    expect(settled).toEqual([{ output: "event", event: "response", id: 1, outcome: { kind: "connection_closed" } }]);
    expect(s.request(80, { method: "m" })).toBe("not_ready");
  });

  it("time never goes backwards", () => {
    const s = openSession();
    s.request(5000, { method: "m", timeoutMs: 100 });
    s.handleTimeout(1); // an older clock reading is clamped to 5000
    expect(s.pollTimeout()).toBe(5100);
  });
});

describe("helpers", () => {
  it("orders channel names byte-wise (code points), like a BTreeMap", () => {
    const names = ["b", "a", "\u{1F600}", "\uFFFF", "ab"];
    expect(names.sort(compareNames)).toEqual(["a", "ab", "b", "\uFFFF", "\u{1F600}"]);
  });

  it("SplitMix64 takes seeds up to 2^64 − 1", () => {
    expect(new SplitMix64(0)._nextU64()).toBe(16294208416658607535n);
    expect(new SplitMix64(0).nextUnit()).toBe(0.8833108082136426);
  });

  it("pacing slots are exact to the microsecond", () => {
    const grid = new PacingSlots(20_000, 3_000, 100_000_000);
    expect(grid._nextSlotAfter(150_000_250)).toBe(163_000_000);
    expect(grid._nextSlotAfter(163_000_000)).toBe(183_000_000);
    expect(grid._nextSlotAfter(0)).toBe(3_000_000);
  });
});
