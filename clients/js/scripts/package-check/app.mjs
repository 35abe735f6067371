// An app as a bundler sees one: the default entry and every opt-in entry of
// the installed @belay/client. scripts/package-check.mjs bundles it with
// esbuild (`ws` left external) and runs the bundle against `belay serve
// --demo` at process.argv[2], on the runtime's own WebSocket or, with
// process.argv[3] = "ws", on the ws package's: ready over the binary codec
// (binaryType "arraybuffer"), a request answered, the policies, publish and
// presence entries linked in.
import { BelayClient } from "@belay/client";
import { binaryCodec } from "@belay/client/binary";
import { sseFallback } from "@belay/client/fallback";
import { fixed, serverPaced } from "@belay/client/policies";
import { followPresence } from "@belay/client/presence";
import { publish } from "@belay/client/publish";

const url = process.argv[2];
const codec = binaryCodec(process.argv[3] === "ws" ? { WebSocket: (await import("ws")).default } : {});
const client = new BelayClient(url, { WebSocket: codec.WebSocket, backoff: serverPaced(500, fixed(500)) });
const deadline = setTimeout(() => {
  console.error(`bundled app: not ready within 10 s (${JSON.stringify(client.status)})`);
  process.exit(1);
}, 10_000);
await client.whenReady();
const answer = await client.request("echo", { bundled: true }, { timeout: 5000 });
if (answer?.bundled !== true) throw new Error(`echo answered ${JSON.stringify(answer)}`);
if (codec.codec !== "binary") throw new Error(`codec ${codec.codec}, not binary`);
const stop = followPresence(client, "feed", () => {});
stop();
if (typeof publish !== "function" || typeof sseFallback().WebSocket !== "function") throw new Error("opt-in entries missing");
client.close();
clearTimeout(deadline);
console.log(`bundled app (${typeof Bun === "object" ? "bun" : "node"}, ${process.argv[3] === "ws" ? "ws" : "its own WebSocket"}): ready over the binary codec, echo answered`);
