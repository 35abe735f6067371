/**
 * `@belay/client/tokens`: the whole client of `@belay/client`, with the
 * `tokenProvider` option (PROTOCOL.md §2.8). Opt-in, so the default entry
 * stays within its size budget for clients with a fixed token.
 *
 *   import { BelayClient, UnauthorizedError } from "@belay/client/tokens";
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
 * by its `name`, so one from the default entry works too), or the server
 * refusing a token the provider just gave, halts with `auth_failed`.
 */
export * from "./index.js";
export { UnauthorizedError } from "./errors.js";
