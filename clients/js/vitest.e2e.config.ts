import { defineConfig } from "vitest/config";

// Real browsers (Chromium, Firefox, WebKit: e2e/browsers.ts) against the real demo server (`npm run e2e`).
export default defineConfig({
  // One file at a time: the measurements are timings, and the machine has few cores.
  test: { include: ["e2e/**/*.e2e.ts"], testTimeout: 60_000, hookTimeout: 120_000, fileParallelism: false },
});
