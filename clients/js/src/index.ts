/** Belay browser client. */
export { BelayClient, type BelayOptions, type Status, type RequestOptions, type DisconnectInfo } from "./client.js";
export { Subscription, type ChannelItem } from "./subscription.js";
export { BelayError, NotReadyError, TooLargeError, TimeoutError, ConnectionClosedError, ServerError, InvalidUrlError, type ErrorCode } from "./errors.js";
export type { BackoffPolicy } from "./core/backoff/policy.js";
export type { Json, ErrorBody } from "./core/messages.js";
export type {
  PublishParams,
  PublishResult,
  PresenceParams,
  PresenceMember,
  PresenceMembers,
  PresenceStats,
  CallParams,
  HostCallDelivery,
  AnswerParams,
  AnswerResult,
} from "./reserved.js";
export type { ConnectionState } from "./core/phase.js";
export type { DisconnectReason, HaltReason, RetryPlan } from "./core/events.js";
