/**
 * A standalone Belay server with a Python backend (examples/python-backend),
 * end to end: only the `belay` binary, a Python with the Belay SDK installed
 * ($BELAY_PYTHON; the test command's is the venv scripts/python-sdk-check.sh
 * made) and headless Chromium (the scenario: backend_example.ts).
 */
import { join } from "node:path";
import { backendExample } from "./backend_example.js";
import { ROOT } from "./harness.js";

const PYTHON = process.env.BELAY_PYTHON ?? "python3";
backendExample("python", (port, belay) => [PYTHON, [join(ROOT, "examples/python-backend/backend.py"), "--port", String(port), "--belay", belay]]);
