/**
 * `@belay/client/fallback`: when WebSockets are blocked (a proxy that
 * refuses or strips the upgrade), the same session over an SSE stream and
 * POSTs (spec/PROTOCOL.md §1.7), chosen by itself, and back on WebSocket
 * once it works again. Opt-in, so the default entry does not grow.
 *
 *   import { BelayClient } from "@belay/client";
 *   import { sseFallback } from "@belay/client/fallback";
 *   const fallback = sseFallback();
 *   const client = new BelayClient("wss://example.com/ws", { WebSocket: fallback.WebSocket });
 *   fallback.kind; // "websocket" | "sse": the transport of the last dial that opened
 *
 * It is a transport factory: every dial the client makes asks
 * `TransportChoice` (the same rules as the Rust client's) which kind to
 * create. A WebSocket that fails before opening sends the next dial to SSE
 * (after the client's usual backoff: readiness, request settling, recovery
 * and backoff are the session's, whatever carries the frames). On SSE, a
 * WebSocket probe every `retryWebSocketEveryMs` (default 60 s); once one
 * opens, the next dial is a WebSocket and the stream fires `belay:replace`
 * (its `withinMs`: `switchWithinMs`, default 30 s), on which the client
 * calls `Session.replaceTransportWhenQuiet`: the session keeps taking
 * requests on the stream and, at its first moment with none in flight,
 * closes it with 1000 `transport replaced` and dials a WebSocket at once.
 * Only if no such moment comes within `withinMs` does it refuse new
 * requests (`NotReadyError`, never sent) until the last is answered. Its
 * subscriptions resume from their positions: nothing lost, nothing
 * repeated, one transport at a time. The sends retry as `SendRetry`
 * decides (the same rule as the Rust client's).
 *
 * Same origin only (the POSTs carry `Belay-Stream` and `Belay-Seq` headers,
 * which a cross-origin server would have to allow). Over HTTP/1.1 a browser
 * opens at most 6 connections per origin: each tab on the fallback holds one
 * for its stream and uses a second for its sends, so up to 3 tabs of one
 * origin work side by side; serve HTTP/2 (nginx `http2 on`) for more.
 */
import { TransportChoice, type FallbackConfig, type TransportKind } from "./core/transport_choice.js";
import { SseSocket } from "./fallback/sse_socket.js";

export type { FallbackConfig, TransportKind };
export { SseSocket };

export interface FallbackOptions extends Partial<FallbackConfig> {
  /** The WebSocket class for dials and probes (default: `globalThis.WebSocket`). */
  WebSocket?: typeof WebSocket;
  /** The `fetch` the stream and the sends use (default: `globalThis.fetch`). */
  fetch?: typeof fetch;
  /** The clock, in ms (default: `performance.now()`). */
  now?: () => number;
}

export interface SseFallback {
  /** Pass as `BelayOptions.WebSocket`. */
  readonly WebSocket: typeof WebSocket;
  /** The transport of the last dial that opened. */
  readonly kind: TransportKind;
}

/** The event a stream fires when the session is to move back to WebSocket (PROTOCOL.md §1.7; `client.ts` listens). */
export const REPLACE_EVENT = "belay:replace";

export function sseFallback(options: FallbackOptions = {}): SseFallback {
  const WS = options.WebSocket ?? globalThis.WebSocket;
  const fetcher = options.fetch;
  const now = options.now ?? (() => performance.now());
  const choice = new TransportChoice(options);
  let kind: TransportKind = "websocket";
  /** The open SSE transport, if the session runs on one; probes run only then. */
  let live: SseSocket | undefined;
  /** The transport of the last dial, open or not: the one a switch is for. */
  let latest: WebSocket | SseSocket | undefined;
  let url = "";
  let timer: ReturnType<typeof setTimeout> | undefined;

  const offline = () => typeof navigator !== "undefined" && navigator.onLine === false;

  const arm = (): void => {
    clearTimeout(timer);
    timer = undefined;
    const at = choice.pollTimeout();
    if (at !== undefined && live) timer = setTimeout(probe, Math.max(0, Math.ceil(at - now())));
  };

  const probe = (): void => {
    timer = undefined;
    if (!live || !choice.pollProbe(now())) return arm();
    let settled = false;
    const done = (opened: boolean) => {
      if (settled) return;
      settled = true;
      const at = now();
      choice.handleProbe(at, opened);
      const by = choice.pollSwitch();
      // The session moves at its next quiet moment; with no stream (lost,
      // or a WebSocket dial under way) the next dial is a WebSocket anyway.
      if (by !== undefined && latest instanceof SseSocket && latest.readyState !== 3) {
        latest.dispatchEvent(Object.assign(new Event(REPLACE_EVENT), { withinMs: Math.max(0, by - at) }));
      }
      arm();
    };
    let ws: WebSocket;
    try {
      ws = new WS(url);
    } catch {
      return done(false);
    }
    ws.onopen = () => {
      ws.close(1000, "probe");
      done(true);
    };
    // `onerror` must be set: an EventEmitter-based WebSocket (ws, in Node) throws an `error` nobody listens to.
    ws.onclose = ws.onerror = () => done(false);
  };

  function dial(dialUrl: string): WebSocket | SseSocket {
    url = dialUrl;
    const dialKind = choice.next();
    const socket = dialKind === "sse" ? new SseSocket(dialUrl, fetcher, now) : new WS(dialUrl);
    latest = socket;
    let opened = false;
    let closedByClient = false;
    const close = socket.close.bind(socket);
    socket.close = (code?: number, reason?: string) => {
      closedByClient = true;
      close(code, reason);
    };
    socket.addEventListener("open", () => {
      opened = true;
      kind = dialKind;
      choice.handleDial(now(), dialKind, { opened: true });
      if (socket instanceof SseSocket) live = socket;
      arm();
    });
    let failed = false;
    // Only a failure before opening says anything about the path (a
    // connect timeout is the session's, and no route is this device's).
    // Counted once: browsers fire `error` then `close`, Node 20's own
    // WebSocket `error` alone.
    const fail = (): void => {
      if (!opened && !closedByClient && !failed && !offline()) choice.handleDial(now(), dialKind, { opened: false, failure: { kind: "network", detail: "closed before open" } });
      failed = true;
    };
    socket.addEventListener("error", fail);
    socket.addEventListener("close", () => {
      fail();
      if (live === socket) {
        live = undefined;
        arm();
      }
    });
    return socket;
  }

  class FallbackSocket {
    constructor(dialUrl: string) {
      return dial(dialUrl) as unknown as FallbackSocket;
    }
  }

  return {
    WebSocket: FallbackSocket as unknown as typeof WebSocket,
    get kind() {
      return kind;
    },
  };
}
