// `npm run build` (and `npm pack`/`npm publish`, on prepack): dist/belay.js
// (minified ES module), dist/belay.debug.js, dist/policies.js (the opt-in
// backoff policies, `@belay/client/policies`), dist/publish.js (client
// publish, `@belay/client/publish`), dist/presence.js
// (`@belay/client/presence`), dist/history.js (`@belay/client/history`),
// dist/wait.js (`@belay/client/wait`), dist/fallback.js (the SSE + HTTP fallback,
// `@belay/client/fallback`), dist/binary.js (the binary codec negotiated on
// WebSocket, `@belay/client/binary`), dist/full.js (the whole client with
// the token provider's lifecycle and the SSE fallback's switch back, `@belay/client/full`), each entry with its source map
// (dist/*.js.map, the TypeScript sources inside), dist/types/*.d.ts; and the
// conformance vectors copied into vectors/ for the tests.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { BINARY_BUDGET_GZ, BUDGET_GZ, ROOT, bundle, gzSize, withoutMapLink } from "./bundle.mjs";
import { copyVectors } from "./vectors.mjs";

copyVectors();
rmSync(ROOT + "dist", { recursive: true, force: true });
mkdirSync(ROOT + "dist", { recursive: true });
const ENTRIES = [["index", "belay"], ["policies"], ["publish"], ["presence"], ["history"], ["wait"], ["fallback"], ["binary"], ["full"]];
for (const [entry, name = entry] of ENTRIES) await bundle({ entry, outfile: ROOT + `dist/${name}.js`, sourcemap: true });
await bundle({ minify: false, outfile: ROOT + "dist/belay.debug.js" });
execFileSync(process.execPath, [ROOT + "node_modules/typescript/bin/tsc", "-p", ROOT + "tsconfig.build.json"], { stdio: "inherit" });

const sizes = {};
for (const [entry, name = entry] of ENTRIES) {
  const c = withoutMapLink(readFileSync(ROOT + `dist/${name}.js`));
  sizes[name] = gzSize(c);
  const note = name === "belay" ? `budget ${BUDGET_GZ} B` : name === "binary" ? `opt-in, ceiling ${BINARY_BUDGET_GZ} B` : name === "full" ? "opt-in: the whole client, with tokenProvider and the SSE fallback's switch back" : "opt-in";
  console.log(`dist/${name}.js: ${c.length} B minified, ${sizes[name]} B gzipped (${note})`);
}
if (sizes.belay > BUDGET_GZ || sizes.binary > BINARY_BUDGET_GZ) process.exit(1);
