import { defineConfig } from "vitest/config";

// Real headless Chromium against the real demo server (`npm run e2e`).
export default defineConfig({
  test: { include: ["e2e/**/*.e2e.ts"], testTimeout: 60_000, hookTimeout: 120_000 },
});
