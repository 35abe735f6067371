/**
 * What the SSE fallback's driver does with one send (`POST /sse/send`,
 * spec/PROTOCOL.md §1.7) until it is answered 204 or the transport is given
 * up (`client/transport_choice/send_retry.rs`). Pure and clock-free: times
 * are the driver's ms.
 *
 *   2xx ──▶ sent
 *   no answer (failed on the way), 502, 503, 504 ──▶ retry: at once, +500 ms, +2 s
 *     (a Retry-After, capped at 5 s, when longer), same body, same Belay-Seq
 *   any other answer, no answer by deadline(), no retry left or no time left ──▶ give up
 *
 * A repeat is harmless: the server answers a `Belay-Seq` it already read
 * 204 and ignores the body. The whole send has 15 s (the server's own 10 s
 * wait for the connection to read a body, and a little more).
 *
 * Only in `@belay/client/fallback`: the default entry never imports it.
 */
import type { Failure } from "./transport.js";

export interface SendRetryPolicy {
  /** The wait before each retry (ms); as many retries as delays. */
  retryDelaysMs: number[];
  /** How long one send may take, all its attempts and waits included (ms). */
  budgetMs: number;
  /** The longest `Retry-After` taken from an answer (ms). */
  maxHintMs: number;
}

export function defaultSendRetryPolicy(): SendRetryPolicy {
  return { retryDelaysMs: [0, 500, 2000], budgetMs: 15_000, maxHintMs: 5000 };
}

/** How one attempt ended: an answer (its status and `Retry-After` in ms), no answer, or no answer by the deadline. */
export type SendOutcome = { status: number; retryAfterMs?: number } | "no_answer" | "timed_out";

/** What next: on to the next send, attempt again at `retryAt`, or report `failure` and end the transport. */
export type SendStep = { kind: "sent" } | { kind: "retry"; retryAt: number } | { kind: "give_up"; failure: Failure };

export class SendRetry {
  private readonly _deadline: number;
  private _retries = 0;
  private _done = false;

  /** A send whose first attempt starts at `nowMs`. */
  constructor(nowMs: number, private readonly _policy: SendRetryPolicy = defaultSendRetryPolicy()) {
    this._deadline = nowMs + _policy.budgetMs;
  }

  /** When the send gives up: an attempt still unanswered then is `"timed_out"`. */
  deadline(): number {
    return this._deadline;
  }

  retries(): number {
    return this._retries;
  }

  /** The attempt made last ended with `outcome` at `nowMs`: what next. */
  handleOutcome(nowMs: number, outcome: SendOutcome): SendStep {
    if (this._done) return this._giveUp("the send was already settled");
    let hint = 0;
    let why: string;
    if (outcome === "timed_out") return this._giveUp(`a send was not answered within ${this._policy.budgetMs} ms`);
    if (outcome === "no_answer") why = "a send failed on the way";
    else if (outcome.status >= 200 && outcome.status < 300) {
      this._done = true;
      return { kind: "sent" };
    } else if (outcome.status >= 502 && outcome.status <= 504) {
      hint = outcome.retryAfterMs ?? 0;
      why = `a send was answered ${outcome.status}`;
    } else return this._giveUp(`a send was answered ${outcome.status}`);
    const delay = this._policy.retryDelaysMs[this._retries];
    if (delay === undefined) return this._giveUp(`${why}, after ${this._retries} retries`);
    const at = nowMs + Math.max(delay, Math.min(hint, this._policy.maxHintMs));
    if (at >= this._deadline) return this._giveUp(`${why}, and no time is left to retry`);
    this._retries++;
    return { kind: "retry", retryAt: at };
  }

  private _giveUp(detail: string): SendStep {
    this._done = true;
    return { kind: "give_up", failure: { kind: "network", detail } };
  }
}
