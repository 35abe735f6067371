import { expect, it } from "vitest";
// @ts-expect-error plain JS helper shared with the build script
import { BUDGET_GZ, bundle, gzSize } from "../scripts/bundle.mjs";

it("the minified + gzipped bundle stays within the budget", async () => {
  const code: Uint8Array = await bundle();
  const gz: number = gzSize(code);
  console.log(`bundle: ${code.length} B minified, ${gz} B gzipped (budget ${BUDGET_GZ} B)`);
  expect(gz).toBeLessThanOrEqual(BUDGET_GZ);
});
