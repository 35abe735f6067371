import { expect, it } from "vitest";
// @ts-expect-error plain JS helper shared with the build script
import { BINARY_BUDGET_GZ, BUDGET_GZ, bundle, gzSize } from "../scripts/bundle.mjs";

it("the minified + gzipped bundle stays within the budget", async () => {
  const code: Uint8Array = await bundle();
  const gz: number = gzSize(code);
  console.log(`bundle: ${code.length} B minified, ${gz} B gzipped (budget ${BUDGET_GZ} B)`);
  expect(gz).toBeLessThanOrEqual(BUDGET_GZ);
});

it("the opt-in binary entry stays within its ceiling and carries none of the core", async () => {
  const code: Uint8Array = await bundle({ entry: "binary" });
  const gz: number = gzSize(code);
  console.log(`binary entry: ${code.length} B minified, ${gz} B gzipped (ceiling ${BINARY_BUDGET_GZ} B)`);
  expect(gz).toBeLessThanOrEqual(BINARY_BUDGET_GZ);
  const text = new TextDecoder().decode(code);
  // The core's own strings: a session, a client, the JSON schema.
  for (const s of ["heartbeat timeout", "BelayError", "expected a JSON object"]) expect(text).not.toContain(s);
  for (const s of ["belay.bin.1", "belay.json.1", "arraybuffer"]) expect(text).toContain(s);
});
