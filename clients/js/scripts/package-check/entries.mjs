// Every entry of the installed @belay/client through `import` (Node's ESM
// loader or Bun's): each export of exports.json is there, and the default
// entry makes a client (no dial: autoStart false).
import { readFileSync } from "node:fs";

const EXPORTS = JSON.parse(readFileSync(new URL("./exports.json", import.meta.url), "utf8"));
const runtime = typeof Bun === "object" ? `bun ${Bun.version}` : `node ${process.versions.node}`;
for (const [entry, names] of Object.entries(EXPORTS)) {
  const module = await import(entry);
  const missing = names.filter((n) => module[n] === undefined);
  if (missing.length) throw new Error(`${entry} (import, ${runtime}): missing ${missing.join(", ")}`);
}
const { BelayClient } = await import("@belay/client");
const { fixed } = await import("@belay/client/policies");
const client = new BelayClient("ws://127.0.0.1:1/ws", { autoStart: false, backoff: fixed(1000) });
if (client.status.state !== "stopped" && client.status.state !== "idle") throw new Error(`a new client is ${client.status.state}`);
client.close();
console.log(`[${runtime}] import: ${Object.keys(EXPORTS).length} entries, every export present`);
