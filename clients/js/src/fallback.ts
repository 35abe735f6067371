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
 * opens, the stream is handed a `reconnect` advice with no delay, so the
 * session leaves it at its next quiet moment (no request in flight; new
 * requests meanwhile are refused `NotReadyError`, never sent), closes it
 * with 1000 `transport replaced` and dials a WebSocket at once. Its
 * subscriptions resume from their positions: nothing lost, nothing
 * repeated, one transport at a time.
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

/** The switch back (PROTOCOL.md §1.7): leave this transport once idle, redial at once. */
const SWITCH = JSON.stringify({ type: "reconnect", reason: "transport", min_delay_ms: 0, max_delay_ms: 0 });

export function sseFallback(options: FallbackOptions = {}): SseFallback {
  const WS = options.WebSocket ?? globalThis.WebSocket;
  const fetcher = options.fetch;
  const now = options.now ?? (() => performance.now());
  const choice = new TransportChoice(options);
  let kind: TransportKind = "websocket";
  /** The open SSE transport, if the session runs on one; probes run only then. */
  let live: SseSocket | undefined;
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
      choice.handleProbe(now(), opened);
      if (opened && live && choice.pollSwitch(true)) {
        live._replacedReason = "transport replaced";
        live._inject(SWITCH);
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
    const socket = dialKind === "sse" ? new SseSocket(dialUrl, fetcher) : new WS(dialUrl);
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
