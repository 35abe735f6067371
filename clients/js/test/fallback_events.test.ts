// Reading the fallback's event stream (src/fallback/event_stream.ts) and
// where the stream lives (sseUrl).
import { describe, expect, it } from "vitest";
import { EventReader } from "../src/fallback/event_stream.js";
import { sseUrl } from "../src/fallback/sse_socket.js";

describe("EventReader", () => {
  it("reads open, messages and close, split anywhere", () => {
    const text = 'event: open\ndata: {"stream":"n1.abc"}\n\ndata: {"type":"welcome"}\n\n: padding\n\nevent: close\ndata: {"code":1012,"reason":"restart"}\n\n';
    for (let cut = 0; cut <= text.length; cut += 7) {
      const r = new EventReader();
      const events = [...r.push(text.slice(0, cut)), ...r.push(text.slice(cut))];
      expect(events).toEqual([
        { kind: "open", stream: "n1.abc" },
        { kind: "message", text: '{"type":"welcome"}' },
        { kind: "close", code: 1012, reason: "restart" },
      ]);
    }
  });

  it("accepts CRLF line ends and skips named events it does not know", () => {
    const r = new EventReader();
    expect(r.push('event: other\r\ndata: x\r\n\r\ndata: {"a":1}\r\n\r\n')).toEqual([{ kind: "message", text: '{"a":1}' }]);
  });

  it("refuses an open or close whose data is not what the spec says", () => {
    expect(() => new EventReader().push("event: open\ndata: {}\n\n")).toThrow(TypeError);
    expect(() => new EventReader().push('event: close\ndata: {"reason":"x"}\n\n')).toThrow(TypeError);
  });

  it("refuses an event longer than a frame before buffering more", () => {
    const r = new EventReader();
    expect(() => r.push("data: " + "x".repeat(1_048_576 + 2048))).toThrow(/frame limit/);
  });
});

describe("sseUrl", () => {
  it("replaces a last segment ws with sse, else appends /sse; keeps TLS", () => {
    expect(sseUrl("ws://h:1/ws")).toBe("http://h:1/sse");
    expect(sseUrl("wss://h/app/ws/")).toBe("https://h/app/sse");
    expect(sseUrl("ws://h/socket")).toBe("http://h/socket/sse");
  });
});
