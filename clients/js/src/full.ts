/**
 * `@belay/client/full`: the whole client of `@belay/client`, with what the
 * default entry leaves out to stay within its size budget: the
 * `tokenProvider` option and `subscriptionTokenProvider` (PROTOCOL.md §2.8,
 * §5.8), and the SSE fallback's switch back to WebSocket at the session's
 * next quiet moment (§1.7; use it with `@belay/client/fallback`).
 *
 *   import { BelayClient, UnauthorizedError } from "@belay/client/full";
 *   const client = new BelayClient("wss://example.com/ws", {
 *     tokenProvider: async () => {
 *       const r = await fetch("/belay-token");
 *       if (r.status === 401) throw new UnauthorizedError("signed out");
 *       return (await r.json()).token;
 *     },
 *   });
 *
 * The provider is asked before a dial when there is no token, the server
 * refused the last one, or it is near its expiry, and on the open session at
 * 75–90 % of the token's lifetime (sent in-band, no reconnect). A rejection
 * is retried with the backoff and never halts; `UnauthorizedError` (matched
 * by its `name`, so one from another bundle works too), or the server
 * refusing a token the provider just gave, halts with `auth_failed`.
 */
export * from "./index.js";
export { UnauthorizedError } from "./errors.js";
