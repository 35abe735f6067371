/**
 * The advertised server ping interval is clamped to [1 s, 120 s]
 * (PROTOCOL.md §3.2): no `welcome` can switch failure detection off.
 */
import { describe, expect, it } from "vitest";
import { fixed } from "../src/policies.js";
import { makeConfig, type Config } from "../src/core/config.js";
import { Session, type Output } from "../src/core/session.js";

const drain = (s: Session): Output[] => {
  const out: Output[] = [];
  for (let o = s.pollOutput(); o; o = s.pollOutput()) out.push(o);
  return out;
};

/** An open session whose `welcome` (at 0) advertised `ping`. */
function welcomed(ping: number | undefined, config: Partial<Config> = {}): Session {
  const s = new Session(makeConfig({ backoff: fixed(1000), ...config }), 0, 1);
  s.start(0);
  s.handleInput(0, { kind: "opened", id: 1 });
  const w = ping === undefined ? { type: "welcome", session: "s", protocol: 1 } : { type: "welcome", session: "s", protocol: 1, ping_interval_ms: ping };
  s.handleInput(0, { kind: "frame", id: 1, text: JSON.stringify(w) });
  drain(s);
  return s;
}

/** Run every timer up to `until`; the outputs. */
function runUntil(s: Session, until: number): Output[] {
  const out: Output[] = [];
  for (let t = s.pollTimeout(); t !== undefined && t <= until; t = s.pollTimeout()) {
    s.handleTimeout(t);
    out.push(...drain(s));
    if (s.state() !== "open") break;
  }
  return out;
}

describe("server ping interval clamp", () => {
  it("a server advertising 2^53 ms is still probed after 180 s of quiet and dropped 10 s later", () => {
    const s = welcomed(2 ** 53);
    expect(runUntil(s, 179_999)).toEqual([]);
    expect(s.pollTimeout()).toBe(180_000);
    s.handleTimeout(180_000);
    expect(drain(s)).toEqual([{ output: "transmit", id: 1, message: { type: "ping" } }]);
    s.handleTimeout(190_000);
    expect(drain(s)[0]).toEqual({ output: "close_transport", id: 1, code: 4000, reason: "heartbeat timeout" });
    expect(s.state()).toBe("waiting");
  });

  it("the watchdog of a huge advertisement fires after 2 x 120 s without a frame", () => {
    const s = welcomed(2 ** 53 - 1, { probeTimeoutMs: 100_000 });
    const out = runUntil(s, 300_000);
    expect(out.find((o) => o.output === "close_transport")).toBeDefined();
    expect(out.at(-1)).toMatchObject({ event: "disconnected", reason: { kind: "heartbeat_timeout", cause: "server_pings_missing" } });
    expect(s.pollTimeout()).toBe(241_000); // closed at 240 s, plus the 1 s backoff
  });

  it("120 000 ms is honoured as advertised; anything above counts as 120 000", () => {
    // The watchdog's deadline after the probe at 1.5 x I shows I (probe timeout longer than I / 2).
    const watchdogAfterProbe = (ping: number): number | undefined => {
      const s = welcomed(ping, { probeTimeoutMs: 100_000 });
      s.handleTimeout(s.pollTimeout()!);
      return s.pollTimeout();
    };
    expect(watchdogAfterProbe(119_000)).toBe(238_000);
    expect(watchdogAfterProbe(120_000)).toBe(240_000);
    expect(watchdogAfterProbe(120_001)).toBe(240_000);
    expect(watchdogAfterProbe(86_400_000)).toBe(240_000);
  });

  it("a probe interval longer than 180 s is kept; only the server's share is bounded", () => {
    const s = welcomed(2 ** 53, { probeIntervalMs: 600_000 });
    expect(s.pollTimeout()).toBe(240_000); // the watchdog, before the client's own probe
  });

  it("0 or no ping_interval_ms still means the server does not ping: no watchdog", () => {
    for (const ping of [0, undefined]) {
      const s = welcomed(ping);
      s.handleTimeout(10_000); // the client's own probe
      expect(s.pollTimeout()).toBe(20_000); // its timeout, no watchdog earlier
    }
  });
});
