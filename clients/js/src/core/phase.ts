/**
 * The reconnect controller's state (`client/session/phase.rs`). Only connecting,
 * handshaking and open own a transport: at most one exists, by construction
 * (the session keeps the id only in those states).
 */
export type ConnectionState = "idle" | "connecting" | "handshaking" | "open" | "waiting" | "offline" | "halted" | "stopped";
