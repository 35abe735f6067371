import { fixed } from "../src/policies.js";
import { describe, expect, it } from "vitest";
import { makeConfig } from "../src/core/config.js";
import { Session, type Output } from "../src/core/session.js";
import { compareNames } from "../src/core/subscriptions.js";
import { SplitMix64 } from "../src/core/rng.js";
import { PacingSlots } from "../src/core/backoff/pacing.js";
import { Heartbeat } from "../src/core/heartbeat.js";

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
  it("the next slot after an instant before the slots' anchor", () => {
    const grid = new PacingSlots(20_000, 3_000, 100_000_000); // slots at 103 000 000 + k x 20 000 000 µs
    expect(grid._nextSlotAfter(82_999_999)).toBe(83_000_000);
    expect(grid._nextSlotAfter(83_000_000)).toBe(103_000_000);
    expect(grid._nextSlotAfter(62_000_001)).toBe(63_000_000);
  });
});

// The Rust core's heartbeat/beat.rs tests, through the heartbeat that keeps the beat.
describe("the fleet's beat", () => {
  const S = 1000; // µs per ms
  const beatOf = (periodMs: number, phaseMs: number, originMs: number | undefined, intervalMs: number, anchorMs: number, timeoutMs = 25_000) => {
    const hb = new Heartbeat(anchorMs * S, intervalMs * S, timeoutMs * S);
    hb._setBeat(new PacingSlots(periodMs, phaseMs, anchorMs * S), originMs);
    return hb;
  };
  it("no origin, no beat: probes one interval after the last frame", () => {
    const hb = beatOf(20_000, 5_000, undefined, 10_000, 0);
    expect(hb._beatEvery).toBeUndefined();
    expect(hb._probeDueAt()).toBe(10_000 * S);
  });

  /** The first beat instant after `tMs` (a probe due then if the last frame, the answer to a probe, was then). */
  const nextAfter = (hb: Heartbeat, tMs: number) => {
    hb._lastReceivedAt = tMs * S;
    return hb._probeDueAt() / S;
  };

  it("a short beat is set on the slots and never drifts", () => {
    // Slots at 50 000 + 7 000 + k x 20 000; a 7 s interval gives ceil(20 / 7) = 3 beats per
    // period, ceil(j x 20 000 000 / 3) µs into it, the first 4 750 + 250 ms before a slot:
    // 52 s, 58.666667 s, 65.333334 s, 72 s, ...
    const hb = beatOf(20_000, 7_000, 3_000, 7_000, 50_000, 4_750);
    expect(hb._probeDueAt() / S).toBe(52_000); // idle after the welcome: the first beat after it
    expect(nextAfter(hb, 52_000)).toBe(58_666.667);
    expect(nextAfter(hb, 58_666.666)).toBe(58_666.667);
    expect(nextAfter(hb, 58_666.667)).toBe(65_333.334);
    expect(nextAfter(hb, 65_333.334)).toBe(72_000);
    const later = 72_000 + 20_000 * 1_000_000;
    expect(nextAfter(hb, later - 1)).toBe(later);
    expect(nextAfter(hb, later - 6_667)).toBe(later - 6_666.666);
  });

  it("a beat longer than the period falls on every f-th slot; as long as it, on every slot", () => {
    const long = beatOf(20_000, 7_000, 3_000, 45_000, 50_000, 4_750); // every 2 periods: 52 000 + k x 40 000
    expect(long._probeDueAt() / S).toBe(52_000);
    expect(nextAfter(long, 52_000)).toBe(92_000);
    const one = beatOf(20_000, 7_000, 3_000, 20_000, 50_000, 4_750); // 52 000 + k x 20 000
    expect(nextAfter(one, 52_000)).toBe(72_000);
    expect(nextAfter(one, 71_999)).toBe(72_000);
  });

  it("clients of one plan share the beat whenever they connected", () => {
    // The same slot (phase 8 000 after a welcome at 0, 5 000 after one at 123 000).
    const early = beatOf(20_000, 8_000, 0, 10_000, 0);
    const late = beatOf(20_000, 5_000, 123_000, 10_000, 123_000);
    for (const t of [200_000, 345_678, 999_999]) expect(nextAfter(early, t)).toBe(nextAfter(late, t));
    expect(nextAfter(early, 200_000)).toBe(202_750); // 8 000 - 25 250 + k x 10 000
  });

  it("only an idle connection follows the beat; our own probe on it is a plain silent loss", () => {
    const hb = beatOf(20_000, 7_000, 3_000, 10_000, 50_000, 5_000); // beats at 51 750 + k x 10 000
    hb._handleFrame(52_000 * S); // data: busy
    expect(hb._probeDueAt() / S).toBe(62_000);
    expect(hb._handleTimeout(62_000 * S)).toBe("probe");
    hb._handleFrame(63_000 * S, "pong"); // the pong: idle again
    expect(hb._probeDueAt() / S).toBe(71_750);
    expect(hb._handleTimeout(71_750 * S)).toBe("probe");
    expect(hb._handleTimeout(76_750 * S)).toBe("probe_unanswered");
    expect(hb._noticedOnBeat(76_750 * S)).toBe(0);
  });

  it("a zero interval has no beat", () => {
    const hb = new Heartbeat(0, 999, 1);
    hb._setBeat(new PacingSlots(20_000, 0, 0), 1);
    expect(hb._beatEvery).toBeUndefined();
  });

  /** A server that pings every 20 s (on the beat if `beat`): probes after 30 s of quiet, answered within `timeoutMs`; started at 1 s. */
  const pingedBy = (beat: boolean, timeoutMs: number) => {
    const hb = new Heartbeat(1_000 * S, 30_000 * S, timeoutMs * S);
    hb._serverPing = 20_000 * S;
    hb._serverBeat = beat;
    return hb;
  };

  it("a silent death after the server's beat ping is noticed on the server's beat", () => {
    const hb = pingedBy(true, 15_000); // the watchdog's close first
    hb._handleFrame(8_000 * S, "ping");
    expect(hb._handleTimeout(38_000 * S)).toBe("probe");
    expect(hb._noticedOnBeat(47_999 * S)).toBe(0); // nothing due yet
    expect(hb._handleTimeout(48_000 * S)).toBe("server_pings_missing");
    expect(hb._noticedOnBeat(48_000 * S)).toBe(20_000 * S);

    const probed = pingedBy(true, 5_000); // the probe's close first
    probed._handleFrame(8_000 * S, "ping");
    expect(probed._handleTimeout(38_000 * S)).toBe("probe");
    expect(probed._handleTimeout(43_000 * S)).toBe("probe_unanswered");
    expect(probed._noticedOnBeat(43_000 * S)).toBe(20_000 * S);
  });

  it("only while the server's ping is the last frame, and only on its beat", () => {
    for (const [beat, last] of [
      [true, "pong"],
      [true, "publication"],
      [true, undefined], // of a type this client does not know
      [false, "ping"], // a server that pings without its plan's origin
    ] as const) {
      const hb = pingedBy(beat, 10_000);
      hb._handleFrame(8_000 * S, "ping");
      hb._handleFrame(9_000 * S, last);
      expect(hb._handleTimeout(39_000 * S)).toBe("probe");
      expect(hb._handleTimeout(49_000 * S)).toBe("server_pings_missing"); // and the probe unanswered
      expect(hb._noticedOnBeat(49_000 * S)).toBe(0);
    }
  });
});

describe("the server's beat in the session", () => {
  const serverBeat = (last: string) => {
    const backoff = { kind: "server_paced", first_window_ms: 1000, fallback: fixed(5000) } as const;
    const s = new Session(makeConfig({ backoff, probeIntervalMs: 10_000, probeTimeoutMs: 10_000 }), 0, 7);
    s.start(0);
    s.handleInput(1_000, { kind: "opened", id: 1 });
    const pacing = { period_ms: 20_000, phase_ms: 7_000, origin_ms: 3_000 };
    s.handleInput(1_000, { kind: "frame", id: 1, text: JSON.stringify({ type: "welcome", session: "s", protocol: 1, ping_interval_ms: 20_000, pacing }) });
    s.handleInput(8_000, { kind: "frame", id: 1, text: '{"type":"ping"}' });
    s.handleInput(9_000, { kind: "frame", id: 1, text: last });
    drain(s);
    for (let t = s.pollTimeout()!; s.state() === "open"; t = s.pollTimeout()!) s.handleTimeout(t);
    return drain(s).find((o) => o.output === "event" && o.event === "disconnected");
  };

  it("any frame after the server's ping, even of an unknown type, makes a later silent death wait for its slot", () => {
    // The watchdog fires at 49 000 (40 s after the last frame); the next slot is 8 000 + k x 20 000.
    for (const last of ['{"type":"pong"}', '{"type":"future"}']) {
      expect(serverBeat(last)).toMatchObject({ reason: { kind: "heartbeat_timeout", cause: "server_pings_missing" }, retry: { kind: "after", delay_ms: 19_000 } });
    }
    // The server's ping the last frame: at once (the vector's case, one frame later).
    expect(serverBeat('{"type":"ping"}')).toMatchObject({ retry: { kind: "after", delay_ms: 0 } });
  });
});

