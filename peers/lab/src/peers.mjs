// Every peer client of the lab behind one entry: the Node agent imports it,
// and the browser agent bundles it (esbuild) for the page.
import { WebSocket as PartySocket } from "partysocket";
import ReconnectingWebSocket from "reconnecting-websocket";

import { startSocketIo } from "./socketio.mjs";
import { startWrapper } from "./wrapper.mjs";

/** The peer clients, by the name the lab gives them (without `browser-`). */
export const PEERS = ["socketio", "socketio-tuned", "partysocket", "rws"];

/**
 * Start peer `o.client` against `o.url`, reporting through `emit`;
 * `BaseWebSocket` is the platform's WebSocket (ws in Node). Returns {stop}.
 */
export function startPeer(o, emit, BaseWebSocket) {
  switch (o.client) {
    case "socketio":
    case "socketio-tuned":
      return startSocketIo(o, emit);
    case "partysocket":
      return startWrapper(o, emit, PartySocket, BaseWebSocket);
    case "rws":
      return startWrapper(o, emit, ReconnectingWebSocket, BaseWebSocket);
    default:
      throw new Error(`unknown peer ${o.client} (${PEERS.join(", ")})`);
  }
}
