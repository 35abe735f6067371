/**
 * A resume's `subscribed` is checked against the `since` the client sent
 * (PROTOCOL.md §5.6): the server's word alone never moves a position back,
 * skips publications or switches streams without a `recovery_failed`.
 */
import { describe, expect, it } from "vitest";
import { fixed } from "../src/policies.js";
import { makeConfig } from "../src/core/config.js";
import type { Event } from "../src/core/events.js";
import { Session } from "../src/core/session.js";

/** Channel events only (no readiness, no transmits). */
function events(s: Session): string[] {
  const out: string[] = [];
  for (let o = s.pollOutput(); o; o = s.pollOutput()) {
    if (o.output !== "event") continue;
    const e = o as Event;
    if (e.event === "subscribed") out.push(`subscribed recovered:${e.recovered}`);
    else if (e.event === "recovery_failed") out.push("recovery_failed");
    else if (e.event === "publication") out.push(`${e.epoch}/${e.offset}`);
  }
  return out;
}

/** The `subscribe` messages sent, as JSON. */
function subscribes(s: Session): unknown[] {
  const out: unknown[] = [];
  for (let o = s.pollOutput(); o; o = s.pollOutput()) if (o.output === "transmit" && o.message.type === "subscribe") out.push(o.message);
  return out;
}

class Server {
  t = 0;
  id = 1;
  constructor(readonly s: Session) {}
  send(msg: object): void {
    this.s.handleInput((this.t += 10), { kind: "frame", id: this.id, text: JSON.stringify(msg) });
  }
  welcome(): void {
    this.s.handleInput((this.t += 10), { kind: "opened", id: this.id });
    this.send({ type: "welcome", session: `s-${this.id}`, protocol: 1 });
  }
  subscribed(epoch: string, offset: number, recovered: boolean): void {
    this.send({ type: "subscribed", channel: "news", epoch, offset, recovered });
  }
  publish(epoch: string, ...offsets: number[]): void {
    for (const offset of offsets) this.send({ type: "publication", channel: "news", epoch, offset, data: offset });
  }
  /** Drop the transport and let the next one open (fixed 1 s backoff). */
  reconnect(): void {
    this.s.handleInput((this.t += 10), { kind: "closed", id: this.id, code: null });
    this.s.handleTimeout((this.t += 1000));
    this.id++;
    this.welcome();
  }
}

/** "news" delivered 1..5 of e1, then the transport lost and the resume sent with since {e1, 5}. */
function resumingFromFive(): Server {
  const s = new Session(makeConfig({ backoff: fixed(1000) }), 0, 1);
  s.subscribe(0, "news");
  s.start(0);
  const server = new Server(s);
  server.welcome();
  server.subscribed("e1", 0, false);
  server.publish("e1", 1, 2, 3, 4, 5);
  events(s);
  server.reconnect();
  expect(subscribes(s)).toEqual([{ type: "subscribe", channel: "news", since: { epoch: "e1", offset: 5 } }]);
  return server;
}

describe("resume answers are checked", () => {
  it("an honest resume (same epoch, offset = since, recovered) is recovered and continues after since", () => {
    const server = resumingFromFive();
    server.subscribed("e1", 5, true);
    server.publish("e1", 6);
    expect(events(server.s)).toEqual(["subscribed recovered:true", "e1/6"]);
  });

  it("a lower offset claimed as recovered never moves the position back: the replay brings no duplicate", () => {
    const server = resumingFromFive();
    server.subscribed("e1", 2, true);
    server.publish("e1", 3, 4, 5, 6);
    expect(events(server.s)).toEqual(["subscribed recovered:true", "e1/6"]);
  });

  it("a higher offset claimed as recovered is a recovery failure: the skipped offsets are announced, not lost silently", () => {
    const server = resumingFromFive();
    server.subscribed("e1", 7, true);
    server.publish("e1", 8);
    expect(events(server.s)).toEqual(["subscribed recovered:false", "recovery_failed", "e1/8"]);
  });

  it("another epoch claimed as recovered is a recovery failure, and the stream continues in the new epoch", () => {
    const server = resumingFromFive();
    server.subscribed("e2", 9, true);
    server.publish("e2", 10);
    expect(events(server.s)).toEqual(["subscribed recovered:false", "recovery_failed", "e2/10"]);
  });

  it("a lower offset not recovered is a recovery failure that still keeps the position", () => {
    const server = resumingFromFive();
    server.subscribed("e1", 3, false);
    server.publish("e1", 4, 5, 6);
    expect(events(server.s)).toEqual(["subscribed recovered:false", "recovery_failed", "e1/6"]);
  });

  it("a higher offset not recovered (history too short) takes the server's position", () => {
    const server = resumingFromFive();
    server.subscribed("e1", 40, false);
    server.publish("e1", 41);
    expect(events(server.s)).toEqual(["subscribed recovered:false", "recovery_failed", "e1/41"]);
  });

  it("the resubscribe after a gap, on the same transport, is checked the same way", () => {
    const server = resumingFromFive();
    server.subscribed("e1", 5, true);
    server.publish("e1", 6, 9); // 7 and 8 missing: resubscribe since {e1, 6}
    expect(events(server.s)).toEqual(["subscribed recovered:true", "e1/6"]);
    server.subscribed("e1", 8, true); // would skip 7 and 8
    server.publish("e1", 9);
    expect(events(server.s)).toEqual(["subscribed recovered:false", "recovery_failed", "e1/9"]);
  });

  it("a first subscribe takes the server's position and reports no recovery failure", () => {
    const s = new Session(makeConfig({ backoff: fixed(1000) }), 0, 1);
    s.start(0);
    const server = new Server(s);
    server.welcome();
    s.subscribe(100, "news");
    expect(subscribes(s)).toEqual([{ type: "subscribe", channel: "news" }]);
    server.subscribed("e1", 40, true);
    server.publish("e1", 41);
    expect(events(s)).toEqual(["subscribed recovered:false", "e1/41"]);
  });
});
