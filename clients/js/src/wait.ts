/**
 * `@belay/client/wait`: a request that waits for the connection instead of
 * failing at once. `client.request` stays the honest default: while the
 * protocol level is down it rejects with `NotReadyError` at once and sends
 * nothing. `requestWhenReady` waits for the protocol level to come up, then
 * sends; it still ends typed. Opt-in, so the default entry does not grow.
 *
 *   import { requestWhenReady } from "@belay/client/wait";
 *   const order = await requestWhenReady(client, "orders.create", { sku: "A1" }, { waitReady: 5000 });
 *
 * `waitReady`: `true` (the default here) waits until the connection is up or
 * the client is closed; a number waits at most that many ms. It rejects with
 * `NotReadyError` (never sent) when the wait ends unready, `NotReadyError`
 * with `stopped` after `close()`, the signal's reason when `signal` aborts
 * the wait; once sent, exactly as `client.request` (`timeout` starts then).
 */
import type { BelayClient, RequestOptions } from "./client.js";
import type { Json } from "./core/messages.js";

/** `client.request`'s options, and how long to wait for the connection. */
export interface WaitOptions extends RequestOptions {
  /** `true`: until up or closed; a number: at most that many ms; `false` or `0`: no wait. */
  waitReady?: boolean | number;
}

/** `client.request(method, params)`, once the connection can take it (within `waitReady`). */
export async function requestWhenReady(
  client: Pick<BelayClient, "request" | "onStatus">,
  method: string,
  params: Json = null,
  options: WaitOptions = {},
): Promise<Json> {
  const { waitReady = true, ...request } = options;
  try {
    return await client.request(method, params, request);
  } catch (e) {
    // By name: this entry is bundled apart from the client's classes.
    const refused = e as { name?: string; stopped?: boolean };
    if (refused?.name !== "NotReadyError" || refused.stopped || !waitReady) throw e;
    await up(client, waitReady, request.signal, e);
    return client.request(method, params, request);
  }
}

/** Resolves at the next status with the protocol level up (or stopped); rejects with `unready` when `wait` ms pass first. */
function up(client: Pick<BelayClient, "onStatus">, wait: true | number, signal: AbortSignal | undefined, unready: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    let armed = false;
    const end = (error?: unknown): void => {
      off();
      clearTimeout(timer);
      signal?.removeEventListener("abort", aborted);
      if (error === undefined) resolve();
      else reject(error);
    };
    const aborted = (): void => end(signal!.reason);
    // onStatus reports the current status at once: that one refused the request.
    const off = client.onStatus((s) => {
      if (armed && (s.protocol || s.state === "stopped")) end();
    });
    armed = true;
    const timer = wait === true ? undefined : setTimeout(() => end(unready), wait);
    if (signal?.aborted) return aborted();
    signal?.addEventListener("abort", aborted, { once: true });
  });
}
