// The demo server (crates/belay-demo) serves this client (`@belay/client/full`) at /belay.js and
// its SSE fallback at /fallback.js, and cargo cannot run npm: the built
// bundles are committed there as crates/belay-demo/assets/{belay,fallback}.js.
// esbuild's output is deterministic, so each committed copy must equal a
// fresh `npm run build` byte for byte, less the line that links the source
// map (the demo server serves no maps).
//
//   node scripts/asset.mjs          fail (exit 1) if a copy differs from dist/
//   node scripts/asset.mjs --write  update the copies
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { ROOT, withoutMapLink } from "./bundle.mjs";

let failed = false;
// The page's client is `@belay/client/full` (its fallback mode switches back
// to WebSocket at the session's quiet moment), served as /belay.js.
const BUILT = { "belay.js": "full.js", "fallback.js": "fallback.js" };
for (const name of ["belay.js", "fallback.js"]) {
  const built = ROOT + "dist/" + BUILT[name];
  const asset = ROOT + "../../crates/belay-demo/assets/" + name;
  if (!existsSync(built)) {
    console.error(`dist/${BUILT[name]} is missing: run \`npm run build\` first`);
    process.exit(2);
  }
  if (process.argv.includes("--write")) {
    writeFileSync(asset, withoutMapLink(readFileSync(built)));
    console.log(`updated crates/belay-demo/assets/${name}`);
  } else if (!existsSync(asset) || !readFileSync(asset).equals(withoutMapLink(readFileSync(built)))) {
    console.error(`crates/belay-demo/assets/${name} differs from a fresh build of clients/js: run \`npm run build && npm run sync-asset\` and commit it`);
    failed = true;
  } else {
    console.log(`crates/belay-demo/assets/${name} matches the fresh build`);
  }
}
if (failed) process.exit(1);
