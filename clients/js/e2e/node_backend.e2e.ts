/**
 * A standalone Belay server with a Node backend (examples/node-backend),
 * end to end: only the `belay` binary, `node` and headless Chromium (the
 * scenario: backend_example.ts).
 */
import { join } from "node:path";
import { backendExample } from "./backend_example.js";
import { ROOT } from "./harness.js";

backendExample("node", (port, belay) => [process.execPath, [join(ROOT, "examples/node-backend/backend.mjs"), "--port", String(port), "--belay", belay]]);
