// The installed package's type declarations, as an app's TypeScript sees them
// (compiled with --noEmit under `nodenext` and `bundler` resolution).
import { BelayClient, NotReadyError, type ChannelItem, type Status } from "@belay/client";
import { fixed, serverPaced } from "@belay/client/policies";
import { publish, type Published } from "@belay/client/publish";
import { followPresence, presence } from "@belay/client/presence";
import { sseFallback } from "@belay/client/fallback";
import { binaryCodec, BINARY_PROTOCOL } from "@belay/client/binary";

const client = new BelayClient("wss://example.com/ws", { backoff: serverPaced(1000, fixed(2000)), tokenProvider: async () => "t", WebSocket: binaryCodec().WebSocket });
const status: Status = client.status;
const ready: boolean = status.ready;
const item = (i: ChannelItem): number | undefined => (i.type === "publication" ? i.offset : undefined);
client.subscribe("feed").on(item);
const answer: Promise<unknown> = client.request("echo", { a: 1 }, { timeout: 1000, idempotencyKey: "k" });
const published: Promise<Published> = publish(client, "feed", { tick: 1 });
const members = presence(client, "room");
const stop: () => void = followPresence(client, "room", () => {});
const fallback = sseFallback({ afterFailures: 1 });
const protocol: string = BINARY_PROTOCOL;
const notReady: boolean = new NotReadyError(false) instanceof Error;
export { answer, fallback, members, notReady, protocol, published, ready, stop };
