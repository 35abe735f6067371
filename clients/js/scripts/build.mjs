// `npm run build`: dist/belay.js (minified ES module), dist/belay.debug.js,
// dist/policies.js (the opt-in backoff policies, `@belay/client/policies`),
// dist/publish.js (client publish, `@belay/client/publish`), dist/presence.js
// (`@belay/client/presence`), dist/history.js (`@belay/client/history`), dist/wait.js
// (`@belay/client/wait`), dist/fallback.js (the SSE + HTTP fallback,
// `@belay/client/fallback`), dist/binary.js (the binary codec negotiated on
// WebSocket, `@belay/client/binary`), dist/tokens.js (the whole client with
// the token provider's lifecycle, `@belay/client/tokens`), dist/types/*.d.ts.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { BINARY_BUDGET_GZ, BUDGET_GZ, ROOT, bundle, gzSize } from "./bundle.mjs";

mkdirSync(ROOT + "dist", { recursive: true });
await bundle({ outfile: ROOT + "dist/belay.js" });
await bundle({ minify: false, outfile: ROOT + "dist/belay.debug.js" });
await bundle({ entry: "policies", outfile: ROOT + "dist/policies.js" });
await bundle({ entry: "publish", outfile: ROOT + "dist/publish.js" });
await bundle({ entry: "presence", outfile: ROOT + "dist/presence.js" });
await bundle({ entry: "history", outfile: ROOT + "dist/history.js" });
await bundle({ entry: "wait", outfile: ROOT + "dist/wait.js" });
await bundle({ entry: "fallback", outfile: ROOT + "dist/fallback.js" });
await bundle({ entry: "binary", outfile: ROOT + "dist/binary.js" });
await bundle({ entry: "tokens", outfile: ROOT + "dist/tokens.js" });
execFileSync(process.execPath, [ROOT + "node_modules/typescript/bin/tsc", "-p", ROOT + "tsconfig.build.json"], { stdio: "inherit" });
const min = readFileSync(ROOT + "dist/belay.js");
const gz = gzSize(min);
console.log(`dist/belay.js: ${min.length} B minified, ${gz} B gzipped (budget ${BUDGET_GZ} B)`);
const pol = readFileSync(ROOT + "dist/policies.js");
console.log(`dist/policies.js: ${pol.length} B minified, ${gzSize(pol)} B gzipped (opt-in)`);
const pub = readFileSync(ROOT + "dist/publish.js");
console.log(`dist/publish.js: ${pub.length} B minified, ${gzSize(pub)} B gzipped (opt-in)`);
const pres = readFileSync(ROOT + "dist/presence.js");
console.log(`dist/presence.js: ${pres.length} B minified, ${gzSize(pres)} B gzipped (opt-in)`);
const hist = readFileSync(ROOT + "dist/history.js");
console.log(`dist/history.js: ${hist.length} B minified, ${gzSize(hist)} B gzipped (opt-in)`);
const wait = readFileSync(ROOT + "dist/wait.js");
console.log(`dist/wait.js: ${wait.length} B minified, ${gzSize(wait)} B gzipped (opt-in)`);
const fb = readFileSync(ROOT + "dist/fallback.js");
console.log(`dist/fallback.js: ${fb.length} B minified, ${gzSize(fb)} B gzipped (opt-in)`);
const tok = readFileSync(ROOT + "dist/tokens.js");
console.log(`dist/tokens.js: ${tok.length} B minified, ${gzSize(tok)} B gzipped (opt-in: the whole client, with tokenProvider)`);
const bin = readFileSync(ROOT + "dist/binary.js");
const binGz = gzSize(bin);
console.log(`dist/binary.js: ${bin.length} B minified, ${binGz} B gzipped (opt-in, ceiling ${BINARY_BUDGET_GZ} B)`);
if (gz > BUDGET_GZ || binGz > BINARY_BUDGET_GZ) process.exit(1);
