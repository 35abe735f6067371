/**
 * A standalone Belay server with a Python backend (examples/python-backend),
 * end to end: only the `belay` binary, `python3` and headless Chromium (the
 * scenario: backend_example.ts).
 */
import { join } from "node:path";
import { backendExample } from "./backend_example.js";
import { ROOT } from "./harness.js";

backendExample("python", (port, belay) => ["python3", [join(ROOT, "examples/python-backend/backend.py"), "--port", String(port), "--belay", belay]]);
