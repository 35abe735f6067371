/** The reconnect controller's state (`session/phase.rs`). Times in µs. */
import type { Heartbeat } from "./heartbeat.js";
import type { TransportId } from "./transport.js";

export type ConnectionState = "idle" | "connecting" | "handshaking" | "open" | "waiting" | "offline" | "halted" | "stopped";

/** Only connecting, handshaking and open own a transport: at most one exists, by construction. */
export type Phase =
  | { state: "idle" | "offline" | "halted" | "stopped" }
  | { state: "connecting" | "handshaking"; id: TransportId; deadline: number }
  /** `check`: deadline of a liveness check (`Session.checkLiveness`); any frame clears it. */
  | { state: "open"; id: TransportId; heartbeat: Heartbeat; check?: number | undefined }
  | { state: "waiting"; until: number };

export function phaseTransport(p: Phase): TransportId | undefined {
  return "id" in p ? p.id : undefined;
}

export function phaseTimeout(p: Phase): number | undefined {
  switch (p.state) {
    case "connecting":
    case "handshaking":
      return p.deadline;
    case "open":
      return Math.min(p.heartbeat._pollTimeout(), p.check ?? Infinity);
    case "waiting":
      return p.until;
    default:
      return undefined;
  }
}
