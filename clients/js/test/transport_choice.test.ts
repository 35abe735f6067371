// The fallback's decisions (core/transport_choice.ts), scenario by scenario,
// as the Rust core's (crates/belay-proto/src/client/transport_choice/tests.rs).
import { describe, expect, it } from "vitest";
import { TransportChoice, type DialOutcome } from "../src/core/transport_choice.js";

const S = 1000;
const blocked: DialOutcome = { opened: false, failure: { kind: "rejected", status: 400 } };
const reset: DialOutcome = { opened: false, failure: { kind: "network", detail: "closed before open" } };
const opened: DialOutcome = { opened: true };

function onFallback(): TransportChoice {
  const c = new TransportChoice();
  c.handleDial(0, "websocket", blocked);
  c.handleDial(0, "sse", opened);
  return c;
}

describe("TransportChoice", () => {
  it("keeps every dial on WebSocket while WebSocket opens", () => {
    const c = new TransportChoice();
    expect(c.next()).toBe("websocket");
    c.handleDial(0, "websocket", opened);
    expect(c.next()).toBe("websocket");
    expect(c.onFallback()).toBe(false);
    expect(c.pollTimeout()).toBeUndefined();
  });

  it("sends the next dial to SSE after a blocked upgrade, and stays there", () => {
    const c = new TransportChoice();
    c.handleDial(0, "websocket", reset);
    expect(c.next()).toBe("sse");
    c.handleDial(1 * S, "sse", opened);
    expect(c.onFallback()).toBe(true);
    expect(c.next()).toBe("sse");
    expect(c.pollTimeout()).toBe(61 * S);
  });

  it("does not fall back for the server's own refusals or for no route", () => {
    for (const status of [429, 503, 401]) {
      const c = new TransportChoice();
      c.handleDial(0, "websocket", { opened: false, failure: { kind: "rejected", status } });
      expect(c.next(), String(status)).toBe("websocket");
    }
    const c = new TransportChoice();
    c.handleDial(0, "websocket", { opened: false, failure: { kind: "unreachable", detail: "offline" } });
    expect(c.next()).toBe("websocket");
  });

  it("takes `afterFailures` failures in a row", () => {
    const c = new TransportChoice({ afterFailures: 3 });
    c.handleDial(0, "websocket", blocked);
    c.handleDial(0, "websocket", blocked);
    expect(c.next()).toBe("websocket");
    c.handleDial(0, "websocket", blocked);
    expect(c.next()).toBe("sse");
  });

  it("alternates when both fail (a server that is down)", () => {
    const c = new TransportChoice();
    c.handleDial(0, "websocket", reset);
    c.handleDial(1 * S, "sse", reset);
    expect(c.next()).toBe("websocket");
    c.handleDial(2 * S, "websocket", reset);
    expect(c.next()).toBe("sse");
  });

  it("probes every interval, one at a time", () => {
    const c = onFallback();
    expect(c.pollProbe(59 * S)).toBe(false);
    expect(c.pollProbe(60 * S)).toBe(true);
    expect(c.pollProbe(61 * S)).toBe(false);
    expect(c.pollTimeout()).toBeUndefined();
    c.handleProbe(62 * S, false);
    expect(c.pollTimeout()).toBe(122 * S);
    expect(c.pollSwitch()).toBeUndefined();
  });

  it("hands the switch and its bound (switch_within after the probe) over once, the next dial a WebSocket", () => {
    const c = onFallback();
    expect(c.pollProbe(60 * S)).toBe(true);
    c.handleProbe(60 * S, true);
    expect(c.isSwitching()).toBe(true);
    expect(c.next()).toBe("websocket");
    expect(c.pollSwitch()).toBe(90 * S);
    expect(c.pollSwitch()).toBeUndefined();
    expect(c.pollTimeout()).toBeUndefined();
    c.handleDial(61 * S, "websocket", opened);
    expect(c.onFallback()).toBe(false);
    expect(c.pollTimeout()).toBeUndefined();
  });

  it("goes back to the fallback when the switch's WebSocket fails", () => {
    const c = onFallback();
    c.pollProbe(60 * S);
    c.handleProbe(60 * S, true);
    c.pollSwitch();
    c.handleDial(61 * S, "websocket", blocked);
    expect(c.next()).toBe("sse");
    c.handleDial(62 * S, "sse", opened);
    expect(c.onFallback()).toBe(true);
    expect(c.pollTimeout()).toBe(122 * S);
  });
});
