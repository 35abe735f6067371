/** The sans-IO core: pure decisions driven by explicit time and a seeded RNG. */
export { Session } from "./session.js";
export type { Call, Input, Output, RequestError, SubscribeError, SessionStats, TooLarge } from "./session.js";
export { defaultConfig, makeConfig, type Config } from "./config.js";
export { defaultPolicy, type BackoffPolicy } from "./backoff/policy.js";
export { Backoff } from "./backoff/state.js";
export { PacingSlots, retryWindow } from "./backoff/pacing.js";
export { Heartbeat, decide } from "./heartbeat.js";
export { SplitMix64, RecordedDraws, type RandomSource } from "./rng.js";
export { decodeServer, frameLen, isDecodeError, type DecodeError } from "./codec.js";
export { CloseCode, disposition, type CloseInfo } from "./close.js";
export type { ConnectionState } from "./phase.js";
export type { Readiness } from "./readiness.js";
export type { Event, DisconnectReason, HaltReason, RetryPlan, RequestOutcome } from "./events.js";
export type { ClientMessage, ServerMessage, Json, StreamPosition, ErrorBody } from "./messages.js";
export type { Failure, TransportId } from "./transport.js";
